#pragma once
// Agreeing on a task's failure within its group, without trusting that every rank of the group
// is able to come: a rank whose task threw may have left its group mates blocked in a
// collective call of the task. Private to the ensemble layer.

#include <mpi.h>

#include <optional>

#include "rewind/error.hpp"

namespace rwd::ensemble::detail {

/// Collective on `group`. Every rank passes its own failure, if any. When some rank failed,
/// returns on every rank the failure of the lowest failing rank; otherwise nothing. A rank that
/// failed waits at most `wait_seconds` for the others; if they do not all come, it throws its
/// own failure at once, with a note that the job must be aborted (the others cannot be told).
std::optional<Error> agree_in_group(MPI_Comm group, const std::optional<Error>& local,
                                    double wait_seconds);

}  // namespace rwd::ensemble::detail
