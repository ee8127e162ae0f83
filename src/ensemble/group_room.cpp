#include "rewind/ensemble/group_room.hpp"

#include <cstring>
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

void require_same_output(std::int64_t task, std::span<const double> first,
                         std::span<const double> again) {
  const bool same = first.size() == again.size() &&
                    std::memcmp(first.data(), again.data(), first.size() * sizeof(double)) == 0;
  if (same) return;
  throw Error(ErrorCode::InvalidArgument,
              "ensemble: task " + std::to_string(task) +
                  "'s forward, run again before its reverse (its tape was cut, or went with a "
                  "killed run), does not give the output its first sweep gave (" +
                  std::to_string(again.size()) + " values, " + std::to_string(first.size()) +
                  " then): the program, its parameters or its data differ from the run that "
                  "made the tape (a resumed ensemble's identity must name what differs), or the "
                  "task is not deterministic; the gradient would be wrong");
}

}  // namespace rwd::ensemble
