#!/usr/bin/env bash
# Installs what building Agora needs beyond the Rust toolchain, on Debian/Ubuntu:
# libclang (RocksDB's bindgen), a C++ compiler (RocksDB's C++ sources) and
# make (jemalloc's build, the node's allocator), Python with venv (the
# property-based API test's schemathesis), and Chromium with its WebDriver
# (the live page's browser test).
# Idempotent: installs nothing when everything is already there.
set -euo pipefail

need=()
# bindgen loads libclang.so itself (libclang-cpp.so, which some images ship, is
# not enough), so look for that library exactly.
has_libclang() {
  if command -v dpkg >/dev/null 2>&1; then
    dpkg -s libclang-dev >/dev/null 2>&1 && return 0
  fi
  ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*/libclang.so* /usr/lib/*/libclang-[0-9]*.so* >/dev/null 2>&1
}
has_libclang || need+=(libclang-dev)
command -v c++ >/dev/null 2>&1 || need+=(g++)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
# The live page's test drives headless Chromium over WebDriver.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
# The property-based API test installs schemathesis from PyPI into a venv.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3 python3-venv)

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
