#pragma once
/// @file
/// Schedules made of other schedules: one planned for steps 0..m-1 run on steps base..base+m-1
/// (a recording that plans the rest of its steps again, from a restart checkpoint at base), and
/// the stream of a run with no step left to plan.

#include <memory>

#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule {

/// `inner`, planned for steps 0..m-1, with every step number of its actions moved by `by`.
class ShiftedSchedule final : public Schedule {
 public:
  ShiftedSchedule(std::unique_ptr<Schedule> inner, Step by);
  std::optional<Action> next() override;
  std::string name() const override { return inner_->name(); }
  void observe_step(Step i, double cost, double bytes) override;

 private:
  std::unique_ptr<Schedule> inner_;
  Step by_;
};

/// A run whose every step is served already (its pullback data kept): the stream is EndReverse.
class EndOnlySchedule final : public Schedule {
 public:
  explicit EndOnlySchedule(const ScheduleParams& params) : Schedule(params) {}
  std::optional<Action> next() override;
  std::string name() const override { return "served"; }

 private:
  bool done_ = false;
};

}  // namespace rwd::schedule
