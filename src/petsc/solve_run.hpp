#pragma once
// One TSSolve and the TSAdjointSolve calls that reverse it: PETSc reports each accepted step
// (TSTrajectorySet) and asks for each step's data before its adjoint (TSTrajectoryGet); this
// object keeps what the first sweep saw and feeds the engine's Recording.

#include <petscts.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "options.hpp"
#include "rewind/engine/recording.hpp"
#include "ts_stepper.hpp"

namespace rwd::petsc {

/// What the view and the getters report of the last run.
struct RunReport {
  bool planned = false;
  engine::Plan plan;
  std::string cost_note;
  bool finished = false;
  engine::RunStats stats;
  PetscInt replayed_rejections = 0;
  std::string io_mode;  ///< how disk checkpoints moved, and why
};

/// What a trajectory keeps from one solve to the next.
struct Carry {
  Options options;
  std::shared_ptr<engine::Stores> stores;
  engine::StoresConfig stores_config;  ///< what `stores` was made with
  /// `stores` belong to someone else (an ensemble's group): kept whatever the options say, and
  /// never closed by a run.
  bool shared_stores = false;
  double step_seconds = 0.0;  ///< mean first-sweep step of the last run, 0 if none
  RunReport report;
};

class SolveRun {
 public:
  /// set(0): x_0 is in the TS. Plans now, or after the first step when "auto" disk costs need a
  /// step to be timed first. Collective on the TS's communicator.
  SolveRun(TSTrajectory tj, TS ts, PetscReal t0, Carry& carry);
  ~SolveRun();
  SolveRun(const SolveRun&) = delete;
  SolveRun& operator=(const SolveRun&) = delete;

  /// Only set(0) has been seen (PETSc repeats it when TSSolve starts).
  bool fresh() const { return last_set_ == 0 && log_.times.size() == 1; }
  /// TSTrajectorySet for step `stepnum` > 0 at time `t`.
  void set(PetscInt stepnum, PetscReal t);
  /// TSTrajectoryGet for step `stepnum`: restores step stepnum's data into the TS.
  void get(PetscInt stepnum, PetscReal* t);
  /// Completes the run once the adjoint of step 0 has been prepared (PETSc has run it by the
  /// time it calls get() after its loop, or views the trajectory); true if it did. A reverse
  /// sweep split over several TSAdjointSolve calls keeps going until then.
  bool finish();
  /// Steps the adjoint has done so far, for the view (0 before the reverse sweep).
  PetscInt adjoint_steps_done() const { return prepared_ < 0 ? 0 : last_set_ - prepared_; }
  PetscInt last_set() const { return last_set_; }
  /// The recording, once planned.
  engine::Recording* recording() { return recording_.get(); }

 private:
  void plan();
  engine::Stores& stores_for(const engine::StoresConfig& config);

  TSTrajectory tj_;
  TS ts_;
  Carry& carry_;
  StepLog log_;
  std::unique_ptr<TsStepper> stepper_;
  std::unique_ptr<engine::Recording> recording_;
  PetscInt steps_ = 0;  // counted at set(0); 0 = adaptive (online)
  PetscInt last_set_ = 0;
  PetscInt prepared_ = -1;  // the adjoint step whose data the recording prepared
  bool forward_ended_ = false;
  // Planning waits for the first step when "auto" disk costs need a timed step; x_0 is kept.
  Vec x0_ = nullptr;
  std::chrono::steady_clock::time_point last_set_time_;
  double step_seconds_sum_ = 0.0;
  PetscInt step_seconds_count_ = 0;
  double first_step_seconds_ = 0.0;
};

}  // namespace rwd::petsc
