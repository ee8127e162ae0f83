// disk-revolve: periodic disk checkpoints with Revolve in RAM between them (the periodic variant
// of Disk-Revolve, Aupy & Herrmann). Every decision is O(1): the first sweep writes x_0, x_P,
// x_2P, ... to disk; the last interval is reversed in RAM at once; each earlier interval is read
// back into RAM and reversed by Revolve with every RAM slot. With the step count unknown (online),
// each interval start is kept in RAM until the next one is reached and only then moved to disk,
// so the interval the run ends in is still in RAM and its last step's pullback data is recorded.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <string>

#include "builtin.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/binomial.hpp"
#include "rewind/schedule/twolevel.hpp"
#include "segments.hpp"

namespace rwd::schedule {

namespace {

using detail::DiskChoice;
using detail::SegmentStream;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int64_t kMaxOnlinePeriod = std::int64_t{1} << 20;

// Intervals of a run of n steps with period P: q of them, the last of length `last`.
struct Intervals {
  std::int64_t q = 0;
  Step last = 0;
};
Intervals intervals(Step n, std::int64_t period) {
  Intervals v;
  v.q = (n + period - 1) / period;
  v.last = n - (v.q - 1) * period;
  return v;
}

double periodic_cost(const std::vector<double>& ram, Step n, std::int64_t period, double wd,
                     double rd) {
  const Intervals v = intervals(n, period);
  const auto P = static_cast<std::size_t>(period);
  return static_cast<double>(v.q - 1) * (static_cast<double>(period) + wd + rd + ram[P]) +
         ram[static_cast<std::size_t>(v.last)];
}

// The period with the least cost per step of an unbounded run: (P + wd + rd + R(P)) / P. R(P)/P
// never decreases, so the scan stops once 1 + R(P)/P alone reaches the best rate.
std::int64_t online_period(std::int64_t slots, double wd, double rd) {
  if (slots < 1) return 1;
  std::int64_t best = 1;
  double best_rate = kInf;
  double r = 0.0;  // R(P), built up with slope (repetitions + 1)
  std::int64_t reps = 0;
  std::int64_t next = 1;  // beta(slots, reps)
  for (std::int64_t P = 1; P <= kMaxOnlinePeriod; ++P) {
    if (P == 1) {
      r = 1.0;
    } else {
      while (P > next) next = beta(slots, ++reps);
      r += static_cast<double>(reps + 1);
    }
    const double p = static_cast<double>(P);
    if (1.0 + r / p >= best_rate) break;
    const double rate = (p + wd + rd + r) / p;
    if (rate < best_rate) {
      best_rate = rate;
      best = P;
    }
  }
  return best;
}

class PeriodicPolicy final : public detail::DiskPolicy {
 public:
  explicit PeriodicPolicy(std::int64_t period) : period_(period) {}
  DiskChoice choose(Step length, std::int64_t) const override {
    if (length <= period_) return {DiskChoice::Kind::ToRam, 0, false};
    return {DiskChoice::Kind::Split, period_, length - period_ > period_};
  }

 private:
  std::int64_t period_;
};

void check_params(const ScheduleParams& p) {
  require(p.ram >= 0, "disk-revolve: RAM slots must be >= 0, got " + std::to_string(p.ram));
  require(p.disk >= 0 || p.disk == kUnlimited,
          "disk-revolve: disk slots must be >= 0 or unlimited, got " + std::to_string(p.disk));
  require(p.write_cost >= 0.0 && p.read_cost >= 0.0,
          "disk-revolve: disk write and read costs must be >= 0");
  require(p.period >= 0,
          "disk-revolve: the period must be >= 1 (0 = choose), got " + std::to_string(p.period));
  require(p.ram >= 1 || p.period <= 1,
          "disk-revolve: without RAM slots every state goes to disk: the period must be 1");
}

}  // namespace

std::int64_t disk_revolve_period(const ScheduleParams& p) {
  check_params(p);
  if (p.period != 0) return p.period;
  if (p.steps <= 0) return online_period(p.ram, p.write_cost, p.read_cost);
  const Step n = p.steps;
  const std::vector<double> ram = detail::revolve_costs(n, p.ram);
  std::int64_t best = 0;
  double best_cost = kInf;
  for (std::int64_t P = 1; P <= n; ++P) {
    if (p.disk != kUnlimited && intervals(n, P).q - 1 > p.disk) continue;
    const double c = periodic_cost(ram, n, P, p.write_cost, p.read_cost);
    if (c < best_cost) {
      best_cost = c;
      best = P;
    }
  }
  require(best != 0, "disk-revolve: " + std::to_string(n) + " steps with " + std::to_string(p.ram) +
                         " RAM and " + std::to_string(p.disk) +
                         " disk slots: no period fits; raise the disk slots or use twolevel");
  return best;
}

double disk_revolve_cost(const ScheduleParams& p, std::int64_t period) {
  require(p.steps >= 1 && period >= 1, "disk_revolve_cost: steps and period must be >= 1");
  const std::vector<double> ram = detail::revolve_costs(p.steps, p.ram);
  if (static_cast<std::size_t>(period) >= ram.size()) return ram[static_cast<std::size_t>(p.steps)];
  return periodic_cost(ram, p.steps, period, p.write_cost, p.read_cost);
}

namespace {

class DiskRevolveSchedule final : public Schedule {
 public:
  explicit DiskRevolveSchedule(const ScheduleParams& p)
      : Schedule(p),
        period_(disk_revolve_period(p)),
        policy_(period_),
        stream_(p.ram, &policy_, p.steps <= 0) {
    if (p.steps > 0) {
      detail::check_offline_params("disk-revolve", p, 0);
      const Step n = p.steps;
      const Intervals v = intervals(n, period_);
      require(p.disk == kUnlimited || v.q - 1 <= p.disk,
              "disk-revolve: period " + std::to_string(period_) + " over " + std::to_string(n) +
                  " steps needs " + std::to_string(v.q - 1) + " disk slots, have " +
                  std::to_string(p.disk) + "; raise the disk slots or the period");
      require(v.q == 1 || p.ram >= 1 || period_ == 1, "disk-revolve: the period must be 1");
      require(n == 1 || p.ram >= 1 || v.q >= 2,
              "disk-revolve: no slot for " + std::to_string(n) + " steps");
      if (n == 1) {
        stream_.push_step(0);
      } else if (v.q == 1) {
        stream_.push_ram(0, n, p.ram, false);
      } else {
        stream_.push_disk(0, n, p.disk == kUnlimited ? kUnlimited : p.disk - 1,
                          SegmentStream::Start::WriteFirst);
      }
      online_ = false;
    } else {
      require(p.disk == kUnlimited,
              "disk-revolve: without a step count the number of disk checkpoints is unbounded: "
              "give unlimited disk slots, or use 'online' for a finite disk budget");
      online_ = true;
    }
  }

  std::string name() const override { return "disk-revolve"; }
  std::int64_t period() const override { return period_; }
  bool online() const override { return online_; }

  void finalize(Step n) override {
    if (!online_) {
      Schedule::finalize(n);
      return;
    }
    require(!finalized_, "disk-revolve: finalize called twice");
    require(n >= 1, "disk-revolve: the run must have at least one step");
    finalized_ = true;
    n_ = n;
  }

  std::optional<Action> next() override {
    if (!online_) return next_offline();
    return next_online();
  }

 private:
  std::optional<Action> next_offline() {
    if (auto a = stream_.next()) return a;
    if (ended_) return std::nullopt;
    ended_ = true;
    return EndReverse{};
  }

  std::optional<Action> next_online() {
    if (!pending_.empty()) {
      Action a = pending_.front();
      pending_.pop_front();
      return a;
    }
    if (!finalized_) {
      // x_start is in work: keep it (RAM if any, else disk) and run to the next period start.
      const Step start = interval_ * period_;
      if (interval_ > 0 && params_.ram >= 1) {
        pending_.push_back(Move{start - period_, Level::Ram, Level::Disk});
      }
      pending_.push_back(Copy{start, Level::Work, params_.ram >= 1 ? Level::Ram : Level::Disk});
      pending_.push_back(Forward{start, start + period_, false, true, Level::Work});
      ++interval_;
      return next_online();
    }
    if (!reversing_) {
      reversing_ = true;
      // The run ended inside interval k = interval_ - 1 (the driver clipped its Forward at n,
      // and the last step's pullback data is in work). Intervals 0..k-1 are on disk. If the driver
      // fetched interval k without running it (n is its start), x_n is useless and interval
      // k-1, its start now on disk, ends the run.
      const Level held = params_.ram >= 1 ? Level::Ram : Level::Disk;
      std::int64_t k = interval_ - 1;
      pending_.push_back(EndForward{});
      if (k > 0 && k * period_ == n_) {
        pending_.push_back(Move{n_, held, Level::None});
        --k;
        for (std::int64_t j = 0; j < k; ++j) {
          stream_.push_restore_disk(j * period_, (j + 1) * period_, kUnlimited);
        }
        const Step start = k * period_;
        if (n_ - 1 == start) pending_.push_back(Move{start, Level::Disk, Level::None});
        pending_.push_back(Reverse{n_, n_ - 1, true});
        if (n_ - 1 != start) stream_.push_restore_disk(start, n_ - 1, kUnlimited);
        return next_online();
      }
      const Step start = k * period_;
      for (std::int64_t j = 0; j < k; ++j) {
        stream_.push_restore_disk(j * period_, (j + 1) * period_, kUnlimited);
      }
      if (n_ - 1 == start) pending_.push_back(Move{start, held, Level::None});
      pending_.push_back(Reverse{n_, n_ - 1, true});
      if (n_ - 1 == start) {
        // nothing left in this interval
      } else if (held == Level::Ram) {
        stream_.push_restore_ram(start, n_ - 1, params_.ram);
      } else {
        stream_.push_restore_disk(start, n_ - 1, kUnlimited);
      }
      return next_online();
    }
    if (auto a = stream_.next()) return a;
    if (ended_) return std::nullopt;
    ended_ = true;
    return EndReverse{};
  }

  std::int64_t period_;
  PeriodicPolicy policy_;
  SegmentStream stream_;
  bool online_ = false;
  bool finalized_ = false;
  bool reversing_ = false;
  bool ended_ = false;
  Step n_ = 0;
  std::int64_t interval_ = 0;
  std::deque<Action> pending_;
};

}  // namespace

namespace detail {

void register_disk_revolve(ScheduleRegistry& registry) {
  registry.add(
      {.name = "disk-revolve",
       .summary = "periodic disk checkpoints, Revolve in RAM between them (O(1) per "
                  "decision; online with unlimited disk)",
       .online = true,
       .uses_disk = true,
       .factory = [](const ScheduleParams& p) { return std::make_unique<DiskRevolveSchedule>(p); },
       .restart_only = true});
}

}  // namespace detail

}  // namespace rwd::schedule
