#pragma once
/// @file
/// Replays a schedule against a model of the stepper and its checkpoint stores, rejects any
/// invalid action stream, and counts what the schedule really costs. Every schedule test, and
/// every cost rewind reports, comes from here: never from a schedule's own claim.

#include <cstdint>
#include <functional>

#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule {

/// Per-level counts. For RAM and DISK, one slot holds one restart state or one step's adjoint
/// data.
struct LevelStats {
  std::int64_t writes = 0;  ///< checkpoints (restart states or step pullback data) written
  std::int64_t reads = 0;   ///< checkpoints read back (restores and pullback data consumed)
  std::int64_t peak = 0;    ///< largest number of checkpoints live at once
  /// Largest number of units live at once: a restart checkpoint counts
  /// ScheduleParams::restart_units, one step's pullback data pullback_units (RAM only; 1 each
  /// without ram_units).
  std::int64_t peak_units = 0;
  double peak_bytes = 0.0;  ///< largest live size, by ScheduleParams::state_bytes (1 each if unset)
};

/// What a replay counted.
struct SimulationResult {
  Step steps = 0;                  ///< n
  std::int64_t fwd_total = 0;      ///< every forward step evaluated, recording re-runs included
  std::int64_t adjoint_steps = 0;  ///< adjoint steps run (always n for a valid schedule)
  LevelStats ram;
  LevelStats disk;
  std::int64_t actions = 0;  ///< actions in the stream, EndReverse included
  double fwd_cost = 0.0;     ///< forward steps weighted by ScheduleParams::step_cost (= fwd_total
                             ///< without step costs)
  double cost = 0.0;         ///< fwd_cost + wd * disk.writes + rd * disk.reads

  std::int64_t recomputed() const { return fwd_total - steps; }
};

/// Called with each action as it is replayed (and after an online schedule's Forward has been
/// clipped to n).
using ActionObserver = std::function<void(const Action&)>;

/// Replays `schedule` for the step count, slot budgets and costs in `limits` (limits.steps must
/// be >= 1; for an online schedule the simulator plays the driver: it stops each Forward at n
/// and calls finalize(n); it also reports limits.step_cost and limits.state_bytes through
/// Schedule::observe_step as the first sweep runs). With limits.ram_bytes > 0 the RAM budget is
/// that many bytes instead of limits.ram slots, and with limits.ram_units > 0 that many units
/// (checkpoints of different sizes; with pullback_holds_next a Copy of x_{i+1} may read it from
/// step i's pullback data). Throws Error(InvalidSchedule) naming the action
/// and the rule broken:
/// forward from a state the model does not hold, reverse without the pullback data or out of
/// order, copy from an empty slot, live slots over budget, anything still stored after
/// EndReverse, a stream that ends early or runs past `max_actions`.
SimulationResult simulate(Schedule& schedule, const ScheduleParams& limits,
                          const ActionObserver& observer = {},
                          std::int64_t max_actions = std::int64_t{1} << 40);

}  // namespace rwd::schedule
