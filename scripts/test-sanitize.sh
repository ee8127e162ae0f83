#!/usr/bin/env bash
# The sanitizer configuration: builds rewind, its tests and apps with AddressSanitizer and
# UndefinedBehaviorSanitizer (-DREWIND_SANITIZE=address,undefined) into
# ${SANITIZE_BUILD_DIR:-build-sanitize} and runs the default suite there, less what does not run
# rewind's code under the sanitizers (the install, format and layering checks, PETSc's own
# trajectories) and less most PETSc tutorial comparisons, of which it runs a sample (below). A
# leak, an invalid access or undefined behaviour fails the test that hit it;
# tests/sanitizers/lsan.supp names the libraries whose own leaks are not reported. Extra
# arguments go to both ctest runs; the exit status is non-zero if either failed. CI runs it after scripts/test.sh (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=${SANITIZE_BUILD_DIR:-build-sanitize}
# Warnings are checked in the default build; GCC's flow warnings misfire on instrumented code.
BUILD_DIR=$build_dir REWIND_WERROR=OFF CI= \
  REWIND_CMAKE_ARGS="-DREWIND_SANITIZE=address,undefined -DREWIND_BUILD_BENCHMARKS=OFF ${REWIND_CMAKE_ARGS:-}" \
  scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Everything but the PETSc tutorial comparisons (about 150 runs of PETSc's own code, which would
# double the time), then a sample of them: the rewind trajectory at 2 ranks with RAM, two-level
# and disk budgets, with and without stages, and the event and segment programs at 2 ranks. Of the
# kill-and-resume runs (a minute or two each instrumented) one stepper's, with asynchronous I/O,
# and the PETSc ones at 2 ranks.
status=0
ctest --test-dir "$build_dir" -LE 'bench|soak|valgrind|fuzz' \
  -E '^(install|format|layering)\.|^petsc\.(builtin|builtin_fails|harness|rewind|events|baseline|sweep)\.|^engine\.resume\.(diffusion\.|lorenz\.kills\.sync)|^petsc\.resume\.ex9adj\.' \
  --output-on-failure -j "$(nproc)" "$@" || status=$?
ctest --test-dir "$build_dir" -LE 'bench|soak|valgrind|fuzz' \
  -R '^petsc\.(rewind\.ex5adj\.np2\.(fixed|rk4)|events\.(parameter|segments)\..*\.np2)' \
  --output-on-failure -j "$(nproc)" "$@" || status=$?
exit "$status"
