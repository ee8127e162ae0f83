#pragma once
// The backward pass's cotangents, sent along the mapping the forward pass recorded: the root
// sends each group one message (its leader gets the cotangents of exactly the group's tasks, in
// the order the group ran them) and the leader broadcasts it within the group; pullbacks never
// travel. Private to the ensemble layer.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "groups.hpp"
#include "rewind/ensemble/ensemble.hpp"

namespace rwd::ensemble::detail {

/// This group's cotangents, and where each of its tasks' sit in them.
struct GroupCotangents {
  std::vector<double> values;
  /// Per task (indexed by task): {offset in `values`, length}; only this group's are set.
  std::vector<std::pair<std::int64_t, std::int64_t>> where;
  /// Bytes every rank sent and received for them, over the communicator: the scatter to the
  /// leaders (but the root's own group) and each group's broadcast.
  std::int64_t bytes = 0;
};

/// Collective on the groups' communicators. `ybar` (significant on `root`) holds the cotangent
/// of every task's output in the layout of `outputs`; `mapping` says which group ran each task
/// and at which position.
GroupCotangents scatter_cotangents(std::span<const double> ybar, const Outputs& outputs,
                                   const std::vector<TaskRecord>& mapping, const Groups& groups,
                                   int root);

}  // namespace rwd::ensemble::detail
