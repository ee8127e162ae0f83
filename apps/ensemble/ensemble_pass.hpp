#pragma once
// rewind-ensemble's passes through the PETSc ensemble API (include/rewind/petsc/ensemble.h):
// each task a SourceTask made by the ensemble's callbacks on its group, the forward map, Phi and
// its cotangents, the backward map, and what the ensemble says it did (RewindEnsembleGetStats,
// RewindEnsembleGetTaskRecord, and the JSON report for the summary file).
#include <petscsys.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "problem.hpp"
#include "rewind/petsc/ensemble.h"
#include "source_task.hpp"

namespace rwd::apps::multisource {

/// What the ensemble's callbacks reach through their context: the tasks alive on this rank.
struct EnsembleTasks {
  const Settings* settings = nullptr;
  const std::vector<PetscScalar>* kappa = nullptr;
  std::map<PetscInt, std::unique_ptr<SourceTask>> live;

  SourceTask& at(PetscInt k) { return *live.at(k); }
  TS create(PetscInt k, MPI_Comm group);
  void destroy(PetscInt k);
};

/// The passes' results and the ensemble's account of them.
struct Passes {
  std::vector<PetscScalar> y;  ///< every task's outputs, in task order
  std::vector<PetscScalar> g;  ///< this rank's block of dPhi/dkappa
  PetscReal phi = 0;
  RewindEnsembleStats stats{};
  std::vector<RewindEnsembleTaskRecord> tasks;  ///< in task order
  std::string report_json;                      ///< RewindEnsembleGetReport
};

/// The ensemble map over the sources. Collective on PETSC_COMM_WORLD.
class SourceEnsemble {
 public:
  /// Creates the ensemble from the -rewind_ensemble_* options (which split the communicator).
  SourceEnsemble();
  SourceEnsemble(const SourceEnsemble&) = delete;
  SourceEnsemble& operator=(const SourceEnsemble&) = delete;

  /// This run's groups; Layout::group is a duplicate of this rank's group communicator, the
  /// caller's to free.
  Layout layout() const;
  /// The forward map with the diffusivity block `kappa`, Phi against `data` and its cotangents,
  /// the backward map. `s` and `kappa` must outlive destroy().
  Passes run(const Settings& s, const std::vector<PetscScalar>& kappa,
             const std::vector<PetscScalar>& data);
  /// Destroys the ensemble: at the end of a run that did not throw, never in a destructor (a
  /// failed run is aborted, and nothing collective runs while a rank unwinds).
  void destroy();

 private:
  RewindEnsemble ens_ = nullptr;
  EnsembleTasks tasks_;
};

}  // namespace rwd::apps::multisource
