/* The part of librdkafka's public C API that _rangeread.c and lagless/kafka/_fetch.c use,
 * declared here and looked up at run time (dlsym, _rkclient.h) in the librdkafka confluent-kafka
 * loaded. These are librdkafka 1.x/2.x's
 * stable declarations; rd_kafka_message_t's layout is part of that API. */
#ifndef LAGLESS_RDKAFKA_H
#define LAGLESS_RDKAFKA_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_queue_s rd_kafka_queue_t;
typedef struct rd_kafka_headers_s rd_kafka_headers_t;
typedef struct rd_kafka_error_s rd_kafka_error_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_topic_partition_s {
    char *topic;
    int32_t partition;
    int64_t offset;
    void *metadata;
    size_t metadata_size;
    void *opaque;
    int err;
    void *_private;
} rd_kafka_topic_partition_t;
typedef struct rd_kafka_topic_partition_list_s {
    int cnt;
    int size;
    rd_kafka_topic_partition_t *elems;
} rd_kafka_topic_partition_list_t;
typedef struct rd_kafka_message_s {
    int err;
    void *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *_private;
} rd_kafka_message_t;

#define RK_CONSUMER 1
#define RK_CONF_OK 0
#define RK_ERR_NOENT (-156)
#define RK_ERR_FATAL (-150)
#define RK_TS_NONE 0

static struct {
    rd_kafka_conf_t *(*conf_new)(void);
    int (*conf_set)(rd_kafka_conf_t *, const char *, const char *, char *, size_t);
    void (*conf_destroy)(rd_kafka_conf_t *);
    void (*conf_set_log_cb)(rd_kafka_conf_t *, void (*)(const rd_kafka_t *, int, const char *,
                                                         const char *));
    rd_kafka_t *(*new_)(int, rd_kafka_conf_t *, char *, size_t);
    int (*poll_set_consumer)(rd_kafka_t *);
    rd_kafka_topic_partition_list_t *(*list_new)(int);
    rd_kafka_topic_partition_t *(*list_add)(rd_kafka_topic_partition_list_t *, const char *,
                                            int32_t);
    int (*list_set_offset)(rd_kafka_topic_partition_list_t *, const char *, int32_t, int64_t);
    void (*list_destroy)(rd_kafka_topic_partition_list_t *);
    int (*assign)(rd_kafka_t *, const rd_kafka_topic_partition_list_t *);
    rd_kafka_queue_t *(*queue_get_consumer)(rd_kafka_t *);
    void (*queue_destroy)(rd_kafka_queue_t *);
    ssize_t (*consume_batch_queue)(rd_kafka_queue_t *, int, rd_kafka_message_t **, size_t);
    void (*message_destroy)(rd_kafka_message_t *);
    int64_t (*message_timestamp)(const rd_kafka_message_t *, int *);
    int (*message_headers)(const rd_kafka_message_t *, rd_kafka_headers_t **);
    int (*header_get_all)(const rd_kafka_headers_t *, size_t, const char **, const void **,
                          size_t *);
    const char *(*err2str)(int);
    int (*fatal_error)(rd_kafka_t *, char *, size_t);
    int (*consumer_close)(rd_kafka_t *);
    void (*destroy)(rd_kafka_t *);
    int (*version)(void);
    /* _fetch.c */
    rd_kafka_error_t *(*incremental_assign)(rd_kafka_t *, const rd_kafka_topic_partition_list_t *);
    rd_kafka_error_t *(*incremental_unassign)(rd_kafka_t *,
                                              const rd_kafka_topic_partition_list_t *);
    int (*error_code)(const rd_kafka_error_t *);
    const char *(*error_string)(const rd_kafka_error_t *);
    void (*error_destroy)(rd_kafka_error_t *);
    int (*pause_partitions)(rd_kafka_t *, rd_kafka_topic_partition_list_t *);
    int (*resume_partitions)(rd_kafka_t *, rd_kafka_topic_partition_list_t *);
    int (*position)(rd_kafka_t *, rd_kafka_topic_partition_list_t *);
    int (*get_watermark_offsets)(rd_kafka_t *, const char *, int32_t, int64_t *, int64_t *);
    const char *(*topic_name)(const rd_kafka_topic_t *);
    rd_kafka_topic_t *(*topic_new)(rd_kafka_t *, const char *, void *);
    void (*topic_destroy)(rd_kafka_topic_t *);
} rk;

static int rk_loaded = 0;

#endif
