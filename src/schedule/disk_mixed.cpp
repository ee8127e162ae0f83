// disk-mixed: disk checkpoints of restart states with mixed checkpointing in RAM between them;
// a RAM slot holds a restart state or one step's pullback data (stages), whichever saves more.
// Where the disk checkpoints go: by H-Revolve's recursion at the disk level (disk_tree.hpp) over
// the mixed table's segment costs, so a disk slot freed by a reversed right part is used again
// for the left part; or periodically, every P steps (--period, or a run too long for the
// recursion's table): the first sweep writes x_0, x_P, ..., x_{(q-2)P}, the last interval is
// reversed at once and each earlier one is read back and reversed by mixed. With RAM for an
// interval's pullback data, every step is taken twice at most, where a restart-only schedule
// takes it three times or more. With checkpoint sizes (ScheduleParams::ram_units) the RAM level
// plans in units as mixed does (a restart state takes its own units, a step's pullback data its
// own). Optimal for that model among schedules whose disk level is H-Revolve's recursion with
// restart states on disk; not among all two-level schedules.
#include <algorithm>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "builtin.hpp"
#include "disk_tree.hpp"
#include "mixed_table.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/mixed.hpp"

namespace rwd::schedule {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// (L, k) pairs the disk recursion may search: about 0.1 s. A longer run plans the columns that
// fit (fewer disk slots) and keeps the periodic placement if that is cheaper.
constexpr double kTreeWork = 6e7;

// The RAM budget in the units mixed plans with (slots without checkpoint sizes).
std::int64_t check_params(const ScheduleParams& p) {
  detail::check_offline_params("disk-mixed", p, 0);
  require(p.period >= 0,
          "disk-mixed: the period must be >= 1 (0 = choose), got " + std::to_string(p.period));
  std::int64_t budget = detail::mixed_budget("disk-mixed", p);
  const detail::MixedUnits units = detail::mixed_units(p);
  if (budget < std::min(units.restart, units.pullback)) budget = 0;  // holds no checkpoint
  require(budget >= 1 || p.period <= 1,
          "disk-mixed: without RAM slots every state goes to disk: the period must be 1");
  return budget;
}

// The mixed table the RAM level plans with, for the longest interval it can reverse: one step
// without RAM, as many as pullback data fit plus one when no restart state fits (unless step
// data holds the next state, which then serves as one), every step otherwise.
std::shared_ptr<const detail::MixedTable> ram_table(const ScheduleParams& p, std::int64_t budget) {
  const detail::MixedUnits units = detail::mixed_units(p);
  Step longest = p.steps;
  if (budget < 1) return detail::shared_mixed_table(1, 0);
  if (budget < units.restart && !units.holds_next)
    longest = std::min(longest, budget / units.pullback + 1);
  return detail::shared_mixed_table(longest, budget, units);
}

// M(L, budget) for L = 0..n (infinite beyond what the table can reverse).
std::vector<double> segment_costs(const detail::MixedTable& table, Step n) {
  std::vector<double> c = table.costs();
  c.resize(static_cast<std::size_t>(n) + 1, kInf);
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

// How the disk checkpoints are placed: by the recursion, or every `period` steps.
struct Placement {
  std::int64_t period = 0;  // 0: the recursion
  double cost = kInf;
  std::shared_ptr<const detail::DiskTree> tree;
};

// The recursion unless the periodic placement is cheaper (only when the recursion's table was cut
// short) or given; a recursion that writes nothing to disk is the period n.
Placement place(const ScheduleParams& p, const detail::MixedTable& table) {
  const Step n = p.steps;
  const std::vector<double> m = segment_costs(table, n);
  if (p.period != 0) {
    const std::int64_t P = std::min<std::int64_t>(p.period, n);
    return {P, cost_with(m, n, P, p.write_cost, p.read_cost), nullptr};
  }
  auto tree =
      std::make_shared<const detail::DiskTree>(m, p.disk, p.write_cost, p.read_cost, kTreeWork);
  Placement periodic;
  if (!tree->exact() || !tree->built()) {  // cut short, or no disk slot: nothing to recurse on
    try {
      periodic.period = best_period(p, m);
      periodic.cost = cost_with(m, n, periodic.period, p.write_cost, p.read_cost);
    } catch (const Error& e) {
      // No period fits: a table cut short is still a schedule within the disk slots.
      if (e.code() != ErrorCode::InvalidArgument || !tree->built()) throw;
    }
  }
  if (!tree->built() || periodic.cost < tree->cost()) return periodic;
  require(tree->cost() < kInf,
          "disk-mixed: " + std::to_string(n) + " steps with " + std::to_string(p.ram) +
              " RAM and " + std::to_string(p.disk) +
              " disk slots: no schedule fits; raise the disk slots or use twolevel");
  if (!tree->root_on_disk()) return {n, tree->cost(), nullptr};
  return {0, tree->cost(), std::move(tree)};
}

class DiskMixedSchedule final : public Schedule {
 public:
  // One table (shared_mixed_table): the placement is chosen from its costs, and its choices drive
  // the stream (a table of one step when there is no RAM).
  explicit DiskMixedSchedule(const ScheduleParams& p)
      : Schedule(p),
        budget_(check_params(p)),
        table_(ram_table(p, budget_)),
        placement_(place(p, *table_)),
        stream_(*table_) {
    if (placement_.tree) {
      frames_.push_back({Kind::Disk, 0, p.steps, placement_.tree->root_free_disk(), true});
      return;
    }
    const Step n = p.steps;
    const std::int64_t period = placement_.period;
    const std::int64_t q = (n + period - 1) / period;
    require(p.disk == kUnlimited || q - 1 <= p.disk,
            "disk-mixed: period " + std::to_string(period) + " over " + std::to_string(n) +
                " steps needs " + std::to_string(q - 1) + " disk slots, have " +
                std::to_string(p.disk) + "; raise the disk slots or the period");
    require(budget_ >= 1 || n - (q - 1) * period == 1,
            "disk-mixed: without RAM slots the period must be 1");
    require(placement_.cost < kInf,
            "disk-mixed: " + std::to_string(budget_) + " RAM units reverse at most " +
                std::to_string(table_->costs().size() - 1) + " steps between disk checkpoints, " +
                "fewer than the period " + std::to_string(period) +
                "; raise the RAM budget or lower the period");
    for (std::int64_t i = 0; i + 1 < q; ++i) {
      pending_.push_back(Forward{i * period, (i + 1) * period, true, false, Level::Disk});
      stream_.push_from_disk(i * period, (i + 1) * period, budget_);
    }
    stream_.push_segment((q - 1) * period, n, budget_);
  }

  std::string name() const override { return "disk-mixed"; }
  std::int64_t period() const override { return placement_.period; }

  std::optional<Action> next() override {
    for (;;) {
      if (!pending_.empty()) {
        Action a = pending_.front();
        pending_.pop_front();
        return a;
      }
      if (auto a = stream_.next()) return a;
      if (frames_.empty()) break;
      const Frame f = frames_.back();
      frames_.pop_back();
      expand(f);
    }
    if (ended_) return std::nullopt;
    ended_ = true;
    return EndReverse{};
  }

 private:
  // The recursion's segments [l, h), x_l in work: on disk (Disk: written first if `write`), or
  // to be read back from disk (Restore).
  enum class Kind : std::uint8_t { Disk, Restore };
  struct Frame {
    Kind kind;
    Step l, h;
    std::int64_t free_disk;  // planned (DiskTree::planned_free), x_l's own slot excluded
    bool write;
  };

  void expand(const Frame& f) {
    const detail::DiskTree& tree = *placement_.tree;
    const detail::DiskTree::Choice c = tree.choose(f.h - f.l, f.free_disk);
    if (f.kind == Kind::Restore) {
      if (c.split == 0) {  // the last read: the RAM level reverses it
        stream_.push_from_disk(f.l, f.h, budget_);
      } else {
        pending_.push_back(Copy{f.l, Level::Disk, Level::Work});
        frames_.push_back({Kind::Disk, f.l, f.h, f.free_disk, false});
      }
      return;
    }
    if (c.split == 0) {  // only where writing x_l costs nothing more than not writing it
      stream_.push_segment(f.l, f.h, budget_);
      return;
    }
    const Step mid = f.l + c.split;
    pending_.push_back(Forward{f.l, mid, f.write, false, f.write ? Level::Disk : Level::None});
    frames_.push_back({Kind::Restore, f.l, mid, f.free_disk, false});
    if (c.right_disk) {
      frames_.push_back({Kind::Disk, mid, f.h, tree.planned_free(f.free_disk - 1), true});
    } else {
      stream_.push_segment(mid, f.h, budget_);
    }
  }

  std::int64_t budget_;
  std::shared_ptr<const detail::MixedTable> table_;
  Placement placement_;
  detail::MixedStream stream_;
  std::deque<Action> pending_;  // the first sweep's disk intervals, or a split's actions
  std::vector<Frame> frames_;   // the recursion's segments still to reverse, last first
  bool ended_ = false;
};

}  // namespace

std::int64_t disk_mixed_period(const ScheduleParams& params) {
  const std::int64_t budget = check_params(params);
  if (params.period != 0) return std::min<std::int64_t>(params.period, params.steps);
  return best_period(params, segment_costs(*ram_table(params, budget), params.steps));
}

double disk_mixed_planned_cost(const ScheduleParams& params) {
  const std::int64_t budget = check_params(params);
  return place(params, *ram_table(params, budget)).cost;
}

double disk_mixed_cost(const ScheduleParams& params, std::int64_t period) {
  const std::int64_t budget = check_params(params);
  require(period >= 1, "disk_mixed_cost: the period must be >= 1");
  return cost_with(segment_costs(*ram_table(params, budget), params.steps), params.steps,
                   std::min<std::int64_t>(period, params.steps), params.write_cost,
                   params.read_cost);
}

namespace detail {

void register_disk_mixed(ScheduleRegistry& registry) {
  registry.add(
      {.name = "disk-mixed",
       .summary = "disk checkpoints placed by H-Revolve's recursion (or every P steps), mixed "
                  "in RAM between them (a RAM slot holds a restart state or a step's stages; "
                  "with checkpoint sizes, each kind takes its own units)",
       .online = false,
       .uses_disk = true,
       .factory = [](const ScheduleParams& p) { return std::make_unique<DiskMixedSchedule>(p); },
       .restart_only = false,
       .sized = true});
}

}  // namespace detail

}  // namespace rwd::schedule
