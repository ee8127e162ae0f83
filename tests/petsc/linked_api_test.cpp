// A PETSc program that links rewind and registers the trajectory type itself (the C header
// route), solves forward and adjoint several times on one TS (as optimisation loops do), and
// checks each adjoint bitwise against PETSc's store-all `memory` trajectory, plus the
// statistics (peak bytes per level included) and setters of include/rewind/petsc/trajectory.h.
// Run at 1 and 2 ranks.
#include <petscts.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "all_ranks.hpp"
#include "decay_problem.hpp"
#include "rewind/petsc/trajectory.h"

namespace {

using rwd::testing::DecayProblem;
using rwd::testing::same_bits;

}  // namespace

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(TSTrajectoryRegisterRewind());
  PetscCall(TSTrajectoryRegisterRewind());  // a second call is harmless
  DecayProblem p;
  PetscCall(rwd::testing::create_decay_problem(PETSC_COMM_WORLD, 37, 40, 1.0, p));
  PetscCall(TSSetFromOptions(p.ts));

  TSTrajectory tj;
  PetscCall(TSGetTrajectory(p.ts, &tj));
  PetscInt local = 0;
  PetscCall(VecGetLocalSize(p.x, &local));
  // Before the first set-up (PETSc refuses it after); used by the rounds with a disk budget.
  PetscCall(TSTrajectorySetDirname(tj, "linked-api-ckpt"));
  std::vector<PetscScalar> reference, got;
  PetscCall(TSTrajectorySetType(tj, p.ts, TSTRAJECTORYMEMORY));
  PetscCall(rwd::testing::decay_solve(p, reference));

  PetscCall(TSTrajectorySetType(tj, p.ts, TSTRAJECTORYREWIND));
  PetscCall(TSTrajectoryRewindSetSchedule(tj, "revolve"));
  PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, 4, 0));
  PetscBool ok = PETSC_TRUE;
  TSTrajectoryRewindSchedule plan;
  // Nothing is planned before the first step: an error, not stale or zeroed values.
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  if (!TSTrajectoryRewindGetSchedule(tj, &plan)) ok = PETSC_FALSE;
  PetscCall(PetscPopErrorHandler());
  for (int round = 0; round < 3; ++round) {
    PetscCall(rwd::testing::decay_solve(p, got));
    const PetscBool same = same_bits(got, reference) ? PETSC_TRUE : PETSC_FALSE;
    TSTrajectoryRewindStats st;
    PetscCall(TSTrajectoryRewindGetStats(tj, &st));
    // Each RAM checkpoint of revolve is one state: this rank's block of the vector.
    const PetscReal state_bytes = (PetscReal)(local * (PetscInt)sizeof(PetscScalar));
    const PetscBool stats_ok =
        (st.steps == 40 && st.adjoint_steps == 40 && st.recomputed > 0 && st.ram_peak <= 4 &&
         st.ram_peak >= 1 && st.disk_writes == 0 &&
         // RAM checkpoints are a step's stages with its solution: solutions alone fill them
         // more than one to a checkpoint.
         st.ram_peak_checkpoints > st.ram_peak &&
         st.ram_peak_bytes == st.ram_peak_checkpoints * state_bytes && st.disk_peak_bytes == 0)
            ? PETSC_TRUE
            : PETSC_FALSE;
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "round %d: lambda %s store-all; steps %" PetscInt_FMT
                          " recomputed %" PetscInt_FMT " peak RAM %" PetscInt_FMT
                          " (%.0f bytes on rank 0)\n",
                          round, same ? "bitwise equal to" : "DIFFERS from", st.steps,
                          st.recomputed, st.ram_peak, (double)st.ram_peak_bytes));
    ok = (PetscBool)(ok && same && stats_ok);
  }
  PetscCall(TSTrajectoryRewindGetSchedule(tj, &plan));
  const PetscBool plan_ok =
      (std::strcmp(plan.schedule, "revolve") == 0 && plan.steps == 40 && plan.max_cps_ram == 4 &&
       plan.max_cps_disk == 0 && !plan.online && !plan.stores_stages)
          ? PETSC_TRUE
          : PETSC_FALSE;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "planned: %s, %" PetscInt_FMT " steps, %" PetscInt_FMT
                        " RAM + %" PetscInt_FMT " disk, online %d, stages %d\n",
                        plan.schedule, plan.steps, plan.max_cps_ram, plan.max_cps_disk,
                        (int)plan.online, (int)plan.stores_stages));
  ok = (PetscBool)(ok && plan_ok);
  // No budget: auto stores every step, stages included, and the getter says so.
  PetscCall(TSTrajectoryRewindSetSchedule(tj, "auto"));
  PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, -1, 0));
  PetscCall(rwd::testing::decay_solve(p, got));
  PetscCall(TSTrajectoryRewindGetSchedule(tj, &plan));
  const PetscBool storeall_ok = (std::strcmp(plan.schedule, "storeall") == 0 &&
                                 plan.stores_stages && same_bits(got, reference))
                                    ? PETSC_TRUE
                                    : PETSC_FALSE;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "no budget: %s, stages %d, lambda %s store-all\n",
                        plan.schedule, (int)plan.stores_stages,
                        storeall_ok ? "bitwise equal to" : "DIFFERS from (or wrong plan)"));
  ok = (PetscBool)(ok && storeall_ok);
  // A byte budget of six states (the largest rank's 37-value block at most): planned in
  // checkpoints below the step count, and still store-all's bits.
  PetscCall(TSTrajectoryRewindSetRAMBytes(tj, 6 * 37 * sizeof(PetscScalar)));
  PetscCall(TSTrajectoryRewindSetSteps(tj, 0));
  PetscCall(TSTrajectoryRewindSetMaxStagedBytes(tj, 1 << 20));
  PetscCall(TSTrajectoryRewindSetResume(tj, PETSC_FALSE, 0));
  PetscCall(TSTrajectoryRewindSetRecomputeWarning(tj, 20));
  PetscCall(rwd::testing::decay_solve(p, got));
  PetscCall(TSTrajectoryRewindGetSchedule(tj, &plan));
  const PetscBool bytes_ok =
      (plan.max_cps_ram >= 1 && plan.max_cps_ram < 40 && same_bits(got, reference)) ? PETSC_TRUE
                                                                                    : PETSC_FALSE;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "byte budget: %s, %" PetscInt_FMT " RAM checkpoints, lambda %s store-all\n",
                        plan.schedule, plan.max_cps_ram,
                        bytes_ok ? "bitwise equal to" : "DIFFERS from (or wrong plan)"));
  ok = (PetscBool)(ok && bytes_ok);
  // Two levels: twolevel keeps states only, so each level's peak bytes are its peak count of
  // this rank's blocks. One RAM checkpoint (a step's stages with its solution) holds two and a
  // half states' bytes: two solutions, so that the disk is needed (two RAM checkpoints hold five,
  // enough to reverse the 40 steps in RAM more cheaply than through the disk).
  PetscCall(TSTrajectoryRewindSetRAMBytes(tj, 0));
  PetscCall(TSTrajectoryRewindSetSchedule(tj, "twolevel"));
  PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, 1, 3));
  PetscCall(TSTrajectoryRewindSetCosts(tj, 1, 1));
  PetscCall(rwd::testing::decay_solve(p, got));
  {
    TSTrajectoryRewindStats st;
    PetscCall(TSTrajectoryRewindGetStats(tj, &st));
    const PetscReal state_bytes = (PetscReal)(local * (PetscInt)sizeof(PetscScalar));
    const PetscBool levels_ok =
        (same_bits(got, reference) && st.disk_writes > 0 && st.disk_peak >= 1 &&
         st.disk_peak <= 3 && st.ram_peak_bytes == st.ram_peak_checkpoints * state_bytes &&
         st.disk_peak_bytes == st.disk_peak * state_bytes)
            ? PETSC_TRUE
            : PETSC_FALSE;
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "two levels: peak %" PetscInt_FMT " RAM (%.0f bytes), %" PetscInt_FMT
                          " disk (%.0f bytes) on rank 0; lambda %s store-all\n",
                          st.ram_peak, (double)st.ram_peak_bytes, st.disk_peak,
                          (double)st.disk_peak_bytes,
                          levels_ok ? "bitwise equal to" : "DIFFERS from (or wrong peaks)"));
    ok = (PetscBool)(ok && levels_ok);
  }
  // Compressed RAM checkpoints (a lossless codec): store-all's bits still.
  PetscCall(TSTrajectoryRewindSetSchedule(tj, "revolve"));
  PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, 3, 0));
  PetscCall(TSTrajectoryRewindSetCompress(tj, "zstd", 0));
  PetscCall(rwd::testing::decay_solve(p, got));
  const PetscBool compress_ok = same_bits(got, reference) ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "zstd-compressed RAM checkpoints: lambda %s store-all\n",
                        compress_ok ? "bitwise equal to" : "DIFFERS from"));
  ok = (PetscBool)(ok && compress_ok);
  // A level (set before the codec, which checks the pair): the same bits.
  PetscCall(TSTrajectoryRewindSetCompressLevel(tj, 9));
  PetscCall(TSTrajectoryRewindSetCompress(tj, "zstd", 0));
  PetscCall(rwd::testing::decay_solve(p, got));
  const PetscBool level_ok = same_bits(got, reference) ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "zstd level 9: lambda %s store-all\n",
                        level_ok ? "bitwise equal to" : "DIFFERS from"));
  ok = (PetscBool)(ok && level_ok);
  // A level with a codec that takes none is refused.
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  const PetscErrorCode zfp_level = TSTrajectoryRewindSetCompress(tj, "zfp", 1e-9);
  PetscCall(PetscPopErrorHandler());
  ok = (PetscBool)(ok && zfp_level != 0);
  PetscCall(TSTrajectoryRewindSetCompressLevel(tj, 0));
  // Planned with a ratio its states do not reach (they hardly compress): what does not fit in
  // the RAM budget moves to the disk budget, and the bits stay store-all's.
  PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, 3, 40));  // room for every step's state
  PetscCall(TSTrajectoryRewindSetCompressRatio(tj, 4));
  PetscCall(rwd::testing::decay_solve(p, got));
  TSTrajectoryRewindStats cs;
  PetscCall(TSTrajectoryRewindGetStats(tj, &cs));
  const PetscBool ratio_ok = same_bits(got, reference) && cs.compress_ratio == 4 &&
                                     cs.moved_to_disk > 0 && cs.ram_stored_bytes > 0 &&
                                     cs.ram_uncompressed_bytes > 0 &&
                                     cs.ram_checkpoints_planned > cs.ram_checkpoints_uncompressed
                                 ? PETSC_TRUE
                                 : PETSC_FALSE;
  PetscCall(PetscPrintf(
      PETSC_COMM_WORLD,
      "planned with ratio %g: %" PetscInt_FMT " RAM checkpoints for %" PetscInt_FMT
      ", %" PetscInt_FMT " moved to disk; lambda %s store-all\n",
      (double)cs.compress_ratio, cs.ram_checkpoints_planned, cs.ram_checkpoints_uncompressed,
      cs.moved_to_disk,
      ratio_ok ? "bitwise equal to (stats consistent)" : "DIFFERS from (or stats wrong)"));
  ok = (PetscBool)(ok && ratio_ok);
  PetscCall(TSTrajectoryRewindSetCompressRatio(tj, 1));
  // zfp, lossy: within a small multiple of the tolerance of store-all, and not its bits (the
  // restored states lost some), with stages exact and with stages lossy too.
  PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, 3, 0));
  for (const PetscBool lossy_stages : {PETSC_FALSE, PETSC_TRUE}) {
    PetscCall(TSTrajectoryRewindSetCompress(tj, "zfp", 1e-9));
    PetscCall(TSTrajectoryRewindSetCompressLossyPullbacks(tj, lossy_stages));
    PetscCall(rwd::testing::decay_solve(p, got));
    PetscReal mine[2] = {0, 0}, largest[2] = {0, 0};
    for (std::size_t i = 0; i < got.size() && i < reference.size(); ++i) {
      mine[0] = std::max(mine[0], PetscAbsScalar(got[i] - reference[i]));
      mine[1] = std::max(mine[1], PetscAbsScalar(reference[i]));
    }
    PetscCallMPI(MPI_Allreduce(mine, largest, 2, MPIU_REAL, MPI_MAX, PETSC_COMM_WORLD));
    const PetscReal error = largest[1] > 0 ? largest[0] / largest[1] : largest[0];
    const PetscBool zfp_ok = error > 0 && error < 1e-7 ? PETSC_TRUE : PETSC_FALSE;
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "zfp (1e-9, stages %s): lambda within %.1e of store-all, relative: %s\n",
                          lossy_stages ? "lossy" : "exact", (double)error,
                          zfp_ok ? "as expected" : "NOT within 1e-7, or bitwise"));
    ok = (PetscBool)(ok && zfp_ok);
  }
  PetscCall(TSTrajectoryRewindSetCompressLossyPullbacks(tj, PETSC_FALSE));
  PetscCall(TSTrajectoryRewindSetCompress(tj, "none", 0));
  // A bad setter argument is an error naming what to change.
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  const PetscErrorCode bad[] = {TSTrajectoryRewindSetSchedule(tj, "no-such-schedule"),
                                TSTrajectoryRewindSetRAMBytes(tj, -1),
                                TSTrajectoryRewindSetRAMBytes(tj, 2.5),
                                TSTrajectoryRewindSetMaxStagedBytes(tj, 0),
                                TSTrajectoryRewindSetMaxStagedBytes(tj, 1e19),
                                TSTrajectoryRewindSetSteps(tj, -1),
                                TSTrajectoryRewindSetResume(tj, PETSC_TRUE, -1),
                                TSTrajectoryRewindSetRecomputeWarning(tj, -1),
                                TSTrajectoryRewindSetRecomputeWarning(tj, PETSC_INFINITY),
                                TSTrajectoryRewindSetCompress(tj, "lz9", 0),
                                TSTrajectoryRewindSetCompress(tj, "zfp", -1),
                                TSTrajectoryRewindSetCompress(tj, "zfp", 0),
                                TSTrajectoryRewindSetCompress(tj, "zstd", 1e-6),
                                TSTrajectoryRewindSetCompressLevel(tj, 20),
                                TSTrajectoryRewindSetCompressLevel(tj, -1),
                                TSTrajectoryRewindSetCompressRatio(tj, 0.5),
                                TSTrajectoryRewindSetCompressRatio(tj, -1),
                                TSTrajectoryRewindSetCompressRatio(tj, std::nan(""))};
  PetscCall(PetscPopErrorHandler());
  for (std::size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    if (bad[i]) continue;
    ok = PETSC_FALSE;
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "bad setter call %zu was accepted\n", i));
  }

  const bool all = rwd::testing::all_ranks(ok, PETSC_COMM_WORLD);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s\n",
                        all ? "linked API test passed" : "linked API test FAILED"));
  PetscCall(rwd::testing::destroy_decay_problem(p));
  PetscCall(PetscFinalize());
  return all ? 0 : 1;
}
