/* A fetched record's headers, for _rangeread.c and _fetch.c: read in place where librdkafka
 * keeps them, else through librdkafka's API.
 *
 * librdkafka keeps each fetched record's headers unparsed (Kafka's record format: a varint
 * count, then per header a varint key length, the key, a varint value length, -1 for a null
 * value, and the value; varints zigzag-encoded) and parses them only when asked
 * (rd_kafka_message_headers): into a list with an allocation per header, freed with the
 * message. With one header per record that was about half of the reader's own CPU time. The API
 * has no accessor for the unparsed bytes: librdkafka 1.x/2.x keep their length and address
 * right after the public rd_kafka_message_t in its message struct (rd_kafka_msg_t,
 * rkm_u.consumer.binhdrs; mirrored below). They are read in place only when that address is
 * where the record format puts the headers (right after the value, or for an empty or null
 * value right after the key and the value's one-byte length) and the bytes parse to exactly
 * that length. Otherwise (another layout, a record whose key and value are both empty or null,
 * anything unexpected) and for a librdkafka other than 1.x/2.x the API reads them, as before.
 * Both give the same headers; a key is cut at a NUL character, as the API's names are. */
#ifndef LAGLESS_RKHEADERS_H
#define LAGLESS_RKHEADERS_H
#include <stdint.h>
#include <string.h>

#include "_rdkafka.h"

#define RAW_HEADERS_MAX 100000 /* more is a malformed record to librdkafka */

/* librdkafka's rd_kafka_msg_t up to the consumer's unparsed headers (the public message first;
 * the union holds the producer's fields or, for a fetched message, the headers' bytes). */
typedef struct {
    rd_kafka_message_t message;
    void *link[2];
    int flags, tstype;
    int64_t timestamp;
    void *headers;
    int status;
    int32_t broker_id;
    union {
        int64_t producer[6];
        struct {
            int32_t len;
            const unsigned char *data;
        } binhdrs;
    } u;
} RkMsg;

/* A record's headers: librdkafka's parsed list (api) or the bytes in place (p .. end). */
typedef struct {
    const rd_kafka_headers_t *api;
    size_t at;
    const unsigned char *p, *end;
} Headers;

/* The zigzag varint at *p (read up to end), as Kafka's record format writes counts and
 * lengths, into *out: returns 0, or -1 if none ends before end. */
static int zigzag(const unsigned char **p, const unsigned char *end, int64_t *out) {
    uint64_t v = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return 0;
        }
    }
    return -1;
}

/* One header's key and value from the bytes at *p: 1, or 0 if they do not parse. */
static int raw_header(const unsigned char **p, const unsigned char *end, const char **name,
                      size_t *name_len, const void **val, size_t *size) {
    int64_t klen, vlen;
    if (zigzag(p, end, &klen) || klen < 0 || klen > end - *p) return 0;
    *name = (const char *)*p;
    *p += klen;
    const char *nul = memchr(*name, 0, (size_t)klen);
    *name_len = nul ? (size_t)(nul - *name) : (size_t)klen;
    if (zigzag(p, end, &vlen) || vlen < -1 || vlen > end - *p) return 0;
    *val = vlen < 0 ? NULL : (const void *)*p;
    *size = vlen < 0 ? 0 : (size_t)vlen;
    if (vlen > 0) *p += vlen;
    return 1;
}

/* Whether the loaded librdkafka (rd_kafka_version(): 0xMMmmrrxx) keeps the layout above. */
static int raw_headers_known = 0;

static int raw_headers_layout(int version) {
    return version >= 0x01000000 && version < 0x03000000;
}

/* Point h at m's headers in place: 0, or -1 if they cannot be read so (use the API). */
static int raw_headers_open(Headers *h, const rd_kafka_message_t *m) {
    if (!raw_headers_known) return -1;
    const RkMsg *msg = (const RkMsg *)m;
    const unsigned char *at = msg->u.binhdrs.data, *expected;
    int32_t len = msg->u.binhdrs.len;
    const unsigned char *key = m->key;
    /* (an empty key or value is not in the record's bytes: librdkafka points it at "") */
    if (m->payload && m->len) expected = (const unsigned char *)m->payload + m->len;
    else if (key && m->key_len && key[m->key_len] == (m->payload ? 0x00 : 0x01))
        expected = key + m->key_len + 1; /* the value's length: zigzag 0, or -1 (null) */
    else return -1;
    if (at != expected || len < 1) return -1;
    const unsigned char *p = at, *end = at + len;
    int64_t count;
    if (zigzag(&p, end, &count) || count > RAW_HEADERS_MAX) return -1;
    const unsigned char *first = p;
    for (int64_t i = 0; i < count; i++) {
        const char *name;
        const void *val;
        size_t name_len, size;
        if (!raw_header(&p, end, &name, &name_len, &val, &size)) return -1;
    }
    if (count > 0 && p != end) return -1;
    h->api = NULL;
    h->p = first;
    h->end = count > 0 ? end : first; /* no headers (a count of 0 or less, as librdkafka) */
    return 0;
}

/* The next header: 1, or 0 at the end. */
static int headers_next(Headers *h, const char **name, size_t *name_len, const void **val,
                        size_t *size) {
    if (h->api) {
        if (rk.header_get_all(h->api, h->at++, name, val, size)) return 0;
        *name_len = strlen(*name);
        return 1;
    }
    return h->p < h->end && raw_header(&h->p, h->end, name, name_len, val, size);
}

#endif
