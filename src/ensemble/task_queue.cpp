#include "task_queue.hpp"

#include <utility>

#include "rewind/comm/agree.hpp"

namespace rwd::ensemble::detail {

using comm::mpi_check;

TaskQueue::TaskQueue(const Groups& groups, Assign assign, std::vector<std::int64_t> order)
    : groups_(groups),
      assign_(assign),
      places_(static_cast<std::int64_t>(order.size())),
      static_next_(groups.group_index()),
      order_(std::move(order)) {
  if (assign_ != Assign::Dynamic) return;
  const MPI_Aint bytes = groups.world_rank() == 0 ? sizeof(std::int64_t) : 0;
  mpi_check(MPI_Win_allocate(bytes, sizeof(std::int64_t), MPI_INFO_NULL, groups.world(), &counter_,
                             &window_),
            "MPI_Win_allocate (task counter)");
  if (groups.world_rank() == 0) {
    mpi_check(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, window_), "MPI_Win_lock");
    *counter_ = 0;
    mpi_check(MPI_Win_unlock(0, window_), "MPI_Win_unlock");
  }
  mpi_check(MPI_Barrier(groups.world()), "MPI_Barrier (task counter)");
}

TaskQueue::~TaskQueue() {
  // Freeing a window is collective: a queue not closed is being unwound on this rank alone.
}

std::int64_t TaskQueue::next() {
  std::int64_t k = 0;
  if (assign_ == Assign::Static) {
    k = static_next_;
    static_next_ += groups_.groups();
    return k < places_ ? order_[static_cast<std::size_t>(k)] : -1;
  }
  if (groups_.leader()) {
    const std::int64_t one = 1;
    mpi_check(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, window_), "MPI_Win_lock");
    mpi_check(MPI_Fetch_and_op(&one, &k, MPI_INT64_T, 0, 0, MPI_SUM, window_),
              "MPI_Fetch_and_op (claiming a task)");
    mpi_check(MPI_Win_unlock(0, window_), "MPI_Win_unlock");
  }
  mpi_check(MPI_Bcast(&k, 1, MPI_INT64_T, 0, groups_.group()), "MPI_Bcast (claimed task)");
  // The counter hands out places in the order; a place past the end is no task.
  return k >= 0 && k < places_ ? order_[static_cast<std::size_t>(k)] : -1;
}

void TaskQueue::stop() {
  if (assign_ == Assign::Static) {
    static_next_ = places_;
    return;
  }
  if (!groups_.leader()) return;
  const std::int64_t jump = places_ + 1;
  std::int64_t ignored = 0;
  mpi_check(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, window_), "MPI_Win_lock");
  mpi_check(MPI_Fetch_and_op(&jump, &ignored, MPI_INT64_T, 0, 0, MPI_SUM, window_),
            "MPI_Fetch_and_op (stopping the queue)");
  mpi_check(MPI_Win_unlock(0, window_), "MPI_Win_unlock");
}

void TaskQueue::close() {
  if (window_ != MPI_WIN_NULL) mpi_check(MPI_Win_free(&window_), "MPI_Win_free (task counter)");
}

}  // namespace rwd::ensemble::detail
