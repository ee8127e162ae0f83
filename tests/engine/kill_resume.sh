#!/usr/bin/env bash
# Kills a resumable generic-API run (SIGKILL to the whole mpirun) at chosen steps of both sweeps,
# resumes it, and checks the resumed gradient is bit for bit the uninterrupted run's, that no
# durable work is redone, and that the directory is left empty. With "refusals", checks what a
# killed run's files are not used for: a run not told to resume, another problem, damaged files.
# Usage: kill_resume.sh APP WORKDIR (lorenz|diffusion) (kills|refusals) [app options...]
set -euo pipefail
app=$1 work=$2 stepper=$3 mode=$4
shift 4
extra=("$@")
steps=120 interval=10
common=(--dir "$work" --stepper "$stepper" --steps "$steps" --interval "$interval" --disk 14
        --ram 3 "${extra[@]}")
mpiexec=${MPIEXEC:-mpirun}
run() { "$mpiexec" -n 2 --oversubscribe "$app" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
field() { sed -n "s/.* $1 \([^ ]*\).*/\1/p" <<<"$2"; }

rm -rf "$work"
mkdir -p "$work"
source "$(dirname "$0")/../support/kill_session.sh"

# Starts a run with "$@" and waits until it reaches its kill step (the app writes the marker and
# waits); sets `paused` to mpirun's pid (its session).
start_paused() {
  rm -f "$work/marker"
  setsid "$mpiexec" -n 2 --oversubscribe "$app" "${common[@]}" --marker "$work/marker" "$@" \
    >"$work/killed.log" 2>&1 &
  paused=$!
  wait_for_marker "$work/marker" "$paused" "$work/killed.log" \
    "the run to kill ($*) never reached its kill step" 600
}

# SIGKILL to the whole job at once (mpirun and every rank), and waits until nothing of it lives
# on, nor is left unreaped (a dead run's files are told by its pid).
kill_paused() {
  kill_session $paused || fail "processes of the killed run live on: $(session_pids $paused)"
}

killed_run() {
  start_paused "$@"
  kill_paused
  [ -e "$work/rewind-resume_app.resume" ] || fail "no manifest after a kill ($*)"
}

expect_empty() {
  local left
  left=$(ls -A "$work" | grep -v -e '^marker$' -e '^killed.log$' || true)
  [ -z "$left" ] || fail "files left in the directory after the run ended: $left"
}

baseline=$(run "${common[@]}" --plain | grep '^result')
gradient=$(field gradient "$baseline")
fresh=$(run "${common[@]}" | grep '^result')
[ "$(field gradient "$fresh")" = "$gradient" ] || fail "resumable run: $fresh, store-all: $baseline"
fresh_forward=$(field forward "$fresh")
expect_empty
echo "baseline $baseline"
echo "resumable, never killed: $fresh"

if [ "$mode" = kills ]; then
  # kill point -> where the resumed run must go on from (first sweep: the last durable state at or
  # before the step; last interval's reverse: nothing of the reverse is durable yet; reverse: the
  # durable adjoint state above the step).
  for point in forward:5 forward:57 forward:115 adjoint:115 adjoint:64 adjoint:3; do
    sweep=${point%%:*} k=${point##*:}
    killed_run --kill-$sweep "$k"
    resumed=$(run "${common[@]}" --resume | grep '^result')
    echo "killed at $sweep step $k, resumed: $resumed"
    [ "$(field gradient "$resumed")" = "$gradient" ] || fail "gradient after a kill at $point: $resumed"
    last=$(( (steps - 1) / interval * interval ))
    if [ "$sweep" = forward ] || [ "$k" -ge "$last" ]; then
      at=$last
      [ "$sweep" = forward ] && at=$(( k / interval * interval ))
      [ "$(field resumed_at "$resumed")" = "$at" ] && [ "$(field reverse "$resumed")" = 0 ] ||
        fail "after a kill at $point the run went on from $resumed, not state $at"
      # Exactly the steps before the durable state are not taken again, but the interval before
      # it, which checks the program is the killed run's.
      expected=$((fresh_forward - at + (at > 0 ? interval : 0)))
      [ "$(field forward "$resumed")" = "$expected" ] ||
        fail "after a kill at $point: $(field forward "$resumed") forward steps, expected $expected"
      [ "$(field adjoint "$resumed")" = "$steps" ] || fail "adjoint steps after $point: $resumed"
    else
      at=$(( (k / interval + 1) * interval ))
      [ "$(field resumed_at "$resumed")" = "$at" ] && [ "$(field reverse "$resumed")" = 1 ] ||
        fail "after a kill at $point the run went on from $resumed, not adjoint state $at"
      [ "$(field adjoint "$resumed")" = "$at" ] || fail "adjoint steps after $point: $resumed"
      [ "$(field forward "$resumed")" -lt $((fresh_forward - steps)) ] ||
        fail "after a kill at $point the first sweep was taken again: $resumed"
    fi
    expect_empty
  done
  # Killed twice: in the first sweep, then in the resumed run's reverse sweep.
  killed_run --kill-forward 57
  killed_run --resume --kill-adjoint 33
  resumed=$(run "${common[@]}" --resume | grep '^result')
  echo "killed twice, resumed: $resumed"
  [ "$(field gradient "$resumed")" = "$gradient" ] || fail "gradient after two kills: $resumed"
  [ "$(field resumed_at "$resumed")" = 40 ] || fail "after two kills: $resumed"
  expect_empty
  # Killed on another host: its store file keeps a partial name this host's cleanup leaves alone
  # (it cannot tell whether that process lives); the resumed run knows the file is its own (the
  # same file as its link) and removes that name when it ends.
  killed_run --kill-forward 57
  partials=("$work"/rewind-resume_app-*.h5.partial)
  [ ${#partials[@]} = 1 ] && [ -e "${partials[0]}" ] || fail "no partial file after a kill: ${partials[*]}"
  mv "${partials[0]}" "$work/rewind-resume_app-otherhost-12345-20261123T000000.000000Z-0.h5.partial"
  resumed=$(run "${common[@]}" --resume | grep '^result')
  [ "$(field gradient "$resumed")" = "$gradient" ] || fail "gradient after a kill elsewhere: $resumed"
  expect_empty
  echo "kill and resume: every gradient bitwise the uninterrupted run's"
  exit 0
fi

# ---- refusals: a killed run's files are used only by a resume of the same problem, intact ----
killed_run --kill-adjoint 64
manifest="$work/rewind-resume_app.resume"
cp "$manifest" "$work/manifest.saved"
cp "$manifest" "$work/manifest.expected"
refused() {  # refused REGEX app-args...: the run fails on every rank with a message matching
  local regex=$1
  shift
  local out
  if out=$(run "$@" 2>&1); then fail "not refused ($*): $out"; fi
  grep -qE -- "$regex" <<<"$out" || fail "refused ($*) without '$regex': $out"
  cmp -s "$manifest" "$work/manifest.expected" || fail "the manifest changed after a refusal ($*)"
}
refused "not told to resume it" "${common[@]}"
refused "another problem, so it is not resumed: the identity \(.*ResumeConfig::identity in C\+\+\) was 'resume_app', is 'other'" \
  "${common[@]}" --resume --identity other
refused "another problem, so it is not resumed: the step count was 120, is 100" \
  "${common[@]/#120/100}" --resume
refused "the interval was 10, is 12" "${common[@]/#10/12}" --resume
refused "the label \(StoreConfig::label\) was 'resume_app', is 'resume-app'" \
  "${common[@]}" --resume --label resume-app
# The model changed behind rewind (another time step, same sizes and identity): the first interval
# taken again is checked against the first sweep's state at its end, before anything is saved.
refused "the state recomputed at step 70 differs from the first sweep's in field .*not resumed, and the killed run's files are left as they are" \
  "${common[@]}" --resume --dt-scale 1.001
out=$("$mpiexec" -n 1 "$app" "${common[@]}" --resume 2>&1) && fail "resumed on 1 rank: $out"
grep -q "the rank count was 2, is 1" <<<"$out" || fail "1 rank refused without the reason: $out"
other=$([ "$stepper" = lorenz ] && echo diffusion || echo lorenz)
refused "state field 1 was '[A-Za-z]+', is '[A-Za-z]+'|adjoint state field" \
  "${common[@]/#$stepper/$other}" --resume
# A live run with the same label and directory: a second job is refused, the first goes on.
cp "$work/manifest.saved" "$work/manifest.expected"
start_paused --resume --kill-adjoint 45
live_manifest=$(cat "$manifest")
out=$(run "${common[@]}" --resume 2>&1) && fail "a live run was resumed by another job: $out"
grep -q "a resumable run is live in this directory" <<<"$out" || fail "not refused as live: $out"
[ "$(cat "$manifest")" = "$live_manifest" ] || fail "the live run's manifest changed"
kill_paused
cp "$manifest" "$work/manifest.saved"
cp "$manifest" "$work/manifest.expected"
# A damaged manifest: one changed character.
sed -i '2s/identity 7/identity 6/' "$manifest"
cp "$manifest" "$work/manifest.expected"
refused "fails its checksum" "${common[@]}" --resume
cp "$work/manifest.saved" "$manifest"
# A cut manifest.
head -c 200 "$work/manifest.saved" >"$manifest"
cp "$manifest" "$work/manifest.expected"
refused "cut short|expected" "${common[@]}" --resume
cp "$work/manifest.saved" "$manifest"
# A damaged checkpoint: 8 bytes of the first block of rank 1 in the first state listed.
read -r file_hex at < <(awk '/^state /{f=$3} /^block 1 0 /{print f, $4; exit}' "$manifest")
file=$(printf "$(sed 's/../\\x&/g' <<<"$file_hex")")
cp "$work/$file" "$work/data.saved"
printf '\x01\x02\x03\x04\x05\x06\x07\x08' | dd of="$work/$file" bs=1 seek="$at" conv=notrunc status=none
out=$(run "${common[@]}" --resume 2>&1) && fail "a damaged checkpoint was used: $out"
grep -q "fails its checksum.*the state at step 0 (rank 1.s block) is damaged, so the manifest is refused" <<<"$out" ||
  fail "a damaged checkpoint refused without the reason: $out"
cp "$work/data.saved" "$work/$file"
rm -f "$work/data.saved" "$work/manifest.saved" "$work/manifest.expected"
# Intact again: it resumes, bitwise.
resumed=$(run "${common[@]}" --resume | grep '^result')
[ "$(field gradient "$resumed")" = "$gradient" ] || fail "gradient after the refusals: $resumed"
expect_empty
# Killed in the first sweep, resumed by a program with another model: the interval before the
# durable state it would go on from is taken again first and does not reach that state, so it is
# refused before it makes anything durable; the right program then resumes, bitwise.
killed_run --kill-forward 57
cp "$manifest" "$work/manifest.expected"
refused "took the killed run's steps 40 to 50 again from its durable state and reached another state.*left as they are" \
  "${common[@]}" --resume --dt-scale 1.001
rm -f "$work/manifest.expected"
resumed=$(run "${common[@]}" --resume | grep '^result')
[ "$(field gradient "$resumed")" = "$gradient" ] || fail "gradient after a refused model: $resumed"
expect_empty
echo "refusals: each named what differs, the files stayed, the resume then gave the same bits"
