#pragma once
// The communicator of an ensemble split into G groups of g consecutive ranks, and the
// communicator that links the ranks holding the same block in every group (for the gradient
// reduction). Private to the ensemble layer.

#include <mpi.h>

namespace rwd::ensemble::detail {

class Groups {
 public:
  /// Collective on `comm`. Throws Error(InvalidArgument) unless 1 <= g and g divides the size.
  Groups(MPI_Comm comm, int group_size);
  /// Frees the communicators it made (MPI_Comm_free is local to this rank's handle).
  ~Groups();
  Groups(const Groups&) = delete;
  Groups& operator=(const Groups&) = delete;

  MPI_Comm world() const { return world_; }  ///< a duplicate of the ensemble's communicator
  MPI_Comm group() const { return group_; }  ///< this rank's group
  MPI_Comm cross() const { return cross_; }  ///< this rank's block in every group
  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  int groups() const { return groups_; }
  int group_size() const { return group_size_; }
  int group_index() const { return world_rank_ / group_size_; }
  int group_rank() const { return world_rank_ % group_size_; }
  bool leader() const { return group_rank() == 0; }
  /// The world rank of group q's leader.
  int leader_of(int q) const { return q * group_size_; }

 private:
  MPI_Comm world_ = MPI_COMM_NULL, group_ = MPI_COMM_NULL, cross_ = MPI_COMM_NULL;
  int world_rank_ = 0, world_size_ = 1, groups_ = 1, group_size_ = 1;
};

}  // namespace rwd::ensemble::detail
