# Cross-compiling anvil for aarch64 Linux on an x86-64 Debian host.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
#
# Needs g++-aarch64-linux-gnu, the arm64 Highway package (libhwy-dev:arm64,
# multiarch) and qemu-user-static; tools/test --arch aarch64 installs them.
# CMAKE_CROSSCOMPILING_EMULATOR makes ctest (and add_test commands) run the
# aarch64 binaries under qemu; QEMU_CPU picks the emulated CPU (cortex-a72:
# NEON only; max: NEON, SVE, SVE2).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Debian multiarch: arm64 libraries live in /usr/lib/aarch64-linux-gnu, the
# (architecture-independent) headers in /usr/include.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

find_program(ANVIL_QEMU_AARCH64 qemu-aarch64-static)
if(ANVIL_QEMU_AARCH64)
  # -L: where the emulated dynamic loader and libc are found.  The loader
  # would still read the host's /etc/ld.so.cache, which names the multiarch
  # libc6:arm64 (another build of glibc than the cross libc the loader comes
  # from); mixing the two makes pthread_create spin forever.  LD_LIBRARY_PATH
  # (a guest path, resolved under -L) keeps every library on the cross side.
  # emulator-time-limit: runs qemu under tools/test's time limit, if any.
  set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/emulator-time-limit
      ${ANVIL_QEMU_AARCH64} -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/lib)
endif()
