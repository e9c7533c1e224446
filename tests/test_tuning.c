/*
 * test_tuning.c — tuning files (docs/TUNING.md) as contexts read them: which file is chosen
 * (the parameter tune_file, the environment QMM_TUNE_FILE, the default location under
 * XDG_CACHE_HOME or HOME), what a good file changes (auto's choice through qmm_matmul_path,
 * shape-class rows, the table named in qmm_path.auto_table) and how every bad file is
 * handled: named explicitly it is an error at context creation with its status (nothing
 * made), at the default location it is ignored with the status and reason in
 * qmm_context_tuning. Bad files: another machine (CPU, ISA level, threads), another qmm
 * version, another backend, truncated at every byte, corrupt JSON, a NUL byte, an empty file,
 * unknown fields at every level, duplicate fields, a newer format version, values of the wrong
 * kind or out of range, unknown types, rows that could never apply, a directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "qmm.h"

static char g_dir[256];       /* a fresh temporary directory */
static qmm_tuning_info g_id;  /* this machine's identity (a context with no file) */

static void write_text(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* A tuning file for this machine (or with the given fields replaced), rows as JSON text.
 * Each of machine / version / extra may be NULL for the default. No trailing white space, so
 * every strict prefix is invalid JSON. */
static void make_doc(char *buf, size_t len, const char *rows, const char *machine,
                     const char *version, const char *extra) {
    char mach[1024];
    snprintf(mach, sizeof mach,
             "{\"id\": \"%s\", \"cpu\": \"%s\", \"isa\": \"%s\", \"threads\": %d, "
             "\"features\": \"test\"}", g_id.machine_id, g_id.device, g_id.level, g_id.threads);
    snprintf(buf, len,
             "{\"format\": \"qmm-tune\", \"format_version\": 1, \"qmm_version\": \"%s\", "
             "\"backend\": \"cpu\", \"machine\": %s, \"created\": \"now\", "
             "\"command\": \"test_tuning\", \"warnings\": [], \"rows\": [%s]%s%s}",
             version ? version : qmm_version(), machine ? machine : mach, rows,
             extra ? ", " : "", extra ? extra : "");
}

static void env_clear(void) {
    unsetenv("QMM_TUNE_FILE");
    unsetenv("QMM_STRATEGY");
    setenv("XDG_CACHE_HOME", g_dir, 1);
}

/* Create a context with tune_file = param (NULL: env / default). */
static qmm_status make_ctx(const char *param, qmm_context **out) {
    qmm_context_params p = qmm_context_default_params();
    p.tune_file = param;
    *out = NULL;
    return qmm_context_create(&p, out);
}

/* An explicitly named file must be refused with `want` and a sentence naming the file and
 * containing `phrase`; *out untouched. */
static void expect_refused(const char *path, qmm_status want, const char *phrase) {
    qmm_context *ctx = (qmm_context *)(uintptr_t)0x1;
    qmm_context_params p = qmm_context_default_params();
    p.tune_file = path;
    qmm_status st = qmm_context_create(&p, &ctx);
    if (st != want || ctx != (qmm_context *)(uintptr_t)0x1 ||
        strstr(qmm_last_error(), path) == NULL || strstr(qmm_last_error(), phrase) == NULL)
        fail_msg("%s: status %s (want %s), error '%s' (want '%s')", path, qmm_status_str(st),
                 qmm_status_str(want), qmm_last_error(), phrase);
    /* the same through the environment */
    setenv("QMM_TUNE_FILE", path, 1);
    st = make_ctx(NULL, &ctx);
    unsetenv("QMM_TUNE_FILE");
    if (st != want || ctx != NULL || strstr(qmm_last_error(), "QMM_TUNE_FILE") == NULL)
        fail_msg("QMM_TUNE_FILE=%s: status %s (want %s), error '%s'", path, qmm_status_str(st),
                 qmm_status_str(want), qmm_last_error());
}

/* The same file at the default location must be ignored with `want` and `phrase`. */
static void expect_ignored(const char *text, size_t len, qmm_status want, const char *phrase) {
    write_text(g_id.default_path, text, len);
    qmm_context *ctx;
    assert_int_equal(make_ctx(NULL, &ctx), QMM_OK);
    qmm_tuning_info info;
    assert_int_equal(qmm_context_tuning(ctx, &info), QMM_OK);
    if (info.state != QMM_TUNING_IGNORED || info.status != want ||
        strcmp(info.path, g_id.default_path) != 0 || strstr(info.reason, phrase) == NULL)
        fail_msg("default location: state %d status %s (want ignored, %s), reason '%s' (want "
                 "'%s')", (int)info.state, qmm_status_str(info.status), qmm_status_str(want),
                 info.reason, phrase);
    qmm_context_free(ctx);
    remove(g_id.default_path);
}

/* A bad document: refused when named, ignored at the default location. */
static void bad_doc(const char *text, qmm_status want, const char *phrase) {
    char path[512];
    snprintf(path, sizeof path, "%s/bad.json", g_dir);
    write_text(path, text, strlen(text));
    expect_refused(path, want, phrase);
    expect_ignored(text, strlen(text), want, phrase);
    remove(path);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/qmm_test_tuning_XXXXXX");
    if (mkdtemp(g_dir) == NULL) return -1;
    env_clear();
    char qdir[300];
    snprintf(qdir, sizeof qdir, "%s/qmm", g_dir);
    if (mkdir(qdir, 0755) != 0) return -1;
    qmm_context *ctx;
    if (make_ctx("", &ctx) != QMM_OK) return -1;
    qmm_context_tuning(ctx, &g_id);
    qmm_context_free(ctx);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The identity and the default location. */
static void test_identity(void **state) {
    (void)state;
    env_clear();
    char want[512];
    snprintf(want, sizeof want, "%s/qmm/tune-%s.json", g_dir, g_id.machine_id);
    assert_string_equal(g_id.default_path, want);
    assert_int_equal(strlen(g_id.machine_id), 16);
    assert_true(g_id.threads >= 1);
    assert_true(g_id.device[0] != '\0');
    /* XDG_CACHE_HOME must be absolute; else ~/.cache */
    setenv("XDG_CACHE_HOME", "relative/dir", 1);
    setenv("HOME", "/home/someone", 1);
    qmm_context *ctx;
    assert_int_equal(make_ctx(NULL, &ctx), QMM_OK);
    qmm_tuning_info info;
    qmm_context_tuning(ctx, &info);
    snprintf(want, sizeof want, "/home/someone/.cache/qmm/tune-%s.json", g_id.machine_id);
    assert_string_equal(info.default_path, want);
    assert_int_equal(info.state, QMM_TUNING_NONE);
    qmm_context_free(ctx);
    /* another thread count is another identity (another default file) */
    env_clear();
    qmm_context_params p = qmm_context_default_params();
    p.n_threads = g_id.threads + 1;
    assert_int_equal(qmm_context_create(&p, &ctx), QMM_OK);
    qmm_context_tuning(ctx, &info);
    assert_int_equal(info.threads, g_id.threads + 1);
    assert_string_not_equal(info.machine_id, g_id.machine_id);
    qmm_context_free(ctx);
    assert_int_equal(qmm_context_tuning(NULL, &info), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_context_tuning(ctx = NULL, NULL), QMM_ERR_INVALID_ARGUMENT);
}

/* No file: turned off, or none at the default location; the compiled-in table is named. */
static void test_no_file(void **state) {
    (void)state;
    env_clear();
    qmm_context *ctx;
    qmm_tuning_info info;
    assert_int_equal(make_ctx(NULL, &ctx), QMM_OK);
    qmm_context_tuning(ctx, &info);
    assert_int_equal(info.state, QMM_TUNING_NONE);
    assert_int_equal(info.status, QMM_OK);
    assert_non_null(strstr(info.reason, g_id.default_path));
    const size_t rb = 18 * (256 / 32);
    void *w = calloc(64, rb);
    assert_int_equal(qmm_random_rows(QMM_TYPE_Q4_0, 1, 1.0, w, 64, 256), QMM_OK);
    qmm_weights *wt;
    assert_int_equal(qmm_weights_create(ctx, QMM_TYPE_Q4_0, 64, 256, w, rb, &wt), QMM_OK);
    qmm_path path;
    assert_int_equal(qmm_matmul_path(ctx, wt, 1, &path), QMM_OK);
    char want[64];
    snprintf(want, sizeof want, "compiled-in table for %s", g_id.level);
    assert_string_equal(path.auto_table, want);
    /* a forced strategy names no table */
    assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_GEMV), QMM_OK);
    assert_int_equal(qmm_matmul_path(ctx, wt, 1, &path), QMM_OK);
    assert_null(path.auto_table);
    qmm_weights_free(wt);
    qmm_context_free(ctx);
    free(w);
    /* turned off explicitly, by the parameter or the environment, even with a file there */
    write_text(g_id.default_path, "garbage", 7);
    assert_int_equal(make_ctx("", &ctx), QMM_OK);
    qmm_context_tuning(ctx, &info);
    assert_int_equal(info.state, QMM_TUNING_NONE);
    assert_non_null(strstr(info.reason, "turned off"));
    qmm_context_free(ctx);
    setenv("QMM_TUNE_FILE", "", 1);
    assert_int_equal(make_ctx(NULL, &ctx), QMM_OK);
    qmm_context_tuning(ctx, &info);
    assert_int_equal(info.state, QMM_TUNING_NONE);
    assert_non_null(strstr(info.reason, "QMM_TUNE_FILE"));
    qmm_context_free(ctx);
    remove(g_id.default_path);
    /* an explicitly named file that does not exist is an error */
    char path_missing[300];
    snprintf(path_missing, sizeof path_missing, "%s/missing.json", g_dir);
    expect_refused(path_missing, QMM_ERR_IO, "cannot open");
}

/* The strategy auto takes for q4_0 weights m x 256 at n, and the table it names. */
static qmm_strategy auto_choice(qmm_context *ctx, int64_t m, int64_t n, char *table, size_t len) {
    const size_t rb = 18 * (256 / 32);
    void *w = calloc((size_t)m, rb);
    assert_int_equal(qmm_random_rows(QMM_TYPE_Q4_0, 1, 1.0, w, m, 256), QMM_OK);
    qmm_weights *wt;
    assert_int_equal(qmm_weights_create(ctx, QMM_TYPE_Q4_0, m, 256, w, rb, &wt), QMM_OK);
    qmm_path path;
    assert_int_equal(qmm_matmul_path(ctx, wt, n, &path), QMM_OK);
    if (table) snprintf(table, len, "%s", path.auto_table ? path.auto_table : "(null)");
    qmm_weights_free(wt);
    free(w);
    return path.strategy;
}

/* A good file changes auto's choice, for the shapes its rows hold, and names itself. */
static void test_good_file_changes_auto(void **state) {
    (void)state;
    env_clear();
    qmm_context *ctx;
    assert_int_equal(make_ctx("", &ctx), QMM_OK);
    const qmm_strategy compiled = auto_choice(ctx, 64, 1, NULL, 0);
    qmm_context_free(ctx);
    /* a row that takes something else than the compiled-in table at n = 1 */
    const bool to_gemv = compiled != QMM_STRATEGY_GEMV;
    const qmm_strategy want = to_gemv ? QMM_STRATEGY_GEMV : QMM_STRATEGY_FUSED;
    const qmm_strategy other = to_gemv ? QMM_STRATEGY_FUSED : QMM_STRATEGY_GEMV;
    char rows[512], doc[4096], path[300], table[4400];
    /* shape class 64 x 256 gets `want`; every other shape `other` */
    snprintf(rows, sizeof rows,
             "{\"type\": \"q4_0\", \"m\": [64, 64], \"k\": [256, 256], \"int8_n\": null, "
             "\"gemv_max_n\": %d}, {\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": %d}",
             to_gemv ? 1000 : 0, to_gemv ? 0 : 1000);
    make_doc(doc, sizeof doc, rows, NULL, NULL,
             "\"method\": {\"quick\": true, \"reps\": 3, \"n\": [1, 2], \"shapes\": [[64, 256, 1]],"
             " \"copies\": 1, \"cold\": false, \"seconds\": 1.5, \"seed\": 1, "
             "\"candidates\": [\"gemv\"]}, \"load_average\": [0.1, 0.2], \"measurements\": "
             "[{\"type\": \"q4_0\", \"m\": 64, \"k\": 256, \"n\": 1, \"strategy\": \"gemv\", "
             "\"kernel\": \"x\", \"ms\": 0.1, \"spread\": null, \"status\": \"ok\"}]");
    snprintf(path, sizeof path, "%s/good.json", g_dir);
    write_text(path, doc, strlen(doc));
    char expect_table[4200];
    snprintf(expect_table, sizeof expect_table, "tuning file %s", path);
    for (int how = 0; how < 3; how++) { /* parameter, environment, default location */
        const char *param = how == 0 ? path : NULL;
        if (how == 1) setenv("QMM_TUNE_FILE", path, 1);
        if (how == 2) {
            write_text(g_id.default_path, doc, strlen(doc));
            snprintf(expect_table, sizeof expect_table, "tuning file %s", g_id.default_path);
        }
        assert_int_equal(make_ctx(param, &ctx), QMM_OK);
        unsetenv("QMM_TUNE_FILE");
        qmm_tuning_info info;
        qmm_context_tuning(ctx, &info);
        assert_int_equal(info.state, QMM_TUNING_APPLIED);
        assert_int_equal(info.status, QMM_OK);
        assert_int_equal(info.n_rows, 2);
        assert_int_equal(auto_choice(ctx, 64, 1, table, sizeof table), want);
        assert_string_equal(table, expect_table);
        assert_int_equal(auto_choice(ctx, 32, 1, table, sizeof table), other);
        assert_string_equal(table, expect_table);
        /* the parameter is copied */
        const char *kept = qmm_context_get_params(ctx).tune_file;
        assert_true(param == NULL ? kept == NULL : kept != param && strcmp(kept, param) == 0);
        /* a type without a row keeps the compiled-in table */
        const size_t rb = 34 * (256 / 32);
        void *w = calloc(64, rb);
        assert_int_equal(qmm_random_rows(QMM_TYPE_Q8_0, 1, 1.0, w, 64, 256), QMM_OK);
        qmm_weights *wt;
        assert_int_equal(qmm_weights_create(ctx, QMM_TYPE_Q8_0, 64, 256, w, rb, &wt), QMM_OK);
        qmm_path p;
        assert_int_equal(qmm_matmul_path(ctx, wt, 1, &p), QMM_OK);
        assert_non_null(strstr(p.auto_table, "compiled-in table"));
        qmm_weights_free(wt);
        free(w);
        qmm_context_free(ctx);
    }
    remove(g_id.default_path);
    /* batch-invariant contexts take the row's prefill choice (its choice at the largest n a
     * row names) at every n, never gemv: here fused (no int8 range), from the file */
    qmm_context_params p = qmm_context_default_params();
    p.tune_file = path;
    p.flags = QMM_FLAG_BATCH_INVARIANT;
    assert_int_equal(qmm_context_create(&p, &ctx), QMM_OK);
    assert_int_equal(auto_choice(ctx, 64, 1, table, sizeof table), QMM_STRATEGY_FUSED);
    assert_int_equal(auto_choice(ctx, 32, 1, table, sizeof table), QMM_STRATEGY_FUSED);
    snprintf(expect_table, sizeof expect_table, "tuning file %s (batch-invariant: its choice at n = 2^30, every n)",
             path);
    assert_string_equal(table, expect_table);
    qmm_context_free(ctx);
    /* an int8 range: on a machine with an int8 kernel for q4_0, auto takes it */
    snprintf(rows, sizeof rows, "{\"type\": \"q4_0\", \"int8_n\": [2, 3], \"gemv_max_n\": 0}");
    make_doc(doc, sizeof doc, rows, NULL, NULL, NULL);
    write_text(path, doc, strlen(doc));
    assert_int_equal(make_ctx(path, &ctx), QMM_OK);
    qmm_context_set_strategy(ctx, QMM_STRATEGY_INT8);
    const size_t rb = 18 * (256 / 32);
    void *w = calloc(64, rb);
    assert_int_equal(qmm_random_rows(QMM_TYPE_Q4_0, 1, 1.0, w, 64, 256), QMM_OK);
    qmm_weights *wt;
    assert_int_equal(qmm_weights_create(ctx, QMM_TYPE_Q4_0, 64, 256, w, rb, &wt), QMM_OK);
    qmm_strategy s;
    const bool has_int8 = qmm_matmul_strategy(ctx, wt, 2, &s) == QMM_OK;
    qmm_context_set_strategy(ctx, QMM_STRATEGY_AUTO);
    assert_int_equal(qmm_matmul_strategy(ctx, wt, 1, &s), QMM_OK);
    assert_int_equal(s, QMM_STRATEGY_FUSED);
    assert_int_equal(qmm_matmul_strategy(ctx, wt, 2, &s), QMM_OK);
    assert_int_equal(s, has_int8 ? QMM_STRATEGY_INT8 : QMM_STRATEGY_FUSED);
    assert_int_equal(qmm_matmul_strategy(ctx, wt, 3, &s), QMM_OK);
    assert_int_equal(s, has_int8 ? QMM_STRATEGY_INT8 : QMM_STRATEGY_FUSED);
    assert_int_equal(qmm_matmul_strategy(ctx, wt, 4, &s), QMM_OK);
    assert_int_equal(s, QMM_STRATEGY_FUSED);
    qmm_weights_free(wt);
    qmm_context_free(ctx);
    /* batch-invariant: int8 at every n where the row's int8 range is open-ended (the last n of
     * a tune's grid, written as 2^30), fused where it ends below (the [2, 3] above) */
    for (int open = 0; open < 2; open++) {
        if (open) {
            snprintf(rows, sizeof rows, "{\"type\": \"q4_0\", \"int8_n\": [4, 1073741824], \"gemv_max_n\": 2}");
            make_doc(doc, sizeof doc, rows, NULL, NULL, NULL);
            write_text(path, doc, strlen(doc));
        }
        qmm_context_params bp = qmm_context_default_params();
        bp.tune_file = path;
        bp.flags = QMM_FLAG_BATCH_INVARIANT;
        assert_int_equal(qmm_context_create(&bp, &ctx), QMM_OK);
        assert_int_equal(qmm_weights_create(ctx, QMM_TYPE_Q4_0, 64, 256, w, rb, &wt), QMM_OK);
        for (int64_t n = 1; n <= 5; n++) {
            assert_int_equal(qmm_matmul_strategy(ctx, wt, n, &s), QMM_OK);
            assert_int_equal(s, open && has_int8 ? QMM_STRATEGY_INT8 : QMM_STRATEGY_FUSED);
        }
        qmm_weights_free(wt);
        qmm_context_free(ctx);
    }
    free(w);
    remove(path);
}

/* Files made for another machine, thread count, ISA level, qmm version or backend. */
static void test_other_machine(void **state) {
    (void)state;
    env_clear();
    char doc[4096], mach[1024];
    const char *row = "{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 0}";
    /* another CPU: a consistent identity (its own id) of a CPU this is not */
    snprintf(mach, sizeof mach, "{\"id\": \"0123456789abcdef\", \"cpu\": \"AMD EPYC 7B13 64-Core "
             "Processor\", \"isa\": \"%s\", \"threads\": %d}", g_id.level, g_id.threads);
    make_doc(doc, sizeof doc, row, mach, NULL, NULL);
    bad_doc(doc, QMM_ERR_UNSUPPORTED, "another machine");
    /* another thread count */
    snprintf(mach, sizeof mach, "{\"id\": \"%s\", \"cpu\": \"%s\", \"isa\": \"%s\", \"threads\": "
             "%d}", g_id.machine_id, g_id.device, g_id.level, g_id.threads + 3);
    make_doc(doc, sizeof doc, row, mach, NULL, NULL);
    bad_doc(doc, QMM_ERR_UNSUPPORTED, "threads");
    /* another ISA level */
    snprintf(mach, sizeof mach, "{\"id\": \"%s\", \"cpu\": \"%s\", \"isa\": \"%s\", \"threads\": "
             "%d}", g_id.machine_id, g_id.device,
             strcmp(g_id.level, "generic") == 0 ? "avx2" : "generic", g_id.threads);
    make_doc(doc, sizeof doc, row, mach, NULL, NULL);
    bad_doc(doc, QMM_ERR_UNSUPPORTED, "ISA level");
    /* the right fields with a wrong id */
    snprintf(mach, sizeof mach, "{\"id\": \"ffffffffffffffff\", \"cpu\": \"%s\", \"isa\": \"%s\", "
             "\"threads\": %d}", g_id.device, g_id.level, g_id.threads);
    make_doc(doc, sizeof doc, row, mach, NULL, NULL);
    bad_doc(doc, QMM_ERR_FORMAT, "does not match");
    /* another qmm version, even with fields this version does not know */
    make_doc(doc, sizeof doc, row, NULL, "0.0.1", "\"future_field\": 1");
    bad_doc(doc, QMM_ERR_UNSUPPORTED, "qmm 0.0.1");
    /* another backend */
    make_doc(doc, sizeof doc, row, NULL, NULL, NULL);
    char *b = strstr(doc, "\"backend\": \"cpu\"");
    assert_non_null(b);
    memcpy(b, "\"backend\": \"gpu\"", strlen("\"backend\": \"gpu\""));
    bad_doc(doc, QMM_ERR_UNSUPPORTED, "gpu backend");
    /* a file named for a backend that reads none */
    qmm_context_params p = qmm_context_default_params();
    p.backend = QMM_BACKEND_CUDA;
    p.tune_file = "/nonexistent.json";
    qmm_context *ctx = NULL;
    assert_int_not_equal(qmm_context_create(&p, &ctx), QMM_OK);
    assert_null(ctx);
}

/* Truncated at every byte, and other damage to the JSON text. */
static void test_truncated_and_corrupt(void **state) {
    (void)state;
    env_clear();
    char doc[4096], path[300];
    make_doc(doc, sizeof doc, "{\"type\": \"q4_0\", \"int8_n\": [1, 8], \"gemv_max_n\": 2}", NULL,
             NULL, NULL);
    snprintf(path, sizeof path, "%s/cut.json", g_dir);
    const size_t len = strlen(doc);
    for (size_t cut = 0; cut < len; cut++) {
        write_text(path, doc, cut);
        qmm_context *ctx = NULL;
        qmm_status st = make_ctx(path, &ctx);
        if (st != QMM_ERR_FORMAT || ctx != NULL)
            fail_msg("cut at %zu of %zu: %s (%s)", cut, len, qmm_status_str(st), qmm_last_error());
        assert_non_null(strstr(qmm_last_error(), cut == 0 ? "empty" : "not valid JSON"));
    }
    write_text(path, doc, len);
    qmm_context *ctx;
    assert_int_equal(make_ctx(path, &ctx), QMM_OK); /* the whole file is good */
    qmm_context_free(ctx);
    /* at the default location, a truncated file is ignored */
    expect_ignored(doc, len / 2, QMM_ERR_FORMAT, "truncated");
    /* a NUL byte inside, trailing garbage, not an object, not a tuning file */
    char with_nul[4096];
    memcpy(with_nul, doc, len);
    with_nul[len / 3] = '\0';
    write_text(path, with_nul, len);
    expect_refused(path, QMM_ERR_FORMAT, "NUL");
    expect_ignored(with_nul, len, QMM_ERR_FORMAT, "NUL");
    char trailing[4200];
    snprintf(trailing, sizeof trailing, "%s}", doc);
    bad_doc(trailing, QMM_ERR_FORMAT, "not valid JSON");
    bad_doc("[1, 2, 3]", QMM_ERR_FORMAT, "not a JSON object");
    bad_doc("{\"format\": \"gguf\"}", QMM_ERR_FORMAT, "not a qmm tuning file");
    bad_doc("{}", QMM_ERR_FORMAT, "not a qmm tuning file");
    /* a directory where the file should be */
    char dirpath[300];
    snprintf(dirpath, sizeof dirpath, "%s/adir", g_dir);
    assert_int_equal(mkdir(dirpath, 0755), 0);
    expect_refused(dirpath, QMM_ERR_IO, "not a regular file");
    assert_int_equal(mkdir(g_id.default_path, 0755), 0);
    qmm_tuning_info info;
    assert_int_equal(make_ctx(NULL, &ctx), QMM_OK);
    qmm_context_tuning(ctx, &info);
    assert_int_equal(info.state, QMM_TUNING_IGNORED);
    assert_int_equal(info.status, QMM_ERR_IO);
    qmm_context_free(ctx);
    rmdir(g_id.default_path);
    rmdir(dirpath);
    remove(path);
}

/* Unknown fields at every level, duplicates, wrong kinds, out-of-range values, bad rows. */
static void test_unknown_fields_and_bad_values(void **state) {
    (void)state;
    env_clear();
    char doc[4096], mach[1024];
    const char *row = "{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 0}";
    make_doc(doc, sizeof doc, row, NULL, NULL, "\"shiny_new_field\": true");
    bad_doc(doc, QMM_ERR_FORMAT, "unknown field 'shiny_new_field'");
    snprintf(mach, sizeof mach, "{\"id\": \"%s\", \"cpu\": \"%s\", \"isa\": \"%s\", \"threads\": "
             "%d, \"gpu\": \"x\"}", g_id.machine_id, g_id.device, g_id.level, g_id.threads);
    make_doc(doc, sizeof doc, row, mach, NULL, NULL);
    bad_doc(doc, QMM_ERR_FORMAT, "unknown field 'gpu'");
    make_doc(doc, sizeof doc, "{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 0, "
             "\"fp8_n\": [1, 2]}", NULL, NULL, NULL);
    bad_doc(doc, QMM_ERR_FORMAT, "unknown field 'fp8_n'");
    make_doc(doc, sizeof doc, row, NULL, NULL, "\"method\": {\"quick\": true, \"flux\": 1}");
    bad_doc(doc, QMM_ERR_FORMAT, "unknown field 'flux'");
    make_doc(doc, sizeof doc, row, NULL, NULL, "\"measurements\": [{\"type\": \"q4_0\", "
             "\"watts\": 3}]");
    bad_doc(doc, QMM_ERR_FORMAT, "unknown field 'watts'");
    make_doc(doc, sizeof doc, row, NULL, NULL, "\"rows\": []");
    bad_doc(doc, QMM_ERR_FORMAT, "field 'rows' twice");
    make_doc(doc, sizeof doc, row, NULL, NULL, "\"warnings\": \"busy\"");
    bad_doc(doc, QMM_ERR_FORMAT, "twice");
    make_doc(doc, sizeof doc, row, NULL, NULL, "\"load_average\": \"high\"");
    bad_doc(doc, QMM_ERR_FORMAT, "load_average");
    /* a newer format version */
    make_doc(doc, sizeof doc, row, NULL, NULL, NULL);
    char *v = strstr(doc, "\"format_version\": 1");
    assert_non_null(v);
    v[strlen("\"format_version\": ")] = '2';
    bad_doc(doc, QMM_ERR_FORMAT, "format version 2");
    /* rows */
    static const struct { const char *row, *phrase; } bad_rows[] = {
        {"{\"type\": \"q9_9\", \"int8_n\": null, \"gemv_max_n\": 0}", "not a weight type"},
        {"{\"type\": \"q8_K\", \"int8_n\": null, \"gemv_max_n\": 0}", "not a weight type"},
        {"{\"type\": 4, \"int8_n\": null, \"gemv_max_n\": 0}", "type"},
        {"{\"int8_n\": null, \"gemv_max_n\": 0}", "type"},
        {"{\"type\": \"q4_0\", \"gemv_max_n\": 0}", "int8_n is missing"},
        {"{\"type\": \"q4_0\", \"int8_n\": null}", "gemv_max_n is missing"},
        {"{\"type\": \"q4_0\", \"int8_n\": [5, 2], \"gemv_max_n\": 0}", "lo > hi"},
        {"{\"type\": \"q4_0\", \"int8_n\": [0, 2], \"gemv_max_n\": 0}", "int8_n[0]"},
        {"{\"type\": \"q4_0\", \"int8_n\": [1], \"gemv_max_n\": 0}", "[lo, hi]"},
        {"{\"type\": \"q4_0\", \"int8_n\": [1, 2, 3], \"gemv_max_n\": 0}", "[lo, hi]"},
        {"{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": -1}", "gemv_max_n"},
        {"{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 1.5}", "whole number"},
        {"{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 1e300}", "whole number"},
        {"{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": \"4\"}", "not a number"},
        {"{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 0, \"m\": [0, 4]}", "m[0]"},
        {"{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 0, \"k\": [8, 4]}", "lo > hi"},
        {"{\"type\": \"q4_0\", \"type\": \"q4_1\", \"int8_n\": null, \"gemv_max_n\": 0}", "twice"},
        {"[1]", "not a JSON object"},
        /* a row that can never apply: an earlier row of its type holds all its shapes */
        {"{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 0}, {\"type\": \"q4_0\", "
         "\"m\": [64, 64], \"int8_n\": null, \"gemv_max_n\": 4}", "never apply"},
        {"{\"type\": \"q4_0\", \"m\": [1, 100], \"int8_n\": null, \"gemv_max_n\": 0}, "
         "{\"type\": \"q4_0\", \"m\": [64, 64], \"k\": [256, 256], \"int8_n\": null, "
         "\"gemv_max_n\": 4}", "never apply"},
        {"{\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 0}, {\"type\": \"q4_0\", "
         "\"int8_n\": null, \"gemv_max_n\": 4}", "never apply"},
    };
    for (size_t i = 0; i < sizeof bad_rows / sizeof bad_rows[0]; i++) {
        make_doc(doc, sizeof doc, bad_rows[i].row, NULL, NULL, NULL);
        bad_doc(doc, QMM_ERR_FORMAT, bad_rows[i].phrase);
    }
    /* rows of different types, or a shaped row before the general one: fine */
    make_doc(doc, sizeof doc, "{\"type\": \"q4_0\", \"m\": [64, 64], \"int8_n\": null, "
             "\"gemv_max_n\": 4}, {\"type\": \"q4_0\", \"int8_n\": null, \"gemv_max_n\": 0}, "
             "{\"type\": \"q4_K\", \"int8_n\": null, \"gemv_max_n\": 0}", NULL, NULL, NULL);
    char path[300];
    snprintf(path, sizeof path, "%s/ok.json", g_dir);
    write_text(path, doc, strlen(doc));
    qmm_context *ctx;
    assert_int_equal(make_ctx(path, &ctx), QMM_OK);
    qmm_context_free(ctx);
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_no_file),
        cmocka_unit_test(test_good_file_changes_auto),
        cmocka_unit_test(test_other_machine),
        cmocka_unit_test(test_truncated_and_corrupt),
        cmocka_unit_test(test_unknown_fields_and_bad_values),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
