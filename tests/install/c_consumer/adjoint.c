/* A PETSc user's C program against an installed rewind (tests/install, built once with CMake's
   project(... C) and once by a makefile with pkg-config). It solves a 1D reaction-diffusion
   equation u_t = D u_xx - u^3 (zero boundary values, RK4, fixed steps) with the cost
   J = |u(T)|^2 / 2 and computes dJ/du(0) with TSAdjointSolve twice: with PETSc's store-all
   `memory` trajectory, and with rewind chosen in the code (TSTrajectorySetType) under a RAM
   budget (TSTrajectoryRewindSetMaxCheckpoints). It exits non-zero unless the two gradients are
   equal bit for bit and rewind recomputed steps within its budget.
     mpiexec -n 2 ./c_adjoint [-n 60] [-steps 30] [-ram 3]
*/
#include <rewind/petsc/trajectory.h>
#include <string.h>

typedef struct {
  Mat A; /* D times the second difference, the linear part of the right-hand side */
  PetscInt n, steps;
  PetscReal dt;
} Problem;

static PetscErrorCode rhs(TS ts, PetscReal t, Vec u, Vec f, void* ctx) {
  const Problem* p = (const Problem*)ctx;
  const PetscScalar* ua;
  PetscScalar* fa;
  PetscInt local;

  PetscFunctionBeginUser;
  (void)ts;
  (void)t;
  PetscCall(MatMult(p->A, u, f));
  PetscCall(VecGetLocalSize(u, &local));
  PetscCall(VecGetArrayRead(u, &ua));
  PetscCall(VecGetArray(f, &fa));
  for (PetscInt i = 0; i < local; ++i) fa[i] -= ua[i] * ua[i] * ua[i];
  PetscCall(VecRestoreArrayRead(u, &ua));
  PetscCall(VecRestoreArray(f, &fa));
  PetscFunctionReturn(0);
}

static PetscErrorCode rhs_jacobian(TS ts, PetscReal t, Vec u, Mat J, Mat P, void* ctx) {
  const Problem* p = (const Problem*)ctx;
  Vec d;

  PetscFunctionBeginUser;
  (void)ts;
  (void)t;
  (void)P;
  PetscCall(MatCopy(p->A, J, SAME_NONZERO_PATTERN));
  PetscCall(VecDuplicate(u, &d));
  PetscCall(VecPointwiseMult(d, u, u));
  PetscCall(VecScale(d, -3.0));
  PetscCall(MatDiagonalSet(J, d, ADD_VALUES));
  PetscCall(VecDestroy(&d));
  PetscFunctionReturn(0);
}

static PetscErrorCode create_operator(Problem* p) {
  const PetscReal h = 1.0 / (PetscReal)(p->n + 1), c = 0.05 / (h * h);
  PetscInt lo, hi;

  PetscFunctionBeginUser;
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, p->n, p->n, 3, NULL, 1, NULL,
                         &p->A));
  PetscCall(MatGetOwnershipRange(p->A, &lo, &hi));
  for (PetscInt i = lo; i < hi; ++i) {
    if (i > 0) PetscCall(MatSetValue(p->A, i, i - 1, c, INSERT_VALUES));
    PetscCall(MatSetValue(p->A, i, i, -2.0 * c, INSERT_VALUES));
    if (i < p->n - 1) PetscCall(MatSetValue(p->A, i, i + 1, c, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(p->A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(p->A, MAT_FINAL_ASSEMBLY));
  /* Stable for RK4: D 4/h^2 dt = 4 c dt stays below 2.7. */
  p->dt = 0.5 / c;
  PetscFunctionReturn(0);
}

/* One forward and adjoint solve with trajectory type `type` (ram > 0: rewind's RAM budget);
   grad gets dJ/du(0), stats rewind's counts (left alone for other types). */
static PetscErrorCode gradient(Problem* p, TSTrajectoryType type, PetscInt ram, Vec grad,
                               TSTrajectoryRewindStats* stats) {
  TS ts;
  TSTrajectory tj;
  Mat J;
  Vec u, lambda;
  PetscInt lo, hi;

  PetscFunctionBeginUser;
  PetscCall(MatDuplicate(p->A, MAT_COPY_VALUES, &J));
  PetscCall(MatCreateVecs(p->A, &u, NULL));
  PetscCall(VecGetOwnershipRange(u, &lo, &hi));
  for (PetscInt i = lo; i < hi; ++i) {
    const PetscReal x = (PetscReal)(i + 1) / (PetscReal)(p->n + 1);
    PetscCall(VecSetValue(u, i, 2.0 * PetscSinReal(PETSC_PI * x) + PetscSinReal(3.0 * PETSC_PI * x),
                          INSERT_VALUES));
  }
  PetscCall(VecAssemblyBegin(u));
  PetscCall(VecAssemblyEnd(u));

  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetProblemType(ts, TS_NONLINEAR));
  PetscCall(TSSetType(ts, TSRK));
  PetscCall(TSRKSetType(ts, TSRK4));
  PetscCall(TSSetRHSFunction(ts, NULL, rhs, p));
  PetscCall(TSSetRHSJacobian(ts, J, J, rhs_jacobian, p));
  PetscCall(TSSetTimeStep(ts, p->dt));
  PetscCall(TSSetMaxSteps(ts, p->steps));
  PetscCall(TSSetMaxTime(ts, 1e6));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetSaveTrajectory(ts));
  PetscCall(TSSetFromOptions(ts));
  /* The program's own choice, after the options. */
  PetscCall(TSGetTrajectory(ts, &tj));
  PetscCall(TSTrajectorySetType(tj, ts, type));
  if (ram > 0) PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, ram, 0));

  PetscCall(TSSolve(ts, u));
  PetscCall(VecDuplicate(u, &lambda));
  PetscCall(VecCopy(u, lambda)); /* dJ/du(T) = u(T) */
  PetscCall(TSSetCostGradients(ts, 1, &lambda, NULL));
  PetscCall(TSAdjointSolve(ts));
  PetscCall(VecCopy(lambda, grad));
  if (ram > 0) PetscCall(TSTrajectoryRewindGetStats(tj, stats));

  PetscCall(VecDestroy(&lambda));
  PetscCall(VecDestroy(&u));
  PetscCall(TSDestroy(&ts));
  PetscCall(MatDestroy(&J));
  PetscFunctionReturn(0);
}

int main(int argc, char** argv) {
  Problem p = {NULL, 60, 30, 0.0};
  PetscInt ram = 3, local;
  Vec reference, got;
  TSTrajectoryRewindStats st;
  const PetscScalar *ra, *ga;
  PetscReal norm;
  int differ = 0, ok;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(TSTrajectoryRegisterRewind());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &p.n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-steps", &p.steps, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-ram", &ram, NULL));
  PetscCheck(ram >= 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE,
             "-ram must be >= 2, got %" PetscInt_FMT, ram);
  PetscCall(create_operator(&p));
  PetscCall(MatCreateVecs(p.A, &reference, NULL));
  PetscCall(VecDuplicate(reference, &got));
  memset(&st, 0, sizeof st);

  PetscCall(gradient(&p, TSTRAJECTORYMEMORY, 0, reference, NULL));
  PetscCall(gradient(&p, TSTRAJECTORYREWIND, ram, got, &st));

  PetscCall(VecGetLocalSize(got, &local));
  PetscCall(VecGetArrayRead(reference, &ra));
  PetscCall(VecGetArrayRead(got, &ga));
  if (local > 0 && memcmp(ra, ga, (size_t)local * sizeof(PetscScalar)) != 0) differ = 1;
  PetscCall(VecRestoreArrayRead(reference, &ra));
  PetscCall(VecRestoreArrayRead(got, &ga));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &differ, 1, MPI_INT, MPI_MAX, PETSC_COMM_WORLD));
  /* Counts are per rank; a budget that held every step would make the comparison empty. */
  ok = !differ && st.steps == p.steps && st.adjoint_steps == p.steps && st.recomputed > 0 &&
       st.ram_peak >= 1 && st.ram_peak <= ram;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, PETSC_COMM_WORLD));
  PetscCall(VecNorm(got, NORM_2, &norm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "c_adjoint: %" PetscInt_FMT " steps; rewind with %" PetscInt_FMT
                        " RAM checkpoints recomputed %" PetscInt_FMT " steps, peak %" PetscInt_FMT
                        "; dJ/du0 (norm %.6g) %s store-all: %s\n",
                        st.steps, ram, st.recomputed, st.ram_peak, (double)norm,
                        differ ? "DIFFERS from" : "bitwise equal to", ok ? "PASSED" : "FAILED"));

  PetscCall(VecDestroy(&got));
  PetscCall(VecDestroy(&reference));
  PetscCall(MatDestroy(&p.A));
  PetscCall(PetscFinalize());
  return ok ? 0 : 1;
}
