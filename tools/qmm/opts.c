/* opts.c — strict parsing of flag and environment values (see opts.h). */
#include "opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *opt_command = "qmm bench";

bool opt_i64(const char *name, const char *s, int64_t lo, int64_t hi, int64_t *out) {
    if (s == NULL || *s == '\0') {
        fprintf(stderr, "%s: %s is empty (expected an integer in %lld..%lld)\n", opt_command, name,
                (long long)lo, (long long)hi);
        return false;
    }
    /* strtoll skips leading white space and accepts '+': a strict parser does not. */
    if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9'))) {
        fprintf(stderr, "%s: %s '%s' is not an integer\n", opt_command, name, s);
        return false;
    }
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0') {
        fprintf(stderr, "%s: %s '%s' is not an integer\n", opt_command, name, s);
        return false;
    }
    if (errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "%s: %s '%s' is out of range %lld..%lld\n", opt_command, name, s,
                (long long)lo, (long long)hi);
        return false;
    }
    *out = (int64_t)v;
    return true;
}

void opt_list_free(char **items) {
    if (items == NULL) return;
    for (size_t i = 0; items[i] != NULL; i++) free(items[i]);
    free(items);
}

bool opt_split(const char *name, const char *s, char ***items, size_t *count) {
    if (s == NULL || *s == '\0') {
        fprintf(stderr, "%s: %s is empty (expected a comma-separated list)\n", opt_command, name);
        return false;
    }
    size_t n = 1;
    for (const char *p = s; *p; p++) n += (*p == ',');
    char **v = calloc(n + 1, sizeof *v);
    if (v == NULL) {
        fprintf(stderr, "%s: out of memory parsing %s\n", opt_command, name);
        return false;
    }
    const char *p = s;
    for (size_t i = 0; i < n; i++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0) {
            fprintf(stderr, "%s: %s '%s' has an empty item\n", opt_command, name, s);
            opt_list_free(v);
            return false;
        }
        v[i] = strndup(p, len);
        if (v[i] == NULL) {
            fprintf(stderr, "%s: out of memory parsing %s\n", opt_command, name);
            opt_list_free(v);
            return false;
        }
        p = e ? e + 1 : p + len;
    }
    *items = v;
    *count = n;
    return true;
}

bool opt_i64_list(const char *name, const char *s, int64_t lo, int64_t hi, int64_t **out,
                  size_t *count) {
    char **items;
    size_t n;
    if (!opt_split(name, s, &items, &n)) return false;
    int64_t *v = malloc(n * sizeof *v);
    if (v == NULL) {
        fprintf(stderr, "%s: out of memory parsing %s\n", opt_command, name);
        opt_list_free(items);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!opt_i64(name, items[i], lo, hi, &v[i])) {
            free(v);
            opt_list_free(items);
            return false;
        }
    }
    opt_list_free(items);
    *out = v;
    *count = n;
    return true;
}

bool opt_shape(const char *name, const char *s, int64_t hi, int64_t *m, int64_t *k) {
    const char *x = s ? strchr(s, 'x') : NULL;
    if (x == NULL) {
        fprintf(stderr, "%s: %s '%s' is not a shape MxK (e.g. 4608x1024)\n", opt_command, name,
                s ? s : "");
        return false;
    }
    char *ms = strndup(s, (size_t)(x - s));
    if (ms == NULL) return false;
    bool ok = opt_i64(name, ms, 1, hi, m) && opt_i64(name, x + 1, 1, hi, k);
    free(ms);
    return ok;
}

bool opt_env_i64(const char *var, int64_t lo, int64_t hi, int64_t *out, bool *is_set) {
    const char *s = getenv(var);
    *is_set = false;
    if (s == NULL) return true;
    char label[96];
    snprintf(label, sizeof label, "environment variable %s", var);
    if (!opt_i64(label, s, lo, hi, out)) return false;
    *is_set = true;
    return true;
}

bool opt_writable_file(const char *name, const char *path) {
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "%s: %s: cannot write '%s': %s\n", opt_command, name, path,
                strerror(errno));
        return false;
    }
    fclose(f);
    return true;
}

bool opt_weight_types(const char *name, const char *s, qmm_type *types, int max, int *count) {
    char **items;
    size_t n;
    if (!opt_split(name, s, &items, &n)) return false;
    bool ok = true;
    *count = 0;
    for (size_t i = 0; i < n && ok; i++) {
        qmm_type t;
        if (qmm_type_from_name(items[i], &t) != QMM_OK) {
            fprintf(stderr, "%s: %s: unknown type '%s'\n", opt_command, name, items[i]);
            ok = false;
        } else if (!qmm_type_is_weight(t)) {
            fprintf(stderr, "%s: %s: '%s' is not a weight type\n", opt_command, name, items[i]);
            ok = false;
        } else {
            for (int j = 0; ok && j < *count; j++)
                if (types[j] == t) {
                    fprintf(stderr, "%s: %s: type '%s' is listed twice\n", opt_command, name,
                            items[i]);
                    ok = false;
                }
            if (ok && *count == max) {
                fprintf(stderr, "%s: %s: more than %d types\n", opt_command, name, max);
                ok = false;
            }
            if (ok) types[(*count)++] = t;
        }
    }
    opt_list_free(items);
    return ok;
}
