// Soak (ctest label `soak`, not in the default run): an optimisation loop of 200 forward and
// adjoint solves on one TS with the rewind trajectory under a two-level budget (RAM and a
// parallel HDF5 file), as TAO drives one. Each adjoint must be bitwise PETSc's store-all
// `memory` one; resident memory (VmRSS) and open file descriptors must stay flat after a
// warm-up of 20 solves. Prints the figures (the largest over the ranks).
#include <petscts.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../support/process_figures.hpp"
#include "all_ranks.hpp"
#include "decay_problem.hpp"
#include "rewind/petsc/trajectory.h"

namespace {

using rwd::testing::DecayProblem;
using rwd::testing::same_bits;

constexpr int kSolves = 200;
constexpr int kWarmUp = 20;
constexpr double kRssGrowthMiB = 8.0;  // see tests/engine/soak_test.cpp

using Figures = rwd::soak::ProcessFigures;
using rwd::soak::process_figures;

PetscErrorCode print(const char* what, const Figures& mine) {
  double in[3] = {mine.rss_mib, mine.peak_mib, static_cast<double>(mine.fds)}, out[3] = {};
  PetscFunctionBegin;
  PetscCallMPI(MPI_Allreduce(in, out, 3, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "[soak] %-36s VmRSS %7.1f MiB, VmHWM %7.1f MiB, %3.0f open fds (max over "
                        "ranks)\n",
                        what, out[0], out[1], out[2]));
  PetscFunctionReturn(0);
}

}  // namespace

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(TSTrajectoryRegisterRewind());
  DecayProblem p;
  PetscCall(rwd::testing::create_decay_problem(PETSC_COMM_WORLD, 64, 40, 1.0, p));
  PetscCall(TSSetFromOptions(p.ts));
  TSTrajectory tj;
  PetscCall(TSGetTrajectory(p.ts, &tj));
  std::vector<PetscScalar> reference, got;
  PetscCall(TSTrajectorySetType(tj, p.ts, TSTRAJECTORYMEMORY));
  PetscCall(rwd::testing::decay_solve(p, reference));

  PetscCall(TSTrajectorySetType(tj, p.ts, TSTRAJECTORYREWIND));
  PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, 3, 4));
  PetscCall(TSTrajectorySetDirname(tj, "rewind-soak-checkpoints"));
  PetscBool ok = PETSC_TRUE;
  Figures warm;
  PetscInt disk_writes = 0;
  for (int k = 0; k < kSolves; ++k) {
    PetscCall(rwd::testing::decay_solve(p, got));
    if (!same_bits(got, reference)) {
      PetscCall(PetscPrintf(PETSC_COMM_SELF, "solve %d: lambda differs from store-all\n", k));
      ok = PETSC_FALSE;
    }
    TSTrajectoryRewindStats st;
    PetscCall(TSTrajectoryRewindGetStats(tj, &st));
    disk_writes += st.disk_writes;
    if (k + 1 == kWarmUp) {
      warm = process_figures();
      PetscCall(print("after the warm-up (20 solves)", warm));
    }
  }
  const Figures end = process_figures();
  PetscCall(print("after 200 solves", end));
  double growth[2] = {end.rss_mib - warm.rss_mib, static_cast<double>(end.fds - warm.fds)},
         worst[2] = {};
  PetscCallMPI(MPI_Allreduce(growth, worst, 2, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "[soak] over the last %d solves: VmRSS grew by %.2f MiB, open fds by %.0f "
                        "(most on a rank); %" PetscInt_FMT " disk checkpoints written\n",
                        kSolves - kWarmUp, worst[0], worst[1], disk_writes));
  if (worst[0] >= kRssGrowthMiB || worst[1] > 0 || disk_writes == 0) ok = PETSC_FALSE;

  const bool all = rwd::testing::all_ranks(ok, PETSC_COMM_WORLD);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s\n", all ? "soak test passed" : "soak test FAILED"));
  PetscCall(rwd::testing::destroy_decay_problem(p));
  PetscCall(PetscFinalize());
  return all ? 0 : 1;
}
