#!/usr/bin/env bash
# Runs a command as if the disk under a directory were slow: reads and writes to its block device
# limited to MB_PER_S (the blkio throttle of the root cgroup), and a page cache that holds at most
# 64 MiB of unwritten data (vm.dirty_bytes), so writes wait for that device instead of landing in
# memory. Everything on that device slows down while it runs. The old settings come back when the
# command ends or fails, and when this script is interrupted or terminated (the command is
# stopped first); after a SIGKILL of this script, run the restore commands it printed at the
# start. One run at a time (a lock). Needs root and cgroup v1's blkio controller. For measuring
# what write-behind and prefetch hide (docs/benchmarks.md), e.g.
#
#   scripts/slow-disk.sh 200 /tmp -- mpiexec -n 2 build/bin/rewind-bench-store --sizes 8,64
set -euo pipefail
if [[ $# -lt 4 || $3 != "--" || ! $1 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 MB_PER_S DIRECTORY -- COMMAND [ARG...]" >&2
  exit 2
fi
mb_per_s=$1
rate=$((mb_per_s * 1000 * 1000))
dir=$2
shift 3
throttle=/sys/fs/cgroup/blkio
if [[ $(id -u) != 0 || ! -w $throttle/blkio.throttle.write_bps_device ]]; then
  echo "$0: needs root and $throttle/blkio.throttle.write_bps_device" >&2
  exit 2
fi
# The whole disk holding DIRECTORY (the throttle applies to disks, not partitions).
source=$(df --output=source "$dir" | tail -1)
disk=$(lsblk -no PKNAME "$source" 2>/dev/null | head -1 || true)
[[ -n $disk ]] || disk=$(basename "$source")
if [[ ! -r /sys/block/$disk/dev ]]; then
  echo "$0: $dir is on $source, not on a block device; nothing to throttle" >&2
  exit 2
fi
device=$(cat "/sys/block/$disk/dev")

exec 9>/run/rewind-slow-disk.lock
if ! flock -n 9; then
  echo "$0: another slow-disk.sh is running (lock /run/rewind-slow-disk.lock)" >&2
  exit 2
fi

# What to put back: the device's throttle lines as they were (none: "0", no limit), and each
# dirty limit in the form it was set (the kernel keeps it in bytes or as a ratio; the other
# reads 0).
old_limit() {
  local line
  line=$(grep "^$device " "$throttle/$1" 2>/dev/null || true)
  echo "${line:-$device 0}"
}
old_write=$(old_limit blkio.throttle.write_bps_device)
old_read=$(old_limit blkio.throttle.read_bps_device)
if [[ $(cat /proc/sys/vm/dirty_bytes) != 0 ]]; then
  old_dirty="echo $(cat /proc/sys/vm/dirty_bytes) >/proc/sys/vm/dirty_bytes"
else
  old_dirty="echo $(cat /proc/sys/vm/dirty_ratio) >/proc/sys/vm/dirty_ratio"
fi
if [[ $(cat /proc/sys/vm/dirty_background_bytes) != 0 ]]; then
  old_background="echo $(cat /proc/sys/vm/dirty_background_bytes) >/proc/sys/vm/dirty_background_bytes"
else
  old_background="echo $(cat /proc/sys/vm/dirty_background_ratio) >/proc/sys/vm/dirty_background_ratio"
fi
restore_commands=(
  "echo '$old_write' >$throttle/blkio.throttle.write_bps_device"
  "echo '$old_read' >$throttle/blkio.throttle.read_bps_device"
  "$old_dirty"
  "$old_background"
)
restored=0
# shellcheck disable=SC2317  # called by the traps
restore() {
  [[ $restored == 0 ]] || return 0
  restored=1
  local c
  for c in "${restore_commands[@]}"; do
    bash -c "$c" || echo "$0: could not restore: $c" >&2
  done
}
child=
# shellcheck disable=SC2317  # called by the traps
on_signal() {
  local code=$1
  [[ -z $child ]] || kill -TERM "$child" 2>/dev/null || true
  [[ -z $child ]] || wait "$child" 2>/dev/null || true
  restore
  exit "$code"
}
trap restore EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP

echo "slow disk: $disk ($device) limited to $mb_per_s MB/s, at most 64 MiB of dirty page cache;" \
  "if this script is killed with SIGKILL, restore with:" >&2
printf '  %s\n' "${restore_commands[@]}" >&2
sync
echo $((64 << 20)) >/proc/sys/vm/dirty_bytes
echo $((16 << 20)) >/proc/sys/vm/dirty_background_bytes
echo "$device $rate" >$throttle/blkio.throttle.write_bps_device
echo "$device $rate" >$throttle/blkio.throttle.read_bps_device
# In the background, so that a signal to this script is handled at once (bash runs a trap only
# between commands, and waits for a foreground command first).
set +e
"$@" &
child=$!
wait "$child"
status=$?
set -e
child=
exit "$status"
