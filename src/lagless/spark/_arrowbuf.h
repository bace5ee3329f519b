/* Growing column buffers in Arrow's layout (validity bitmaps, int32 offsets, data), for
 * _rangeread.c. */
#ifndef LAGLESS_ARROWBUF_H
#define LAGLESS_ARROWBUF_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n)) return -1;
    if (n) memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

/* A validity bitmap (Arrow's: bit i set = row i not null) beside a row count. */
static int bit_put(Buf *b, size_t row, int valid) {
    if (row % 8 == 0) {
        uint8_t zero = 0;
        if (buf_put(b, &zero, 1)) return -1;
    }
    if (valid) ((uint8_t *)b->data)[row / 8] |= (uint8_t)(1u << (row % 8));
    return 0;
}

/* A variable-length column: validity, int32 offsets (starting with 0), data. */
typedef struct {
    Buf valid, offsets, data;
    size_t nulls;
} VarCol;

static int varcol_put(VarCol *c, size_t row, const void *src, size_t n, int valid) {
    int32_t end;
    if (bit_put(&c->valid, row, valid)) return -1;
    if (valid && buf_put(&c->data, src, n)) return -1;
    end = (int32_t)c->data.len;
    if (!valid) c->nulls++;
    return buf_put(&c->offsets, &end, sizeof end);
}

static void varcol_reset(VarCol *c) {
    int32_t zero = 0;
    c->valid.len = c->offsets.len = c->data.len = 0;
    c->nulls = 0;
    buf_put(&c->offsets, &zero, sizeof zero);
}

static void varcol_free(VarCol *c) {
    free(c->valid.data);
    free(c->offsets.data);
    free(c->data.data);
}

#endif
