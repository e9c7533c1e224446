#!/usr/bin/env python3
"""`cmake --install` gives a usable library: examples/matmul.c (the README's program) finds
qmm through pkg-config (shared: qmm.pc; static archive: qmm-static.pc) and through CMake's
find_package(qmm), builds, links and runs a small matmul checked against the reference.
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
