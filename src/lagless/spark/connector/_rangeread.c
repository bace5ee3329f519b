/* lagless.spark.connector._rangeread: read one Kafka partition's records straight into Arrow buffers.
 *
 * The Python range reader (lagless/spark/fetch.py) spends most of a Spark read task on
 * per-record Python objects: confluent-kafka's consume() makes a Message (and its key, value
 * and topic objects) for every record, Message.headers() a list of tuples, and each column is
 * then gathered from those objects. This module does the same reading with librdkafka's C API
 * and appends each record's fields to growing column buffers, so no Python object exists per
 * record; Python wraps the buffers as Arrow arrays (pyarrow.Array.from_buffers).
 *
 * librdkafka is the library confluent-kafka already loaded: Python passes its path and the
 * functions are looked up with dlsym, so nothing is linked at build time and both clients
 * use one librdkafka. The declarations below are the stable public C API of librdkafka 1.x/2.x
 * (rd_kafka_message_t's layout is part of it).
 *
 * The Python side keeps the range logic (when the range is complete, what an error event
 * means); this side reports error events in order and never drops a consumed record: a record
 * that would overflow the current buffers' 32-bit offsets is kept for the next call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "_arrowbuf.h"
#include "_rkclient.h"

#define CONSUME_MAX 1000000 /* messages per consume call, as confluent-kafka's consume() */

static PyObject *RecordTooLarge; /* a record's bytes do not fit one batch (args: its offset) */

typedef struct {
    PyObject_HEAD
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue;
    char *topic;
    int32_t partition;
    int busy;
    /* consumed messages not yet added (they would have overflowed the buffers) */
    rd_kafka_message_t **pending;
    size_t pending_at, pending_n, batch_max;
    /* the most bytes one variable-length column holds between takes (Arrow's int32 offsets) */
    size_t max_bytes;
    /* records below this offset are skipped (after a rewind to the partition's start) */
    int64_t min_offset;
    /* whether the headers column is filled (Spark's includeHeaders) */
    int with_headers;
    /* the columns */
    size_t rows;
    VarCol key, value, hkey, hvalue;
    Buf offsets, ts, ts_valid, ts_type, hvalid, hoffsets;
    size_t ts_nulls, h_nulls, h_count;
    /* records whose headers librdkafka's API parsed (not read in place: _rkheaders.h) */
    size_t api_headers;
} Reader;


/* ---- the reader ---- */
static void reset_columns(Reader *self) {
    self->rows = 0;
    varcol_reset(&self->key);
    varcol_reset(&self->value);
    varcol_reset(&self->hkey);
    varcol_reset(&self->hvalue);
    self->offsets.len = self->ts.len = self->ts_valid.len = self->ts_type.len = 0;
    self->hvalid.len = self->hoffsets.len = 0;
    self->ts_nulls = self->h_nulls = self->h_count = 0;
    int32_t zero = 0;
    buf_put(&self->hoffsets, &zero, sizeof zero);
}

static int assign_at(Reader *self, int64_t offset) {
    rd_kafka_topic_partition_list_t *list = rk.list_new(1);
    int err;
    rk.list_add(list, self->topic, self->partition);
    rk.list_set_offset(list, self->topic, self->partition, offset);
    Py_BEGIN_ALLOW_THREADS
    err = rk.assign(self->rk, list);
    Py_END_ALLOW_THREADS
    rk.list_destroy(list);
    if (err) {
        PyErr_Format(PyExc_RuntimeError, "cannot assign %s[%d] at %lld: %s", self->topic,
                     self->partition, (long long)offset, rk.err2str(err));
        return -1;
    }
    return 0;
}

static int Reader_init(Reader *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"conf", "topic", "partition", "start", "max_bytes", "headers", NULL};
    PyObject *conf;
    const char *topic;
    int partition;
    long long start;
    Py_ssize_t max_bytes = INT32_MAX;
    int headers = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!siL|np", kwlist, &PyList_Type, &conf, &topic,
                                     &partition, &start, &max_bytes, &headers))
        return -1;
    if (max_bytes < 1 || max_bytes > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "max_bytes must be from 1 to 2**31 - 1");
        return -1;
    }
    if (!rk_loaded) {
        PyErr_SetString(PyExc_RuntimeError, "librdkafka is not loaded (call load(path))");
        return -1;
    }
    if (self->topic) {
        PyErr_SetString(PyExc_RuntimeError, "a RangeReader is initialised once");
        return -1;
    }
    if (start < 0) {
        PyErr_Format(PyExc_ValueError, "start offset %lld is negative", start);
        return -1;
    }
    self->topic = strdup(topic); /* (first: an instance is initialised at most once) */
    if (!self->topic) {
        PyErr_NoMemory();
        return -1;
    }
    reset_columns(self);
    if (new_consumer(conf, &self->rk, &self->queue)) return -1;
    self->partition = partition;
    self->batch_max = 0;
    self->max_bytes = (size_t)max_bytes;
    self->min_offset = start;
    self->with_headers = headers;
    return assign_at(self, start);
}

static PyObject *in_use(void) {
    PyErr_SetString(PyExc_RuntimeError, "the reader is in use by another thread");
    return NULL;
}

/* -1 (an error set) if the reader cannot be used now: not initialised, closed (if open is
 * asked for), or in use by another thread (while the GIL is released). */
static int unusable(Reader *self, int open) {
    const char *why = !self->topic       ? "the reader is not initialised"
                      : open && !self->rk ? "the reader is closed"
                      : self->busy        ? "the reader is in use by another thread"
                                          : NULL;
    if (why) PyErr_SetString(PyExc_RuntimeError, why);
    return why ? -1 : 0;
}

/* The record's hn headers as row `row` of the headers column (null without headers). */
static int add_headers(Reader *self, size_t row, Headers h, size_t hn) {
    const char *name;
    const void *val;
    size_t name_len, size;
    int32_t end;
    if (bit_put(&self->hvalid, row, hn > 0)) return -1;
    if (!hn) self->h_nulls++;
    while (headers_next(&h, &name, &name_len, &val, &size)) {
        if (varcol_put_utf8(&self->hkey, self->h_count, name, name_len) ||
            varcol_put(&self->hvalue, self->h_count, val, size, val != NULL))
            return -1;
        self->h_count++;
    }
    end = (int32_t)self->h_count;
    return buf_put(&self->hoffsets, &end, sizeof end);
}

/* Add one record to the columns: 0, or -1 if its bytes do not fit beside those buffered (nothing
 * added), -2 out of memory, -3 if they do not fit even alone. */
static int add_record(Reader *self, rd_kafka_message_t *m) {
    const size_t limit = self->max_bytes;
    rd_kafka_headers_t *hdrs = NULL;
    Headers h = {0};
    size_t hbytes = 0, hn = 0;
    int api = self->with_headers && raw_headers_open(&h, m);
    if (api && rk.message_headers(m, &hdrs) == 0) h.api = hdrs;
    if (self->with_headers) {
        Headers count = h;
        const char *name;
        const void *val;
        size_t name_len, size;
        while (headers_next(&count, &name, &name_len, &val, &size)) {
            hbytes += 3 * name_len + size; /* (at most, once repaired to UTF-8) */
            hn++;
        }
    }
    if (self->key.data.len + m->key_len > limit || self->value.data.len + m->len > limit ||
        self->hkey.data.len + self->hvalue.data.len + hbytes > limit)
        return self->rows ? -1 : -3;
    size_t row = self->rows;
    int tstype = 0;
    int64_t ms = rk.message_timestamp(m, &tstype);
    int64_t micros = tstype == RK_TS_NONE ? 0 : ms * 1000;
    int32_t kind = tstype - 1;
    if (varcol_put(&self->key, row, m->key, m->key_len, m->key != NULL) ||
        varcol_put(&self->value, row, m->payload, m->len, m->payload != NULL) ||
        buf_put(&self->offsets, &m->offset, sizeof m->offset) ||
        buf_put(&self->ts, &micros, sizeof micros) ||
        bit_put(&self->ts_valid, row, tstype != RK_TS_NONE) ||
        buf_put(&self->ts_type, &kind, sizeof kind) ||
        (self->with_headers && add_headers(self, row, h, hn)))
        return -2;
    if (tstype == RK_TS_NONE) self->ts_nulls++;
    self->api_headers += api;
    self->rows++;
    return 0;
}

/* consume(max, timeout_ms, end) -> (events, position or -1, full)
 *
 * Waits up to timeout_ms for up to max messages. Records below `end` are added to the columns;
 * a record at or past `end` sets the position to `end`. events: the error events, in order, as
 * (code, offset, text, fatal). position: one past the last record added or ending the range,
 * -1 if none. full: the buffers are full (a consumed record is kept for after take()). */
static PyObject *Reader_consume(Reader *self, PyObject *args) {
    Py_ssize_t max;
    int timeout_ms;
    long long end;
    if (!PyArg_ParseTuple(args, "niL", &max, &timeout_ms, &end)) return NULL;
    if (unusable(self, 1)) return NULL;
    if (max < 1 || max > CONSUME_MAX) {
        PyErr_Format(PyExc_ValueError, "max must be from 1 to %d", CONSUME_MAX);
        return NULL;
    }
    if (timeout_ms < 0) {
        PyErr_SetString(PyExc_ValueError, "timeout_ms must not be negative");
        return NULL;
    }
    PyObject *events = PyList_New(0);
    if (!events) return NULL;
    long long position = -1;
    int full = 0, failed = 0;
    self->busy = 1;
    if (self->pending_at >= self->pending_n) {
        if ((size_t)max > self->batch_max) {
            rd_kafka_message_t **p = realloc(self->pending, (size_t)max * sizeof *p);
            if (!p) {
                self->busy = 0;
                Py_DECREF(events);
                return PyErr_NoMemory();
            }
            self->pending = p;
            self->batch_max = (size_t)max;
        }
        ssize_t got;
        Py_BEGIN_ALLOW_THREADS
        got = rk.consume_batch_queue(self->queue, timeout_ms, self->pending, (size_t)max);
        Py_END_ALLOW_THREADS
        self->pending_at = 0;
        self->pending_n = got > 0 ? (size_t)got : 0;
    }
    while (self->pending_at < self->pending_n) {
        rd_kafka_message_t *m = self->pending[self->pending_at];
        if (m->err) {
            int fatal;
            char text[512];
            int code = error_text(self->rk, m, text, sizeof text, &fatal);
            PyObject *ev = Py_BuildValue("(iLNi)", code, (long long)m->offset,
                                         PyUnicode_DecodeUTF8(text, strlen(text), "replace"),
                                         fatal);
            if (!ev || PyList_Append(events, ev)) {
                Py_XDECREF(ev);
                failed = 1;
                break;
            }
            Py_DECREF(ev);
        } else if (m->offset >= end) {
            position = end;
        } else if (m->offset < self->min_offset) {
            /* below the range: read after a rewind to the partition's start */
        } else {
            int r = add_record(self, m);
            if (r == -1) {
                full = 1;
                break; /* kept: added after the next take() */
            }
            if (r == -3) {
                /* the offset of a record too large for one batch */
                PyObject *at = PyLong_FromLongLong((long long)m->offset);
                if (at) {
                    PyErr_SetObject(RecordTooLarge, at);
                    Py_DECREF(at);
                }
                failed = 1;
                break; /* kept: the reader is not usable past it */
            }
            if (r == -2) {
                failed = 1;
                break;
            }
            position = m->offset + 1;
        }
        rk.message_destroy(m);
        self->pending_at++;
    }
    self->busy = 0;
    if (failed) {
        Py_DECREF(events);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    return Py_BuildValue("(NLO)", events, position, full ? Py_True : Py_False);
}

static PyObject *bytes_of(Buf *b) {
    return PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
}

static PyObject *varcol_take(VarCol *c) {
    return Py_BuildValue("(NNNn)", c->nulls ? bytes_of(&c->valid) : Py_NewRef(Py_None),
                         bytes_of(&c->offsets), bytes_of(&c->data), (Py_ssize_t)c->nulls);
}

/* take() -> the columns added since the last take, as bytes (then starts empty):
 * (rows, key, value, offsets, (ts, ts_valid or None, ts_nulls), ts_type,
 *  (hvalid or None, hoffsets, h_nulls), hkey, hvalue)
 * where key, value, hkey and hvalue are (validity or None, offsets, data, nulls). */
static PyObject *Reader_take(Reader *self, PyObject *unused) {
    (void)unused;
    if (unusable(self, 0)) return NULL;
    PyObject *out = Py_BuildValue(
        "(nNNN(NNn)N(NNn)NN)", (Py_ssize_t)self->rows, varcol_take(&self->key),
        varcol_take(&self->value), bytes_of(&self->offsets), bytes_of(&self->ts),
        self->ts_nulls ? bytes_of(&self->ts_valid) : Py_NewRef(Py_None),
        (Py_ssize_t)self->ts_nulls, bytes_of(&self->ts_type),
        self->h_nulls ? bytes_of(&self->hvalid) : Py_NewRef(Py_None), bytes_of(&self->hoffsets),
        (Py_ssize_t)self->h_nulls, varcol_take(&self->hkey), varcol_take(&self->hvalue));
    if (out) reset_columns(self);
    return out;
}

static void drop_pending(Reader *self) {
    while (self->pending_at < self->pending_n)
        rk.message_destroy(self->pending[self->pending_at++]);
}

static PyObject *Reader_assign(Reader *self, PyObject *args) {
    long long offset;
    if (!PyArg_ParseTuple(args, "L", &offset)) return NULL;
    if (unusable(self, 1)) return NULL;
    /* messages consumed for the old position are dropped */
    drop_pending(self);
    self->busy = 1; /* (the GIL is released while librdkafka assigns) */
    int failed = assign_at(self, offset);
    self->busy = 0;
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static void close_client(Reader *self) {
    drop_pending(self);
    close_consumer(&self->rk, &self->queue);
}

static PyObject *Reader_close(Reader *self, PyObject *unused) {
    (void)unused;
    if (self->busy) return in_use();
    close_client(self);
    Py_RETURN_NONE;
}

static PyObject *Reader_buffered(Reader *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->rows);
}

static void Reader_dealloc(Reader *self) {
    close_client(self);
    free(self->pending);
    free(self->topic);
    varcol_free(&self->key);
    varcol_free(&self->value);
    varcol_free(&self->hkey);
    varcol_free(&self->hvalue);
    free(self->offsets.data);
    free(self->ts.data);
    free(self->ts_valid.data);
    free(self->ts_type.data);
    free(self->hvalid.data);
    free(self->hoffsets.data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Reader_methods[] = {
    {"consume", (PyCFunction)Reader_consume, METH_VARARGS, "consume(max, timeout_ms, end)"},
    {"take", (PyCFunction)Reader_take, METH_NOARGS, "the columns added since the last take"},
    {"assign", (PyCFunction)Reader_assign, METH_VARARGS, "read from this offset on"},
    {"close", (PyCFunction)Reader_close, METH_NOARGS, "close the consumer"},
    {NULL, NULL, 0, NULL},
};

static PyObject *Reader_api_headers(Reader *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->api_headers);
}

static PyGetSetDef Reader_getset[] = {
    {"rows", (getter)Reader_buffered, NULL, "records added since the last take", NULL},
    {"api_headers", (getter)Reader_api_headers, NULL,
     "records whose headers librdkafka's API parsed (the others were read in place)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lagless.spark.connector._rangeread.RangeReader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "RangeReader(conf: list[tuple[str, str]], topic, partition, start, max_bytes=2**31"
              " - 1, headers=True)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
    .tp_getset = Reader_getset,
};

RK_MODULE("lagless.spark.connector._rangeread",
          "Read a Kafka partition's records into Arrow buffers (see native_fetch.py).");

PyMODINIT_FUNC PyInit__rangeread(void) {
    if (PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    RecordTooLarge = PyErr_NewException("lagless.spark.connector._rangeread.RecordTooLarge", NULL, NULL);
    if (!RecordTooLarge ||
        PyModule_AddObjectRef(m, "RecordTooLarge", RecordTooLarge) < 0 ||
        PyModule_AddObjectRef(m, "RangeReader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
