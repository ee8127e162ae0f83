// mixed: a RAM slot holds either a restart state or one step's pullback data (for a Runge-Kutta
// method, its stage values). Storing a step's pullback data saves the recording re-run of that
// step. Maddison's dynamic programme, in the simulator's units: M(n, s) is the least number of
// forward steps to reverse n steps from a state in work that is not stored, with s free slots:
//   M(1, s) = 1
//   M(n, s) = min( 1 + M(n-1, s-1),                       record step 0's data in a slot
//                  min_{2<=i<n} i + M(n-i, s-1) + M(i, s) )  store x_0, advance i, split
// (the left part may keep x_0 stored, which is the same as storing it again: RAM copies are free).
// Reference: n = 1000 gives 6828 forward steps with 5 slots and 3921 with 10 (Revolve: 7284,
// 4636). The table is O(n^2 s) when searched exhaustively; for large n only splits near the
// previous entry's are tried, and a convex relaxation of the same recursion gives a proven lower
// bound (as in twolevel).

#include <memory>
#include <optional>
#include <string>

#include "builtin.hpp"
#include "mixed_table.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/mixed.hpp"

namespace rwd::schedule {

namespace {

class MixedSchedule final : public Schedule {
 public:
  explicit MixedSchedule(const ScheduleParams& p)
      : Schedule(p),
        budget_((detail::check_offline_params("mixed", p, 0), detail::mixed_budget("mixed", p))),
        table_(detail::shared_mixed_table(p.steps, budget_, detail::mixed_units(p))),
        stream_(*table_) {
    stream_.push_segment(0, p.steps, budget_);
  }

  std::string name() const override { return "mixed"; }

  std::optional<double> lower_bound() const override { return table_->lower_bound(); }

  std::optional<Action> next() override {
    if (auto a = stream_.next()) return a;
    if (ended_) return std::nullopt;
    ended_ = true;
    return EndReverse{};
  }

 private:
  std::int64_t budget_;
  std::shared_ptr<const detail::MixedTable> table_;
  detail::MixedStream stream_;
  bool ended_ = false;
};

}  // namespace

MixedPlan plan_mixed(Step steps, std::int64_t slots) {
  const auto t = detail::shared_mixed_table(steps, slots);
  return {t->cost(), t->lower_bound(), t->exact()};
}

MixedPlan plan_mixed(const ScheduleParams& params) {
  detail::check_offline_params("mixed", params, 0);
  const auto t = detail::shared_mixed_table(params.steps, detail::mixed_budget("mixed", params),
                                            detail::mixed_units(params));
  return {t->cost(), t->lower_bound(), t->exact()};
}

namespace detail {

std::int64_t mixed_budget(const std::string& schedule, const ScheduleParams& p) {
  require(p.ram_units >= 0,
          schedule + ": RAM units must be >= 0, got " + std::to_string(p.ram_units));
  return p.ram_units > 0 ? p.ram_units : p.ram;
}

MixedUnits mixed_units(const ScheduleParams& p) {
  if (p.ram_units > 0) return {p.restart_units, p.pullback_units, p.pullback_holds_next};
  return {1, 1, p.pullback_holds_next};
}

void register_mixed(ScheduleRegistry& registry) {
  registry.add(
      {.name = "mixed",
       .summary = "a RAM slot holds a restart state or one step's pullback data "
                  "(stages), whichever saves more (Maddison's dynamic programme; with "
                  "checkpoint sizes, each kind takes its own units)",
       .online = false,
       .uses_disk = false,
       .factory = [](const ScheduleParams& p) { return std::make_unique<MixedSchedule>(p); },
       .restart_only = false,
       .sized = true});
}

}  // namespace detail

}  // namespace rwd::schedule
