#!/usr/bin/env bash
# Installs what building Agora needs beyond the Rust toolchain, on Debian/Ubuntu:
# libclang (RocksDB's bindgen) and a C++ compiler (RocksDB's C++ sources).
# Idempotent: installs nothing when everything is already there.
set -euo pipefail

need=()
if ! ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/*/libclang*.so* >/dev/null 2>&1; then
  need+=(libclang-dev)
fi
command -v c++ >/dev/null 2>&1 || need+=(g++)
command -v cc >/dev/null 2>&1 || need+=(gcc)

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
