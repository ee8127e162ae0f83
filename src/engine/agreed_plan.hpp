#pragma once
// The plan every rank of a recording makes alike: the settings each rank passed, agreed by name
// (a setting that differs between ranks is refused on every rank), and the checkpoint sizes,
// the largest rank's of each kind. Collective on the recording's communicator.

#include <mpi.h>

#include "rewind/engine/plan.hpp"
#include "rewind/engine/stepper.hpp"
#include "rewind/engine/stores.hpp"
#include "rewind/record/restart_sets.hpp"

namespace rwd::engine::detail {

/// The number of `stepper`'s state variables; throws Error(InvalidArgument) if it has none.
std::size_t variables_of(Stepper& stepper);

/// The restart sets of `stepper`'s steps as `config` bounds them (the step count or max_steps).
/// Throws Error(InvalidArgument) for a stepper with no state variables.
record::RestartSets restart_sets(Stepper& stepper, const RecordingConfig& config);

/// Refuses, on every rank, recording settings (and `stores`' settings, if given) that differ
/// between ranks, naming the setting; then the largest rank's bytes of a restart checkpoint
/// (what `sets` says a restart needs), of a step's pullback data and of the whole state.
/// Collective on `comm`.
CheckpointSizes agreed_sizes(Stepper& stepper, record::RestartSets& sets, MPI_Comm comm,
                             const RecordingConfig& config, const StoresConfig* stores);

}  // namespace rwd::engine::detail
