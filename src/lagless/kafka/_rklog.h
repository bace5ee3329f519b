/* librdkafka's log lines, kept for Python: librdkafka calls on_log on its own threads, so the
 * lines wait here (a mutex, at most LOG_KEEP of them) until Python takes them (take_logs,
 * after each consume) and hands them to logging. For _rangeread.c and _fetch.c. */
#ifndef LAGLESS_RKLOG_H
#define LAGLESS_RKLOG_H
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_KEEP 512
typedef struct {
    int level;
    char fac[32];
    char text[1000];
} LogLine;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static LogLine log_lines[LOG_KEEP];
static size_t log_n = 0, log_dropped = 0;

static void on_log(const rd_kafka_t *r, int level, const char *fac, const char *buf) {
    (void)r;
    pthread_mutex_lock(&log_lock);
    if (log_n < LOG_KEEP) {
        LogLine *l = &log_lines[log_n++];
        l->level = level;
        snprintf(l->fac, sizeof l->fac, "%s", fac ? fac : "");
        snprintf(l->text, sizeof l->text, "%s", buf ? buf : "");
    } else {
        log_dropped++;
    }
    pthread_mutex_unlock(&log_lock);
}

static PyObject *take_logs(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    LogLine *copy = NULL;
    size_t n, dropped;
    pthread_mutex_lock(&log_lock);
    n = log_n;
    dropped = log_dropped;
    if (n) {
        copy = malloc(n * sizeof(LogLine));
        if (copy) memcpy(copy, log_lines, n * sizeof(LogLine));
        else dropped += n; /* (out of memory: counted as dropped) */
    }
    log_n = 0;
    log_dropped = 0;
    pthread_mutex_unlock(&log_lock);
    if (!copy) n = 0;
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < n; i++) {
        /* a line cut at its buffer's end may end inside a UTF-8 sequence */
        PyObject *t = Py_BuildValue(
            "(iNN)", copy[i].level,
            PyUnicode_DecodeUTF8(copy[i].fac, strlen(copy[i].fac), "replace"),
            PyUnicode_DecodeUTF8(copy[i].text, strlen(copy[i].text), "replace"));
        if (!t || PyList_Append(out, t)) Py_CLEAR(out);
        Py_XDECREF(t);
    }
    free(copy);
    return out ? Py_BuildValue("(Nn)", out, (Py_ssize_t)dropped) : NULL;
}

#endif
