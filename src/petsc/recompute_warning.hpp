#pragma once
// A budget that makes the adjoint recompute far more than the run it reverses
// (-ts_trajectory_max_cps_ram 1 over 300 steps: revolve recomputes 149.5 times as many steps)
// is accepted, as any budget is, but said once on rank 0's stderr, with the RAM budget that
// would bring it down (-ts_trajectory_rewind_recompute_warning; docs/petsc.md, "Options").

#include <cstdint>
#include <string>

#include "options.hpp"
#include "rewind/engine/plan.hpp"

namespace rwd::petsc {

/// The smallest RAM budget in checkpoints, from `config`'s up to its step count, whose plan
/// recomputes at most `multiple` times the step count (`config` otherwise the same: its disk,
/// its costs, its schedule): as a slot count (`slots`: the budget was given as one) and a byte
/// budget given with it raised to as many of the largest checkpoints. 0 if none does. Needs the
/// step count (config.params.steps > 0). Not collective.
std::int64_t ram_for_recompute(const engine::RecordingConfig& config,
                               const engine::CheckpointSizes& sizes, double multiple, bool slots);

/// The warning for `plan` (made from `config`), or "" when it recomputes at most
/// options.recompute_warning times its steps, its step count is unknown (an online plan), or
/// the warning is off (0). Not collective.
std::string recompute_warning(const engine::Plan& plan, const engine::RecordingConfig& config,
                              const Options& options);

}  // namespace rwd::petsc
