#!/usr/bin/env bash
# Installs dependencies, builds, and shows what rewind does: for now, the cost of adjoint runs
# of 1000 steps under several checkpoint budgets, each replayed by rewind-plan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
plan=${BUILD_DIR:-build}/bin/rewind-plan
echo
echo "== 1000 steps, store everything (1000 RAM slots) =="
"$plan" --steps 1000 --ram 1000
echo
echo "== 1000 steps, 10 RAM slots: optimal binomial checkpointing =="
"$plan" --steps 1000 --ram 10 --schedule revolve
echo
echo "== 1000 steps, 70 RAM slots: periodic checkpoints vs the best schedule for that budget =="
"$plan" --steps 1000 --ram 70 --schedule periodic
"$plan" --steps 1000 --ram 70
echo
echo "== the action stream for 6 steps and 3 slots =="
"$plan" --steps 6 --ram 3 --schedule revolve --actions
