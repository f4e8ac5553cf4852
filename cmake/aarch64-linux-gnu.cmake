# Cross toolchain of the aarch64 build (preset `aarch64`, scripts/test_aarch64.sh): Debian's
# g++-aarch64-linux-gnu, code for one Raspberry Pi core, the tests run under qemu-user emulating that core.
# The default is a Pi 4's Cortex-A72 (ARMv8.0-A with NEON; no dotprod, no fp16 arithmetic): its code runs on
# a Pi 5's Cortex-A76 too, so it is the common denominator. -DMQ_AARCH64_CPU=cortex-a76 builds for a Pi 5.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(MQ_AARCH64_CPU cortex-a72 CACHE STRING "-mcpu of the aarch64 build and qemu's -cpu: cortex-a72 (Pi 4) or cortex-a76 (Pi 5)")
set(CMAKE_CXX_FLAGS_INIT "-mcpu=${MQ_AARCH64_CPU}")

# Target libraries (libstdc++, libgomp, libc) come from the cross packages' sysroot only. Debian's cross gcc
# searches that sysroot's headers first and the host's /usr/include after them, so the header-only
# libraries (Eigen, xsimd, doctest, nlohmann-json, fmt's headers) are the host packages' copies; CMake
# package files are looked up on the host too (cmake/kernels_only.cmake uses only arch-independent ones).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# ctest runs every test executable through qemu-user: the sysroot's loader and libraries (-L), and the
# chosen core's features only (-cpu), so an instruction that core lacks stops the test (SIGILL).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu ${MQ_AARCH64_CPU})
