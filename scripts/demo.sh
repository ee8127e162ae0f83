#!/usr/bin/env bash
# Installs dependencies, builds, and runs the main demo: rewind-heat, a PETSc adjoint solver on
# 2 MPI ranks, computes the gradient of a PDE objective with rewind keeping 4 checkpoints in RAM
# and 16 on disk (parallel HDF5) instead of every time step, then checks the gradient bit for
# bit against store-all and with a Taylor test. No argument is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh

build=${BUILD_DIR:-build}
out=$build/demo
rm -rf "$out"
mkdir -p "$out/checkpoints"
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 # two ranks even on a one-core machine

args=(-da_grid_x 96 -da_grid_y 96 -ts_dt 0.0025 -ts_max_time 0.4
      -ts_trajectory_max_cps_ram 4 -ts_trajectory_max_cps_disk 16
      -ts_trajectory_dirname "$out/checkpoints"
      -compare_storeall -taylor -summary_json "$out/heat.json" -gradient_out "$out/heat.h5")

cat <<EOF

== rewind demo ==
rewind-heat solves u_t + v.grad(u) = div(kappa grad(u)) on a 96 x 96 grid, 160 implicit
(Crank-Nicolson) time steps on 2 MPI ranks, then runs PETSc's adjoint solver (TSAdjointSolve)
for the gradient of an objective J with respect to the initial state u0 and to the
diffusivity at every grid cell.

The adjoint visits the 160 forward states in reverse order. Instead of storing all 161, the
rewind trajectory keeps at most 4 in RAM and 16 on disk (parallel HDF5 in $out/checkpoints)
and recomputes the rest on a two-level schedule. Two checks follow: -compare_storeall solves
again with PETSc's store-all trajectory and compares the gradients bit for bit, and -taylor
compares the gradient with finite differences of J.

\$ mpirun -n 2 $build/bin/rewind-heat ${args[*]}
EOF
SECONDS=0
mpirun -n 2 "$build/bin/rewind-heat" "${args[@]}"
echo
echo "The run took ${SECONDS} s. Its summary is in $out/heat.json, the gradient fields in" \
     "$out/heat.h5."

if /usr/bin/python3 -c 'import matplotlib, h5py' 2>/dev/null; then
  scripts/plot_adjoint.py --gradient "$out/heat.h5" --summary "$out/heat.json" --out "$out/heat"
else
  echo "For pictures of the gradient and of the schedule: apt-get install python3-matplotlib" \
       "python3-h5py, then scripts/plot_adjoint.py --gradient $out/heat.h5" \
       "--summary $out/heat.json --out $out/heat"
fi

ens_args=(-ensemble_tasks 12 -ts_trajectory_max_cps_ram 4
          -rewind_ensemble_max_cps_ram 12 -rewind_ensemble_max_cps_disk 8
          -rewind_ensemble_dirname "$out/ensemble-checkpoints"
          -compare_serial -taylor -summary_json "$out/ensemble.json"
          -gradient_out "$out/ensemble.h5")
mkdir -p "$out/ensemble-checkpoints"
cat <<EOF

== rewind ensemble demo ==
rewind-ensemble solves an inverse problem on the same model: 12 sources at different places,
each switched on for its own time (20 to 75 steps), the field read at 9 receiver cells at the
end, and one misfit Phi over all 12 that couples them. Its gradient with respect to kappa is the
sum of 12 adjoint solves. rewind's ensemble map runs them on 2 groups of 1 rank: a group that
comes free claims the next source and keeps its checkpoints (4 a source; a group holds at most
12 in RAM and 8 on disk, so older tapes are spilled to disk or cut and recomputed); in the
backward pass each group gets one message with the cotangents of its own sources and reverses
its own tapes. -compare_serial computes the gradient again by a plain loop on one rank with
PETSc's store-all trajectory and compares the bits; -taylor compares it with finite differences.

\$ mpirun -n 2 $build/bin/rewind-ensemble ${ens_args[*]}
EOF
SECONDS=0
mpirun -n 2 "$build/bin/rewind-ensemble" "${ens_args[@]}"
echo
echo "The run took ${SECONDS} s. Its summary, with the ensemble's report (which group ran which" \
     "task, and when), is in $out/ensemble.json; dPhi/dkappa is in $out/ensemble.h5."

if /usr/bin/python3 -c 'import matplotlib, h5py' 2>/dev/null; then
  scripts/plot_ensemble.py --summary "$out/ensemble.json" --out "$out/ensemble" --costs \
    --gradient "$out/ensemble.h5"
  cat <<EOF
A job killed in either pass goes on where it was with -rewind_ensemble_resume (the same command
again, on any number of ranks with the same group size): the outputs and the partial gradient
sums are kept in -rewind_ensemble_dirname (docs/ensemble.md, "Resume after a kill").

The timeline has one row per group and a bar per source (task k): on the left the forward
pass, in the order the groups claimed the sources; on the right the backward pass, where each
group reverses only its own sources: those still in RAM first, newest first, then those spilled
to disk (hatched), then those cut (red edge), whose forward runs again first. Below it, each
source's first sweep, the steps recomputed for its adjoint, and its adjoint steps. The gradient
picture shows dPhi/dkappa with the sources, the receivers and the true kappa.
EOF
else
  echo "For the timeline picture: apt-get install python3-matplotlib python3-h5py, then" \
       "scripts/plot_ensemble.py --summary $out/ensemble.json --out $out/ensemble --costs"
  echo "A job killed in either pass goes on where it was with -rewind_ensemble_resume (the same" \
       "command again; docs/ensemble.md, \"Resume after a kill\")."
fi
