#!/usr/bin/env bash
# Configures and builds rewind into ${BUILD_DIR:-build}. Warnings are errors under CI.
# REWIND_BUILD_ONLY="apps tests/petsc" builds only the targets of those build subdirectories and
# what they link (the libraries): scripts/test-petsc.sh does so for a PETSc release it runs only
# the PETSc label against. It needs the Unix Makefiles generator; with another one everything is
# built.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
werror=OFF
if [ "${CI:-}" = "true" ] || [ "${REWIND_WERROR:-}" = "ON" ]; then werror=ON; fi
cmake -S . -B "$build_dir" -DREWIND_WERROR="$werror" ${REWIND_CMAKE_ARGS:-} >/dev/null
if [ -n "${REWIND_BUILD_ONLY:-}" ] &&
  grep -qx 'CMAKE_GENERATOR:INTERNAL=Unix Makefiles' "$build_dir/CMakeCache.txt"; then
  for dir in $REWIND_BUILD_ONLY; do
    if [ ! -f "$build_dir/$dir/Makefile" ]; then
      echo "build: REWIND_BUILD_ONLY names $dir, which $build_dir does not have" >&2
      exit 2
    fi
    make -C "$build_dir/$dir" --no-print-directory -j "$(nproc)"
  done
else
  cmake --build "$build_dir" -j "$(nproc)"
fi
