#pragma once
// What one `rewind` TSTrajectory holds: its options and what carries over between solves, and
// the run of the current solve.

#include <petscts.h>

#include <memory>

#include "solve_run.hpp"

namespace rwd::petsc {

struct Trajectory {
  Carry carry;
  std::unique_ptr<SolveRun> run;
  TS ts = nullptr;        // whose adapter is wrapped
  bool made_dir = false;  // rewind created -ts_trajectory_dirname (so it may remove it, empty)
  ~Trajectory();
  /// Ends the current run: a resumable run the program leaves unfinished has its durable files
  /// removed (SolveRun::abandon()).
  void drop_run();
  /// Completes the current run if its reverse sweep is over (see SolveRun::finish).
  void finish();
};

Trajectory& trajectory(TSTrajectory tj);

/// -ts_trajectory_view: the schedule, the budget, the costs, the I/O mode and the statistics.
PetscErrorCode view(TSTrajectory tj, PetscViewer viewer);

}  // namespace rwd::petsc
