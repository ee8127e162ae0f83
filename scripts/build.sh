#!/usr/bin/env bash
# Configures and builds rewind into ${BUILD_DIR:-build}. Warnings are errors under CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
werror=OFF
if [ "${CI:-}" = "true" ] || [ "${REWIND_WERROR:-}" = "ON" ]; then werror=ON; fi
cmake -S . -B "$build_dir" -DREWIND_WERROR="$werror" ${REWIND_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
