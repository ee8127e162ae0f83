#pragma once
// Helpers shared by the schedule tests.

#include <algorithm>
#include <limits>
#include <vector>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/schedule.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rwd::schedule::testing {

/// A schedule that plays back a fixed action list: lets tests feed the simulator any stream.
class ListSchedule final : public Schedule {
 public:
  ListSchedule(const ScheduleParams& p, std::vector<Action> actions, bool online = false)
      : Schedule(p), actions_(std::move(actions)), online_(online) {}
  std::optional<Action> next() override {
    if (index_ >= actions_.size()) return std::nullopt;
    return actions_[index_++];
  }
  std::string name() const override { return "list"; }
  bool online() const override { return online_; }
  void finalize(Step n) override { finalized_at = n; }
  Step finalized_at = -1;

 private:
  std::vector<Action> actions_;
  std::size_t index_ = 0;
  bool online_;
};

inline ScheduleParams ram_budget(Step n, std::int64_t s) {
  ScheduleParams p;
  p.steps = n;
  p.ram = s;
  return p;
}

inline ScheduleParams two_level_budget(Step n, std::int64_t ram, std::int64_t disk, double wd,
                                       double rd) {
  ScheduleParams p = ram_budget(n, ram);
  p.disk = disk;
  p.write_cost = wd;
  p.read_cost = rd;
  return p;
}

/// The least replayed cost of every registered schedule that accepts `p` (what `auto` must find).
/// A schedule refusing the budget must say so with InvalidArgument; any other error propagates.
inline double least_registered_cost(const ScheduleParams& p) {
  double least = std::numeric_limits<double>::infinity();
  for (const auto& e : ScheduleRegistry::instance().list()) {
    try {
      auto s = e.factory(p);
      least = std::min(least, simulate(*s, p).cost);
    } catch (const Error& err) {
      if (err.code() != ErrorCode::InvalidArgument) throw;
    }
  }
  return least;
}

}  // namespace rwd::schedule::testing
