#pragma once
/// @file
/// Mixed checkpointing (Maddison): a RAM slot holds either a restart state or one step's adjoint
/// data (for a multistage method, the stage values of that step). A step whose pullback data is
/// stored needs no recording re-run before its adjoint. In an action stream, pullback data kept in
/// RAM is `Forward{..., write_pullback = true, level = ram}`; a front end that can store stages
/// (the PETSc trajectory) stores the stages of those steps instead of re-running them. Pure C++.

#include <cstdint>

#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule {

/// What the mixed planner found for a run.
struct MixedPlan {
  double cost = 0.0;         ///< forward steps of the planned schedule (what the simulator counts)
  double lower_bound = 0.0;  ///< proven lower bound on the optimal mixed cost
  bool exact = false;        ///< the table was searched exhaustively: cost is the optimum
};

/// Plans `mixed` for `steps` >= 1 steps and `slots` RAM slots (x_0's slot included). Throws
/// Error(InvalidArgument) for no slot with steps >= 2 or a table over 4e7 entries.
MixedPlan plan_mixed(Step steps, std::int64_t slots);

/// Plans `mixed` for `params` as the schedule runs with them: params.ram_units > 0 plans with
/// checkpoints of different sizes (restart_units, pullback_units, pullback_holds_next), else
/// with params.ram slots. Throws as plan_mixed(steps, slots), and for sizes below one unit.
MixedPlan plan_mixed(const ScheduleParams& params);

/// `disk-mixed`: restart states on disk, mixed in RAM between them. The disk checkpoints are
/// placed by H-Revolve's recursion at the disk level (docs/schedules.md), or periodically: x_0,
/// x_P, x_2P, ... go to disk in the first sweep and each interval is read back and reversed by
/// mixed with every RAM slot, the last one at once. The periodic placement's period:
/// params.period if set, else the cheapest within the disk slots. Throws
/// Error(InvalidArgument) for a budget no period fits.
std::int64_t disk_mixed_period(const ScheduleParams& params);

/// The cost the periodic placement has with period `period` for params.steps steps (closed form
/// over the mixed table; the tests check it against the simulator).
double disk_mixed_cost(const ScheduleParams& params, std::int64_t period);

/// The cost of the placement `disk-mixed` runs with for `params`: the recursion's, or the
/// periodic one's when params.period is set (or when it is cheaper than a recursion cut short by
/// its work limit). Throws Error(InvalidArgument) for a budget nothing fits.
double disk_mixed_planned_cost(const ScheduleParams& params);

}  // namespace rwd::schedule
