#pragma once
// One source task of rewind-ensemble on its group: its own grid and model, its state and adjoint
// vectors, its TS; and the forward-only solves of every task that the data and the Taylor test
// need.
#include <petscdmda.h>
#include <petscts.h>

#include <vector>

#include "adjoint_app.hpp"
#include "advection_diffusion.hpp"
#include "problem.hpp"

namespace rwd::apps::multisource {

enum class Trajectory {
  None,      // forward only (data, Taylor test)
  Ensemble,  // saved; the ensemble makes it rewind and gives it the group's stores
  Memory,    // PETSc's store-all trajectory (the serial reference)
};

/// Task k on `group` with the diffusivity block `kappa`. Collective on the group.
class SourceTask {
 public:
  SourceTask(const Settings& s, PetscInt k, MPI_Comm group, const std::vector<PetscScalar>& kappa,
             Trajectory trajectory);
  ~SourceTask();
  SourceTask(const SourceTask&) = delete;
  SourceTask& operator=(const SourceTask&) = delete;

  TS ts() const { return ts_; }
  /// Gives up the TS (the ensemble destroys it).
  void release_ts() { ts_ = nullptr; }
  void solve() { REWIND_APP_CALL(TSSolve(ts_, nullptr)); }

  /// y_k: the final state at the receivers, the same on every rank of the group.
  std::vector<PetscScalar> output() const;
  /// lambda(T) = dPhi/du(T) = sum_r ybar_r e_(cell r), mu(T) = 0.
  void seed(const PetscScalar ybar[]);
  /// After TSAdjointSolve: this rank's block of dPhi/dkappa from this task.
  void gradient(PetscScalar g[]) const;

 private:
  static bool owns(const DMDALocalInfo& info, PetscInt i, PetscInt j) {
    return i >= info.xs && i < info.xs + info.xm && j >= info.ys && j < info.ys + info.ym;
  }

  OwnedDM dm_;
  AdvectionDiffusion model_;
  MPI_Comm comm_;
  OwnedVec u_;
  Vec lambda_[1] = {nullptr}, mu_[1] = {nullptr};  // TS keeps pointers to these arrays
  TS ts_ = nullptr;
};

/// Forward solves only (no trajectory): every task's outputs on every rank, task k on group
/// k mod G. For the data and the Taylor test. Collective on PETSC_COMM_WORLD.
std::vector<PetscScalar> outputs_everywhere(const Settings& s, const Layout& l,
                                            const std::vector<PetscScalar>& kappa);

}  // namespace rwd::apps::multisource
