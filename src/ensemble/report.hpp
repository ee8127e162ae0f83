#pragma once
// The ensemble's report, the parts gathered over the communicator.
#include <mpi.h>

#include <vector>

#include "rewind/ensemble/ensemble.hpp"

namespace rwd::ensemble {

/// Every rank's GroupCodecs, in rank order (the codec names are this rank's: the stores'
/// settings are agreed between ranks); empty when no rank's stores compress. Collective on
/// `world`.
std::vector<GroupCodecs> gather_codecs(const GroupCodecs& mine, MPI_Comm world);
/// The counts of `now` less those of `before` (a pass's share of a runner's running counts).
GroupCodecs codecs_since(const GroupCodecs& now, const GroupCodecs& before);

}  // namespace rwd::ensemble
