#pragma once
// What one `rewind` TSTrajectory holds: its options and what carries over between solves, and
// the run of the current solve.

#include <petscts.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "made_dirs.hpp"
#include "solve_run.hpp"

namespace rwd::petsc {

struct Trajectory {
  Carry carry;
  std::unique_ptr<SolveRun> run;
  TS ts = nullptr;  // whose adapter is wrapped
  // The directories rewind created for -ts_trajectory_dirname, outermost first (on rank 0, which
  // creates them): the directory and any parents that were missing. Only these may be removed,
  // and only when empty.
  std::vector<MadeDir> made_dirs;
  /// The current run's time on the caller's thread: inside the set and get callbacks (rewind's
  /// own work, and the recomputed steps it runs), and since its set(0) until the last callback
  /// returned. The view reports rewind's share of the program's time from them.
  double callback_seconds = 0.0;
  std::chrono::steady_clock::time_point run_started, last_callback_end;
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
