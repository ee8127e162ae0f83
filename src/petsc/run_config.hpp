#pragma once
// What a TSSolve's recording is asked for: the options, what TS says of the step count, and
// the disk costs (given, or measured against the first step) become a RecordingConfig and the
// stores' configuration. The planning itself is the engine's (rwd::engine::plan_recording).

#include <petscts.h>

#include <cstdint>
#include <string>

#include "options.hpp"
#include "rewind/engine/plan.hpp"
#include "rewind/engine/stores.hpp"

namespace rwd::petsc {

/// A RAM budget that is no budget: "store everything" when the step count is unknown.
inline constexpr std::int64_t kUnlimitedRam = std::int64_t{1} << 40;

/// The TS's adapter chooses the step sizes (any adapter but "none").
bool adapts_step_size(TS ts);

/// The number of steps TSSolve will take from here with a fixed step (adapter "none"),
/// replaying its arithmetic; 0 with an adaptive step (the count is learnt at the end).
PetscInt planned_steps(TS ts);

/// The recording's and the stores' configuration for a solve of `ts`.
struct RunConfig {
  engine::RecordingConfig recording;
  engine::StoresConfig stores;
  std::string cost_note;        ///< how the disk costs were obtained, for the view
  bool costs_measured = false;  ///< a disk probe and a timed step gave them
};

/// The measured seconds of one step (the largest over the ranks), for "auto" disk costs, and
/// where it comes from ("first step of this run", ...).
struct StepTime {
  double seconds = 0.0;
  std::string source;
};

/// Collective on the TS's communicator (auto costs probe the disk).
RunConfig make_run_config(TSTrajectory tj, TS ts, const Options& options, PetscInt steps,
                          const StepTime& step);

}  // namespace rwd::petsc
