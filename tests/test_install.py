#!/usr/bin/env python3
"""`cmake --install` gives a usable library: examples/matmul.c (the README's program) finds
qmm through pkg-config (shared: qmm.pc; static archive: qmm-static.pc) and through CMake's
find_package(qmm), builds, links and runs a small matmul checked against the reference.
With the WebGPU backend built (QMM_WITH_WEBGPU=1 from ctest): libwgpu_native-release.so is
installed beside libqmm.so, and a program linked with the installed libqmm.so loads that
copy (read from /proc/self/maps: not the build tree's) and, where a Vulkan adapter exists,
runs a q8_0 matmul on it checked against the reference.
Needs QMM_BUILD_DIR and QMM_SOURCE_DIR (set by ctest)."""
import os
import subprocess
import sys
import tempfile


CMAKELISTS = """cmake_minimum_required(VERSION 3.22)
project(use_qmm C)
find_package(qmm REQUIRED)
add_executable(use_qmm use.c)
target_link_libraries(use_qmm qmm::qmm)
"""


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        print("FAILED:", " ".join(cmd), "\n", p.stdout[-3000:], p.stderr[-3000:])
        sys.exit(1)
    return p.stdout


WEBGPU_PROGRAM = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <qmm.h>
#include <qmm_webgpu.h>
int main(void) {
    qmm_status st = qmm_backend_check(QMM_BACKEND_WEBGPU);
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "libwgpu_native-release.so")) { printf("loaded %s", strchr(line, '/')); break; }
    if (f) fclose(f);
    if (st != QMM_OK) { printf("unavailable: %s\n", qmm_last_error()); return 3; }
    enum { M = 8, K = 64, N = 3 };
    float w[M * K], x[N * K], y[N * M], ref[N * M];
    for (int i = 0; i < M * K; i++) w[i] = (float)((i * 37) % 19) - 9.0f;
    for (int i = 0; i < N * K; i++) x[i] = (float)((i * 11) % 7) - 3.0f;
    unsigned char q[M * 2 * 34];
    size_t rb;
    qmm_row_bytes(QMM_TYPE_Q8_0, K, &rb);
    qmm_quantize_rows(QMM_TYPE_Q8_0, w, q, M, K);
    qmm_matmul_ref(QMM_TYPE_Q8_0, M, K, q, rb, N, x, K, ref, M);
    qmm_context_params p = qmm_context_default_params();
    p.backend = QMM_BACKEND_WEBGPU;
    qmm_context *ctx;
    qmm_weights *wt;
    void *dx, *dy;
    if (qmm_context_create(&p, &ctx) || qmm_weights_create(ctx, QMM_TYPE_Q8_0, M, K, q, rb, &wt) ||
        qmm_buffer_alloc(ctx, sizeof x, &dx) || qmm_buffer_alloc(ctx, sizeof y, &dy) ||
        qmm_buffer_upload(ctx, dx, x, sizeof x) || qmm_matmul(ctx, wt, N, dx, K, dy, M) ||
        qmm_buffer_download(ctx, y, dy, sizeof y)) {
        printf("failed: %s\n", qmm_last_error());
        return 1;
    }
    qmm_webgpu_info info;
    qmm_webgpu_get_info(ctx, &info);
    for (int i = 0; i < N * M; i++)
        if (y[i] != ref[i]) { printf("wrong output %d: %g vs %g\n", i, y[i], ref[i]); return 1; }
    printf("webgpu matmul ok on %s (%s)\n", info.adapter, info.backend_api);
    qmm_weights_free(wt);
    qmm_buffer_free(ctx, dx);
    qmm_buffer_free(ctx, dy);
    qmm_context_free(ctx);
    return 0;
}
"""


def check_webgpu(tmp, prefix, libdir, env):
    """The installed wgpu-native is the one the installed libqmm.so loads."""
    so = os.path.join(libdir, "libwgpu_native-release.so")
    if not os.path.isfile(so):
        print("FAILED: the WebGPU backend is built but", so, "was not installed")
        sys.exit(1)
    src = os.path.join(tmp, "use_webgpu.c")
    with open(src, "w") as f:
        f.write(WEBGPU_PROGRAM)
    flags = run(["pkg-config", "--cflags", "--libs", "qmm"], env=env).split()
    exe = os.path.join(tmp, "use_webgpu")
    run(["cc", "-std=c11", src, "-o", exe, *flags, "-lm", "-Wl,-rpath," + libdir], env=env)
    wenv = dict(env)
    wenv.pop("QMM_WGPU_LIBRARY", None)
    xdg = os.path.join(tmp, "xdg")
    os.makedirs(xdg, mode=0o700, exist_ok=True)
    wenv["XDG_RUNTIME_DIR"] = xdg
    p = subprocess.run([exe], capture_output=True, text=True, env=wenv)
    out = p.stdout + p.stderr
    loaded = [l.split(" ", 1)[1].strip() for l in p.stdout.splitlines() if l.startswith("loaded ")]
    if p.returncode not in (0, 3) or not loaded or \
            os.path.realpath(loaded[0]) != os.path.realpath(so):
        print("FAILED: the installed libqmm.so did not load", so, "(rc %d):\n%s" % (p.returncode, out))
        sys.exit(1)
    if p.returncode == 3:
        print("webgpu program: loaded the installed wgpu-native; no adapter here:", out.strip())
    else:
        print("webgpu program:", out.strip())


def main():
    build = os.environ.get("QMM_BUILD_DIR")
    if not build:
        print("SKIP: QMM_BUILD_DIR is not set (run through ctest)")
        sys.exit(77)
    if os.environ.get("QMM_SANITIZE"):
        print("SKIP: a sanitizer build's library needs the sanitizer runtime in every consumer")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "prefix")
        run(["cmake", "--install", build, "--prefix", prefix])
        with open(os.path.join(os.environ["QMM_SOURCE_DIR"], "examples", "matmul.c")) as f:
            program = f.read()
        src = os.path.join(tmp, "use.c")
        with open(src, "w") as f:
            f.write(program)
        # 1. pkg-config
        env = dict(os.environ)
        libdirs = [d for d in ("lib", "lib64", "lib/x86_64-linux-gnu")
                   if os.path.isdir(os.path.join(prefix, d, "pkgconfig"))]
        if not libdirs:
            print("FAILED: no qmm.pc installed under", prefix)
            sys.exit(1)
        libdir = os.path.join(prefix, libdirs[0])
        env["PKG_CONFIG_PATH"] = os.path.join(libdir, "pkgconfig")
        flags = run(["pkg-config", "--cflags", "--libs", "qmm"], env=env).split()
        exe = os.path.join(tmp, "use_pc")
        run(["cc", src, "-o", exe, *flags, "-Wl,-rpath," + libdir], env=env)
        print("pkg-config program:", run([exe]).strip())
        if os.environ.get("QMM_WITH_WEBGPU") == "1":
            check_webgpu(tmp, prefix, libdir, env)
        # 1b. the static archive through qmm-static.pc (no libqmm.so needed at run time)
        flags = run(["pkg-config", "--cflags", "--libs", "qmm-static"], env=env).split()
        exe = os.path.join(tmp, "use_static")
        run(["cc", src, "-o", exe, *flags], env=env)
        if "libqmm.so" in run(["ldd", exe]):
            print("FAILED: the qmm-static program still loads libqmm.so")
            sys.exit(1)
        print("pkg-config static program:", run([exe]).strip())
        # 2. CMake package
        proj = os.path.join(tmp, "proj")
        os.makedirs(proj)
        with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
            f.write(CMAKELISTS)
        with open(os.path.join(proj, "use.c"), "w") as f:
            f.write(program)
        run(["cmake", "-S", proj, "-B", os.path.join(proj, "b"), "-DCMAKE_PREFIX_PATH=" + prefix,
             "-DCMAKE_BUILD_TYPE=Release"])
        run(["cmake", "--build", os.path.join(proj, "b")])
        print("find_package program:", run([os.path.join(proj, "b", "use_qmm")]).strip())
    print("install: pkg-config and find_package(qmm) consumers built and ran")


if __name__ == "__main__":
    main()
