#!/usr/bin/env bash
# rewind-ensemble (the PETSc front end) with -rewind_ensemble_resume, killed with SIGKILL to the
# whole job in its forward pass and in its backward pass (held there by the test library
# pause_hook.c, loaded with -dll_append), resumed with the same command: the gradient bitwise
# the serial store-all loop's (-compare_serial), the durable outputs and summed gradients taken
# from the manifest and said so, the directory left empty; then resumed on half the ranks.
# Usage: ensemble_kill_resume.sh APP PAUSE_LIB WORKDIR RANKS
set -euo pipefail
app=$1 lib=$2 work=$3 ranks=$4
mpiexec=${MPIEXEC:-mpirun}
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$(dirname "$0")/../support/kill_session.sh"
rm -rf "$work"
mkdir -p "$work"
common=(-ensemble_tasks 12 -da_grid_x 24 -da_grid_y 24 -ts_trajectory_max_cps_ram 4
        -rewind_ensemble_max_cps_ram 8 -rewind_ensemble_max_cps_disk 12
        -rewind_ensemble_dirname "$work/ckpt" -rewind_ensemble_resume -compare_serial
        -dll_append "$lib")
expect_empty() {
  local left
  left=$(ls -A "$work/ckpt" 2>/dev/null || true)
  [ -z "$left" ] || fail "files left after the run ended: $left"
}
killed_run() {  # killed_run NP POINT COUNT
  rm -f "$work/marker"
  REWIND_TEST_PAUSE=$2 REWIND_TEST_PAUSE_COUNT=$3 REWIND_TEST_PAUSE_MARKER="$work/marker" \
    setsid "$mpiexec" -n "$1" --oversubscribe "$app" "${common[@]}" >"$work/killed.log" 2>&1 &
  local paused=$!
  wait_for_marker "$work/marker" "$paused" "$work/killed.log" \
    "the run to kill never reached $2 (the ${3}th time)" 1800
  kill_session $paused || fail "processes of the killed run live on"
  [ -e "$work/ckpt/rewind-ensemble-ensemble.resume" ] || fail "no manifest after a kill at $2"
}
resumed_run() {  # resumed_run NP WHAT: the resumed run's output; checks it
  local out
  out=$("$mpiexec" -n "$1" --oversubscribe "$app" "${common[@]}" 2>&1) || {
    echo "$out" >&2
    fail "$2: the resumed run failed"
  }
  grep -q "Serial comparison passed: the ensemble's gradient is bitwise the serial loop's" <<<"$out" ||
    fail "$2: not bitwise the serial store-all loop: $out"
  grep -q "resumed      from a killed run's manifest" <<<"$out" || fail "$2: did not resume: $out"
  expect_empty
  echo "$out"
}
outputs_taken() { sed -n "s/.*generation [0-9]*): \([0-9]*\) outputs taken.*/\1/p" <<<"$1"; }
summed_before() { sed -n "s/.*, \([0-9]*\) gradients already summed.*/\1/p" <<<"$1"; }

fresh=$("$mpiexec" -n "$ranks" --oversubscribe "$app" "${common[@]}" 2>&1)
grep -q "Serial comparison passed" <<<"$fresh" || fail "a resumable run, never killed: $fresh"
grep -q "spilled from RAM to disk, [1-9]" <<<"$fresh" || true
expect_empty

killed_run "$ranks" forward:5 2
out=$(resumed_run "$ranks" "killed in the forward pass")
echo "killed in the forward pass: $(outputs_taken "$out") outputs taken, $(summed_before "$out") summed"
[ "$(outputs_taken "$out")" -ge 1 ] && [ "$(outputs_taken "$out")" -lt 12 ] || fail "forward kill: $out"

killed_run "$ranks" adjoint:3 1
out=$(resumed_run "$ranks" "killed at the start of the backward pass")
echo "killed at the backward pass's start: $(outputs_taken "$out") outputs taken, $(summed_before "$out") summed"
[ "$(outputs_taken "$out")" = 12 ] && [ "$(summed_before "$out")" = 0 ] || fail "backward start kill: $out"

killed_run "$ranks" adjoint:3 3
out=$(resumed_run "$ranks" "killed in the backward pass")
echo "killed in the backward pass: $(outputs_taken "$out") outputs taken, $(summed_before "$out") summed"
[ "$(outputs_taken "$out")" = 12 ] && [ "$(summed_before "$out")" -ge 2 ] || fail "backward kill: $out"

half=$((ranks / 2))
killed_run "$ranks" adjoint:3 2
out=$(resumed_run "$half" "killed on $ranks ranks, resumed on $half")
echo "killed on $ranks ranks, resumed on $half: $(outputs_taken "$out") outputs taken, $(summed_before "$out") summed"
# Without -rewind_ensemble_resume, a killed run's manifest is refused, not passed over (its
# files kept); the same command with it goes on.
killed_run "$ranks" adjoint:3 2
noflag=()
for a in "${common[@]}"; do [ "$a" = -rewind_ensemble_resume ] || noflag+=("$a"); done
if out=$("$mpiexec" -n "$ranks" --oversubscribe "$app" "${noflag[@]}" 2>&1); then
  fail "a killed run's manifest was passed over without -rewind_ensemble_resume: $out"
fi
grep -q "is the manifest of a killed ensemble run that can be resumed: add -rewind_ensemble_resume" <<<"$out" ||
  fail "without -rewind_ensemble_resume: $out"
[ -e "$work/ckpt/rewind-ensemble-ensemble.resume" ] || fail "the refused run removed the manifest"
echo "refused without -rewind_ensemble_resume"
out=$(resumed_run "$ranks" "resumed after the refusal")
echo "rewind-ensemble kill and resume: passed"
