# CMake toolchain file: cross-build qmm for aarch64 Linux with Debian's gcc-aarch64-linux-gnu,
# finding the arm64 libraries of `dpkg --add-architecture arm64` (libopenblas-dev:arm64,
# libcmocka-dev:arm64, libcjson-dev:arm64) through pkg-config's multiarch directories, and
# running the built programs (ctest, try_run) under qemu-aarch64.
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The CPU model qemu emulates comes from the environment variable QEMU_CPU, read by qemu
# itself (unset: qemu's default for aarch64 programs, "max", with every feature it knows:
# dotprod, i8mm, SVE; "cortex-a57": plain Armv8.0 NEON). scripts/test-arm64.sh sets it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(QMM_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${QMM_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${QMM_CROSS_TRIPLE}-g++)
set(QMM_CROSS_SYSROOT /usr/${QMM_CROSS_TRIPLE})

# Libraries and headers: the cross toolchain's own, then the multiarch arm64 packages in
# /usr/lib/aarch64-linux-gnu and /usr/include (programs: the host's).
set(CMAKE_FIND_ROOT_PATH ${QMM_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_LIBRARY_ARCHITECTURE ${QMM_CROSS_TRIPLE})
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${QMM_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# No -L ${QMM_CROSS_SYSROOT}: the programs load the multiarch arm64 libraries (OpenBLAS,
# cmocka, and with them libc6:arm64's libc.so.6 from /lib/aarch64-linux-gnu), so the dynamic
# loader must be libc6:arm64's too (/lib/ld-linux-aarch64.so.1). With -L the loader of the
# cross toolchain's own glibc (libc6-arm64-cross, another build) meets libc6:arm64's libc:
# their private data disagree and the first pthread_create walks a broken list forever.
find_program(QMM_QEMU_AARCH64 qemu-aarch64)
if(QMM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${QMM_QEMU_AARCH64})
endif()
