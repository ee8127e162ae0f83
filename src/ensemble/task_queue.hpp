#pragma once
// Which task a group runs next. Dynamic: a counter on world rank 0 that each group's leader
// increments with one-sided MPI_Fetch_and_op as soon as its group is free, so no rank waits for
// a busy dispatcher (within one node Open MPI serves the window from shared memory; across
// nodes without hardware atomics the target's MPI progress is needed). Static: place j of the
// order runs on group j mod G. Private to the ensemble layer.

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "groups.hpp"
#include "rewind/ensemble/ensemble.hpp"

namespace rwd::ensemble::detail {

class TaskQueue {
 public:
  /// Collective on groups.world() (the window is created here). `order`: the tasks to hand
  /// out, in the order dynamic assignment hands them out (every rank the same); static
  /// assignment gives place j of it to group j mod G.
  TaskQueue(const Groups& groups, Assign assign, std::vector<std::int64_t> order);
  /// Frees the window if close() did not: only when unwinding, rank-local (the window leaks).
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  /// The next task for this group, or -1 when there is none. Collective on the group (the
  /// leader claims, the others learn it by broadcast).
  std::int64_t next();
  /// After a failure on this group: every later claim, by any group, finds no task. Collective
  /// on the group.
  void stop();
  /// Collective on groups.world(): frees the window.
  void close();

 private:
  const Groups& groups_;
  Assign assign_;
  std::int64_t places_;
  std::int64_t static_next_;
  std::vector<std::int64_t> order_;
  MPI_Win window_ = MPI_WIN_NULL;
  std::int64_t* counter_ = nullptr;
};

}  // namespace rwd::ensemble::detail
