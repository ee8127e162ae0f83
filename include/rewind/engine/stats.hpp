#pragma once
/// @file
/// What an adjoint run did and where its time went.

#include <cstdint>
#include <string>

namespace rwd::engine {

/// Checkpoint traffic at one level (this rank).
struct LevelTraffic {
  std::int64_t writes = 0;
  std::int64_t reads = 0;
  std::int64_t bytes_written = 0;
  std::int64_t bytes_read = 0;
  std::int64_t peak = 0;  ///< most checkpoints live at once
};

/// Statistics of one run, as seen by this rank. Times are wall-clock seconds.
struct RunStats {
  std::string schedule;
  std::int64_t steps = 0;          ///< n
  std::int64_t forward_steps = 0;  ///< every forward step evaluated
  std::int64_t adjoint_steps = 0;
  LevelTraffic ram;
  LevelTraffic disk;
  double forward_seconds = 0.0;    ///< first sweep
  double recompute_seconds = 0.0;  ///< forward steps after the first sweep
  double adjoint_seconds = 0.0;
  double io_seconds = 0.0;         ///< time the engine waited on stores
  double io_hidden_seconds = 0.0;  ///< store time overlapped with compute (async I/O)
  double total_seconds = 0.0;

  std::int64_t recomputed() const { return forward_steps - steps; }

  /// A few human lines.
  std::string summary() const;
  /// One JSON object.
  std::string json() const;
};

}  // namespace rwd::engine
