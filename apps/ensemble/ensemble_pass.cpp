#include "ensemble_pass.hpp"

#include <algorithm>

namespace rwd::apps::multisource {

namespace {

EnsembleTasks& tasks_of(void* ctx) {
  return *static_cast<EnsembleTasks*>(ctx);
}

// The ensemble's callbacks (RewindEnsembleTaskOps): thin, errors through PetscCallCXX.
PetscErrorCode task_create(PetscInt k, MPI_Comm group, void* ctx, TS* ts) {
  PetscFunctionBeginUser;
  PetscCallCXX(*ts = tasks_of(ctx).create(k, group));
  PetscFunctionReturn(0);
}
PetscErrorCode task_output(PetscInt k, TS, void* ctx, PetscScalar y[]) {
  PetscFunctionBeginUser;
  PetscCallCXX({
    const auto out = tasks_of(ctx).at(k).output();
    std::copy(out.begin(), out.end(), y);
  });
  PetscFunctionReturn(0);
}
PetscErrorCode task_seed(PetscInt k, TS, void* ctx, const PetscScalar ybar[]) {
  PetscFunctionBeginUser;
  PetscCallCXX(tasks_of(ctx).at(k).seed(ybar));
  PetscFunctionReturn(0);
}
PetscErrorCode task_gradient(PetscInt k, TS, void* ctx, PetscScalar g[]) {
  PetscFunctionBeginUser;
  PetscCallCXX(tasks_of(ctx).at(k).gradient(g));
  PetscFunctionReturn(0);
}
PetscErrorCode task_destroy(PetscInt k, TS, void* ctx) {
  PetscFunctionBeginUser;
  PetscCallCXX(tasks_of(ctx).destroy(k));
  PetscFunctionReturn(0);
}

}  // namespace

TS EnsembleTasks::create(PetscInt k, MPI_Comm group) {
  auto task = std::make_unique<SourceTask>(*settings, k, group, *kappa, Trajectory::Ensemble);
  TS ts = task->ts();
  live[k] = std::move(task);
  return ts;
}

void EnsembleTasks::destroy(PetscInt k) {
  auto it = live.find(k);
  if (it == live.end()) return;
  it->second->release_ts();
  live.erase(it);
}

SourceEnsemble::SourceEnsemble() {
  REWIND_APP_CALL(RewindEnsembleCreate(PETSC_COMM_WORLD, &ens_));
  REWIND_APP_CALL(RewindEnsembleSetFromOptions(ens_));
}

Layout SourceEnsemble::layout() const {
  Layout l;
  PetscInt group = 0, groups = 1;
  MPI_Comm ensemble_group = MPI_COMM_NULL;  // the ensemble's: freed with it
  REWIND_APP_CALL(RewindEnsembleGetGroup(ens_, &group, &groups, &ensemble_group));
  REWIND_APP_CALL(MPI_Comm_dup(ensemble_group, &l.group));
  l.index = static_cast<int>(group);
  l.groups = static_cast<int>(groups);
  REWIND_APP_CALL(MPI_Comm_rank(PETSC_COMM_WORLD, &l.rank));
  REWIND_APP_CALL(MPI_Comm_size(PETSC_COMM_WORLD, &l.size));
  l.group_size = l.size / l.groups;
  return l;
}

Passes SourceEnsemble::run(const Settings& s, const std::vector<PetscScalar>& kappa,
                           const std::vector<PetscScalar>& data) {
  tasks_.settings = &s;
  tasks_.kappa = &kappa;
  const RewindEnsembleTaskOps ops = {task_create, task_output, task_seed, task_gradient,
                                     task_destroy};
  REWIND_APP_CALL(RewindEnsembleSetTasks(ens_, &ops, &tasks_));
  REWIND_APP_CALL(RewindEnsembleSetSizes(ens_, kReceivers, static_cast<PetscInt>(kappa.size())));
  // Each task's step count is its cost: the longest are claimed first (-rewind_ensemble_claim).
  std::vector<PetscReal> costs(static_cast<std::size_t>(s.tasks));
  for (PetscInt k = 0; k < s.tasks; ++k) {
    costs[static_cast<std::size_t>(k)] = static_cast<PetscReal>(source_of(k, s).steps);
  }
  REWIND_APP_CALL(RewindEnsembleSetTaskCosts(ens_, s.tasks, costs.data()));
  Passes p;
  p.y.resize(static_cast<std::size_t>(s.tasks * kReceivers));
  p.g.resize(kappa.size());
  REWIND_APP_CALL(RewindEnsembleForward(ens_, s.tasks, p.y.data()));
  Misfit m;
  if (s.tasks > 0) m = misfit(p.y, data);
  p.phi = m.phi;
  REWIND_APP_CALL(RewindEnsembleBackward(ens_, m.ybar.data(), p.g.data()));
  REWIND_APP_CALL(RewindEnsembleGetStats(ens_, &p.stats));
  p.tasks.resize(static_cast<std::size_t>(s.tasks));
  for (PetscInt k = 0; k < s.tasks; ++k) {
    REWIND_APP_CALL(RewindEnsembleGetTaskRecord(ens_, k, &p.tasks[static_cast<std::size_t>(k)]));
  }
  const char* json = nullptr;
  REWIND_APP_CALL(RewindEnsembleGetReport(ens_, &json));
  p.report_json = json;
  return p;
}

void SourceEnsemble::destroy() {
  REWIND_APP_CALL(RewindEnsembleDestroy(&ens_));
}

}  // namespace rwd::apps::multisource
