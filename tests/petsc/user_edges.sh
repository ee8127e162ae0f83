#!/usr/bin/env bash
# The rough edges a new user hit (issue 27), each a case run on PETSc's own tutorials with the
# rewind trajectory: what rewind says, and that doing what it says works.
# Usage: user_edges.sh CASE WORKDIR
#   help             -help prints every default of rewind's options as written (no 2.68435e+08)
#   options_left     an error is not followed by "Option left" for the trajectory options given
#   view             a resumable run's view says the disk holds its durable states
#   recompute        a budget that recomputes over 10 times the steps is warned about, naming
#                    the smallest RAM budget that is not; given it, no warning
#   advice           each refusal's advice, followed, gives a run that succeeds
#   lock             a live job's lock is told apart from a killed run's files
#   identity         a killed run resumes with its directory given another way, other output
#                    options and another disk budget; another input path is another problem
# Environment: MPIEXEC, REWIND_LIB (librewind.so), REWIND_PAUSE_LIB (the test pause library),
# EX20ADJ, EX5ADJ, EX3SA (the tutorials), TS_DT (the step size option's name in the PETSc
# built against: -ts_dt, or -ts_time_step from 3.25).
set -euo pipefail
case_name=$1 work=$2
mpiexec=${MPIEXEC:-mpirun}
lib=${REWIND_LIB:?set REWIND_LIB}
dt=${TS_DT:--ts_dt}
rewind=(-dll_append "$lib" -ts_trajectory_type rewind)
fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
cd "$work"
work=$(pwd -P)  # as rewind names paths: canonical

# run NP EXE ARGS...: the program, stdout in out.txt, stderr in err.txt; its exit status.
run() {
  local np=$1 exe=$2
  shift 2
  "$mpiexec" -n "$np" --oversubscribe "$exe" "$@" >out.txt 2>err.txt
}
# The PETSc error message of the last run (its lines, without the "[0]PETSC ERROR: " prefix).
error_of() { sed -n 's/^\[0\]PETSC ERROR: //p' err.txt | head -3; }
# succeeds NP EXE ARGS...: the run must succeed.
succeeds() { run "$@" || fail "failed: ${*:2}: $(error_of)"; }
# refused REGEX NP EXE ARGS...: the run must fail with an error matching REGEX.
refused() {
  local regex=$1
  shift
  if run "$@"; then fail "not refused: ${*:2}"; fi
  grep -qE -- "$regex" err.txt || fail "refused without '$regex': ${*:2}: $(error_of)"
}

ex20=("$EX20ADJ" -ts_type cn "$dt" 0.001 -mu 100000)
ex5=("$EX5ADJ" -da_grid_x 20 -da_grid_y 20)
ex3sa=("$EX3SA" -sa_method adj -ts_type cn -pc_type lu)

case $case_name in
help)
  succeeds 1 "${ex20[@]}" -ts_max_steps 2 "${rewind[@]}" -help
  sed -n '/rewind trajectory options/,/^---/p' out.txt >section.txt
  [ "$(grep -c -- '-ts_trajectory_' section.txt)" -ge 12 ] || fail "no rewind section: $(cat out.txt)"
  grep -qE -- '-ts_trajectory_rewind_max_staged_bytes:? <(now )?268435456 ' section.txt ||
    fail "the staged-bytes default is not printed whole: $(grep staged section.txt)"
  grep -qE -- '-ts_trajectory_rewind_ram_bytes:? <(now )?0 ' section.txt ||
    fail "the RAM-bytes default is not printed whole: $(grep ram_bytes section.txt)"
  grep -qE -- '-ts_trajectory_rewind_recompute_warning:? <(now )?10 ' section.txt ||
    fail "no recompute-warning default of 10: $(grep recompute section.txt)"
  # (PETSc 3.25 writes "-name: <now ...>", 3.18 "-name <now ...>".) No default of rewind's is
  # printed as a PETSc real ("2.68435e+08", "0.").
  if grep -E '<[^>]*([0-9]e[-+][0-9]|[0-9]\.( |>|$))' section.txt; then
    fail "a default printed as a real, above"
  fi
  echo "help: every default of rewind's options printed as given"
  ;;

options_left)
  # An error while the options are checked, and one during TSSolve (events, too small a RAM
  # budget): PETSc's error output lists no trajectory option as left, except one misspelled.
  given=(-ts_trajectory_view -ts_trajectory_dirname ckpt -ts_trajectory_rewind_verify 1
         -ts_trajectory_rewind_max_staged_bytes 1e8 -ts_trajectory_rewind_async 0
         -ts_trajectory_rewind_verfy 1)
  refused "-ts_trajectory_max_cps_ram must be >= 1" 1 "${ex20[@]}" -ts_max_steps 5 "${rewind[@]}" \
    -ts_trajectory_max_cps_ram 0 "${given[@]}"
  cp err.txt options_error.txt
  refused "this run is planned in segments" 1 "${ex3sa[@]}" "${rewind[@]}" \
    -ts_trajectory_max_cps_ram 4 "${given[@]}"
  cp err.txt solve_error.txt
  for f in options_error.txt solve_error.txt; do
    grep -q "Option left: name:-ts_trajectory_rewind_verfy" $f ||
      fail "$f: the misspelled option is not reported as left: $(cat $f)"
    if grep "Option left: name:-ts_trajectory_" $f | grep -v verfy; then
      fail "$f: trajectory options reported as left (above)"
    fi
  done
  echo "options left: none of the trajectory's after an error; a misspelled one still is"
  ;;

view)
  succeeds 1 "${ex5[@]}" -ts_max_steps 60 "${rewind[@]}" -ts_trajectory_max_cps_ram 3 \
    -ts_trajectory_max_cps_disk 8 -ts_trajectory_dirname ckpt -ts_trajectory_rewind_resume \
    -ts_trajectory_view
  sed -n '/TSTrajectory Object/,$p' out.txt >view.txt
  grep -q "resumable: the disk budget holds the durable states (x_0, one every 10 steps, x_n and the adjoint state" view.txt ||
    fail "the view does not say what the disk holds: $(cat view.txt)"
  grep -qE "disk checkpoints \(durable states and adjoint states\): [1-9][0-9]* written" view.txt ||
    fail "the view's disk line does not say what it counts: $(cat view.txt)"
  if grep -E "disk budget is not used|disk costs in forward steps" view.txt; then
    fail "the view contradicts itself (above): $(cat view.txt)"
  fi
  echo "view: the disk of a resumable run holds its durable states, said once"
  ;;

recompute)
  steps=(-ts_max_steps 300)
  warning="rewind: warning: the plan recomputes [0-9]+ steps to reverse 300"
  succeeds 1 "${ex20[@]}" "${steps[@]}" "${rewind[@]}" -ts_trajectory_max_cps_ram 1
  grep -qE "$warning, [0-9.]+ times as many .*more than the 10 times" err.txt ||
    fail "no warning for a RAM budget of 1: $(cat err.txt)"
  [ "$(grep -c "rewind: warning: the plan recomputes" err.txt)" = 1 ] || fail "not warned once"
  ram=$(sed -n 's/.*recomputes at most 10 times as many is -ts_trajectory_max_cps_ram \([0-9]*\) .*/\1/p' err.txt)
  [ -n "$ram" ] || fail "the warning names no budget: $(cat err.txt)"
  succeeds 1 "${ex20[@]}" "${steps[@]}" "${rewind[@]}" -ts_trajectory_max_cps_ram "$ram"
  if grep "rewind: warning" err.txt; then fail "warned with the budget it named ($ram)"; fi
  succeeds 1 "${ex20[@]}" "${steps[@]}" "${rewind[@]}" -ts_trajectory_max_cps_ram $((ram - 1))
  grep -qE "$warning" err.txt || fail "no warning below the budget named ($((ram - 1))): not the smallest"
  succeeds 1 "${ex20[@]}" "${steps[@]}" "${rewind[@]}" -ts_trajectory_max_cps_ram 30
  if grep "rewind: warning" err.txt; then fail "warned with a RAM budget of 30"; fi
  succeeds 1 "${ex20[@]}" "${steps[@]}" "${rewind[@]}" -ts_trajectory_max_cps_ram 1 \
    -ts_trajectory_rewind_recompute_warning 0
  if grep "rewind: warning" err.txt; then fail "warned with the warning off"; fi
  # A byte budget is answered in bytes; on 2 ranks, said once (rank 0).
  succeeds 2 "${ex5[@]}" -ts_max_steps 60 "${rewind[@]}" -ts_trajectory_rewind_ram_bytes 4000
  [ "$(grep -c "rewind: warning: the plan recomputes" err.txt)" = 1 ] ||
    fail "not warned once on 2 ranks: $(cat err.txt)"
  bytes=$(sed -n 's/.* is -ts_trajectory_rewind_ram_bytes \([0-9]*\) .*/\1/p' err.txt)
  [ -n "$bytes" ] || fail "a byte budget answered otherwise: $(cat err.txt)"
  succeeds 2 "${ex5[@]}" -ts_max_steps 60 "${rewind[@]}" -ts_trajectory_rewind_ram_bytes "$bytes"
  if grep "rewind: warning" err.txt; then fail "warned with the byte budget it named ($bytes)"; fi
  echo "recompute: warned at RAM 1, not at the named budget $ram nor at 30 nor when off"
  ;;

advice)
  # An offline schedule with events: the online ones and auto, as the refusal says; not the
  # step count, which the old message offered and which does not help.
  budget=(-ts_trajectory_max_cps_ram 5)
  refused "choose an online schedule \(-ts_trajectory_rewind_schedule online or dynamic\) or auto$" \
    1 "${ex3sa[@]}" "${rewind[@]}" "${budget[@]}" -ts_trajectory_rewind_schedule revolve
  for schedule in online dynamic auto; do
    succeeds 1 "${ex3sa[@]}" "${rewind[@]}" "${budget[@]}" -ts_trajectory_rewind_schedule $schedule
  done
  refused "needs the step count in advance, and this TS has an event handler" 1 "${ex3sa[@]}" \
    "${rewind[@]}" "${budget[@]}" -ts_trajectory_rewind_schedule revolve -ts_trajectory_rewind_steps 37
  # Too small a RAM budget with events (1: an ended segment cannot be kept; 2: nothing left for
  # the next): the RAM budget named, followed until the run fits; or the disk to spill to.
  for start in 1 2; do
    ram=$start
    for attempt in 1 2 3; do
      if run 1 "${ex3sa[@]}" "${rewind[@]}" -ts_trajectory_max_cps_ram $ram; then break; fi
      if grep -q "give the step count" err.txt; then fail "RAM $ram: advice that does not apply: $(error_of)"; fi
      next=$(sed -n 's/.*raise -ts_trajectory_max_cps_ram to at least 2k + 1 = \([0-9]*\) .*/\1/p' err.txt | head -1)
      [ -n "$next" ] && [ "$next" -gt "$ram" ] || fail "RAM $ram: no larger budget named: $(error_of)"
      grep -q "or give disk checkpoints for ended segments to spill to (-ts_trajectory_max_cps_disk -1, or a count, with -ts_trajectory_dirname)" err.txt ||
        fail "RAM $ram: no disk named: $(error_of)"
      succeeds 1 "${ex3sa[@]}" "${rewind[@]}" -ts_trajectory_max_cps_ram $ram \
        -ts_trajectory_max_cps_disk -1 -ts_trajectory_dirname spill
      ram=$next
    done
    succeeds 1 "${ex3sa[@]}" "${rewind[@]}" -ts_trajectory_max_cps_ram $ram
    echo "events, RAM $start: followed the advice to RAM $ram, and to the disk"
  done
  # An offline schedule with adaptive steps: every way the refusal names.
  adapt=("${ex5[@]}" -ts_max_steps 30 -ts_adapt_type basic "$dt" 20 "${rewind[@]}"
         -ts_trajectory_max_cps_ram 3)
  refused "choose an online schedule \(-ts_trajectory_rewind_schedule online or dynamic\) or auto, or a fixed step size \(-ts_adapt_type none\), or give the exact count the adaptive run takes \(-ts_trajectory_rewind_steps\)" \
    1 "${adapt[@]}" -ts_trajectory_rewind_schedule revolve
  for fix in "-ts_trajectory_rewind_schedule online" "-ts_trajectory_rewind_schedule dynamic" \
             "-ts_trajectory_rewind_schedule auto" \
             "-ts_trajectory_rewind_schedule revolve -ts_adapt_type none" \
             "-ts_trajectory_rewind_schedule revolve -ts_trajectory_rewind_steps 30"; do
    # shellcheck disable=SC2086
    succeeds 1 "${adapt[@]}" $fix
  done
  # A step count given that is not the run's: the exact count, or none with an online schedule.
  refused "give the exact step count \(-ts_trajectory_rewind_steps\), or choose an online schedule with no count \(-ts_trajectory_rewind_steps 0 and -ts_trajectory_rewind_schedule online, dynamic or auto\)" \
    1 "${adapt[@]}" -ts_trajectory_rewind_steps 20
  for fix in "-ts_trajectory_rewind_steps 30" "-ts_trajectory_rewind_steps 0 -ts_trajectory_rewind_schedule online" \
             "-ts_trajectory_rewind_steps 0 -ts_trajectory_rewind_schedule dynamic" \
             "-ts_trajectory_rewind_steps 0 -ts_trajectory_rewind_schedule auto"; do
    # shellcheck disable=SC2086
    succeeds 1 "${adapt[@]}" $fix
  done
  refused "but step 21 was taken; give the exact step count \(-ts_trajectory_rewind_steps\)$" \
    1 "${ex5[@]}" -ts_max_steps 30 "${rewind[@]}" -ts_trajectory_max_cps_ram 3 -ts_trajectory_rewind_steps 20
  succeeds 1 "${ex5[@]}" -ts_max_steps 30 "${rewind[@]}" -ts_trajectory_max_cps_ram 3 -ts_trajectory_rewind_steps 30
  # Resumable runs: an interval the disk budget cannot hold, and an interpolated final state.
  resumable=("${ex5[@]}" -ts_max_steps 60 "${rewind[@]}" -ts_trajectory_max_cps_ram 3
             -ts_trajectory_dirname ckpt -ts_trajectory_rewind_resume)
  refused "makes 12 durable checkpoints over 60 steps .* give -ts_trajectory_rewind_resume_interval 30 \(or 0, which chooses it\), or -ts_trajectory_max_cps_disk 12$" \
    1 "${resumable[@]}" -ts_trajectory_max_cps_disk 4 -ts_trajectory_rewind_resume_interval 6
  for fix in "-ts_trajectory_max_cps_disk 4 -ts_trajectory_rewind_resume_interval 30" \
             "-ts_trajectory_max_cps_disk 4 -ts_trajectory_rewind_resume_interval 0" \
             "-ts_trajectory_max_cps_disk 12 -ts_trajectory_rewind_resume_interval 6"; do
    # shellcheck disable=SC2086
    succeeds 1 "${resumable[@]}" $fix
  done
  refused "give -ts_exact_final_time matchstep \(or stepover\)$" 1 "${resumable[@]}" \
    -ts_trajectory_max_cps_disk 8 -ts_exact_final_time interpolate
  for mode in matchstep stepover; do
    succeeds 1 "${resumable[@]}" -ts_trajectory_max_cps_disk 8 -ts_exact_final_time $mode
  done
  echo "advice: every refusal's advice, followed, gives a run that succeeds"
  ;;

lock | identity)
  source "$(dirname "$0")/../support/kill_session.sh"
  outputs=(-ts_adjoint_view_solution binary:lambda.bin -ts_view_solution binary:solution.bin
           -viewer_binary_skip_info)
  # -my_data is the program's input as far as the identity goes, though ex5adj reads no such
  # option: -options_left 0 keeps a PETSc built with debugging from printing it as unused on
  # stdout, which the runs compare (both options are left out of the identity or the same).
  problem=("${ex5[@]}" -ts_max_steps 60 "${outputs[@]}" -options_left 0)
  base=("${problem[@]}" "${rewind[@]}" -ts_trajectory_max_cps_ram 3 -ts_trajectory_max_cps_disk 30
        -ts_trajectory_rewind_resume_interval 6)
  # start_paused POINT ARGS...: a resumable run held at POINT (forward:K or adjoint:K).
  start_paused() {
    local point=$1
    shift
    rm -f marker
    REWIND_TEST_PAUSE=$point REWIND_TEST_PAUSE_MARKER=$work/marker setsid "$mpiexec" -n 1 \
      --oversubscribe "$@" -dll_append "$lib,${REWIND_PAUSE_LIB:?set REWIND_PAUSE_LIB}" \
      >paused.log 2>&1 &
    paused=$!
    wait_for_marker marker "$paused" paused.log "the run to hold never reached $point"
  }
  results() { cat out.txt; od -An -tx1 lambda.bin solution.bin; }
  mkdir -p ckpt
  succeeds 1 "${problem[@]}" -ts_trajectory_type memory
  baseline=$(results)
  if [ "$case_name" = lock ]; then
    start_paused adjoint:1 "${base[@]}" -ts_trajectory_dirname ckpt -ts_trajectory_rewind_resume
    # A second resumable job: refused as live, told what a PETSc user can change; done, it runs.
    refused "a resumable run is live in this directory \(a job that has not ended\); wait for it to end, or give this run another -ts_trajectory_dirname" \
      1 "${base[@]}" -ts_trajectory_dirname ckpt -ts_trajectory_rewind_resume
    if grep -q "label" err.txt; then fail "the lock message names a label: $(error_of)"; fi
    succeeds 1 "${base[@]}" -ts_trajectory_dirname ckpt2 -ts_trajectory_rewind_resume
    [ "$(results)" = "$baseline" ] || fail "the run in another directory differs from store-all"
    # A run without the option: told the files are a live run's, not a killed one's.
    succeeds 1 "${base[@]}" -ts_trajectory_dirname ckpt
    grep -q "lists the checkpoints of a resumable run that is live (another job, still running" err.txt ||
      fail "a plain run beside a live job was not told it is live: $(cat err.txt)"
    if grep -q "killed" err.txt; then fail "a live job's files called a killed run's: $(cat err.txt)"; fi
    kill_session $paused || fail "the held run lives on"
    succeeds 1 "${base[@]}" -ts_trajectory_dirname ckpt
    grep -q "lists a killed resumable run's checkpoints; this run does not resume it" err.txt ||
      fail "a killed run's files not called so: $(cat err.txt)"
    echo "lock: a live job's lock and a killed run's files told apart, each with advice that works"
    echo "user edges: $case_name passed"
    exit 0
  fi
  # identity: killed with the directory relative, a path value relative, and one disk budget...
  mkdir -p data && echo 1 >data/in.txt && ln -s ckpt scratch
  succeeds 1 "${base[@]}" -ts_trajectory_dirname ckpt -ts_trajectory_rewind_resume -my_data data/in.txt
  [ "$(results)" = "$baseline" ] || fail "the resumable run differs from store-all"
  start_paused forward:31 "${base[@]}" -ts_trajectory_dirname ckpt -ts_trajectory_rewind_resume \
    -my_data data/in.txt
  kill_session $paused || fail "the killed run lives on"
  [ -e ckpt/rewind-ts.resume ] || fail "no manifest after the kill"
  # ... another input path is another problem (named, canonical), and the files stay ...
  refused "was written for another problem.*only this run's has '-my_data $work/data/other.txt'.*Resume it with the killed run's program and settings, give this run another -ts_trajectory_dirname, or remove" \
    1 "${base[@]}" -ts_trajectory_dirname ckpt -ts_trajectory_rewind_resume -my_data ./data/other.txt
  # ... and resumed with the directory absolute through a link, the same input by another path,
  # more disk, and output options the killed run did not have.
  succeeds 1 "${base[@]}" -ts_trajectory_dirname "$work/scratch" -ts_trajectory_rewind_resume \
    -my_data "$work/data/../data/in.txt" -ts_trajectory_max_cps_disk 40 -dm_view ascii:dm.txt \
    -ts_trajectory_view ascii:view.txt -ts_trajectory_keep_files
  grep -q "resuming a killed run's first sweep from its durable state at step 30 of 60" err.txt ||
    fail "not resumed: $(cat err.txt)"
  [ "$(results)" = "$baseline" ] || fail "the resumed run differs from store-all"
  [ -z "$(ls -A ckpt)" ] || fail "files left: $(ls -A ckpt)"
  echo "identity: resumed bitwise with the directory, an input path and the outputs given otherwise"
  ;;

*)
  fail "unknown case"
  ;;
esac
echo "user edges: $case_name passed"
