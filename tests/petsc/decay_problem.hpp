#pragma once
// A small distributed PETSc TS problem for the linked-API tests: dx_i/dt = -a_i x_i +
// 0.3 sin(x_i) with a_i = rate + 0.01 i, RK4, fixed steps, J = |x(T)|^2 / 2.

#include <petscts.h>

#include <cstring>
#include <vector>

namespace rwd::testing {

struct DecayProblem {
  TS ts = nullptr;
  Vec x = nullptr, lambda = nullptr;
  Mat A = nullptr;
  PetscReal rate = 1.0;
};

inline PetscErrorCode decay_rhs(TS, PetscReal, Vec x, Vec f, void* ctx) {
  const PetscReal rate = static_cast<DecayProblem*>(ctx)->rate;
  const PetscScalar* xa;
  PetscScalar* fa;
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArray(f, &fa));
  for (PetscInt i = 0; i < hi - lo; ++i)
    fa[i] = -(rate + 0.01 * (lo + i)) * xa[i] + 0.3 * PetscSinScalar(xa[i]);
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(VecRestoreArray(f, &fa));
  PetscFunctionReturn(0);
}

inline PetscErrorCode decay_jacobian(TS, PetscReal, Vec x, Mat A, Mat, void* ctx) {
  const PetscReal rate = static_cast<DecayProblem*>(ctx)->rate;
  const PetscScalar* xa;
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArrayRead(x, &xa));
  for (PetscInt i = lo; i < hi; ++i) {
    const PetscScalar v = -(rate + 0.01 * i) + 0.3 * PetscCosScalar(xa[i - lo]);
    PetscCall(MatSetValue(A, i, i, v, INSERT_VALUES));
  }
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/// A TS of `steps` RK4 steps on a vector of `n` entries, saving its trajectory.
inline PetscErrorCode create_decay_problem(MPI_Comm comm, PetscInt n, PetscInt steps,
                                           PetscReal rate, DecayProblem& p) {
  PetscFunctionBegin;
  p.rate = rate;
  PetscCall(VecCreateMPI(comm, PETSC_DECIDE, n, &p.x));
  PetscCall(VecDuplicate(p.x, &p.lambda));
  PetscCall(MatCreateAIJ(comm, PETSC_DECIDE, PETSC_DECIDE, n, n, 1, NULL, 0, NULL, &p.A));
  PetscCall(TSCreate(comm, &p.ts));
  PetscCall(TSSetType(p.ts, TSRK));
  PetscCall(TSRKSetType(p.ts, TSRK4));
  PetscCall(TSSetRHSFunction(p.ts, NULL, decay_rhs, &p));
  PetscCall(TSSetRHSJacobian(p.ts, p.A, p.A, decay_jacobian, &p));
  PetscCall(TSSetMaxSteps(p.ts, steps));
  PetscCall(TSSetMaxTime(p.ts, 100.0));
  PetscCall(TSSetExactFinalTime(p.ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetSaveTrajectory(p.ts));
  PetscFunctionReturn(0);
}

/// The forward solve from x_i(0) = 1 + 0.1 i.
inline PetscErrorCode decay_forward(DecayProblem& p) {
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
  PetscFunctionReturn(0);
}

/// The adjoint solve after decay_forward; `out` gets this rank's lambda(0).
inline PetscErrorCode decay_adjoint(DecayProblem& p, std::vector<PetscScalar>& out) {
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(p.x, &lo, &hi));
  PetscCall(VecCopy(p.x, p.lambda));  // J = |x(T)|^2 / 2
  PetscCall(TSSetCostGradients(p.ts, 1, &p.lambda, NULL));
  PetscCall(TSAdjointSolve(p.ts));
  const PetscScalar* l;
  PetscCall(VecGetArrayRead(p.lambda, &l));
  out.assign(l, l + (hi - lo));
  PetscCall(VecRestoreArrayRead(p.lambda, &l));
  PetscFunctionReturn(0);
}

inline PetscErrorCode destroy_decay_problem(DecayProblem& p) {
  PetscFunctionBegin;
  PetscCall(TSDestroy(&p.ts));
  PetscCall(MatDestroy(&p.A));
  PetscCall(VecDestroy(&p.x));
  PetscCall(VecDestroy(&p.lambda));
  PetscFunctionReturn(0);
}

// One forward + adjoint solve from the same initial state; `out` gets this rank's lambda(0).
inline PetscErrorCode decay_solve(DecayProblem& p, std::vector<PetscScalar>& out) {
  PetscFunctionBegin;
  PetscCall(decay_forward(p));
  PetscCall(decay_adjoint(p, out));
  PetscFunctionReturn(0);
}

inline bool same_bits(const std::vector<PetscScalar>& a, const std::vector<PetscScalar>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(PetscScalar)) == 0);
}

}  // namespace rwd::testing
