#!/usr/bin/env bash
# Runs a command as if the disk under a directory were slow: reads and writes to its block device
# limited to MB_PER_S (the blkio throttle of the root cgroup), and a page cache that holds at most
# 64 MiB of unwritten data (vm.dirty_bytes), so writes wait for that device instead of landing in
# memory. Everything on that device slows down while it runs; the old settings come back when the
# command ends, fails or is interrupted. Needs root and cgroup v1's blkio controller. For
# measuring what write-behind and prefetch hide (docs/benchmarks.md), e.g.
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

# The kernel keeps each dirty limit either in bytes or as a ratio (the other reads 0); whichever
# was set comes back.
dirty_bytes=$(cat /proc/sys/vm/dirty_bytes) dirty_ratio=$(cat /proc/sys/vm/dirty_ratio)
background_bytes=$(cat /proc/sys/vm/dirty_background_bytes)
background_ratio=$(cat /proc/sys/vm/dirty_background_ratio)
restore() {
  echo "$device 0" >$throttle/blkio.throttle.write_bps_device || true
  echo "$device 0" >$throttle/blkio.throttle.read_bps_device || true
  if [[ $dirty_bytes != 0 ]]; then echo "$dirty_bytes" >/proc/sys/vm/dirty_bytes
  else echo "$dirty_ratio" >/proc/sys/vm/dirty_ratio; fi
  if [[ $background_bytes != 0 ]]; then echo "$background_bytes" >/proc/sys/vm/dirty_background_bytes
  else echo "$background_ratio" >/proc/sys/vm/dirty_background_ratio; fi
}
trap restore EXIT INT TERM

sync
echo $((64 << 20)) >/proc/sys/vm/dirty_bytes
echo $((16 << 20)) >/proc/sys/vm/dirty_background_bytes
echo "$device $rate" >$throttle/blkio.throttle.write_bps_device
echo "$device $rate" >$throttle/blkio.throttle.read_bps_device
echo "slow disk: $disk ($device) limited to $mb_per_s MB/s, at most 64 MiB of dirty page cache" >&2
"$@"
