// The PETSc ensemble (include/rewind/petsc/ensemble.h): K decay tasks with different rates and
// lengths, all starting from the shared initial state m, each a TS with the rewind trajectory
// on its group; y_k = w . x_k(T); Phi = log(sum_k (y_k - d_k)^2) couples the tasks; dPhi/dm =
// sum_k lambda_k(0). Compared bit for bit with a serial loop over the tasks on the first group
// with PETSc's store-all `memory` trajectory, summed the same reproducible way. Run with any
// -rewind_ensemble_* and -ts_trajectory_* options.
#include <petscts.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "decay_problem.hpp"
#include "rewind/ensemble/reproducible_sum.hpp"
#include "rewind/petsc/ensemble.h"
#include "rewind/petsc/trajectory.h"

namespace {

using rwd::testing::DecayProblem;

constexpr PetscInt kSize = 23;
constexpr PetscInt kTasks = 7;

struct Context {
  std::vector<DecayProblem> problems = std::vector<DecayProblem>(kTasks);
  std::vector<Vec> weights = std::vector<Vec>(kTasks, nullptr);
  bool use_memory = false;  // the serial reference: PETSc's store-all trajectory
};

PetscErrorCode create(PetscInt k, MPI_Comm group, void* ctx, TS* ts) {
  Context& c = *static_cast<Context*>(ctx);
  DecayProblem& p = c.problems[static_cast<std::size_t>(k)];
  PetscFunctionBegin;
  PetscCall(rwd::testing::create_decay_problem(group, kSize, 20 + 5 * (k % 3), 1.0 + 0.1 * k, p));
  PetscCall(TSSetFromOptions(p.ts));
  if (c.use_memory) {
    TSTrajectory tj;
    PetscCall(TSGetTrajectory(p.ts, &tj));
    PetscCall(TSTrajectorySetType(tj, p.ts, TSTRAJECTORYMEMORY));
  }
  PetscInt lo, hi;
  PetscCall(VecGetOwnershipRange(p.x, &lo, &hi));
  for (PetscInt i = lo; i < hi; ++i) PetscCall(VecSetValue(p.x, i, 1.0 + 0.1 * i, INSERT_VALUES));
  PetscCall(VecAssemblyBegin(p.x));
  PetscCall(VecAssemblyEnd(p.x));
  PetscCall(TSSetTimeStep(p.ts, 0.01));
  PetscCall(TSSetSolution(p.ts, p.x));
  Vec& w = c.weights[static_cast<std::size_t>(k)];
  PetscCall(VecDuplicate(p.x, &w));
  for (PetscInt i = lo; i < hi; ++i)
    PetscCall(VecSetValue(w, i, std::cos(0.7 * i + k), INSERT_VALUES));
  PetscCall(VecAssemblyBegin(w));
  PetscCall(VecAssemblyEnd(w));
  *ts = p.ts;
  PetscFunctionReturn(0);
}

PetscErrorCode output(PetscInt k, TS ts, void* ctx, PetscScalar y[]) {
  Context& c = *static_cast<Context*>(ctx);
  Vec x;
  PetscFunctionBegin;
  PetscCall(TSGetSolution(ts, &x));
  PetscCall(VecDot(x, c.weights[static_cast<std::size_t>(k)], &y[0]));
  PetscFunctionReturn(0);
}

PetscErrorCode seed(PetscInt k, TS ts, void* ctx, const PetscScalar ybar[]) {
  Context& c = *static_cast<Context*>(ctx);
  DecayProblem& p = c.problems[static_cast<std::size_t>(k)];
  PetscFunctionBegin;
  PetscCall(VecCopy(c.weights[static_cast<std::size_t>(k)], p.lambda));
  PetscCall(VecScale(p.lambda, ybar[0]));
  PetscCall(TSSetCostGradients(ts, 1, &p.lambda, NULL));
  PetscFunctionReturn(0);
}

PetscErrorCode gradient(PetscInt k, TS, void* ctx, PetscScalar g[]) {
  Context& c = *static_cast<Context*>(ctx);
  const PetscScalar* l;
  PetscInt n;
  PetscFunctionBegin;
  const Vec lambda = c.problems[static_cast<std::size_t>(k)].lambda;
  PetscCall(VecGetLocalSize(lambda, &n));
  PetscCall(VecGetArrayRead(lambda, &l));
  for (PetscInt i = 0; i < n; ++i) g[i] = l[i];
  PetscCall(VecRestoreArrayRead(lambda, &l));
  PetscFunctionReturn(0);
}

PetscErrorCode destroy(PetscInt k, TS, void* ctx) {
  Context& c = *static_cast<Context*>(ctx);
  DecayProblem& p = c.problems[static_cast<std::size_t>(k)];
  PetscFunctionBegin;
  p.ts = nullptr;  // the ensemble destroys the TS
  PetscCall(MatDestroy(&p.A));
  PetscCall(VecDestroy(&p.x));
  PetscCall(VecDestroy(&p.lambda));
  PetscCall(VecDestroy(&c.weights[static_cast<std::size_t>(k)]));
  PetscFunctionReturn(0);
}

std::vector<PetscScalar> misfit_gradient(const std::vector<PetscScalar>& y) {
  double s = 0;
  for (std::size_t k = 0; k < y.size(); ++k) s += std::pow(y[k] - 0.3 * std::sin(1.0 * k), 2);
  std::vector<PetscScalar> g(y.size());
  for (std::size_t k = 0; k < y.size(); ++k) g[k] = 2 * (y[k] - 0.3 * std::sin(1.0 * k)) / s;
  return g;
}

// The serial reference on `group`: every task with the store-all trajectory, one after the
// other, the contributions summed as the ensemble sums them.
PetscErrorCode serial(MPI_Comm group, std::vector<PetscScalar>& g) {
  Context c;
  c.use_memory = true;
  std::vector<PetscScalar> y(kTasks);
  PetscFunctionBegin;
  for (PetscInt k = 0; k < kTasks; ++k) {
    TS ts;
    PetscCall(create(k, group, &c, &ts));
    PetscCall(TSSolve(ts, nullptr));
    PetscCall(output(k, ts, &c, &y[static_cast<std::size_t>(k)]));
    PetscCall(TSDestroy(&ts));
    PetscCall(destroy(k, ts, &c));
  }
  const std::vector<PetscScalar> ybar = misfit_gradient(y);
  std::unique_ptr<rwd::ensemble::ReproducibleSum> sum;
  for (PetscInt k = 0; k < kTasks; ++k) {
    TS ts;
    PetscCall(create(k, group, &c, &ts));
    PetscCall(TSSolve(ts, nullptr));
    PetscCall(seed(k, ts, &c, &ybar[static_cast<std::size_t>(k)]));
    PetscCall(TSAdjointSolve(ts));
    PetscInt n;
    PetscCall(VecGetLocalSize(c.problems[static_cast<std::size_t>(k)].lambda, &n));
    std::vector<PetscScalar> gk(static_cast<std::size_t>(n));
    PetscCall(gradient(k, ts, &c, gk.data()));
    if (!sum) sum = std::make_unique<rwd::ensemble::ReproducibleSum>(gk.size());
    sum->add(gk);
    PetscCall(TSDestroy(&ts));
    PetscCall(destroy(k, ts, &c));
  }
  g = sum->result();
  PetscFunctionReturn(0);
}

}  // namespace

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  RewindEnsemble ens;
  PetscCall(RewindEnsembleCreate(PETSC_COMM_WORLD, &ens));
  PetscCall(RewindEnsembleSetFromOptions(ens));
  PetscInt group = 0, groups = 0;
  MPI_Comm group_comm;
  PetscCall(RewindEnsembleGetGroup(ens, &group, &groups, &group_comm));
  Context ctx;
  const RewindEnsembleTaskOps ops = {create, output, seed, gradient, destroy};
  PetscCall(RewindEnsembleSetTasks(ens, &ops, &ctx));
  PetscInt local = 0;
  {
    Vec probe;  // this rank's block of the parameter, as every task lays it out
    PetscCall(VecCreateMPI(group_comm, PETSC_DECIDE, kSize, &probe));
    PetscCall(VecGetLocalSize(probe, &local));
    PetscCall(VecDestroy(&probe));
  }
  PetscCall(RewindEnsembleSetSizes(ens, 1, local));
  std::vector<PetscScalar> y(kTasks), g(static_cast<std::size_t>(local));
  PetscCall(RewindEnsembleForward(ens, kTasks, y.data()));
  const std::vector<PetscScalar> ybar = misfit_gradient(y);
  PetscCall(RewindEnsembleBackward(ens, ybar.data(), g.data()));
  PetscCall(RewindEnsembleView(ens, PETSC_VIEWER_STDOUT_WORLD));

  // The reference on the first group, handed to the same block of every other group.
  PetscMPIInt rank, size;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  const int g_size = size / static_cast<int>(groups);
  std::vector<PetscScalar> reference(static_cast<std::size_t>(local));
  if (group == 0) PetscCall(serial(group_comm, reference));
  MPI_Comm cross;
  PetscCallMPI(MPI_Comm_split(PETSC_COMM_WORLD, rank % g_size, rank, &cross));
  PetscCallMPI(MPI_Bcast(reference.data(), static_cast<int>(local), MPIU_SCALAR, 0, cross));
  PetscCallMPI(MPI_Comm_free(&cross));
  const bool same =
      local > 0 && std::memcmp(reference.data(), g.data(), g.size() * sizeof(PetscScalar)) == 0;
  PetscBool all = PETSC_FALSE, mine = same ? PETSC_TRUE : PETSC_FALSE;
  PetscCallMPI(MPI_Allreduce(&mine, &all, 1, MPIU_BOOL, MPI_LAND, PETSC_COMM_WORLD));
  const char* json;
  PetscCall(RewindEnsembleGetReport(ens, &json));
  const bool reported = std::strstr(json, "\"mapping\": [{\"task\": 0") != nullptr;

  // No task at all: the gradient is gradient_size zeros (not left as it was).
  std::vector<PetscScalar> none(static_cast<std::size_t>(local), std::nan(""));
  PetscCall(RewindEnsembleForward(ens, 0, NULL));
  PetscCall(RewindEnsembleBackward(ens, NULL, none.data()));
  PetscBool zeros = PETSC_TRUE;
  for (PetscScalar v : none) zeros = v == 0.0 ? zeros : PETSC_FALSE;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &zeros, 1, MPIU_BOOL, MPI_LAND, PETSC_COMM_WORLD));

  const bool passed = all && reported && zeros;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "%d groups: gradient %s the serial store-all loop; no tasks: %s; %s\n",
                        (int)groups, all ? "bitwise equal to" : "DIFFERS from",
                        zeros ? "a zero gradient" : "NOT a zero gradient",
                        passed ? "ensemble test passed" : "ensemble test FAILED"));
  PetscCall(RewindEnsembleDestroy(&ens));
  PetscCall(PetscFinalize());
  return passed ? 0 : 1;
}
