#!/usr/bin/env bash
# Kills a resumable ensemble (SIGKILL to the whole mpirun) in its forward pass, between the
# passes and in its backward pass, resumes it with the same command, and checks: the gradient is
# bit for bit the uninterrupted run's; every task's forward ran once over the killed and the
# resumed run together, or its output came from the manifest (no durable forward run again); no
# summed task reversed again; the directory is left empty. Then resumes with half the ranks
# (another group count), and refuses what a killed run's files are not for: another group
# size, another problem, a run not told to resume, a damaged manifest or partial sum.
# Usage: kill_resume.sh cxx APP WORKDIR RANKS
set -euo pipefail
kind=$1 app=$2 work=$3 ranks=$4
mpiexec=${MPIEXEC:-mpirun}
fail() { echo "FAIL: $*" >&2; exit 1; }
field() { sed -n "s/.* $1 \([^ ]*\).*/\1/p" <<<"$2"; }
source "$(dirname "$0")/../support/kill_session.sh"
[ "$kind" = cxx ] || fail "unknown kind $kind"

rm -rf "$work"
mkdir -p "$work"
# Group budgets that spill and cut (more groups hold fewer tapes each: less disk a group).
disk=20
[ "$ranks" -ge 4 ] && disk=10
common=(--dir "$work" --tasks 12 --ram 3 --group-ram 6 --group-disk "$disk")
run() {  # run NP args...: the result line
  local np=$1
  shift
  "$mpiexec" -n "$np" --oversubscribe "$app" "${common[@]}" "$@" 2>"$work/stderr.log" |
    grep '^result' || { cat "$work/stderr.log" >&2; fail "no result from: $*"; }
}
start_paused() {  # start_paused NP args...: until the run holds at its kill point
  local np=$1
  shift
  rm -f "$work/marker"
  setsid "$mpiexec" -n "$np" --oversubscribe "$app" "${common[@]}" --marker "$work/marker" "$@" \
    >"$work/killed.log" 2>&1 &
  paused=$!
  wait_for_marker "$work/marker" "$paused" "$work/killed.log" \
    "the run to kill ($*) never reached its kill point" 1800
}
killed_run() {
  start_paused "$@"
  kill_session $paused || fail "processes of the killed run live on: $(session_pids $paused)"
  rm -f "$work/marker"
  [ -e "$work/rewind-ensemble-ensemble.resume" ] || fail "no manifest after a kill ($*)"
}
expect_empty() {
  local left
  left=$(ls -A "$work" | grep -v -e '^killed.log$' -e '^stderr.log$' || true)
  [ -z "$left" ] || fail "files left in the directory after the run ended: $left"
}
# A resumed run: its gradient is the baseline's; each task's forward came from the manifest or
# ran here, and each gradient was summed there or reversed here.
check_resumed() {  # check_resumed WHAT RESULT BASELINE
  local what=$1 r=$2 base=$3
  [ "$(field gradient "$r")" = "$(field gradient "$base")" ] || fail "$what: gradient $r, expected $base"
  [ "$(field outputs "$r")" = "$(field outputs "$base")" ] || fail "$what: outputs $r"
  [ "$(field resumed "$r")" -ge 1 ] || fail "$what: the run did not resume: $r"
  [ $(( $(field ran "$r") + $(field outputs_resumed "$r") )) = 12 ] ||
    fail "$what: forwards run again or missing: $r"
  [ $(( $(field reversed "$r") + $(field gradients_resumed "$r") )) = 12 ] ||
    fail "$what: reverses run again or missing: $r"
  # Each task taken over and not yet summed has its durable tape, or is recorded again (its tape
  # was cut in the killed run, or was being reversed).
  [ $(( $(field tapes_resumed "$r") + $(field recorded_again "$r") )) = \
    $(( $(field outputs_resumed "$r") - $(field gradients_resumed "$r") )) ] ||
    fail "$what: tapes neither taken over nor recorded again: $r"
  expect_empty
}

half=$((ranks / 2))
for g in 1 2; do
  [ $((ranks % g)) = 0 ] || continue
  base=$(run "$ranks" --plain --group-size "$g")
  echo "g=$g baseline: $base"
  fresh=$(run "$ranks" --group-size "$g")
  # The budgets spill tapes to disk, and cut some (durable tapes fill the disk sooner).
  [ "$(field spilled "$base")" -gt 0 ] && [ $(( $(field cut "$base") + $(field cut "$fresh") )) -gt 0 ] ||
    fail "the group budgets neither spill nor cut: $base / $fresh"
  [ "$(field gradient "$fresh")" = "$(field gradient "$base")" ] || fail "resumable, never killed: $fresh"
  [ "$(field resumed "$fresh")" = 0 ] || fail "a fresh run resumed: $fresh"
  expect_empty
  for point in forward:1 forward:2 gap adjoint:1 adjoint:2; do
    killed_run "$ranks" --group-size "$g" --kill "$point"
    r=$(run "$ranks" --group-size "$g" --resume)
    echo "g=$g killed at $point, resumed: $r"
    check_resumed "g=$g kill at $point" "$r" "$base"
    case $point in
      gap) [ "$(field outputs_resumed "$r")" = 12 ] && [ "$(field gradients_resumed "$r")" = 0 ] &&
             [ "$(field tapes_resumed "$r")" -ge 1 ] ||
             fail "killed between the passes: every output is durable, tapes taken over: $r" ;;
      adjoint:2) [ "$(field gradients_resumed "$r")" -ge 1 ] && [ "$(field outputs_resumed "$r")" = 12 ] ||
                   fail "killed in the backward pass: summed gradients not kept: $r" ;;
      forward:2) [ "$(field outputs_resumed "$r")" -ge 1 ] && [ "$(field tapes_resumed "$r")" -ge 1 ] ||
                   fail "killed after a forward: $r" ;;
    esac
  done
  # Killed twice: in the forward pass, then in the resumed run's backward pass.
  killed_run "$ranks" --group-size "$g" --kill forward:2
  killed_run "$ranks" --group-size "$g" --resume --kill adjoint:2
  r=$(run "$ranks" --group-size "$g" --resume)
  echo "g=$g killed twice, resumed: $r"
  check_resumed "g=$g killed twice" "$r" "$base"
  [ "$(field resumed "$r")" = 2 ] || fail "killed twice: the manifest's generation is not 2: $r"
  # Another group count (half the ranks, the same group size): the killed run's groups are
  # taken over by the new ones; the bits are the same.
  if [ $((half % g)) = 0 ] && [ "$half" -ge "$g" ]; then
    for point in forward:2 adjoint:2; do
      killed_run "$ranks" --group-size "$g" --kill "$point"
      r=$(run "$half" --group-size "$g" --resume)
      echo "g=$g killed at $point on $ranks ranks, resumed on $half: $r"
      check_resumed "g=$g resumed on $half ranks after $point" "$r" "$base"
    done
  fi
done

# ---- refusals: a killed run's files are used only by a resume of the same problem, intact ----
save_manifest() {  # what refused() compares with
  rm -rf "$work/saved"
  mkdir -p "$work/saved"
  cp "$work"/rewind-ensemble-ensemble.resume "$work"/rewind-ensemble-ensemble.[0-9]* "$work/saved/"
}
refused() {  # refused REGEX NP args...: fails with a message matching REGEX, files unchanged
  local regex=$1 np=$2 out
  shift 2
  if out=$("$mpiexec" -n "$np" --oversubscribe "$app" "${common[@]}" "$@" 2>&1); then
    fail "not refused ($*): $out"
  fi
  grep -Eq "$regex" <<<"$out" || fail "refused ($*) without '$regex': $out"
  for f in "$work"/saved/*; do
    cmp -s "$f" "$work/$(basename "$f")" || fail "refusing ($*) changed $(basename "$f")"
  done
  echo "refused ($*): $(grep -Eo "$regex" <<<"$out" | head -1)"
}
# refused_damaged FILE OFFSET BYTE REGEX: FILE damaged at OFFSET, a resume refused (every file
# left as it is, the damaged one included), then FILE repaired.
refused_damaged() {
  local file=$1 at=$2 byte=$3 regex=$4
  [ -f "$file" ] || fail "no file to damage: $file"
  cp "$file" "$work/repair"
  printf "$byte" | dd of="$file" bs=1 seek="$at" conv=notrunc status=none
  cp "$file" "$work/saved/"
  refused "$regex" "$ranks" --resume
  cp "$work/repair" "$file"
  cp "$file" "$work/saved/"
  rm "$work/repair"
}
killed_run "$ranks" --kill adjoint:2
save_manifest
refused "is the manifest of a killed ensemble run that can be resumed" "$ranks"
refused "the identity text \('resume_app' there, 'another' now\)" "$ranks" --resume --identity another
refused "the task count \(12 there, 11 now\)" "$ranks" --resume --tasks 11
if [ $((ranks % 2)) = 0 ]; then
  refused "the group size \(1 there, 2 now: a task's arithmetic depends on its group's decomposition" \
    "$ranks" --resume --group-size 2
fi
refused_damaged "$work/rewind-ensemble-ensemble.resume" 40 'x' \
  "rewind-ensemble-ensemble.resume: its checksum does not match its text"
refused_damaged "$(ls "$work"/rewind-ensemble-ensemble.1.sum-* | head -1)" 40 '\x01' \
  "the partial sum .*sum-[0-9-]+ fails its checksum"
base=$(run "$ranks" --plain)
r=$(run "$ranks" --resume)
rm -rf "$work/saved"
check_resumed "after the refusals" "$r" "$base"
# A durable tape's description damaged: that tape is recorded again, the others are taken over
# (killed between the passes, when most tapes are durable).
killed_run "$ranks" --kill gap
desc=$(ls "$work"/rewind-ensemble-ensemble.1.tape-* | head -1)
[ -n "$desc" ] || fail "no durable tape after a kill between the passes"
printf 'x' | dd of="$desc" bs=1 seek=20 conv=notrunc status=none
r=$(run "$ranks" --resume)
grep -q "rewind ensemble: the tape description .*tape-[0-9-]* fails its checksum: task [0-9]*'s tape is recorded again" "$work/stderr.log" ||
  fail "a damaged tape description was not reported: $(cat "$work/stderr.log")"
check_resumed "with a damaged tape description" "$r" "$base"
[ "$(field recorded_again "$r")" -ge 1 ] || fail "the damaged tape was not recorded again: $r"
echo "a damaged tape description: that tape recorded again, bitwise: $r"
# A tape's data damaged in its file: found when it is taken over.
killed_run "$ranks" --kill gap
desc=$(ls "$work"/rewind-ensemble-ensemble.1.tape-* | head -1)
file=$(sed -n 's/^file //p' "$desc" | xxd -r -p)
# The last checkpoint listed (the final state: x_0's comes from the task made again).
# Its last block: <field hex> <byte offset> <count> <checksum> <stored bytes> (tape version 2).
at=$(sed -n 's/^key .* [0-9a-f]* \([0-9]*\) [0-9]* [0-9a-f]\{16\} [0-9]*$/\1/p' "$desc" | tail -1)
[ -f "$file" ] && [ -n "$at" ] || fail "cannot find the tape's data ($file at $at)"
cp "$file" "$work/data.saved"
printf '\x7f' | dd of="$file" bs=1 seek=$((at + 3)) conv=notrunc status=none
# Found while the tape is taken over (the pass fails there, its files kept for another resume).
if out=$("$mpiexec" -n "$ranks" --oversubscribe "$app" "${common[@]}" --resume 2>&1); then
  fail "a damaged tape was taken over: $out"
fi
grep -Eq "failed in its take-over \(resume\).*fails its checksum" <<<"$out" || fail "damaged tape data: $out"
echo "refused (--resume): $(grep -Eo "failed in its take-over \(resume\)[^;]*" <<<"$out" | head -1)"
cp "$work/data.saved" "$file"
rm -rf "$work/data.saved"
r=$(run "$ranks" --resume)
check_resumed "after a tape's data failed its checksum" "$r" "$base"
# An identity set for the pass (an optimisation loop's iteration): a program started again at
# another iteration is refused the killed one's manifest; at the same iteration it resumes.
killed_run "$ranks" --pass-identity "iteration 5" --kill adjoint:2
save_manifest
refused "the identity text \('resume_app; iteration 5' there, 'resume_app; iteration 1' now\)" \
  "$ranks" --resume --pass-identity "iteration 1"
rm -rf "$work/saved"
r=$(run "$ranks" --resume --pass-identity "iteration 5")
check_resumed "resumed at the same iteration" "$r" "$base"
# The same identity with other parameters: the tapes recorded again must give the outputs the
# manifest lists, or the pass fails naming the task and removes the manifest (it would mix two
# programs).
killed_run "$ranks" --kill gap
if out=$("$mpiexec" -n "$ranks" --oversubscribe "$app" "${common[@]}" --resume --param-shift 1e-3 2>&1); then
  fail "a resume with other parameters was not refused: $out"
fi
grep -q "does not give the output its first sweep gave.*the ensemble's manifest was removed" <<<"$out" ||
  fail "other parameters: $out"
echo "refused (--resume --param-shift 1e-3): does not give the output its first sweep gave; the manifest was removed"
# Nothing of the mixed run is left to be taken for a manifest: the next run starts afresh.
! ls "$work"/rewind-ensemble-ensemble.resume "$work"/rewind-ensemble-ensemble.[0-9]* >/dev/null 2>&1 ||
  fail "files of a run whose program differs were kept: $(ls "$work")"
r=$(run "$ranks" --resume)
[ "$(field gradient "$r")" = "$(field gradient "$base")" ] && [ "$(field resumed "$r")" = 0 ] ||
  fail "after a refused resume with other parameters: $r"
expect_empty
# Group stores on another file system than the manifest: their files cannot be given a second
# name there, so the tapes are not durable (said once), and a resume records them again.
other=/dev/shm/rewind-kill-resume-$$
if mkdir -p "$other" 2>/dev/null && [ "$(stat -c %d "$other")" != "$(stat -c %d "$work")" ]; then
  killed_run "$ranks" --store-dir "$other" --kill gap
  grep -q "cannot be given a second name in the resume directory" "$work/killed.log" ||
    fail "tapes that cannot be durable were not reported: $(cat "$work/killed.log")"
  r=$(run "$ranks" --store-dir "$other" --resume)
  check_resumed "stores on another file system" "$r" "$base"
  [ "$(field tapes_resumed "$r")" = 0 ] || fail "stores on another file system: $r"
  echo "stores on another file system: tapes recorded again, bitwise: $r"
fi
rm -rf "$other"
# One rank cannot write its partial sum (a directory where its file goes): every rank fails with
# that rank's error, none hangs, and the pass's manifest stays for a resume.
if [ $((ranks % 2)) = 0 ]; then
  base2=$(run "$ranks" --plain --group-size 2)
  mkdir "$work/rewind-ensemble-ensemble.1.sum-0-1-1"
  if out=$("$mpiexec" -n "$ranks" --oversubscribe "$app" "${common[@]}" --group-size 2 2>&1); then
    fail "a partial sum that cannot be written was not an error: $out"
  fi
  [ "$(grep -c "resume_app: error: .*sum-0-1-1" <<<"$out")" -ge 2 ] ||
    fail "one rank's failed write is not an error on every rank: $out"
  echo "one rank cannot write its partial sum: an error on every rank"
  rmdir "$work/rewind-ensemble-ensemble.1.sum-0-1-1"
  r=$(run "$ranks" --group-size 2 --resume)
  [ "$(field gradient "$r")" = "$(field gradient "$base2")" ] || fail "after the failed write: $r"
  expect_empty
fi
echo "ensemble kill and resume: passed"
