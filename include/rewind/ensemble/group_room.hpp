#pragma once
/// @file
/// How a group makes room for a task's recording next to the ones it holds: the engine's room
/// policy (rewind/engine/room.hpp) with spilling, then cutting, and an error that names the
/// task when even that is not enough. Shared by the ensemble's front ends (the C++ StepperTasks
/// and the PETSc ensemble).

#include <cstdint>
#include <span>
#include <vector>

#include "rewind/engine/room.hpp"

namespace rwd::ensemble {

/// Spills the oldest held recordings of `held`, then cuts the shortest, until `need` fits in
/// `stores` for recording `recording` (a held task's own id, whose claim `need` replaces, or 0
/// for a new one). Throws Error(InvalidArgument) naming `task` if `need` does not fit with
/// every other recording cut. Collective on the stores' communicator.
void make_room_for_task(engine::Stores& stores, std::vector<engine::HeldRecording>& held,
                        std::int64_t task, const engine::Claim& need, std::int64_t recording,
                        const engine::RoomHooks& hooks);

/// Throws Error(InvalidArgument) naming `task` unless `again` (the output of a forward run again
/// before the task's reverse) is `first` (its first sweep's) bit for bit. Rank-local; every rank
/// of the group compares the same values.
void require_same_output(std::int64_t task, std::span<const double> first,
                         std::span<const double> again);

}  // namespace rwd::ensemble
