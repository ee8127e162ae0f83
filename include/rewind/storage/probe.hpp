#pragma once
/// @file
/// What a checkpoint costs on disk, measured: for schedules that weigh disk writes and reads
/// against recomputation.

#include <mpi.h>

#include <cstdint>
#include <string>

namespace rwd::storage {

/// Seconds one checkpoint takes on disk, the largest over the ranks: what the caller's thread
/// pays to hand it to the page cache, and what the device takes for it at its sustained speed
/// (which write-behind and read-ahead overlap with computation).
struct DiskCost {
  double write_seconds = 0.0;         ///< to the device: written and synced, per checkpoint
  double read_seconds = 0.0;          ///< from the device, dropped from the page cache first
  double cached_write_seconds = 0.0;  ///< into the page cache (pwrite, no sync)
  double cached_read_seconds = 0.0;   ///< from the page cache
  std::int64_t probed = 0;            ///< checkpoints written to measure it
};

/// Collective on `comm`. Each rank writes a probe file of its own in `directory` as a run of
/// checkpoints of `bytes` bytes (at least 4096; enough of them to make about 4 MiB, at most
/// 64): the writes timed alone, then with the sync; asks the kernel to drop the file from the
/// page cache, reads it back, reads it again from the cache, and deletes it. Every figure is
/// per checkpoint and the slowest rank's. Throws Error(Io) on every rank if any rank could not
/// write, sync or read its file (naming the directory and the OS's reason),
/// Error(InvalidArgument) on every rank if bytes < 0.
DiskCost probe_disk(const std::string& directory, std::int64_t bytes, MPI_Comm comm);

}  // namespace rwd::storage
