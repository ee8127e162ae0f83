#pragma once
// A recording's schedule as the recording consumes it: the next action and, in the reverse
// sweep, a look ahead over the next actions whose disk reads (restores, pullback data) are
// started early, so that the reads run on the I/O thread while the program computes.

#include <deque>
#include <memory>

#include "checkpoint_io.hpp"
#include "rewind/schedule/schedule.hpp"

namespace rwd::engine::detail {

class ActionStream {
 public:
  /// Pullback data is read this many adjoint steps ahead. The process has one I/O thread, which
  /// reads one checkpoint at a time: a deeper queue does not read faster, it only holds more
  /// staging buffers (16 held 4 MiB more per rank than 4 in PETSc's ex5adj, 300 checkpoints of
  /// 256 KiB on disk, with no read late at either depth; RunStats::prefetch counts late ones).
  static constexpr Step kPrefetchSteps = 4;  // adjoint steps

  /// Follows `schedule` from its start, with nothing looked ahead.
  void reset(std::unique_ptr<schedule::Schedule> schedule);
  schedule::Schedule& schedule() { return *schedule_; }

  /// The next action. `reversing`: look ahead and start the disk reads of what is ahead through
  /// `io`. Throws Error(Internal) naming `name` if the stream ends before EndReverse.
  schedule::Action next(bool reversing, CheckpointIo& io, const std::string& name);

 private:
  static constexpr std::size_t kLookahead = 16;  // actions
  void prefetch_ahead(CheckpointIo& io);

  std::unique_ptr<schedule::Schedule> schedule_;
  std::deque<schedule::Action> ahead_;
};

}  // namespace rwd::engine::detail
