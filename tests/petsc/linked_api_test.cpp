// A PETSc program that links rewind and registers the trajectory type itself (the C header
// route), solves forward and adjoint several times on one TS (as optimisation loops do), and
// checks each adjoint bitwise against PETSc's store-all `memory` trajectory, plus the
// statistics and setters of include/rewind/petsc/trajectory.h. Run at 1 and 2 ranks.
#include <petscts.h>

#include <cstring>
#include <vector>

#include "rewind/petsc/trajectory.h"

namespace {

// dx_i/dt = -a_i x_i + 0.3 sin(x_i): elementwise, nonlinear, distributed.
PetscErrorCode rhs(TS, PetscReal, Vec x, Vec f, void*) {
  const PetscScalar* xa;
  PetscScalar* fa;
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArray(f, &fa));
  for (PetscInt i = 0; i < hi - lo; ++i)
    fa[i] = -(1.0 + 0.01 * (lo + i)) * xa[i] + 0.3 * PetscSinScalar(xa[i]);
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(VecRestoreArray(f, &fa));
  PetscFunctionReturn(0);
}

PetscErrorCode jacobian(TS, PetscReal, Vec x, Mat A, Mat, void*) {
  const PetscScalar* xa;
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArrayRead(x, &xa));
  for (PetscInt i = lo; i < hi; ++i) {
    const PetscScalar v = -(1.0 + 0.01 * i) + 0.3 * PetscCosScalar(xa[i - lo]);
    PetscCall(MatSetValue(A, i, i, v, INSERT_VALUES));
  }
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

struct Problem {
  TS ts;
  Vec x, lambda;
  Mat A;
};

// One forward + adjoint solve from the same initial state; returns this rank's lambda(0).
PetscErrorCode solve(Problem& p, std::vector<PetscScalar>& out) {
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(p.x, &lo, &hi));
  for (PetscInt i = lo; i < hi; ++i) PetscCall(VecSetValue(p.x, i, 1.0 + 0.1 * i, INSERT_VALUES));
  PetscCall(VecAssemblyBegin(p.x));
  PetscCall(VecAssemblyEnd(p.x));
  PetscCall(TSSetTime(p.ts, 0.0));
  PetscCall(TSSetStepNumber(p.ts, 0));
  PetscCall(TSSetTimeStep(p.ts, 0.01));
  PetscCall(TSSolve(p.ts, p.x));
  PetscCall(VecCopy(p.x, p.lambda));  // J = |x(T)|^2 / 2
  PetscCall(TSSetCostGradients(p.ts, 1, &p.lambda, NULL));
  PetscCall(TSAdjointSolve(p.ts));
  const PetscScalar* l;
  PetscCall(VecGetArrayRead(p.lambda, &l));
  out.assign(l, l + (hi - lo));
  PetscCall(VecRestoreArrayRead(p.lambda, &l));
  PetscFunctionReturn(0);
}

}  // namespace

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(TSTrajectoryRegisterRewind());
  PetscCall(TSTrajectoryRegisterRewind());  // a second call is harmless
  Problem p;
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, 37, &p.x));
  PetscCall(VecDuplicate(p.x, &p.lambda));
  PetscCall(
      MatCreateAIJ(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, 37, 37, 1, NULL, 0, NULL, &p.A));
  PetscCall(TSCreate(PETSC_COMM_WORLD, &p.ts));
  PetscCall(TSSetType(p.ts, TSRK));
  PetscCall(TSRKSetType(p.ts, TSRK4));
  PetscCall(TSSetRHSFunction(p.ts, NULL, rhs, NULL));
  PetscCall(TSSetRHSJacobian(p.ts, p.A, p.A, jacobian, NULL));
  PetscCall(TSSetMaxSteps(p.ts, 40));
  PetscCall(TSSetMaxTime(p.ts, 100.0));
  PetscCall(TSSetExactFinalTime(p.ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetSaveTrajectory(p.ts));
  PetscCall(TSSetFromOptions(p.ts));

  TSTrajectory tj;
  PetscCall(TSGetTrajectory(p.ts, &tj));
  std::vector<PetscScalar> reference, got;
  PetscCall(TSTrajectorySetType(tj, p.ts, TSTRAJECTORYMEMORY));
  PetscCall(solve(p, reference));

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
    PetscCall(solve(p, got));
    const PetscBool same =
        (got.size() == reference.size() &&
         std::memcmp(got.data(), reference.data(), got.size() * sizeof(PetscScalar)) == 0)
            ? PETSC_TRUE
            : PETSC_FALSE;
    TSTrajectoryRewindStats st;
    PetscCall(TSTrajectoryRewindGetStats(tj, &st));
    const PetscBool stats_ok = (st.steps == 40 && st.adjoint_steps == 40 && st.recomputed > 0 &&
                                st.ram_peak <= 4 && st.disk_writes == 0)
                                   ? PETSC_TRUE
                                   : PETSC_FALSE;
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "round %d: lambda %s store-all; steps %" PetscInt_FMT
                          " recomputed %" PetscInt_FMT " peak RAM %" PetscInt_FMT "\n",
                          round, same ? "bitwise equal to" : "DIFFERS from", st.steps,
                          st.recomputed, st.ram_peak));
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
  PetscCall(solve(p, got));
  PetscCall(TSTrajectoryRewindGetSchedule(tj, &plan));
  const PetscBool storeall_ok =
      (std::strcmp(plan.schedule, "storeall") == 0 && plan.stores_stages &&
       got.size() == reference.size() &&
       std::memcmp(got.data(), reference.data(), got.size() * sizeof(PetscScalar)) == 0)
          ? PETSC_TRUE
          : PETSC_FALSE;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "no budget: %s, stages %d, lambda %s store-all\n",
                        plan.schedule, (int)plan.stores_stages,
                        storeall_ok ? "bitwise equal to" : "DIFFERS from (or wrong plan)"));
  ok = (PetscBool)(ok && storeall_ok);
  // A bad setter argument is an error naming what to change.
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  const PetscErrorCode bad = TSTrajectoryRewindSetSchedule(tj, "no-such-schedule");
  PetscCall(PetscPopErrorHandler());
  if (!bad) ok = PETSC_FALSE;

  PetscBool all = PETSC_FALSE;
  PetscCallMPI(MPI_Allreduce(&ok, &all, 1, MPIU_BOOL, MPI_LAND, PETSC_COMM_WORLD));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s\n",
                        all ? "linked API test passed" : "linked API test FAILED"));
  PetscCall(TSDestroy(&p.ts));
  PetscCall(MatDestroy(&p.A));
  PetscCall(VecDestroy(&p.x));
  PetscCall(VecDestroy(&p.lambda));
  PetscCall(PetscFinalize());
  return all ? 0 : 1;
}
