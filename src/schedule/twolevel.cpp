// twolevel: optimal RAM + disk checkpointing (H-Revolve for two levels). The schedule streams the
// actions of a shared, immutable plan (twolevel_plan.hpp): x_0 in a RAM slot and Revolve, or
// x_0 on disk and the plan's disk segments, each expanded by SegmentStream.
#include "rewind/schedule/twolevel.hpp"

#include <memory>
#include <string>
#include <utility>

#include "builtin.hpp"
#include "segments.hpp"
#include "twolevel_plan.hpp"

namespace rwd::schedule {

namespace {

using detail::SegmentStream;

class TwoLevelSchedule final : public Schedule {
 public:
  TwoLevelSchedule(const ScheduleParams& p, std::shared_ptr<const detail::TwoLevelDiskPlan> plan)
      : Schedule(p), plan_(std::move(plan)), stream_(p.ram, plan_.get()) {
    const Step n = p.steps;
    if (n == 1) {
      stream_.push_step(0);
    } else if (plan_->summary().x0_on_disk) {
      stream_.push_disk(0, n, plan_->top_free_disk(), SegmentStream::Start::WriteFirst);
    } else {
      stream_.push_ram(0, n, p.ram, false);
    }
  }

  std::string name() const override { return "twolevel"; }

  std::optional<Action> next() override {
    if (auto a = stream_.next()) return a;
    if (ended_) return std::nullopt;
    ended_ = true;
    return EndReverse{};
  }

  std::optional<double> lower_bound() const override { return plan_->summary().lower_bound; }

 private:
  std::shared_ptr<const detail::TwoLevelDiskPlan> plan_;
  SegmentStream stream_;
  bool ended_ = false;
};

}  // namespace

TwoLevelPlan plan_twolevel(const ScheduleParams& params, TwoLevelMethod method,
                           std::int64_t table_entries) {
  return detail::shared_two_level_plan(detail::two_level_request(params, method, table_entries))
      ->summary();
}

std::unique_ptr<Schedule> make_twolevel(const ScheduleParams& params, TwoLevelMethod method,
                                        std::int64_t table_entries) {
  return std::make_unique<TwoLevelSchedule>(
      params,
      detail::shared_two_level_plan(detail::two_level_request(params, method, table_entries)));
}

namespace detail {

void register_twolevel(ScheduleRegistry& registry) {
  registry.add(
      {.name = "twolevel",
       .summary = "optimal RAM + disk checkpointing (H-Revolve, two levels): least "
                  "forward steps plus weighted disk writes and reads",
       .online = false,
       .uses_disk = true,
       .factory = [](const ScheduleParams& p) { return make_twolevel(p, TwoLevelMethod::Auto); },
       .restart_only = true});
}

}  // namespace detail

}  // namespace rwd::schedule
