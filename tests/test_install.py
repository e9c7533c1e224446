#!/usr/bin/env python3
"""`cmake --install` gives a usable library: a program finds qmm through pkg-config and
through CMake's find_package(qmm), builds, links and runs a small matmul checked against
the reference. Needs QMM_BUILD_DIR (set by ctest)."""
import os
import subprocess
import sys
import tempfile

PROGRAM = r"""
#include <qmm.h>
#include <qmm_gguf.h>
#include <stdio.h>
int main(void) {
    enum { M = 8, K = 64, N = 3 };
    float w[M * K], x[N * K], y[N * M], r[N * M];
    unsigned char q[M * 2 * 18];
    for (int i = 0; i < M * K; i++) w[i] = (float)((i * 37) % 17) - 8.0f;
    for (int i = 0; i < N * K; i++) x[i] = (float)((i * 11) % 7) - 3.0f;
    qmm_context *ctx; qmm_weights *wt; qmm_diff d; qmm_path path;
    if (qmm_quantize_rows(QMM_TYPE_Q4_0, w, q, M, K) || qmm_context_create(NULL, &ctx) ||
        qmm_weights_create(ctx, QMM_TYPE_Q4_0, M, K, q, 2 * 18, &wt) ||
        qmm_matmul(ctx, wt, N, x, K, y, M) || qmm_matmul_path(ctx, wt, N, &path) ||
        qmm_matmul_ref(QMM_TYPE_Q4_0, M, K, q, 2 * 18, N, x, K, r, M) ||
        qmm_compare(N, M, y, M, r, M, &d)) {
        fprintf(stderr, "error: %s\n", qmm_last_error());
        return 1;
    }
    printf("%s: nmse %g (limit %g)\n", path.kernel, d.nmse, path.max_nmse);
    qmm_weights_free(wt);
    qmm_context_free(ctx);
    return qmm_diff_ok(&d, path.max_nmse, path.max_rel_err) ? 0 : 1;
}
"""

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
        src = os.path.join(tmp, "use.c")
        with open(src, "w") as f:
            f.write(PROGRAM)
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
        # 2. CMake package
        proj = os.path.join(tmp, "proj")
        os.makedirs(proj)
        with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
            f.write(CMAKELISTS)
        with open(os.path.join(proj, "use.c"), "w") as f:
            f.write(PROGRAM)
        run(["cmake", "-S", proj, "-B", os.path.join(proj, "b"), "-DCMAKE_PREFIX_PATH=" + prefix,
             "-DCMAKE_BUILD_TYPE=Release"])
        run(["cmake", "--build", os.path.join(proj, "b")])
        print("find_package program:", run([os.path.join(proj, "b", "use_qmm")]).strip())
    print("install: pkg-config and find_package(qmm) consumers built and ran")


if __name__ == "__main__":
    main()
