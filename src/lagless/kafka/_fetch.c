/* lagless.kafka._fetch: fetch records for a consumer group's member with librdkafka's C API,
 * making one small Python object per record (see lagless/kafka/fetcher.py).
 *
 * confluent-kafka's consume() builds a Message per record: a bytes object each for the key and
 * the value, a str for the topic, and its headers detached into a list librdkafka allocates per
 * record. Here a record becomes a FetchedMessage holding two bytes objects (its value, and its
 * key beside its headers' encoded bytes) and its coordinates; key() and headers() make their
 * objects on call, value() hands out the one it holds. The message is a copy: librdkafka's
 * message is destroyed at once, so nothing here keeps a fetch buffer or the client alive.
 *
 * A Fetcher is a consumer that never joins a group: it is assigned partitions by hand (the
 * group's member tells it what it owns), fetches, pauses and resumes them, and reports
 * positions and cached watermarks. librdkafka is the library confluent-kafka loaded (looked up
 * with dlsym, as _rangeread.c does), so both clients use one librdkafka.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "_rkclient.h"

#define CONSUME_MAX 1000000 /* messages per consume call, as confluent-kafka's consume() */
#define OFFSET_INVALID (-1001)

static PyObject *KafkaError;     /* confluent_kafka.KafkaError */
static PyObject *KafkaException; /* confluent_kafka.KafkaException */


/* confluent_kafka.KafkaError(code, reason, fatal) */
static PyObject *kafka_error(int code, const char *reason, int fatal) {
    return PyObject_CallFunction(KafkaError, "isO", code, reason, fatal ? Py_True : Py_False);
}

/* Raise confluent_kafka.KafkaException(KafkaError(code, reason)): NULL. */
static PyObject *raise_kafka(int code, const char *reason) {
    PyObject *err = kafka_error(code, reason, 0);
    if (err) {
        PyErr_SetObject(KafkaException, err);
        Py_DECREF(err);
    }
    return NULL;
}

/* ---- a fetched message ---- */
typedef struct {
    PyObject_HEAD
    PyObject *topic;   /* str */
    PyObject *value;   /* bytes, or NULL for a null value (or an error event) */
    PyObject *data;    /* bytes: the key, then the headers' bytes; NULL for an error event */
    PyObject *error;   /* KafkaError, or NULL */
    PyObject *headers; /* (name as bytes, bytes | None) pairs librdkafka's API parsed, or NULL */
    int64_t offset, timestamp;
    int32_t partition;
    Py_ssize_t key_len, headers_len; /* key_len -1: a null key */
    int tstype;
} Msg;

static PyTypeObject MsgType;

static PyObject *Msg_error(Msg *self, PyObject *unused) {
    (void)unused;
    return Py_NewRef(self->error ? self->error : Py_None);
}

static PyObject *Msg_topic(Msg *self, PyObject *unused) {
    (void)unused;
    return Py_NewRef(self->topic ? self->topic : Py_None);
}

static PyObject *Msg_partition(Msg *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLong(self->partition);
}

static PyObject *Msg_offset(Msg *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong(self->offset);
}

static PyObject *Msg_timestamp(Msg *self, PyObject *unused) {
    (void)unused;
    return Py_BuildValue("(iL)", self->tstype, (long long)self->timestamp);
}

static PyObject *slice(Msg *self, Py_ssize_t at, Py_ssize_t len) {
    if (len < 0 || !self->data) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(self->data) + at, len);
}

static Py_ssize_t width(Py_ssize_t len) { return len < 0 ? 0 : len; }

static PyObject *Msg_key(Msg *self, PyObject *unused) {
    (void)unused;
    return slice(self, 0, self->key_len);
}

static PyObject *Msg_value(Msg *self, PyObject *unused) {
    (void)unused;
    return Py_NewRef(self->value ? self->value : Py_None);
}

/* (name, value) from one header's parts; a name that is not UTF-8 raises UnicodeDecodeError */
static PyObject *header_pair(const char *name, size_t name_len, const void *val, size_t size) {
    PyObject *value = val ? PyBytes_FromStringAndSize(val, (Py_ssize_t)size) : Py_NewRef(Py_None);
    if (!value) return NULL;
    return Py_BuildValue("(NN)", PyUnicode_DecodeUTF8(name, (Py_ssize_t)name_len, NULL), value);
}

/* The parsed headers' list with each name (bytes) decoded: a name that is not UTF-8 raises */
static PyObject *decoded(PyObject *headers) {
    Py_ssize_t n = PyList_GET_SIZE(headers);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *name, *value;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(headers, i), "SO", &name, &value)) {
            Py_CLEAR(out);
            break;
        }
        PyObject *pair = Py_BuildValue(
            "(NO)", PyUnicode_DecodeUTF8(PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name), NULL),
            value);
        if (!pair) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, pair);
    }
    return out;
}

/* headers() -> list of (name, value), or None without headers (as confluent-kafka's) */
static PyObject *Msg_headers(Msg *self, PyObject *unused) {
    (void)unused;
    if (self->headers) return decoded(self->headers);
    if (!self->data || !self->headers_len) Py_RETURN_NONE;
    Py_ssize_t at = width(self->key_len);
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(self->data) + at;
    Headers h = {NULL, 0, p, p + self->headers_len};
    const char *name;
    const void *val;
    size_t name_len, size;
    PyObject *out = PyList_New(0);
    while (out && headers_next(&h, &name, &name_len, &val, &size)) {
        PyObject *pair = header_pair(name, name_len, val, size);
        if (!pair || PyList_Append(out, pair)) Py_CLEAR(out);
        Py_XDECREF(pair);
    }
    return out;
}

static Py_ssize_t Msg_len(Msg *self) { return self->value ? PyBytes_GET_SIZE(self->value) : 0; }

/* FetchedMessage.stamps(messages) -> bytes: each message's timestamp (ms since the epoch, -1
 * for none) as native int64s, for numpy.frombuffer: no tuple per message */
static PyObject *Msg_stamps(PyObject *unused, PyObject *messages) {
    (void)unused;
    if (!PyList_Check(messages)) {
        PyErr_SetString(PyExc_TypeError, "a list of FetchedMessage is expected");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(messages);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (!out) return NULL;
    int64_t *at = (int64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(messages, i);
        if (!Py_IS_TYPE(item, &MsgType)) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "a list of FetchedMessage is expected");
            return NULL;
        }
        const Msg *m = (const Msg *)item;
        at[i] = m->tstype ? m->timestamp : -1;
    }
    return out;
}

static void Msg_dealloc(Msg *self) {
    Py_XDECREF(self->topic);
    Py_XDECREF(self->value);
    Py_XDECREF(self->data);
    Py_XDECREF(self->error);
    Py_XDECREF(self->headers);
    PyObject_Free(self);
}

static PyObject *Msg_repr(Msg *self) {
    return PyUnicode_FromFormat("<FetchedMessage %R[%d]@%lld>", self->topic ? self->topic : Py_None,
                                (int)self->partition, (long long)self->offset);
}

static PyMethodDef Msg_methods[] = {
    {"error", (PyCFunction)Msg_error, METH_NOARGS, "the error (a KafkaError) or None"},
    {"topic", (PyCFunction)Msg_topic, METH_NOARGS, "the topic"},
    {"partition", (PyCFunction)Msg_partition, METH_NOARGS, "the partition"},
    {"offset", (PyCFunction)Msg_offset, METH_NOARGS, "the offset"},
    {"timestamp", (PyCFunction)Msg_timestamp, METH_NOARGS, "(timestamp type, ms since the epoch)"},
    {"key", (PyCFunction)Msg_key, METH_NOARGS, "the key (bytes) or None"},
    {"value", (PyCFunction)Msg_value, METH_NOARGS, "the value (bytes) or None"},
    {"headers", (PyCFunction)Msg_headers, METH_NOARGS, "[(name, value)] or None"},
    {"stamps", (PyCFunction)Msg_stamps, METH_O | METH_STATIC,
     "stamps(messages) -> bytes: their timestamps (ms, -1 for none) as native int64s"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods Msg_as_sequence = {.sq_length = (lenfunc)Msg_len};

static PyTypeObject MsgType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lagless.kafka._fetch.FetchedMessage",
    .tp_basicsize = sizeof(Msg),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A fetched record (or error event), read as confluent_kafka.Message is.",
    .tp_dealloc = (destructor)Msg_dealloc,
    .tp_repr = (reprfunc)Msg_repr,
    .tp_methods = Msg_methods,
    .tp_as_sequence = &Msg_as_sequence,
};

/* ---- the fetcher ---- */
typedef struct {
    PyObject_HEAD
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue;
    int busy;
    rd_kafka_message_t **batch;
    size_t batch_max;
    rd_kafka_topic_t **topics; /* handles of the topics know() was told of, held till close */
    size_t n_topics;
    /* the topic name of the last rkt seen (a poll's messages are of one or few topics) */
    const void *last_rkt;
    PyObject *last_topic;
} Fetcher;

/* -1 (an error set) if the fetcher is closed, or (busy) a consume is running (in another
 * thread while it released the GIL, or the one a finalizer it set off runs in): librdkafka's
 * calls are thread-safe, this module's batch is not. */
static int unusable_if(Fetcher *self, int busy) {
    const char *why = !self->rk             ? "the fetcher is closed"
                      : busy && self->busy ? "the fetcher is in use (a consume is running)"
                                            : NULL;
    if (why) PyErr_SetString(PyExc_RuntimeError, why);
    return why ? -1 : 0;
}

static int unusable(Fetcher *self) { return unusable_if(self, 0); }

static int Fetcher_init(Fetcher *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"conf", NULL};
    PyObject *conf;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!", kwlist, &PyList_Type, &conf)) return -1;
    if (!rk_loaded) {
        PyErr_SetString(PyExc_RuntimeError, "librdkafka is not loaded (call load(path))");
        return -1;
    }
    if (self->rk) {
        PyErr_SetString(PyExc_RuntimeError, "a Fetcher is initialised once");
        return -1;
    }
    if (new_consumer(conf, &self->rk, &self->queue)) return -1;
    return 0;
}

/* A partition list from a list of (topic, partition[, offset]) tuples; NULL on error. */
static rd_kafka_topic_partition_list_t *to_list(PyObject *items, int with_offset) {
    if (!PyList_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "a list of (topic, partition[, offset]) is expected");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(items);
    rd_kafka_topic_partition_list_t *list = rk.list_new((int)(n ? n : 1));
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *topic;
        int partition;
        long long offset = OFFSET_INVALID;
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyTuple_Check(item)) {
            rk.list_destroy(list);
            PyErr_SetString(PyExc_TypeError, "a list of (topic, partition[, offset]) is expected");
            return NULL;
        }
        int ok = with_offset ? PyArg_ParseTuple(item, "siL", &topic, &partition, &offset)
                             : PyArg_ParseTuple(item, "si", &topic, &partition);
        if (!ok) {
            rk.list_destroy(list);
            return NULL;
        }
        rk.list_add(list, topic, partition)->offset = offset;
    }
    return list;
}

/* 0, or -1 with KafkaException raised for a librdkafka error object (destroyed) */
static int check_error(rd_kafka_error_t *error) {
    if (!error) return 0;
    raise_kafka(rk.error_code(error), rk.error_string(error));
    rk.error_destroy(error);
    return -1;
}

static PyObject *change_assignment(Fetcher *self, PyObject *items, int add) {
    if (unusable(self)) return NULL;
    rd_kafka_topic_partition_list_t *list = to_list(items, add);
    if (!list) return NULL;
    rd_kafka_error_t *error;
    Py_BEGIN_ALLOW_THREADS
    error = add ? rk.incremental_assign(self->rk, list) : rk.incremental_unassign(self->rk, list);
    Py_END_ALLOW_THREADS
    rk.list_destroy(list);
    if (check_error(error)) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Fetcher_assign(Fetcher *self, PyObject *items) {
    return change_assignment(self, items, 1);
}

static PyObject *Fetcher_unassign(Fetcher *self, PyObject *items) {
    return change_assignment(self, items, 0);
}

static PyObject *Fetcher_unassign_all(Fetcher *self, PyObject *unused) {
    (void)unused;
    if (unusable(self)) return NULL;
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = rk.assign(self->rk, NULL);
    Py_END_ALLOW_THREADS
    if (err) return raise_kafka(err, rk.err2str(err));
    Py_RETURN_NONE;
}

/* know(topic): hold a handle on topic for the fetcher's life. A new handle sets off a metadata
 * request for the topic (librdkafka's leader query), answered while nothing waits. A consumer
 * that is only assigned partitions otherwise learns of a topic when it is first assigned one of
 * them, and then waits for librdkafka's next topic scan (up to a second) before it fetches. */
static PyObject *Fetcher_know(Fetcher *self, PyObject *arg) {
    const char *topic = PyUnicode_AsUTF8(arg);
    if (!topic || unusable(self)) return NULL;
    rd_kafka_topic_t **held = realloc(self->topics, (self->n_topics + 1) * sizeof *held);
    if (!held) return PyErr_NoMemory();
    self->topics = held;
    rd_kafka_topic_t *rkt = rk.topic_new(self->rk, topic, NULL);
    if (!rkt) return raise_kafka(-1, "cannot make a topic handle");
    held[self->n_topics++] = rkt;
    Py_RETURN_NONE;
}

/* The handles know() holds go before the client does. */
static void forget_topics(Fetcher *self) {
    for (size_t i = 0; i < self->n_topics; i++) rk.topic_destroy(self->topics[i]);
    free(self->topics);
    self->topics = NULL;
    self->n_topics = 0;
}

/* pause or resume: an error of the call raises; a partition not assigned is passed over (as
 * confluent-kafka's Consumer.pause and resume do) */
static PyObject *flow(Fetcher *self, PyObject *items, int pause) {
    if (unusable(self)) return NULL;
    rd_kafka_topic_partition_list_t *list = to_list(items, 0);
    if (!list) return NULL;
    int err = pause ? rk.pause_partitions(self->rk, list) : rk.resume_partitions(self->rk, list);
    rk.list_destroy(list);
    if (err) return raise_kafka(err, rk.err2str(err));
    Py_RETURN_NONE;
}

static PyObject *Fetcher_pause(Fetcher *self, PyObject *items) { return flow(self, items, 1); }

static PyObject *Fetcher_resume(Fetcher *self, PyObject *items) { return flow(self, items, 0); }

/* position([(topic, partition)]) -> [offset] (-1001: none yet) */
static PyObject *Fetcher_position(Fetcher *self, PyObject *items) {
    if (unusable(self)) return NULL;
    rd_kafka_topic_partition_list_t *list = to_list(items, 0);
    if (!list) return NULL;
    int err = rk.position(self->rk, list);
    PyObject *out = err ? NULL : PyList_New(list->cnt);
    for (int i = 0; out && i < list->cnt; i++) {
        PyObject *offset = PyLong_FromLongLong((long long)list->elems[i].offset);
        if (!offset) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, offset);
    }
    rk.list_destroy(list);
    if (err) return raise_kafka(err, rk.err2str(err));
    return out;
}

/* watermarks(topic, partition) -> (low, high): librdkafka's cached values (-1001: unknown) */
static PyObject *Fetcher_watermarks(Fetcher *self, PyObject *args) {
    const char *topic;
    int partition;
    int64_t low = OFFSET_INVALID, high = OFFSET_INVALID;
    if (!PyArg_ParseTuple(args, "si", &topic, &partition)) return NULL;
    if (unusable(self)) return NULL;
    int err = rk.get_watermark_offsets(self->rk, topic, partition, &low, &high);
    if (err) return raise_kafka(err, rk.err2str(err));
    return Py_BuildValue("(LL)", (long long)low, (long long)high);
}

static PyObject *topic_of(Fetcher *self, const rd_kafka_message_t *m) {
    if (m->rkt != self->last_rkt || !self->last_topic) {
        const char *name = m->rkt ? rk.topic_name(m->rkt) : NULL;
        PyObject *topic = name ? PyUnicode_FromString(name) : Py_NewRef(Py_None);
        if (!topic) return NULL;
        Py_XSETREF(self->last_topic, topic);
        self->last_rkt = m->rkt;
    }
    return Py_NewRef(self->last_topic);
}

/* An error event's KafkaError (a fatal error is read from the client, as confluent-kafka) */
static PyObject *error_of(Fetcher *self, const rd_kafka_message_t *m) {
    int fatal;
    char text[512];
    int code = error_text(self->rk, m, text, sizeof text, &fatal);
    return kafka_error(code, text, fatal);
}

/* The headers librdkafka's API parses (where they cannot be read in place): a list of
 * (name as bytes, value), the names decoded by headers() (which raises for one that is not
 * UTF-8, as confluent-kafka's does) */
static PyObject *api_headers(rd_kafka_message_t *m) {
    rd_kafka_headers_t *hdrs = NULL;
    PyObject *out = PyList_New(0);
    if (!out || rk.message_headers(m, &hdrs) != 0) return out; /* none */
    Headers h = {hdrs, 0, NULL, NULL};
    const char *name;
    const void *val;
    size_t name_len, size;
    while (out && headers_next(&h, &name, &name_len, &val, &size)) {
        PyObject *value = val ? PyBytes_FromStringAndSize(val, (Py_ssize_t)size)
                              : Py_NewRef(Py_None);
        PyObject *pair = value ? Py_BuildValue("(y#N)", name, (Py_ssize_t)name_len, value) : NULL;
        if (!pair || PyList_Append(out, pair)) Py_CLEAR(out);
        Py_XDECREF(pair);
    }
    return out;
}

static PyObject *message_of(Fetcher *self, rd_kafka_message_t *m) {
    Msg *msg = PyObject_New(Msg, &MsgType);
    if (!msg) return NULL;
    msg->value = msg->data = msg->error = msg->headers = NULL;
    msg->partition = m->partition;
    msg->offset = m->offset;
    msg->key_len = -1;
    msg->headers_len = 0;
    msg->topic = topic_of(self, m);
    if (!msg->topic) goto fail;
    msg->timestamp = rk.message_timestamp(m, &msg->tstype);
    /* (an error event's value is its text, as confluent-kafka's) */
    if (m->payload &&
        !(msg->value = PyBytes_FromStringAndSize((const char *)m->payload, (Py_ssize_t)m->len)))
        goto fail;
    if (m->err) {
        msg->tstype = 0;
        msg->timestamp = -1;
        if (!(msg->error = error_of(self, m))) goto fail;
        return (PyObject *)msg;
    }
    Headers h = {0};
    const unsigned char *raw = NULL;
    if (raw_headers_open(&h, m) == 0) {
        raw = h.p;
        msg->headers_len = h.end - h.p;
    } else {
        PyObject *parsed = api_headers(m);
        if (!parsed) goto fail;
        if (PyList_GET_SIZE(parsed) == 0) Py_DECREF(parsed);
        else msg->headers = parsed;
    }
    Py_ssize_t klen = m->key ? (Py_ssize_t)m->key_len : -1;
    msg->data = PyBytes_FromStringAndSize(NULL, width(klen) + msg->headers_len);
    if (!msg->data) goto fail;
    char *at = PyBytes_AS_STRING(msg->data);
    if (klen > 0) memcpy(at, m->key, (size_t)klen);
    if (msg->headers_len) memcpy(at + width(klen), raw, (size_t)msg->headers_len);
    msg->key_len = klen;
    return (PyObject *)msg;
fail:
    Py_DECREF(msg);
    return NULL;
}

/* consume(max, timeout_s) -> [FetchedMessage]: up to max messages, waiting up to timeout_s */
static PyObject *Fetcher_consume(Fetcher *self, PyObject *args) {
    Py_ssize_t max;
    double timeout;
    if (!PyArg_ParseTuple(args, "nd", &max, &timeout)) return NULL;
    if (unusable_if(self, 1)) return NULL;
    if (max < 1 || max > CONSUME_MAX) {
        PyErr_Format(PyExc_ValueError, "num_messages must be from 1 to %d", CONSUME_MAX);
        return NULL;
    }
    if ((size_t)max > self->batch_max) {
        rd_kafka_message_t **p = realloc(self->batch, (size_t)max * sizeof *p);
        if (!p) return PyErr_NoMemory();
        self->batch = p;
        self->batch_max = (size_t)max;
    }
    /* (a NaN waits not at all, as confluent-kafka; more than INT_MAX ms, forever) */
    int timeout_ms = timeout != timeout           ? 0
                     : timeout < 0                ? -1
                     : timeout * 1000 >= INT_MAX  ? -1
                                                  : (int)(timeout * 1000);
    ssize_t got;
    /* busy until the batch is made into messages: Python code can run meanwhile (another
     * thread while the GIL is released, a finalizer while objects are made) */
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    got = rk.consume_batch_queue(self->queue, timeout_ms, self->batch, (size_t)max);
    Py_END_ALLOW_THREADS
    Py_ssize_t n = got > 0 ? (Py_ssize_t)got : 0;
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *msg = out ? message_of(self, self->batch[i]) : NULL;
        if (!msg) Py_CLEAR(out); /* (the rest are destroyed all the same) */
        else PyList_SET_ITEM(out, i, msg);
        rk.message_destroy(self->batch[i]);
    }
    self->busy = 0;
    return out;
}

static PyObject *Fetcher_close(Fetcher *self, PyObject *unused) {
    (void)unused;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the fetcher is in use (a consume is running)");
        return NULL;
    }
    forget_topics(self);
    close_consumer(&self->rk, &self->queue);
    Py_RETURN_NONE;
}

static void Fetcher_dealloc(Fetcher *self) {
    forget_topics(self);
    close_consumer(&self->rk, &self->queue);
    free(self->batch);
    Py_XDECREF(self->last_topic);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Fetcher_methods[] = {
    {"consume", (PyCFunction)Fetcher_consume, METH_VARARGS, "consume(max, timeout_s)"},
    {"assign", (PyCFunction)Fetcher_assign, METH_O, "assign([(topic, partition, offset)])"},
    {"unassign", (PyCFunction)Fetcher_unassign, METH_O, "unassign([(topic, partition)])"},
    {"unassign_all", (PyCFunction)Fetcher_unassign_all, METH_NOARGS, "unassign everything"},
    {"know", (PyCFunction)Fetcher_know, METH_O, "know(topic): learn of a topic now"},
    {"pause", (PyCFunction)Fetcher_pause, METH_O, "pause([(topic, partition)])"},
    {"resume", (PyCFunction)Fetcher_resume, METH_O, "resume([(topic, partition)])"},
    {"position", (PyCFunction)Fetcher_position, METH_O, "position([(topic, partition)])"},
    {"watermarks", (PyCFunction)Fetcher_watermarks, METH_VARARGS, "cached (low, high)"},
    {"close", (PyCFunction)Fetcher_close, METH_NOARGS, "close the client"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FetcherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lagless.kafka._fetch.Fetcher",
    .tp_basicsize = sizeof(Fetcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Fetcher(conf: list[tuple[str, str]]): a consumer assigned by hand",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Fetcher_init,
    .tp_dealloc = (destructor)Fetcher_dealloc,
    .tp_methods = Fetcher_methods,
};

RK_MODULE("lagless.kafka._fetch",
          "Fetch a group member's records with one small object per record (see fetcher.py).");

PyMODINIT_FUNC PyInit__fetch(void) {
    if (PyType_Ready(&MsgType) < 0 || PyType_Ready(&FetcherType) < 0) return NULL;
    PyObject *ck = PyImport_ImportModule("confluent_kafka");
    if (!ck) return NULL;
    KafkaError = PyObject_GetAttrString(ck, "KafkaError");
    KafkaException = PyObject_GetAttrString(ck, "KafkaException");
    Py_DECREF(ck);
    if (!KafkaError || !KafkaException) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Fetcher", (PyObject *)&FetcherType) < 0 ||
        PyModule_AddObjectRef(m, "FetchedMessage", (PyObject *)&MsgType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
