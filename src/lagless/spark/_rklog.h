/* librdkafka's log lines, kept for Python: librdkafka calls on_log on its own threads, so the
 * lines wait here (a mutex, at most LOG_KEEP of them) until Python takes them (take_logs,
 * after each consume) and hands them to logging. For _rangeread.c. */
#ifndef LAGLESS_RKLOG_H
#define LAGLESS_RKLOG_H
#include <Python.h>
#include <pthread.h>
#include <stdio.h>

#define LOG_KEEP 64
typedef struct {
    int level;
    char fac[32];
    char text[480];
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
    LogLine copy[LOG_KEEP];
    size_t n, dropped;
    pthread_mutex_lock(&log_lock);
    n = log_n;
    dropped = log_dropped;
    memcpy(copy, log_lines, n * sizeof(LogLine));
    log_n = 0;
    log_dropped = 0;
    pthread_mutex_unlock(&log_lock);
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(iss)", copy[i].level, copy[i].fac, copy[i].text);
        if (!t || PyList_Append(out, t)) {
            Py_XDECREF(t);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(t);
    }
    return Py_BuildValue("(Nn)", out, (Py_ssize_t)dropped);
}

#endif
