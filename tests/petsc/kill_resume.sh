#!/usr/bin/env bash
# Kills one of PETSc's own adjoint tutorials, run with -ts_trajectory_rewind_resume, at chosen
# steps of both sweeps (SIGKILL to the whole mpirun; a test library, REWIND_PAUSE_LIB, built from
# tests/petsc/pause_hook.c and loaded next to librewind, holds every rank at the step through
# rewind's progress hook), resumes it with the same command, and checks that what the program
# prints and the gradient and final state it writes are bit for bit PETSc's store-all run's,
# that the resumed run goes on from the last durable state or adjoint state (nothing durable
# redone), and that the directory is left empty. With "refusals", checks what a killed run's
# files are not used for, and the settings a resumable run refuses.
# Usage: kill_resume.sh (kills|refusals) WORKDIR RANKS STEPS INTERVAL LIB PROGRAM [args...]
#        [--rewind rewind-only args...]   (given to the rewind runs only: PETSc's store-all run
#        would report them unused on stdout)
# STEPS is given as -ts_max_steps: the step count with a fixed step, the most steps with adaptive
# ones (the run learns its count at the end; the kill points follow the count it took).
set -euo pipefail
mode=$1 work=$2 np=$3 steps=$4 interval=$5 lib=$6 exe=$7
shift 7
args=() rewind_only=()
while [ $# -gt 0 ] && [ "$1" != --rewind ]; do args+=("$1"); shift; done
if [ $# -gt 0 ]; then shift; rewind_only=("$@"); fi
args+=(-ts_max_steps "$steps")
mpiexec=${MPIEXEC:-mpirun}
outputs=(-ts_adjoint_view_solution binary:lambda.bin -ts_view_solution binary:solution.bin
         -viewer_binary_skip_info)
resumable=(-dll_append "$lib" -ts_trajectory_type rewind -ts_trajectory_dirname ckpt
           -ts_trajectory_max_cps_ram 3 -ts_trajectory_max_cps_disk 30
           -ts_trajectory_rewind_resume_interval "$interval" -ts_trajectory_view ascii:view.txt
           -ts_trajectory_rewind_resume ${rewind_only[@]+"${rewind_only[@]}"})
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work/ckpt"
cd "$work"
source "$(dirname "$0")/../support/kill_session.sh"

# run [-n RANKS] ARGS...: the program, its stdout in out.txt, its stderr in err.txt.
run() {
  local n=$np
  if [ "$1" = -n ]; then n=$2; shift 2; fi
  rm -f lambda.bin solution.bin view.txt
  "$mpiexec" -n "$n" --oversubscribe "$exe" "${args[@]}" "${outputs[@]}" "$@" >out.txt 2>err.txt
}
# The program's results, compared byte for byte.
results() { cat out.txt; od -An -tx1 lambda.bin solution.bin; }

# Starts a resumable run that holds at $1 (forward:K or adjoint:K) for the kill; sets `paused`.
start_paused() {
  rm -f marker
  REWIND_TEST_PAUSE=$1 REWIND_TEST_PAUSE_MARKER=$work/marker setsid "$mpiexec" -n "$np" \
    --oversubscribe "$exe" "${args[@]}" "${outputs[@]}" "${resumable[@]}" \
    -dll_append "$lib,${REWIND_PAUSE_LIB:?set REWIND_PAUSE_LIB to the test pause library}" \
    >killed.log 2>&1 &
  paused=$!
  wait_for_marker marker "$paused" killed.log "the run to kill at $1 never reached it"
}
kill_paused() {
  kill_session $paused || fail "processes of the killed run live on: $(session_pids $paused)"
}
killed_run() {
  start_paused "$1"
  kill_paused
  [ -e ckpt/rewind-ts.resume ] || fail "no manifest after a kill at $1"
}
expect_empty() {
  [ -z "$(ls -A ckpt)" ] || fail "files left in the directory after the run ended: $(ls -A ckpt)"
}
# A count from the view's statistics line ("steps S, forward steps F, recomputations R, adjoint
# steps A"): view_field (steps|forward|adjoint).
view_field() {
  case $1 in
    steps) sed -n 's/^ *steps \([0-9]*\),.*/\1/p' view.txt ;;
    *) sed -n "s/.*, $1 steps \([0-9]*\).*/\1/p" view.txt ;;
  esac
}

run -ts_trajectory_type memory || fail "PETSc's store-all run failed: $(cat err.txt)"
baseline=$(results)
run "${resumable[@]}" || fail "the resumable run failed: $(cat err.txt)"
[ "$(results)" = "$baseline" ] || fail "resumable run, never killed: results differ from store-all"
fresh_forward=$(view_field forward)
# STEPS is -ts_max_steps; with adaptive steps the run may end before, at n steps, learnt here.
steps=$(view_field steps)
expect_empty
echo "resumable run, never killed: bitwise store-all's, $steps steps, $fresh_forward forward steps"
last=$(( (steps - 1) / interval * interval ))  # the last interval's first step

if [ "$mode" = kills ]; then
  # The first sweep held at step K has made x_b durable for every boundary b < K; the reverse
  # sweep held after K adjoint steps, the adjoint at every boundary b >= n - K.
  for point in forward:$((interval + 1)) forward:$((steps / 2)) forward:$steps adjoint:1 \
               adjoint:$((steps / 2)) adjoint:$((steps - 1)); do
    sweep=${point%%:*} k=${point##*:}
    killed_run "$point"
    run "${resumable[@]}" || fail "the resumed run (killed at $point) failed: $(cat err.txt)"
    [ "$(results)" = "$baseline" ] || fail "killed at $point: results differ from store-all"
    taken=$(view_field steps) adjoint=$(view_field adjoint)
    if [ "$sweep" = forward ]; then
      at=$(( (k - 1) / interval * interval ))
      grep -qE "resuming a killed run('s first sweep from its durable state at step $at of| from step 0)" err.txt ||
        fail "killed at $point, not resumed from step $at: $(cat err.txt)"
      [ "$taken" = $((steps - at)) ] || fail "killed at $point: $taken first-sweep steps, not $((steps - at))"
      [ "$adjoint" = "$steps" ] || fail "killed at $point: $adjoint adjoint steps"
    else
      at=$(( (steps - k + interval - 1) / interval * interval ))  # the lowest boundary >= n - K
      [ "$taken" = 0 ] || fail "killed at $point: the first sweep was taken again ($taken steps)"
      if [ "$at" -ge "$steps" ] || [ "$at" -gt "$last" ]; then
        grep -q "first sweep was complete ($steps steps): TSSolve returns its final state$" err.txt ||
          fail "killed at $point: not resumed at the end of the first sweep: $(cat err.txt)"
        [ "$adjoint" = "$steps" ] || fail "killed at $point: $adjoint adjoint steps"
      else
        grep -q "reverse sweep from its durable adjoint state at step $at$" err.txt ||
          fail "killed at $point: not resumed from the adjoint state at $at: $(cat err.txt)"
        [ "$adjoint" = "$at" ] || fail "killed at $point: $adjoint adjoint steps, not $at"
      fi
    fi
    echo "killed at $point: resumed from step $at ($taken first-sweep steps, $adjoint adjoint steps), bitwise"
    expect_empty
  done
  # Killed twice: in the first sweep, then in the resumed run's reverse sweep.
  killed_run forward:$((steps / 2))
  killed_run adjoint:$((steps / 3))
  run "${resumable[@]}" || fail "resumed after two kills: $(cat err.txt)"
  [ "$(results)" = "$baseline" ] || fail "killed twice: results differ from store-all"
  [ "$(view_field steps)" = 0 ] || fail "killed twice: the first sweep was taken again"
  expect_empty
  echo "killed twice: bitwise"
  echo "kill and resume: every result bitwise PETSc's store-all run's"
  exit 0
fi

# ---- refusals ---------------------------------------------------------------------------------
refused() {  # refused REGEX ARGS...: the run fails with a message matching REGEX; nothing changes
  local regex=$1
  shift
  local before
  before=$(ls -l ckpt; cat ckpt/rewind-ts.resume 2>/dev/null || true)
  if run "$@"; then fail "not refused ($*): $(cat out.txt err.txt)"; fi
  grep -qE -- "$regex" err.txt || fail "refused ($*) without '$regex': $(cat err.txt)"
  [ "$before" = "$(ls -l ckpt; cat ckpt/rewind-ts.resume 2>/dev/null || true)" ] ||
    fail "the killed run's files changed after a refusal ($*)"
}
# Settings a resumable run cannot have, each named (nothing killed yet: the directory is empty).
nodir=()
for ((i = 0; i < ${#resumable[@]}; ++i)); do
  if [ "${resumable[i]}" = -ts_trajectory_dirname ]; then i=$((i + 1)); else nodir+=("${resumable[i]}"); fi
done
refused "give -ts_trajectory_dirname" "${nodir[@]}"
refused "-ts_trajectory_max_cps_disk 3 is too few" "${resumable[@]}" -ts_trajectory_max_cps_disk 3 \
  -ts_trajectory_rewind_resume_interval 0
refused "makes [0-9]+ durable checkpoints over $steps steps" "${resumable[@]}" \
  -ts_trajectory_max_cps_disk 4
refused "the adapter 'dsp' remembers earlier steps" "${resumable[@]}" -ts_adapt_type dsp
refused "give -ts_max_steps \(at most 10000000\)" "${resumable[@]}" -ts_adapt_type basic \
  -ts_max_steps 20000000
refused "interpolates its final state \(-ts_exact_final_time interpolate\)" "${resumable[@]}" \
  -ts_exact_final_time interpolate
expect_empty

killed_run forward:$((steps / 2))
# A run without -ts_trajectory_rewind_resume starts clean, says so, and leaves the files.
run "${resumable[@]}" -ts_trajectory_rewind_resume 0 || fail "a plain run failed: $(cat err.txt)"
[ "$(results)" = "$baseline" ] || fail "a plain run beside a killed one: results differ"
grep -q "this run does not resume it (-ts_trajectory_rewind_resume), starts at x_0" err.txt ||
  fail "a plain run did not say it leaves the killed run alone: $(cat err.txt)"
[ -e ckpt/rewind-ts.resume ] || fail "a plain run removed the killed run's manifest"
# Another problem: other options, another rank count.
refused "was written for another problem, so it is not resumed: the identity .*differs: only the killed run's has nothing; only this run's has '-ts_rtol 1e-4'" \
  "${resumable[@]}" -ts_rtol 1e-4
refused "the rank count was $np, is $((np + 1))" -n $((np + 1)) "${resumable[@]}"
# Another program with the same name and options: its executable differs (a copy with bytes
# appended, which still runs).
name=$(basename "$exe")
mkdir -p other && cp "$exe" other/ && printf 'another build' >>"other/$name"
real_exe=$exe exe=$work/other/$name
refused "the identity .*differs: only the killed run's has 'program $name [0-9a-f]+'; only this run's has 'program $name [0-9a-f]+'\. Resume it with" \
  "${resumable[@]}"
exe=$real_exe
rm -rf other
# A live run with the same directory: a second job is refused, the first goes on.
start_paused adjoint:1
live=$(cat ckpt/rewind-ts.resume)
if run "${resumable[@]}"; then fail "a live run was resumed by another job"; fi
grep -q "a resumable run is live in this directory (a job that has not ended); wait for it to end, or give this run another -ts_trajectory_dirname" err.txt ||
  fail "not refused as live: $(cat err.txt)"
[ "$(cat ckpt/rewind-ts.resume)" = "$live" ] || fail "the live run's manifest changed"
kill_paused
# A changed manifest, and a damaged checkpoint.
cp ckpt/rewind-ts.resume manifest.saved
sed -i 's/^generation \([0-9]*\)$/generation 9\1/' ckpt/rewind-ts.resume
refused "the manifest fails its checksum \(it was changed or damaged\)" "${resumable[@]}"
cp manifest.saved ckpt/rewind-ts.resume
read -r file_hex at < <(awk '/^state /{f=$3} /^block 0 0 /{print f, $4; exit}' ckpt/rewind-ts.resume)
file=$(printf "$(sed 's/../\\x&/g' <<<"$file_hex")")
cp "ckpt/$file" data.saved
printf '\x01\x02\x03\x04\x05\x06\x07\x08' | dd of="ckpt/$file" bs=1 seek="$at" conv=notrunc status=none
refused "the state at step 0 \(rank 0.s block\) is damaged, so the manifest is refused" "${resumable[@]}"
cp data.saved "ckpt/$file"
rm -f data.saved manifest.saved
# Intact again: it resumes, bitwise, with another RAM budget and schedule (options that do not
# change results are not part of the identity).
run "${resumable[@]}" -ts_trajectory_max_cps_ram 5 -ts_trajectory_rewind_schedule revolve ||
  fail "resumed after the refusals: $(cat err.txt)"
[ "$(results)" = "$baseline" ] || fail "resumed after the refusals: results differ"
expect_empty
echo "refusals: each named, the killed run's files intact, then resumed bitwise"
