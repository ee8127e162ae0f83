#!/usr/bin/env bash
# bench.codec: writes the states of rewind-heat (64², its default run) and of PETSc's ex5adj
# (64², 300 steps) with -ts_monitor_solution, then measures the codecs on them
# (codec_bench.cpp). Usage: run.sh MPIEXEC HEAT EX5ADJ BENCH WORKDIR
set -euo pipefail
mpiexec=$1 heat=$2 ex5adj=$3 bench=$4 work=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$mpiexec" -n 1 "$heat" -ts_trajectory_type memory -progress 0 \
  -ts_monitor_solution binary:heat.bin >heat.out
"$mpiexec" -n 1 "$ex5adj" -da_grid_x 64 -da_grid_y 64 -ts_max_steps 300 \
  -ts_monitor_solution binary:ex5adj.bin >ex5adj.out
"$bench" heat.bin --grid 64,64,1
"$bench" ex5adj.bin --grid 64,64,2
