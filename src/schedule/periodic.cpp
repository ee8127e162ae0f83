// periodic: a restart checkpoint every k steps; in the reverse sweep each interval is
// recomputed once from its checkpoint while its steps' pullback data is recorded in RAM.
// The interval [(c-1)k, n) is recorded already in the first sweep.
#include <limits>

#include "builtin.hpp"
#include "rewind/error.hpp"

namespace rwd::schedule::detail {

namespace {

struct PeriodicShape {
  Step period = 0;
  Step intervals = 0;
  Step last = 0;  // length of the last interval
  std::int64_t peak = 0;
  std::int64_t fwd_total = 0;
};

PeriodicShape shape(Step n, Step k) {
  PeriodicShape s;
  s.period = k;
  s.intervals = (n + k - 1) / k;
  s.last = n - (s.intervals - 1) * k;
  s.peak = s.intervals == 1 ? n : std::max(s.intervals - 1 + s.last, s.intervals - 2 + k);
  s.fwd_total = 2 * n - s.last;
  return s;
}

class PeriodicSchedule final : public Schedule {
 public:
  explicit PeriodicSchedule(const ScheduleParams& p) : Schedule(p) {
    check_offline_params("periodic", p, 1);
    const Step n = p.steps;
    if (p.period != 0) {
      require(p.period >= 1 && p.period <= n, "periodic: the period must be in [1, " +
                                                  std::to_string(n) + "], got " +
                                                  std::to_string(p.period));
      shape_ = shape(n, p.period);
      require(shape_.peak <= p.ram,
              "periodic: period " + std::to_string(p.period) + " over " + std::to_string(n) +
                  " steps needs " + std::to_string(shape_.peak) + " RAM slots, have " +
                  std::to_string(p.ram) + "; raise the RAM slots or let the period be chosen");
    } else {
      // Fewest forward steps within the budget; ties go to the smaller peak.
      PeriodicShape best;
      best.fwd_total = std::numeric_limits<std::int64_t>::max();
      std::int64_t least_peak = std::numeric_limits<std::int64_t>::max();
      for (Step k = 1; k <= n; ++k) {
        const PeriodicShape s = shape(n, k);
        least_peak = std::min(least_peak, s.peak);
        if (s.peak > p.ram) continue;
        if (s.fwd_total < best.fwd_total || (s.fwd_total == best.fwd_total && s.peak < best.peak)) {
          best = s;
        }
      }
      require(best.period != 0, "periodic: " + std::to_string(n) + " steps need at least " +
                                    std::to_string(least_peak) + " RAM slots with any period, " +
                                    "have " + std::to_string(p.ram) +
                                    "; raise the RAM slots or use revolve");
      shape_ = best;
    }
    interval_ = shape_.intervals - 1;
  }

  std::string name() const override { return "periodic"; }

  std::optional<Action> next() override {
    const Step n = params_.steps;
    const Step k = shape_.period;
    switch (phase_) {
      case Phase::FirstSweep: {
        if (sweep_ < shape_.intervals - 1) {
          const Step a = sweep_ * k;
          ++sweep_;
          return Forward{a, a + k, true, false, Level::Ram};
        }
        phase_ = Phase::EndFirst;
        return Forward{(shape_.intervals - 1) * k, n, false, true, Level::Ram};
      }
      case Phase::EndFirst:
        phase_ = Phase::ReverseLast;
        return EndForward{};
      case Phase::ReverseLast:
        phase_ = interval_ > 0 ? Phase::Restore : Phase::End;
        return Reverse{n, (shape_.intervals - 1) * k, true};
      case Phase::Restore:
        --interval_;
        phase_ = Phase::Record;
        return Move{interval_ * k, Level::Ram, Level::Work};
      case Phase::Record:
        phase_ = Phase::ReverseInterval;
        return Forward{interval_ * k, (interval_ + 1) * k, false, true, Level::Ram};
      case Phase::ReverseInterval:
        phase_ = interval_ > 0 ? Phase::Restore : Phase::End;
        return Reverse{(interval_ + 1) * k, interval_ * k, true};
      case Phase::End:
        phase_ = Phase::Done;
        return EndReverse{};
      case Phase::Done:
        return std::nullopt;
    }
    return std::nullopt;
  }

 private:
  enum class Phase {
    FirstSweep,
    EndFirst,
    ReverseLast,
    Restore,
    Record,
    ReverseInterval,
    End,
    Done
  };
  PeriodicShape shape_;
  Phase phase_ = Phase::FirstSweep;
  Step sweep_ = 0;     // intervals checkpointed in the first sweep
  Step interval_ = 0;  // interval whose reverse comes next
};

}  // namespace

void register_periodic(ScheduleRegistry& registry) {
  registry.add(
      {.name = "periodic",
       .summary = "a RAM checkpoint every k steps; each interval recomputed once and "
                  "recorded (the familiar baseline, like PETSc's stride)",
       .online = false,
       .uses_disk = false,
       .factory = [](const ScheduleParams& p) { return std::make_unique<PeriodicSchedule>(p); },
       .restart_only = false});
}

}  // namespace rwd::schedule::detail
