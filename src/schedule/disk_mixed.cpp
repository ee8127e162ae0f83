// disk-mixed: periodic disk checkpoints with mixed checkpointing in RAM between them. The first
// sweep writes x_0, x_P, ..., x_{(q-2)P} to disk; the last interval is reversed by mixed at once
// (its first sweep records what mixed keeps); each earlier interval is read back and reversed by
// mixed with every RAM slot, whose slots hold restart states or one step's pullback data
// (stages), whichever saves more. With RAM for an interval's pullback data, every step is taken
// twice at most, where a restart-only schedule takes it three times or more.
#include <algorithm>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "builtin.hpp"
#include "mixed_table.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/mixed.hpp"

namespace rwd::schedule {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void check_params(const ScheduleParams& p) {
  detail::check_offline_params("disk-mixed", p, 0);
  require(p.period >= 0,
          "disk-mixed: the period must be >= 1 (0 = choose), got " + std::to_string(p.period));
  require(p.ram >= 1 || p.period <= 1,
          "disk-mixed: without RAM slots every state goes to disk: the period must be 1");
}

// M(L, ram) for L = 0..n: mixed's table, or, without RAM slots, single steps only.
std::vector<double> segment_costs(Step n, std::int64_t ram) {
  if (ram >= 1) return detail::shared_mixed_table(n, ram)->costs();
  std::vector<double> c(static_cast<std::size_t>(n) + 1, kInf);
  c[1] = 1.0;
  return c;
}

// (q - 1) intervals of P steps, each taken in the first sweep, written, read and reversed, and
// the last one of n - (q - 1) P steps reversed at once.
double cost_with(const std::vector<double>& m, Step n, std::int64_t P, double wd, double rd) {
  const std::int64_t q = (n + P - 1) / P;
  const Step last = n - (q - 1) * P;
  return static_cast<double>(q - 1) *
             (static_cast<double>(P) + wd + rd + m[static_cast<std::size_t>(P)]) +
         m[static_cast<std::size_t>(last)];
}

// The cheapest period within the disk slots (p.period not given).
std::int64_t best_period(const ScheduleParams& p, const std::vector<double>& m) {
  const Step n = p.steps;
  std::int64_t best = 0;
  double best_cost = kInf;
  for (std::int64_t P = 1; P <= n; ++P) {
    if (p.disk != kUnlimited && (n + P - 1) / P - 1 > p.disk) continue;
    const double c = cost_with(m, n, P, p.write_cost, p.read_cost);
    if (c < best_cost) {
      best_cost = c;
      best = P;
    }
  }
  require(best != 0 && best_cost < kInf,
          "disk-mixed: " + std::to_string(n) + " steps with " + std::to_string(p.ram) +
              " RAM and " + std::to_string(p.disk) +
              " disk slots: no period fits; raise the disk slots or use twolevel");
  return best;
}

class DiskMixedSchedule final : public Schedule {
 public:
  // One table (shared_mixed_table): the period is chosen from its costs, and its choices drive
  // the stream.
  explicit DiskMixedSchedule(const ScheduleParams& p)
      : Schedule(p),
        table_(detail::shared_mixed_table((check_params(p), p.ram >= 1 ? p.steps : 1),
                                          p.ram >= 1 ? p.ram : 0)),
        period_(p.period != 0 ? std::min<std::int64_t>(p.period, p.steps)
                              : best_period(p, segment_costs(p.steps, p.ram))),
        stream_(*table_) {
    const Step n = p.steps;
    const std::int64_t q = (n + period_ - 1) / period_;
    require(p.disk == kUnlimited || q - 1 <= p.disk,
            "disk-mixed: period " + std::to_string(period_) + " over " + std::to_string(n) +
                " steps needs " + std::to_string(q - 1) + " disk slots, have " +
                std::to_string(p.disk) + "; raise the disk slots or the period");
    require(p.ram >= 1 || n - (q - 1) * period_ == 1,
            "disk-mixed: without RAM slots the period must be 1");
    for (std::int64_t i = 0; i + 1 < q; ++i) {
      pending_.push_back(Forward{i * period_, (i + 1) * period_, true, false, Level::Disk});
      stream_.push_from_disk(i * period_, (i + 1) * period_, p.ram);
    }
    stream_.push_segment((q - 1) * period_, n, p.ram);
  }

  std::string name() const override { return "disk-mixed"; }
  std::int64_t period() const override { return period_; }

  std::optional<Action> next() override {
    if (!pending_.empty()) {
      Action a = pending_.front();
      pending_.pop_front();
      return a;
    }
    if (auto a = stream_.next()) return a;
    if (ended_) return std::nullopt;
    ended_ = true;
    return EndReverse{};
  }

 private:
  std::shared_ptr<const detail::MixedTable> table_;
  std::int64_t period_;
  detail::MixedStream stream_;
  std::deque<Action> pending_;  // the first sweep's disk intervals
  bool ended_ = false;
};

}  // namespace

std::int64_t disk_mixed_period(const ScheduleParams& params) {
  check_params(params);
  if (params.period != 0) return std::min<std::int64_t>(params.period, params.steps);
  return best_period(params, segment_costs(params.steps, params.ram));
}

double disk_mixed_cost(const ScheduleParams& params, std::int64_t period) {
  check_params(params);
  require(period >= 1, "disk_mixed_cost: the period must be >= 1");
  return cost_with(segment_costs(params.steps, params.ram), params.steps,
                   std::min<std::int64_t>(period, params.steps), params.write_cost,
                   params.read_cost);
}

namespace detail {

void register_disk_mixed(ScheduleRegistry& registry) {
  registry.add(
      {.name = "disk-mixed",
       .summary = "periodic disk checkpoints, mixed in RAM between them (a RAM slot holds a "
                  "restart state or a step's stages)",
       .online = false,
       .uses_disk = true,
       .factory = [](const ScheduleParams& p) { return std::make_unique<DiskMixedSchedule>(p); },
       .restart_only = false});
}

}  // namespace detail

}  // namespace rwd::schedule
