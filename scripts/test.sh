#!/usr/bin/env bash
# Installs dependencies, builds, and runs the default test suite (everything but the `bench`,
# `soak`, `valgrind` and `fuzz` labels). Extra arguments go to ctest, e.g. scripts/test.sh -R revolve.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "${BUILD_DIR:-build}" -LE 'bench|soak|valgrind|fuzz' --output-on-failure -j "$(nproc)" "$@"
