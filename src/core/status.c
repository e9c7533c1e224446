/* status.c — status names, the thread-local last-error sentence, logging. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static _Thread_local char last_error[1024];

const char *qmm_status_str(qmm_status status) {
    switch (status) {
    case QMM_OK: return "QMM_OK";
    case QMM_ERR_INVALID_ARGUMENT: return "QMM_ERR_INVALID_ARGUMENT";
    case QMM_ERR_UNSUPPORTED: return "QMM_ERR_UNSUPPORTED";
    case QMM_ERR_OUT_OF_MEMORY: return "QMM_ERR_OUT_OF_MEMORY";
    case QMM_ERR_IO: return "QMM_ERR_IO";
    case QMM_ERR_FORMAT: return "QMM_ERR_FORMAT";
    case QMM_ERR_BACKEND: return "QMM_ERR_BACKEND";
    case QMM_ERR_NUMERIC: return "QMM_ERR_NUMERIC";
    case QMM_ERR_INTERNAL: return "QMM_ERR_INTERNAL";
    }
    return "QMM_ERR_UNKNOWN_STATUS";
}

const char *qmm_last_error(void) { return last_error; }

qmm_status qmm_error(qmm_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    qmm_log(2, "error %s: %s", qmm_status_str(status), last_error);
    return status;
}

int qmm_log_level(void) {
    static int level = -1; /* benign race: every thread computes the same value */
    if (level < 0) {
        const char *v = getenv("QMM_LOG");
        int l = 0;
        if (v && strcmp(v, "info") == 0) l = 1;
        else if (v && strcmp(v, "debug") == 0) l = 2;
        level = l;
    }
    return level;
}

void qmm_log(int level, const char *fmt, ...) {
    if (qmm_log_level() < level) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("qmm: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const char *qmm_version(void) { return QMM_VERSION_STRING; }
