#pragma once
/// @file
/// How a group makes room for a task's recording next to the ones it holds: the engine's room
/// policy (rewind/engine/room.hpp) with spilling, then cutting, and an error that names the
/// task when even that is not enough. Shared by the ensemble's front ends (the C++ StepperTasks
/// and the PETSc ensemble).

#include <cstdint>
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

}  // namespace rwd::ensemble
