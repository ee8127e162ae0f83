#!/usr/bin/env bash
# Installs rewind's build and test dependencies from Debian packages.
# Idempotent: packages already present are left alone; safe to run repeatedly.
set -euo pipefail

packages=(
  cmake g++ make pkg-config clang-format
  petsc-dev libpetsc3.18-dev-examples
  libhdf5-openmpi-dev hdf5-tools
  libopenmpi-dev openmpi-bin
  libgtest-dev libbenchmark-dev
  python3-matplotlib python3-h5py
  python3-petsc4py  # tests/petsc4py, examples/petsc4py (the PETSc of petsc-dev, which rewind uses)
  libxxhash-dev
  libzstd-dev libblosc-dev libzfp-dev  # compressed checkpoints: the codec benchmark (bench.codec)
  libadolc-dev  # PETSc's autodiff tutorials in the tutorial sweep (ADOL-C, with ColPack)
  clang
  valgrind  # memcheck on the schedule and store tests (ctest -L valgrind); ASan/UBSan come with g++
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
