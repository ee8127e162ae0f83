#!/usr/bin/env bash
# Builds rewind against one PETSc release and runs its PETSc label (PETSc's TS adjoint tutorials
# of that release bit for bit against PETSc's store-all, events and segments, resume, the
# ensemble front end, the apps). Run it for each tested release before every change to
# src/petsc:
#
#   scripts/test-petsc.sh 3.18          # Debian's PETSc, in ${BUILD_DIR:-build}
#   scripts/test-petsc.sh 3.22.5        # built by scripts/build-petsc.sh, in build-petsc-3.22.5
#   scripts/test-petsc.sh 3.25.4
#   scripts/test-petsc.sh 3.25.4-cams   # the same release configured with CAMS: adds the
#                                       # rewind-vs-CAMS tutorial tests (petsc.cams.*)
#   scripts/test-petsc.sh all           # the three, one after the other
#
# Extra arguments go to ctest (e.g. -R ex5adj). The build directory of a built release is
# build-petsc-VERSION unless BUILD_DIR says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?"usage: scripts/test-petsc.sh 3.18|3.22.5|3.25.4|3.25.4-cams|all [ctest arguments]"}
shift
if [ "$version" = all ]; then
  for v in 3.18 3.22.5 3.25.4; do "$0" "$v" "$@"; done
  exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
scripts/install-deps.sh
if [ "$version" = 3.18 ] || [ "$version" = debian ]; then
  build_dir=${BUILD_DIR:-build}
  BUILD_DIR=$build_dir scripts/build.sh
else
  release=${version%-cams}
  variant=
  if [ "$release" != "$version" ]; then variant=cams; fi
  prefix=$(scripts/build-petsc.sh "$release" $variant | tail -1)
  build_dir=${BUILD_DIR:-build-petsc-$version}
  # Only what the PETSc label runs: the libraries, the apps and the PETSc tests (the rest of the
  # suite does not depend on the PETSc release and runs in the default build).
  PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
    REWIND_BUILD_ONLY="${REWIND_BUILD_ONLY-apps tests/petsc tests/petsc4py}" \
    BUILD_DIR=$build_dir scripts/build.sh
fi
found=$(sed -n 's/^PETSC_VERSION:INTERNAL=//p' "$build_dir/CMakeCache.txt")
echo "test-petsc: rewind in $build_dir against PETSc $found"
start=$SECONDS
ctest --test-dir "$build_dir" -L petsc -LE 'bench|soak|valgrind|fuzz' --output-on-failure \
  -j "$(nproc)" "$@"
echo "test-petsc: PETSc $found: the PETSc label passed in $((SECONDS - start)) s"
