#pragma once
/// @file
/// What a checkpoint costs on disk, measured: for schedules that weigh disk writes and reads
/// against recomputation.

#include <mpi.h>

#include <cstdint>
#include <string>

namespace rwd::storage {

/// Seconds one checkpoint takes on disk, the largest over the ranks.
struct DiskCost {
  double write_seconds = 0.0;  ///< write and fsync
  double read_seconds = 0.0;   ///< read back after dropping it from the page cache
};

/// Collective on `comm`. Each rank writes `bytes` bytes (at least 4096) to a probe file of its
/// own in `directory`, syncs it, asks the kernel to drop it from the page cache, reads it back
/// and deletes it; every rank returns the slowest rank's times. Throws Error(Io) on every rank
/// if any rank could not write, sync or read its file (naming the directory and the OS's
/// reason), Error(InvalidArgument) on every rank if bytes < 0.
DiskCost probe_disk(const std::string& directory, std::int64_t bytes, MPI_Comm comm);

}  // namespace rwd::storage
