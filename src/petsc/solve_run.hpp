#pragma once
// One forward run and the TSAdjointSolve calls that reverse it: PETSc reports each accepted step
// (TSTrajectorySet) and asks for each step's data before its adjoint (TSTrajectoryGet); this
// object keeps what the first sweep saw and feeds the engine's recordings.
//
// A run may be made of segments, each a recording of its own, so that no recomputation crosses a
// point where the program changes its model:
//  - an event (TSSetEventHandler) ends a segment at the step it fired: the post-event function
//    changed the model, and the adjoint changes it back only after it has been given that step's
//    data. The ended segment is parked (its last step's data is kept) and the next segment
//    starts from the post-event state.
//  - a TSSolve that continues the step numbering of the last one starts a segment from the state
//    the program left in the TS (seen by the step hook before its first step): the program may
//    have changed its model and its state between the calls. The ended segment lost the state it
//    ended with: its reverse recomputes it, checked against the first sweep
//    (RecordingConfig::verify), or, if its schedule kept no state to recompute from, it kept
//    that state when its solve ended.
//
// Every segment is planned with what the segments before it leave of the one budget. When that
// would be less than half of it, ended segments are thinned (Recording::thin(): only their first
// state and last step's data kept, the rest planned again in their reverse), then spilled to
// disk where the disk budget has room.

#include <petscts.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "held_step.hpp"
#include "options.hpp"
#include "resumable_solve.hpp"
#include "rewind/engine/recording.hpp"
#include "rewind/error.hpp"
#include "run_config.hpp"
#include "segments.hpp"
#include "ts_stepper.hpp"

namespace rwd::petsc {

/// What the view and the getters report of the last run.
struct RunReport {
  bool planned = false;
  engine::Plan plan;  ///< the first segment's
  /// What the first segment was planned from (its budget, and the disk costs it used).
  engine::RecordingConfig config;
  std::string cost_note;
  bool costs_measured = false;  ///< the disk costs were measured ("auto"), not given
  bool finished = false;
  engine::RunStats stats;  ///< over every segment
  /// The RAM peak as the budget (-ts_trajectory_max_cps_ram) counts it: stage checkpoints.
  /// When the two kinds differ in size, the slots of a step's stages with their solution
  /// (engine::any_slot_bytes()) the peak's bytes fill (more, smaller checkpoints may have been
  /// live); else the count.
  std::int64_t ram_peak_slots() const;
  PetscInt replayed_rejections = 0;
  PetscInt segments = 0;
  PetscInt events = 0;
  PetscInt thinned = 0;           ///< segments thinned to make room for later ones
  std::string segment_plans;      ///< "steps 0-100 storeall, 100-120 mixed, ..." (the first 8)
  bool verify = false;            ///< recomputed states were checked
  std::string io_mode;            ///< how disk checkpoints moved, and why
  std::string ram_io_mode;        ///< where the RAM store's codec ran, and why
  std::string kept_file;          ///< the disk checkpoints' file, kept (-ts_trajectory_keep_files)
  PetscInt resume_interval = 0;   ///< a resumable run's steps between durable states (0: not one)
  PetscInt resume_bound = 0;      ///< with adaptive steps, the -ts_max_steps it is sized by
  PetscInt resume_steps = 0;      ///< ... and the steps the run took
  std::string codec = "none";     ///< -ts_trajectory_rewind_compress
  std::string fsal_note;          ///< how a first-same-as-last method's reused stage comes back
  storage::StoreStats ram_store;  ///< the RAM store's own counts (compressed bytes, codec time)
  /// The stores were an ensemble group's: ram_store counts every task of the group so far.
  bool group_stores = false;
  /// The disk stores' codec counts (durable states of a resumable run included); the run's
  /// recordings' when the stores are shared (an ensemble's group).
  engine::CodecStats disk_codec;
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
  /// A run whose compressed RAM checkpoints compressed worse than planned had its reverse
  /// planned again with the ratio they reached (RunStats::ram_codec.replanned_ratio, agreed over
  /// the ranks): the runs after it plan with that one (or the option's, if smaller). 0: none.
  double learned_ratio = 0.0;
  bool recompute_warned = false;  ///< the recomputation warning was given (once a trajectory)
  RunReport report;
};

class SolveRun {
 public:
  /// set(0): x_0 is in the TS. Plans now, or after the second step when "auto" disk costs need a
  /// step to be timed first (the first pays for the solver's set-up). Collective on the TS's
  /// communicator.
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
  /// time it calls get() after its loop, or views the trajectory); true if it did.
  bool finish();
  /// A resumable run the program leaves unfinished (a new TSSolve, TSTrajectoryReset or
  /// TSTrajectoryDestroy before its reverse sweep ended): its durable files are removed, so that
  /// no later run resumes a solve the program itself gave up. Not after a failure (failed()).
  /// Collective.
  void abandon();
  /// An error left set() or get(): what is durable stays for a resume.
  void failed() { failed_ = true; }
  /// Steps the adjoint has done so far, for the view (0 before the reverse sweep).
  PetscInt adjoint_steps_done() const { return reversed_; }
  PetscInt last_set() const { return last_set_; }
  /// The recording of the segment running now (the last one), once planned.
  engine::Recording* recording() {
    return segments_.empty() ? nullptr : segments_.back().recording.get();
  }

 private:
  void plan(Segment& segment);
  /// get(stepnum) once segment j holds step stepnum - 1: its adjoint data into the TS, the clock
  /// where the adjoint step starts; *t its time.
  void prepare_step(std::size_t j, PetscInt stepnum, PetscReal* t);
  /// set(stepnum) while planning waits (x0_ held) for a timed step or for the first step of a
  /// first-same-as-last method (which chooses its Fsal mode): holds the first step and returns
  /// true, or plans with `step_seconds` and hands the recording the held step.
  bool plan_when_timed(PetscInt stepnum, double step_seconds);
  /// A new segment from the state the TS holds at step `first`.
  void start_segment(PetscInt first);
  /// Before each first-sweep attempt at a step: a TSSolve that continues an ended run starts a
  /// segment from the state the program left in the TS, once the segment the last solve ended
  /// is known to need no step run again (or -ts_trajectory_rewind_recompute_solves).
  void before_step();
  // ---- a resumable run (-ts_trajectory_rewind_resume): one recording an interval -----------
  /// At set(0): reads the manifest there may be and puts the TS where the run goes on from.
  void start_resumable();
  /// The steps of the interval from `first`.
  PetscInt interval_steps(PetscInt first) const;
  /// get() of a resumable run: each interval's recording is made again from its durable state
  /// when the reverse sweep reaches it, and the adjoint is made durable at its first step.
  void get_resumable(PetscInt stepnum, PetscReal* t);
  void complete_prepared();

  TSTrajectory tj_;
  TS ts_;
  Carry& carry_;
  StepLog log_;
  std::unique_ptr<TsStepper> stepper_;
  Segments segments_;
  engine::RunStats total_;  // the finished segments'
  PetscInt planned_ = 0;    // steps of the first segment, counted at set(0); 0 = unknown
  PetscInt last_set_ = 0;
  PetscInt events_seen_ = 0;  // the event recorder's counter at the last set
  bool forward_ended_ = false;
  // Why the last TSSolve's final state and last stages could not be kept: an error only if
  // another TSSolve continues the run.
  std::optional<rwd::Error> unkept_;
  // The adjoint step prepared last: its segment (an index into segments_) and its step in that
  // segment's recording.
  std::optional<std::size_t> prepared_;
  PetscInt prepared_local_ = -1;
  PetscInt reversed_ = 0;
  std::unique_ptr<ResumableSolve> durable_;
  PetscInt first_sweep_from_ = 0;  // a resumable run: where this process's first sweep began
  bool adjoint_pending_ = false;   // a resumable run goes on from a durable adjoint state...
  bool adjoint_resumed_ = false;   // ... and went on from it
  bool failed_ = false;            // an error left set() or get()
  bool durable_finished_ = false;  // the durable files are gone
  // Planning waits for a timed step when "auto" disk costs need one; x_0 is kept, and the first
  // step's data while the second is timed.
  Vec x0_ = nullptr;
  bool wait_for_time_ = false;  // the plan waits for a timed step (x0_ held)
  bool probe_fsal_ = false;     // the plan waits for the first step to choose the Fsal mode
  std::optional<HeldStep> held_;
  StepTime timed_step_;
  std::chrono::steady_clock::time_point last_set_time_;
  double step_seconds_sum_ = 0.0;
  PetscInt step_seconds_count_ = 0;
};

}  // namespace rwd::petsc
