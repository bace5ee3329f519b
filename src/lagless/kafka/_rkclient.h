/* What lagless's two C modules (_rangeread.c, _fetch.c) share about a librdkafka client: loading
 * the librdkafka confluent-kafka loaded (every function either module calls, looked up with
 * dlsym), making a consumer from (name, value) options, and closing it. */
#ifndef LAGLESS_RKCLIENT_H
#define LAGLESS_RKCLIENT_H
#include <Python.h>
#include <dlfcn.h>

#include "_rdkafka.h"
#include "_rkheaders.h"
#include "_rklog.h"

#define LOOKUP(field, name)                                                                      \
    do {                                                                                         \
        *(void **)(&rk.field) = dlsym(lib, name);                                                \
        if (!rk.field) {                                                                         \
            PyErr_Format(PyExc_ImportError, "librdkafka at %s has no %s", path, name);           \
            return NULL;                                                                         \
        }                                                                                        \
    } while (0)

/* load(path): use the librdkafka at path (once; later calls do nothing) */
static PyObject *load(PyObject *mod, PyObject *arg) {
    (void)mod;
    const char *path = PyUnicode_AsUTF8(arg);
    if (!path) return NULL;
    if (rk_loaded) Py_RETURN_NONE;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        PyErr_Format(PyExc_ImportError, "cannot load librdkafka from %s: %s", path, dlerror());
        return NULL;
    }
    LOOKUP(conf_new, "rd_kafka_conf_new");
    LOOKUP(conf_set, "rd_kafka_conf_set");
    LOOKUP(conf_destroy, "rd_kafka_conf_destroy");
    LOOKUP(conf_set_log_cb, "rd_kafka_conf_set_log_cb");
    LOOKUP(new_, "rd_kafka_new");
    LOOKUP(poll_set_consumer, "rd_kafka_poll_set_consumer");
    LOOKUP(list_new, "rd_kafka_topic_partition_list_new");
    LOOKUP(list_add, "rd_kafka_topic_partition_list_add");
    LOOKUP(list_set_offset, "rd_kafka_topic_partition_list_set_offset");
    LOOKUP(list_destroy, "rd_kafka_topic_partition_list_destroy");
    LOOKUP(assign, "rd_kafka_assign");
    LOOKUP(queue_get_consumer, "rd_kafka_queue_get_consumer");
    LOOKUP(queue_destroy, "rd_kafka_queue_destroy");
    LOOKUP(consume_batch_queue, "rd_kafka_consume_batch_queue");
    LOOKUP(message_destroy, "rd_kafka_message_destroy");
    LOOKUP(message_timestamp, "rd_kafka_message_timestamp");
    LOOKUP(message_headers, "rd_kafka_message_headers");
    LOOKUP(header_get_all, "rd_kafka_header_get_all");
    LOOKUP(err2str, "rd_kafka_err2str");
    LOOKUP(fatal_error, "rd_kafka_fatal_error");
    LOOKUP(consumer_close, "rd_kafka_consumer_close");
    LOOKUP(destroy, "rd_kafka_destroy");
    LOOKUP(version, "rd_kafka_version");
    LOOKUP(incremental_assign, "rd_kafka_incremental_assign");
    LOOKUP(incremental_unassign, "rd_kafka_incremental_unassign");
    LOOKUP(error_code, "rd_kafka_error_code");
    LOOKUP(error_string, "rd_kafka_error_string");
    LOOKUP(error_destroy, "rd_kafka_error_destroy");
    LOOKUP(pause_partitions, "rd_kafka_pause_partitions");
    LOOKUP(resume_partitions, "rd_kafka_resume_partitions");
    LOOKUP(position, "rd_kafka_position");
    LOOKUP(get_watermark_offsets, "rd_kafka_get_watermark_offsets");
    LOOKUP(topic_name, "rd_kafka_topic_name");
    LOOKUP(topic_new, "rd_kafka_topic_new");
    LOOKUP(topic_destroy, "rd_kafka_topic_destroy");
    raw_headers_known = raw_headers_layout(rk.version());
    rk_loaded = 1;
    Py_RETURN_NONE;
}

/* A consumer on conf (a list of (name, value) str pairs; librdkafka's log lines kept for
 * take_logs) with its consumer queue: 0, or -1 with ValueError (an option librdkafka refused) or
 * TypeError set. */
static int new_consumer(PyObject *conf, rd_kafka_t **out, rd_kafka_queue_t **queue) {
    char errstr[512];
    rd_kafka_conf_t *c = rk.conf_new();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(conf); i++) {
        const char *name, *value;
        PyObject *item = PyList_GET_ITEM(conf, i);
        if (!PyTuple_Check(item)) PyErr_SetString(PyExc_TypeError, "conf: (name, value) pairs");
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "ss", &name, &value)) {
            rk.conf_destroy(c);
            return -1;
        }
        if (rk.conf_set(c, name, value, errstr, sizeof errstr) != RK_CONF_OK) {
            rk.conf_destroy(c);
            PyErr_SetString(PyExc_ValueError, errstr);
            return -1;
        }
    }
    rk.conf_set_log_cb(c, on_log);
    rd_kafka_t *made = rk.new_(RK_CONSUMER, c, errstr, sizeof errstr); /* owns c on success */
    if (!made) {
        rk.conf_destroy(c);
        PyErr_SetString(PyExc_ValueError, errstr);
        return -1;
    }
    rk.poll_set_consumer(made);
    *queue = rk.queue_get_consumer(made);
    *out = made;
    return 0;
}

/* Close and destroy the consumer *r and its queue *queue (the GIL released); both NULL after. */
static void close_consumer(rd_kafka_t **r, rd_kafka_queue_t **queue) {
    if (*queue) {
        rk.queue_destroy(*queue);
        *queue = NULL;
    }
    if (*r) {
        rd_kafka_t *closing = *r;
        *r = NULL;
        Py_BEGIN_ALLOW_THREADS
        rk.consumer_close(closing);
        rk.destroy(closing);
        Py_END_ALLOW_THREADS
    }
}

/* An error event's code and text (into text, size bytes): a fatal error is read from the client
 * (*fatal set), as confluent-kafka reads it; else the event's own text or the code's. */
static int error_text(rd_kafka_t *r, const rd_kafka_message_t *m, char *text, size_t size,
                      int *fatal) {
    int code = m->err;
    *fatal = code == RK_ERR_FATAL;
    if (*fatal) code = rk.fatal_error(r, text, size);
    else if (m->payload && m->len)
        snprintf(text, size, "%.*s", (int)m->len, (const char *)m->payload);
    else snprintf(text, size, "%s", rk.err2str(code));
    return code;
}

/* A module's function table (load, take_logs) and its definition, named `module` */
#define RK_MODULE(name, doc)                                                                     \
    static PyMethodDef module_methods[] = {                                                      \
        {"load", load, METH_O, "load(path): use the librdkafka at path"},                        \
        {"take_logs", take_logs, METH_NOARGS, "librdkafka's log lines since the last call"},     \
        {NULL, NULL, 0, NULL},                                                                   \
    };                                                                                           \
    static struct PyModuleDef module = {                                                         \
        PyModuleDef_HEAD_INIT, name, doc, -1, module_methods, NULL, NULL, NULL, NULL,            \
    }

#endif
