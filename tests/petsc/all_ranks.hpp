#pragma once
// Whether a condition holds on every rank, for the PETSc test programs. An int travels, not a
// PetscBool: PETSc 3.24 made PetscBool a C bool and deprecated MPIU_BOOL for MPI_C_BOOL, where
// 3.18 has an enum sent as MPI_INT.
#include <mpi.h>

namespace rwd::testing {

inline bool all_ranks(bool local, MPI_Comm comm) {
  int in = local ? 1 : 0, all = 0;
  MPI_Allreduce(&in, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

}  // namespace rwd::testing
