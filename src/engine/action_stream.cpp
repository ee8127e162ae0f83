#include "action_stream.hpp"

#include <variant>

#include "rewind/error.hpp"

namespace rwd::engine::detail {

void ActionStream::reset(std::unique_ptr<schedule::Schedule> schedule) {
  schedule_ = std::move(schedule);
  ahead_.clear();
}

schedule::Action ActionStream::next(bool reversing, CheckpointIo& io, const std::string& name) {
  if (reversing) {
    while (ahead_.size() < kLookahead) {
      auto a = schedule_->next();
      if (!a) break;
      ahead_.push_back(*a);
      if (std::holds_alternative<schedule::EndReverse>(*a)) break;
    }
    prefetch_ahead(io);
    if (!ahead_.empty()) {
      const schedule::Action a = ahead_.front();
      ahead_.pop_front();
      return a;
    }
  }
  auto a = schedule_->next();
  if (!a) {
    throw Error(ErrorCode::Internal,
                "schedule '" + name + "': the action stream ended before EndReverse");
  }
  return *a;
}

void ActionStream::prefetch_ahead(CheckpointIo& io) {
  if (!io.prefetches()) return;
  for (const schedule::Action& a : ahead_) {
    if (const auto* c = std::get_if<schedule::Copy>(&a); c && c->from != Level::Work) {
      io.prefetch(io.key(c->n, Kind::Restart));
    } else if (const auto* m = std::get_if<schedule::Move>(&a);
               m && m->from != Level::Work && m->to != Level::None) {
      io.prefetch(io.key(m->n, Kind::Restart));
    } else if (const auto* r = std::get_if<schedule::Reverse>(&a); r && r->from_states) {
      // The states its pullback data is composed from (not held: no read started).
      io.prefetch(io.key(r->n1, Kind::Restart));
      io.prefetch(io.key(r->n0, Kind::Restart));
    } else if (r) {
      for (Step i = r->n1 - 1; i >= r->n0 && i > r->n1 - 1 - kPrefetchSteps; --i) {
        io.prefetch(io.key(i, Kind::Pullback));
      }
    }
  }
}

}  // namespace rwd::engine::detail
