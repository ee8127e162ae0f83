// Two TS objects in one program, each with the rewind trajectory and every checkpoint on disk,
// solved forward one after the other and then reversed one after the other, 20 rounds, with
// asynchronous disk I/O. Each adjoint is compared bit for bit with PETSc's store-all `memory`
// trajectory. With one I/O thread per disk store making HDF5 calls (HDF5 is not thread-safe)
// this deadlocked in 4 of 10 runs at 2 ranks; run with -thread_level multiple (MPI initialised
// with MPI_THREAD_MULTIPLE before PETSc) and without (PETSc's MPI_THREAD_FUNNELED). The test's
// timeout catches a hang.
#include <petscts.h>

#include <cstring>
#include <string>
#include <vector>

#include "all_ranks.hpp"
#include "decay_problem.hpp"
#include "rewind/petsc/trajectory.h"

namespace {

using rwd::testing::DecayProblem;

PetscErrorCode use_rewind(DecayProblem& p, const char* dir) {
  TSTrajectory tj;
  PetscFunctionBegin;
  PetscCall(TSGetTrajectory(p.ts, &tj));
  PetscCall(TSTrajectorySetType(tj, p.ts, TSTRAJECTORYREWIND));
  PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, 1, -1));  // RAM for x0 only; the rest on disk
  PetscCall(TSTrajectoryRewindSetSchedule(tj, "twolevel"));
  PetscCall(TSTrajectoryRewindSetAsync(tj, PETSC_TRUE));
  PetscCall(TSTrajectorySetDirname(tj, dir));
  PetscFunctionReturn(0);
}

}  // namespace

int main(int argc, char** argv) {
  // -thread_level multiple: initialise MPI ourselves with MPI_THREAD_MULTIPLE first.
  bool multiple = false;
  for (int i = 1; i + 1 < argc; ++i) {
    multiple = multiple || (std::strcmp(argv[i], "-thread_level") == 0 &&
                            std::strcmp(argv[i + 1], "multiple") == 0);
  }
  if (multiple) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  }
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(TSTrajectoryRegisterRewind());
  int provided = 0;
  PetscCallMPI(MPI_Query_thread(&provided));

  DecayProblem p[2];
  std::vector<PetscScalar> reference[2], got[2];
  for (int k = 0; k < 2; ++k) {
    PetscCall(
        rwd::testing::create_decay_problem(PETSC_COMM_WORLD, 23 + 8 * k, 30, 1.0 + 0.5 * k, p[k]));
    TSTrajectory tj;
    PetscCall(TSGetTrajectory(p[k].ts, &tj));
    PetscCall(TSTrajectorySetType(tj, p[k].ts, TSTRAJECTORYMEMORY));
    PetscCall(rwd::testing::decay_forward(p[k]));
    PetscCall(rwd::testing::decay_adjoint(p[k], reference[k]));
    PetscCall(use_rewind(p[k], k == 0 ? "two-trajectories-a" : "two-trajectories-b"));
  }
  PetscBool ok = PETSC_TRUE;
  PetscInt disk_writes = 0;
  for (int round = 0; round < 20; ++round) {
    PetscCall(rwd::testing::decay_forward(p[0]));
    PetscCall(rwd::testing::decay_forward(p[1]));
    PetscCall(rwd::testing::decay_adjoint(p[0], got[0]));
    PetscCall(rwd::testing::decay_adjoint(p[1], got[1]));
    for (int k = 0; k < 2; ++k) {
      TSTrajectory tj;
      TSTrajectoryRewindStats st;
      PetscCall(TSGetTrajectory(p[k].ts, &tj));
      PetscCall(TSTrajectoryRewindGetStats(tj, &st));
      disk_writes += st.disk_writes;
      if (!rwd::testing::same_bits(got[k], reference[k]) || st.adjoint_steps != 30) {
        ok = PETSC_FALSE;
        PetscCall(PetscPrintf(PETSC_COMM_SELF, "round %d, TS %d: lambda differs from store-all\n",
                              round, k));
      }
    }
  }
  TSTrajectory tj;
  PetscCall(TSGetTrajectory(p[0].ts, &tj));
  PetscCall(TSTrajectoryView(tj, PETSC_VIEWER_STDOUT_WORLD));
  const bool all = rwd::testing::all_ranks(ok, PETSC_COMM_WORLD) && disk_writes > 0;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "MPI thread level %d, %" PetscInt_FMT " disk writes: %s\n", provided,
                        disk_writes, all ? "two trajectories test passed" : "FAILED"));
  for (auto& q : p) PetscCall(rwd::testing::destroy_decay_problem(q));
  PetscCall(PetscFinalize());
  if (multiple) MPI_Finalize();
  return all ? 0 : 1;
}
