#!/usr/bin/env bash
# Builds a PETSc release from ../shared/petsc (or $REWIND_PETSC_SOURCES) into a cache folder and
# prints the install prefix as the last line. A finished build is reused: the prefix holds a
# stamp written only after `make install` succeeded, so a killed build is started again, never
# taken for a good one.
#
#   scripts/build-petsc.sh 3.22.5        # about 15 minutes on 2 cores the first time
#   scripts/build-petsc.sh 3.25.4
#   scripts/build-petsc.sh 3.25.4 cams   # the same with CAMS (--download-cams from the shared
#                                        # tarball), in its own prefix: for the CAMS comparison
#
# Environment: REWIND_PETSC_CACHE (default ~/.cache/rewind/petsc), REWIND_PETSC_SOURCES (default
# ../shared/petsc next to the repository), REWIND_PETSC_JOBS (default nproc).
# The configure line is the one PETSc users without downloads use: the system MPI compilers,
# BLAS/LAPACK from the distribution, no Fortran, no X, optimised, shared libraries.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
version=${1:?"usage: scripts/build-petsc.sh VERSION [cams] (e.g. 3.22.5 or 3.25.4)"}
variant=${2:-}
if [ -n "$variant" ] && [ "$variant" != cams ]; then
  echo "build-petsc: unknown variant '$variant' (the one known: cams)" >&2
  exit 2
fi
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "build-petsc: '$version' is not a release number like 3.22.5" >&2
  exit 2
fi
sources=${REWIND_PETSC_SOURCES:-$here/../shared/petsc}
cache=${REWIND_PETSC_CACHE:-$HOME/.cache/rewind/petsc}
jobs=${REWIND_PETSC_JOBS:-$(nproc)}
tarball=$sources/petsc-$version-src.tar.xz
prefix=$cache/$version${variant:+-$variant}
extra=()
if [ "$variant" = cams ]; then
  cams_tarball=$(ls "$sources"/cams-*.tar.gz 2>/dev/null | head -1)
  if [ -z "$cams_tarball" ]; then
    echo "build-petsc: no cams-*.tar.gz in $sources" >&2
    exit 2
  fi
  extra=(--download-cams="$cams_tarball")
fi
stamp=$prefix/.rewind-build-petsc-done

if [ -f "$stamp" ]; then
  echo "build-petsc: PETSc $version already built in $prefix" >&2
  echo "$prefix"
  exit 0
fi
if [ ! -f "$tarball" ]; then
  echo "build-petsc: no $tarball (the sources found there: $(cd "$sources" 2>/dev/null &&
    ls petsc-*-src.tar.xz 2>/dev/null | tr '\n' ' '))" >&2
  exit 2
fi
if [ -e "$prefix" ]; then
  # A prefix without the stamp is a build this script started and did not finish (the stamp is
  # the last thing it writes); anything else there is not ours to remove.
  if [ ! -f "$prefix/.rewind-build-petsc-started" ]; then
    echo "build-petsc: $prefix exists and was not made by this script; remove it or set" \
      "REWIND_PETSC_CACHE" >&2
    exit 2
  fi
  echo "build-petsc: removing the unfinished build in $prefix" >&2
  rm -rf "$prefix"
fi
mkdir -p "$prefix"
touch "$prefix/.rewind-build-petsc-started"

work=$cache/build-$version${variant:+-$variant}
rm -rf "$work"
mkdir -p "$work"
echo "build-petsc: unpacking $tarball" >&2
tar -xJf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'petsc*' | head -1)
log=$cache/build-$version${variant:+-$variant}.log
echo "build-petsc: configuring and building PETSc $version (log: $log)" >&2
(
  cd "$src"
  export PETSC_DIR=$src PETSC_ARCH=arch-rewind
  unset PETSC_DIR_OLD
  python3 ./configure --with-cc=mpicc --with-cxx=mpicxx --with-fc=0 --with-debugging=0 \
    COPTFLAGS=-O2 CXXOPTFLAGS=-O2 --with-x=0 --with-shared-libraries=1 \
    --with-blaslapack-lib="-llapack -lblas" --prefix="$prefix" "${extra[@]}"
  make PETSC_DIR="$src" PETSC_ARCH=arch-rewind MAKE_NP="$jobs" all
  make PETSC_DIR="$src" PETSC_ARCH=arch-rewind install
) >"$log" 2>&1 || {
  echo "build-petsc: PETSc $version failed to build; the last lines of $log:" >&2
  tail -30 "$log" >&2
  exit 1
}
# The tutorials of this version, for the comparison tests (scripts/test-petsc.sh).
mkdir -p "$prefix/share/petsc-tutorials"
cp -r "$src/src/ts/tutorials/." "$prefix/share/petsc-tutorials/"
rm -rf "$work"
rm -f "$prefix/.rewind-build-petsc-started"
touch "$stamp"
echo "build-petsc: PETSc $version${variant:+ ($variant)} installed in $prefix" >&2
echo "$prefix"
