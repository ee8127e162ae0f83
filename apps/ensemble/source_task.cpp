#include "source_task.hpp"

#include <algorithm>

namespace rwd::apps::multisource {

SourceTask::SourceTask(const Settings& s, PetscInt k, MPI_Comm group,
                       const std::vector<PetscScalar>& kappa, Trajectory trajectory)
    : dm_(make_grid(kGrid, group)), model_(dm_), comm_(group) {
  copy_in(model_.kappa(), kappa);
  model_.set_cellular_flow(s.speed);
  const Source src = source_of(k, s);
  fill(dm_, model_.source(),
       [&](PetscReal x, PetscReal y) { return bump(x, y, src.x, src.y, 0.08); });
  REWIND_APP_CALL(DMCreateGlobalVector(dm_, u_.out()));
  REWIND_APP_CALL(VecSet(u_, 0.0));
  REWIND_APP_CALL(DMCreateGlobalVector(dm_, &lambda_[0]));
  REWIND_APP_CALL(DMCreateGlobalVector(dm_, &mu_[0]));
  REWIND_APP_CALL(TSCreate(group, &ts_));
  REWIND_APP_CALL(TSSetExactFinalTime(ts_, TS_EXACTFINALTIME_MATCHSTEP));
  model_.configure(ts_);
  REWIND_APP_CALL(TSSetTimeStep(ts_, s.dt));
  if (trajectory != Trajectory::None) REWIND_APP_CALL(TSSetSaveTrajectory(ts_));
  REWIND_APP_CALL(TSSetFromOptions(ts_));
  if (trajectory == Trajectory::Memory) {
    TSTrajectory tj = nullptr;
    REWIND_APP_CALL(TSGetTrajectory(ts_, &tj));
    REWIND_APP_CALL(TSTrajectorySetType(tj, ts_, TSTRAJECTORYMEMORY));
    REWIND_APP_CALL(TSTrajectorySetSolutionOnly(tj, PETSC_FALSE));
  }
  // The task's length is its definition: set after the options.
  REWIND_APP_CALL(TSSetMaxSteps(ts_, src.steps));
  REWIND_APP_CALL(TSSetMaxTime(ts_, PETSC_MAX_REAL));
  REWIND_APP_CALL(TSSetSolution(ts_, u_));
}

SourceTask::~SourceTask() {
  if (ts_) (void)TSDestroy(&ts_);
  (void)VecDestroy(&lambda_[0]);
  (void)VecDestroy(&mu_[0]);
}

std::vector<PetscScalar> SourceTask::output() const {
  std::vector<PetscScalar> y(kReceivers, 0.0);
  DMDALocalInfo info;
  const PetscScalar** a = nullptr;
  REWIND_APP_CALL(DMDAGetLocalInfo(dm_, &info));
  REWIND_APP_CALL(DMDAVecGetArrayRead(dm_, u_, &a));
  for (PetscInt r = 0; r < kReceivers; ++r) {
    PetscInt i = 0, j = 0;
    receiver_cell(r, info.mx, info.my, &i, &j);
    if (owns(info, i, j)) y[static_cast<std::size_t>(r)] = a[j][i];
  }
  REWIND_APP_CALL(DMDAVecRestoreArrayRead(dm_, u_, &a));
  // One rank holds each value and the others add zero: the sum is exact.
  REWIND_APP_CALL(MPI_Allreduce(MPI_IN_PLACE, y.data(), kReceivers, MPIU_SCALAR, MPI_SUM, comm_));
  return y;
}

void SourceTask::seed(const PetscScalar ybar[]) {
  DMDALocalInfo info;
  PetscScalar** l = nullptr;
  REWIND_APP_CALL(DMDAGetLocalInfo(dm_, &info));
  REWIND_APP_CALL(VecSet(lambda_[0], 0.0));
  REWIND_APP_CALL(VecSet(mu_[0], 0.0));
  REWIND_APP_CALL(DMDAVecGetArray(dm_, lambda_[0], &l));
  for (PetscInt r = 0; r < kReceivers; ++r) {
    PetscInt i = 0, j = 0;
    receiver_cell(r, info.mx, info.my, &i, &j);
    if (owns(info, i, j)) l[j][i] += ybar[r];
  }
  REWIND_APP_CALL(DMDAVecRestoreArray(dm_, lambda_[0], &l));
  REWIND_APP_CALL(TSSetCostGradients(ts_, 1, lambda_, mu_));
}

void SourceTask::gradient(PetscScalar g[]) const {
  PetscInt n = 0;
  const PetscScalar* a = nullptr;
  REWIND_APP_CALL(VecGetLocalSize(mu_[0], &n));
  REWIND_APP_CALL(VecGetArrayRead(mu_[0], &a));
  std::copy(a, a + n, g);
  REWIND_APP_CALL(VecRestoreArrayRead(mu_[0], &a));
}

std::vector<PetscScalar> outputs_everywhere(const Settings& s, const Layout& l,
                                            const std::vector<PetscScalar>& kappa) {
  std::vector<PetscScalar> all(static_cast<std::size_t>(s.tasks * kReceivers), 0.0);
  for (PetscInt k = l.index; k < s.tasks; k += l.groups) {
    SourceTask t(s, k, l.group, kappa, Trajectory::None);
    t.solve();
    const auto y = t.output();
    if (l.rank % l.group_size == 0) {
      std::copy(y.begin(), y.end(), all.begin() + k * kReceivers);
    }
  }
  REWIND_APP_CALL(MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()), MPIU_SCALAR,
                                MPI_SUM, PETSC_COMM_WORLD));
  return all;
}

}  // namespace rwd::apps::multisource
