#pragma once
// For the PETSc ensemble: rewind trajectories whose checkpoints go to stores shared by a group
// of tasks, and access to a trajectory's recording. Private to the petsc layer.

#include <petscts.h>

#include <memory>

#include "rewind/engine/recording.hpp"

namespace rwd::petsc {

/// The rewind trajectory `tj` keeps its checkpoints in `stores` from its next solve on (one
/// budget and one file for a group's tasks). Throws Error(InvalidArgument) if `tj` is not of
/// type rewind.
void share_stores(TSTrajectory tj, std::shared_ptr<engine::Stores> stores);

/// The recording of the trajectory's current solve, or null (no solve, or it finished).
engine::Recording* current_recording(TSTrajectory tj);

}  // namespace rwd::petsc
