#!/usr/bin/env bash
# The sanitizer configuration: builds rewind, its tests and apps with AddressSanitizer and
# UndefinedBehaviorSanitizer (-DREWIND_SANITIZE=address,undefined) into
# ${SANITIZE_BUILD_DIR:-build-sanitize} and runs the default suite there, less what does not run
# rewind's code under the sanitizers (the install, format and layering checks, PETSc's own
# trajectories), and a selection of the rest that fits CI's time (below: a sample of the PETSc
# tutorial comparisons, each multi-rank test at one rank count). A leak, an invalid access or
# undefined behaviour fails the test that hit it; tests/sanitizers/lsan.supp names the libraries
# whose own leaks are not reported. Extra arguments go to both ctest runs (for the whole suite
# instrumented, run ctest in the build directory); the exit status is non-zero if either
# failed. CI runs it after scripts/test.sh (.ci/run).
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
# and disk budgets, endpoints, a lossless and a lossy codec, and the event and segment programs
# at 2 ranks. A test run at several rank counts runs here once, at 2 or 3 ranks: the 1- and
# 4-rank runs are left to the default configuration (4 instrumented ranks on 2 cores take 10 to
# 20 times as long as uninstrumented). Of the kill-and-resume runs (a minute or more each
# instrumented) the PETSc ex5adj one and the PETSc ensemble's, at 2 ranks, without their
# refusal variants; the long searches and sweeps (TwoLevel's chain and scaling, online's
# repetition bound, the CAMS race, the theta model, the PETSc advice and recompute-warning
# sweeps) are pure computation whose shorter siblings run here and which the default
# configuration checks in full. CI's 90 minutes hold the three configurations with this
# selection (.ci/run prints each one's time; docs/reliability.md has the figures).
status=0
ctest --test-dir "$build_dir" -LE 'bench|soak|valgrind|fuzz' \
  -E '^(install|format|layering)\.|^petsc\.(builtin|builtin_fails|harness|rewind|events|baseline|sweep)\.|^engine\.resume\.(diffusion\.|lorenz\.kills\.sync)|^petsc\.resume\.ex9adj\.|^petsc\.resume\.ex5adj\.np2\.(zstd|adapt)\.|^ensemble\.resume\.|\.np4$|^(apps|engine|ensemble|mpi|petsc)\..*\.np1$|^store\.(conformance|funneled|hdf5|hdf5_codec)\.np1$|^(engine\.resume\.lorenz|petsc\.resume\.ex5adj\.np2)\.refusals|^ensemble\.map\.np2$|^engine\.resume\.lorenz\.kills|^TwoLevel\.(ChainKeepsTheGapUnderOnePercent|ScalesWithABoundedGap)$|^Online\.StaysValidWithABoundedRepetitionNumber$|^CamsOracle\.NeverMoreForwardStepsThanCams$|^schedule\.theta_model$|^petsc\.edges\.(advice|recompute)$' \
  --output-on-failure -j "$(nproc)" "$@" || status=$?
ctest --test-dir "$build_dir" -LE 'bench|soak|valgrind|fuzz' \
  -R '^petsc\.(rewind\.ex5adj\.np2\.(fixed\.(ram3|disk4|ram2_disk3)\.so1|fixed\.(endpoints|compress_zstd|compress_zfp|disk_mixed\.async1|keep_files\.async1)|rk4\.(ram3\.so0|disk_mixed\.async1))|events\.(parameter|segments)\.ram2_disk3\.so1\.np2)$' \
  --output-on-failure -j "$(nproc)" "$@" || status=$?
exit "$status"
