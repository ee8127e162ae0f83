#include "rewind/ensemble/group_room.hpp"

#include <string>

#include "rewind/error.hpp"

namespace rwd::ensemble {

namespace {

std::string describe(const engine::Claim& c) {
  const auto count = [](std::int64_t n) {
    return n == schedule::kUnlimited ? std::string("unlimited") : std::to_string(n);
  };
  return std::to_string(c.ram) + " RAM checkpoints (" +
         std::to_string(static_cast<long long>(c.ram_bytes)) + " bytes) and " + count(c.disk) +
         " disk checkpoints";
}

constexpr engine::RoomStep kGroupSteps[] = {engine::RoomStep::Spill, engine::RoomStep::Cut};

}  // namespace

void make_room_for_task(engine::Stores& stores, std::vector<engine::HeldRecording>& held,
                        std::int64_t task, const engine::Claim& need, std::int64_t recording,
                        const engine::RoomHooks& hooks) {
  const bool fits = engine::make_room(
      stores, held, kGroupSteps, [&] { return stores.fits(recording, need); }, hooks, recording);
  if (!fits) {
    throw Error(ErrorCode::InvalidArgument,
                "ensemble: task " + std::to_string(task) + " needs " + describe(need) +
                    ", more than the group's stores hold with every other tape spilled or cut "
                    "(claimed now: " +
                    describe(stores.claimed()) +
                    "); raise the group's capacity (StoresConfig::ram, disk and ram_bytes; PETSc: "
                    "-rewind_ensemble_max_cps_ram and -rewind_ensemble_max_cps_disk) or lower the "
                    "per-task budget (StepperTasksConfig::recording; PETSc: "
                    "-ts_trajectory_max_cps_ram and -ts_trajectory_max_cps_disk)");
  }
}

}  // namespace rwd::ensemble
