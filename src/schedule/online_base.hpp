#pragma once
// Private: the action-stream skeleton shared by the online schedules (online, dynamic). Until
// finalize(n) each call to next() asks the schedule for the next decision of the first sweep
// (sweep(): stores, evictions, one Forward); after it the reverse sweep is queued once
// (reverse(): the actions before the segments, and the SegmentStream of the segments), streamed,
// and closed by EndReverse.
#include <deque>
#include <memory>
#include <optional>

#include "rewind/schedule/schedule.hpp"
#include "segments.hpp"

namespace rwd::schedule::detail {

class OnlineBase : public Schedule {
 public:
  bool online() const override { return true; }

  std::optional<Action> next() final {
    if (!pending_.empty()) return pop();
    if (!finalized_) {
      sweep();
      return pop();
    }
    if (!reversing_) {
      reversing_ = true;
      reverse();
      if (!pending_.empty()) return pop();
    }
    if (stream_) {
      if (auto a = stream_->next()) return a;
    }
    if (ended_) return std::nullopt;
    ended_ = true;
    return EndReverse{};
  }

 protected:
  explicit OnlineBase(const ScheduleParams& params) : Schedule(params) {}

  /// Queues the next decision of the first sweep onto pending_ (at least one action).
  virtual void sweep() = 0;
  /// Called once after finalize: queues what precedes the segments and sets stream_.
  virtual void reverse() = 0;

  std::deque<Action> pending_;
  std::unique_ptr<SegmentStream> stream_;
  bool finalized_ = false;

 private:
  Action pop() {
    Action a = pending_.front();
    pending_.pop_front();
    return a;
  }

  bool reversing_ = false;
  bool ended_ = false;
};

}  // namespace rwd::schedule::detail
