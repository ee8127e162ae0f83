#include "groups.hpp"

#include <string>

#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"

namespace rwd::ensemble::detail {

using comm::mpi_check;

Groups::Groups(MPI_Comm comm, int group_size) {
  require(comm != MPI_COMM_NULL, "ensemble: the communicator is MPI_COMM_NULL");
  mpi_check(MPI_Comm_size(comm, &world_size_), "MPI_Comm_size");
  mpi_check(MPI_Comm_rank(comm, &world_rank_), "MPI_Comm_rank");
  require(group_size >= 1 && world_size_ % group_size == 0,
          "ensemble: the group size (EnsembleConfig::group_size; PETSc: "
          "-rewind_ensemble_group_size) must be >= 1 and divide the " +
              std::to_string(world_size_) + " ranks of the communicator, got " +
              std::to_string(group_size));
  group_size_ = group_size;
  groups_ = world_size_ / group_size;
  mpi_check(MPI_Comm_dup(comm, &world_), "MPI_Comm_dup");
  mpi_check(MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  mpi_check(MPI_Comm_split(world_, group_index(), group_rank(), &group_),
            "MPI_Comm_split (groups)");
  mpi_check(MPI_Comm_split(world_, group_rank(), group_index(), &cross_),
            "MPI_Comm_split (ranks with the same block)");
}

// MPI_Comm_free is collective in the standard, but Open MPI frees a communicator without
// waiting for the other ranks; a rank unwinding alone does not hang here.
Groups::~Groups() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Comm* c : {&cross_, &group_, &world_}) {
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
}

}  // namespace rwd::ensemble::detail
