#pragma once
// Helpers shared by the schedule tests.

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <utility>
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

/// Two-level costs over a RAM level that reverses a segment of L steps from work in ram(L)
/// (+infinity where it cannot), with restart states on disk; written independently of the
/// schedules, top-down.
class TwoLevelOracle {
 public:
  TwoLevelOracle(std::function<double(Step)> ram, double wd, double rd)
      : ram_(std::move(ram)), wd_(wd), rd_(rd) {}

  /// Periodic: x_0, x_P, ... written in the first sweep, each interval read back, the last one
  /// reversed at once; the least over the periods that fit `disk` slots (kUnlimited = -1).
  double periodic(Step n, std::int64_t disk) const {
    double best = kInf;
    for (Step P = 1; P <= n; ++P) {
      const Step q = (n + P - 1) / P;
      if (disk != kUnlimited && q - 1 > disk) continue;
      best = std::min(best,
                      static_cast<double>(q - 1) * (static_cast<double>(P) + wd_ + rd_ + ram_(P)) +
                          ram_(n - (q - 1) * P));
    }
    return best;
  }

  /// The recursion: the whole run either by the RAM level, or with x_0 written to disk and the
  /// segment under it split at every possible step, each right part by the RAM level or written
  /// to disk and split again, each left part read back and split again or given to the RAM level.
  double recursive(Step n, std::int64_t disk) {
    double best = ram_(n);
    if (disk != 0) best = std::min(best, wd_ + on_disk(n, disk == kUnlimited ? n : disk - 1));
    return best;
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  // x_l in work and on disk, `free` more disk slots.
  double on_disk(Step length, std::int64_t free) {
    if (length == 1) return ram_(1);
    const auto key = std::make_pair(length, free);
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
    double best = ram_(length);
    for (Step k = 1; k < length; ++k) {
      double right = ram_(length - k);
      if (free >= 1 && length - k >= 2)
        right = std::min(right, wd_ + on_disk(length - k, free - 1));
      best = std::min(best, static_cast<double>(k) + right + rd_ + on_disk(k, free));
    }
    memo_[key] = best;
    return best;
  }

  std::function<double(Step)> ram_;
  double wd_, rd_;
  std::map<std::pair<Step, std::int64_t>, double> memo_;
};

}  // namespace rwd::schedule::testing
