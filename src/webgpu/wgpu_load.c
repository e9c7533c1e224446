/*
 * wgpu_load.c — opening wgpu-native at run time (wgpu_api.h).
 *
 * Where the library is looked for, in order (the first that opens and has every entry point
 * of the table wins):
 *   1. the file named by the environment variable QMM_WGPU_LIBRARY, if set (then only there);
 *   2. next to the module holding this code: libqmm.so's directory (`cmake --install` puts
 *      libwgpu_native-release.so beside it), or the executable's for a static link;
 *   3. the install libdir configured at build time (QMM_WGPU_INSTALL_LIB);
 *   4. the copy the build used (QMM_WGPU_BUILD_LIB: .deps/wgpu-native/lib of the source tree);
 *   5. the bare file name, through the loader's search path (LD_LIBRARY_PATH, ldconfig).
 * The outcome is decided once per process; a failure names every path tried and dlerror's
 * reason for each.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/wgpu_api.h"

qmm_wgpu_api qmm_wgpu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static qmm_status load_status = QMM_ERR_UNSUPPORTED;
static char load_error[1024];

/* Appends "; <text>" to the failure report. */
static void note(const char *fmt, const char *a, const char *b) {
    size_t used = strlen(load_error);
    if (used + 8 >= sizeof load_error) return;
    snprintf(load_error + used, sizeof load_error - used, fmt, a, b);
}

/* Opens `path` and looks up every entry point: true with the table filled, or false with the
 * reason noted (the handle closed). */
static bool try_open(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        note("; %s: %s", path, e ? e : "dlopen failed");
        return false;
    }
    qmm_wgpu_api api;
#define QMM_WGPU_LOOKUP(name)                                                              \
    *(void **)(&api.name) = dlsym(h, #name);                                               \
    if (api.name == NULL) {                                                                \
        note("; %s: has no entry point %s", path, #name);                                  \
        dlclose(h);                                                                        \
        return false;                                                                      \
    }
    QMM_WGPU_FUNCS(QMM_WGPU_LOOKUP)
#undef QMM_WGPU_LOOKUP
    const uint32_t v = api.wgpuGetVersion();
    if (v != QMM_WGPU_VERSION) {
        char got[32];
        snprintf(got, sizeof got, "0x%08x", v);
        note("; %s: wgpu-native version %s, but this libqmm was checked against 0x1d000101 "
             "(29.0.1.1; other versions may abort in entry points qmm calls)", path, got);
        dlclose(h);
        return false;
    }
    qmm_wgpu = api; /* the handle stays open for the life of the process */
    return true;
}

static void load(void) {
    snprintf(load_error, sizeof load_error, "WebGPU backend: cannot load wgpu-native (%s)",
             QMM_WGPU_LIBRARY_NAME);
    const char *env = getenv("QMM_WGPU_LIBRARY");
    if (env != NULL && env[0] != '\0') {
        if (try_open(env)) load_status = QMM_OK;
        else note("%s%s", "; (set by QMM_WGPU_LIBRARY)", "");
        return;
    }
    Dl_info info;
    if (dladdr((void *)&qmm_wgpu_load, &info) != 0 && info.dli_fname != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s", info.dli_fname);
        char *slash = strrchr(path, '/');
        if (slash != NULL) {
            snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "%s", QMM_WGPU_LIBRARY_NAME);
            if (try_open(path)) goto ok;
        }
    }
#ifdef QMM_WGPU_INSTALL_LIB
    if (try_open(QMM_WGPU_INSTALL_LIB)) goto ok;
#endif
#ifdef QMM_WGPU_BUILD_LIB
    if (try_open(QMM_WGPU_BUILD_LIB)) goto ok;
#endif
    if (try_open(QMM_WGPU_LIBRARY_NAME)) goto ok;
    note("%s%s", "; run scripts/deps.sh (it unpacks the library into .deps/wgpu-native) or set "
                 "QMM_WGPU_LIBRARY to its path", "");
    return;
ok:
    load_status = QMM_OK;
}

qmm_status qmm_wgpu_load(void) {
    pthread_once(&load_once, load);
    if (load_status != QMM_OK) return qmm_error(load_status, "%s", load_error);
    return QMM_OK;
}
