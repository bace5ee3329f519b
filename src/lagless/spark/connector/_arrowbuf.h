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

/* The length (1-4) of the valid UTF-8 sequence at s, or 0 if none starts there. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t len;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3;
    else if (c >= 0xF0 && c <= 0xF4) len = 4;
    else return 0;
    if (c == 0xE0) lo = 0xA0;      /* no overlong forms */
    else if (c == 0xED) hi = 0x9F; /* no surrogates */
    else if (c == 0xF0) lo = 0x90;
    else if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

/* The bytes s[0..n) as UTF-8 in a string column's data: each byte that starts no valid
 * sequence becomes U+FFFD (as Java's UTF-8 decoding, and so Spark's Kafka source, does). */
static int utf8_put(Buf *b, const char *s, size_t n) {
    static const char replacement[] = "\xEF\xBF\xBD";
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, start = 0;
    while (i < n) {
        size_t len = utf8_seq(u + i, n - i);
        if (len) {
            i += len;
            continue;
        }
        if (buf_put(b, s + start, i - start) || buf_put(b, replacement, 3)) return -1;
        start = ++i;
    }
    return buf_put(b, s + start, n - start);
}

/* A string column's value, repaired to UTF-8 (see utf8_put). */
static int varcol_put_utf8(VarCol *c, size_t row, const char *src, size_t n) {
    int32_t end;
    if (bit_put(&c->valid, row, 1) || utf8_put(&c->data, src, n)) return -1;
    end = (int32_t)c->data.len;
    return buf_put(&c->offsets, &end, sizeof end);
}

#endif
