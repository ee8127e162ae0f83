#pragma once
// Engine runs that survive being killed (EngineConfig::resume; docs/resume.md).

#include <memory>

#include "rewind/engine/engine_config.hpp"
#include "rewind/engine/stats.hpp"
#include "rewind/engine/stepper.hpp"
#include "rewind/engine/stores.hpp"

namespace rwd::engine::detail {

/// The steps between durable states, checked against the step count and the disk budget.
/// Throws Error(InvalidArgument) naming the setting to change.
Step resume_interval(const EngineConfig& config);
/// The recording config each interval of a resumable run is planned with (`n` steps, the RAM
/// budget, no disk).
RecordingConfig interval_config(const EngineConfig& config, Step n);
/// Checks what a resumable run needs that the configuration and the stepper must give.
/// Throws Error(InvalidArgument) naming the setting to change.
void check_resumable(Stepper& stepper, const EngineConfig& config);
/// Refuses, on every rank, a ResumeConfig whose fields (or the step count, or the interval it
/// makes) differ between ranks, naming the field. Collective; after check_resumable().
void agree_resume_config(MPI_Comm comm, const EngineConfig& config);
/// Engine::run() of a resumable run. Collective on the stores' communicator.
RunStats run_resumable(Stepper& stepper, const std::shared_ptr<Stores>& stores,
                       const EngineConfig& config);

}  // namespace rwd::engine::detail
