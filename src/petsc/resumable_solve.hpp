#pragma once
// A TSSolve and the TSAdjointSolve that reverses it, made to survive a kill
// (-ts_trajectory_rewind_resume; docs/resume.md, "PETSc"). What is durable and how it is checked
// is the engine's DurableLog; this is the TS's side of it:
//  - the durable state at a step is the solution (and the stage a first-same-as-last method
//    reuses), the quadrature's integral, and the step log up to that step (the times and step
//    sizes a recomputation repeats). x_0 and every interval-th state are made durable as the
//    first sweep reaches them, and x_n too: the program reads it between TSSolve and
//    TSAdjointSolve, so a run resumed in its reverse sweep hands it back;
//  - the durable adjoint state is the cost gradients λ and μ (and the integral, which
//    TSAdjointSolve accumulates when the quadrature is not integrated forward), made durable at
//    each interval boundary the reverse sweep reaches;
//  - a resumed TSSolve jumps to the last durable state (or to x_n when the first sweep was
//    complete: its loop does not run), and a resumed TSAdjointSolve to the last durable adjoint
//    state.
// The run's structure (which recording holds which interval) is SolveRun's.

#include <petscts.h>

#include <memory>
#include <string>
#include <vector>

#include "options.hpp"
#include "rewind/engine/durable_log.hpp"
#include "ts_stepper.hpp"

namespace rwd::petsc {

/// Refuses, on every rank, -ts_trajectory_rewind_resume or its interval set differently on
/// different ranks, naming the option. Collective; before a run takes one way or the other.
void agree_resume_options(MPI_Comm comm, const Options& options);
/// A run that is not resumable says so (rank 0, stderr) when the directory holds a resumable
/// run's manifest: a live job's (its lock is held) or a killed run's; it leaves either alone.
void note_resume_files(TSTrajectory tj, TS ts, const Options& options);

class ResumableSolve {
 public:
  /// Where a run goes on from, once open() has read the manifest there may be.
  enum class From {
    Start,     ///< x_0: no manifest, or one whose first sweep had no durable state past x_0
    Forward,   ///< a durable state of the first sweep (resumed_at())
    Complete,  ///< x_n: the first sweep was complete, the reverse sweep had not saved
    Reverse,   ///< x_n, and the reverse sweep goes on from a durable adjoint state
  };

  /// Checks what a resumable run needs (naming the option to change). `steps`: the step count
  /// TS will take. Collective.
  ResumableSolve(TSTrajectory tj, TS ts, const Options& options,
                 std::shared_ptr<engine::Stores> stores, TsStepper& stepper, StepLog& log,
                 PetscInt steps);
  ~ResumableSolve();
  ResumableSolve(const ResumableSolve&) = delete;
  ResumableSolve& operator=(const ResumableSolve&) = delete;

  /// At TSTrajectorySet(0): reads the manifest there may be (or refuses it), and puts the TS
  /// where the run goes on from. Collective.
  From open();
  /// The step count TS will take (fixed steps) or the most it may take (adaptive steps).
  PetscInt steps() const { return steps_; }
  /// The step count TS takes: with adaptive steps known once the first sweep ended (or was
  /// complete in the killed run), 0 before.
  PetscInt final_step() const { return adaptive_ ? final_ : steps_; }
  /// Adaptive steps: the step count is learnt at the end.
  bool adaptive() const { return adaptive_; }
  PetscInt interval() const { return interval_; }
  /// The first step of the interval [a, a + interval) holding step i.
  PetscInt interval_start(PetscInt i) const { return i / interval_ * interval_; }
  /// The step the run went on from (-1: it started at x_0).
  PetscInt resumed_at() const { return resumed_at_; }
  /// Steps open() took again to check the program is the killed run's (0: none).
  PetscInt checked_steps() const { return checked_steps_; }

  /// The first sweep reached step k (its log has step k), `last`: and ended there. x_k is made
  /// durable if k is an interval boundary, or as the final state. Collective.
  void reached(PetscInt k, bool last);
  /// A reverse resume: loads the durable adjoint state into the TS's cost gradients and returns
  /// its step. Collective.
  PetscInt load_adjoint();
  /// The reverse sweep reached step b (its adjoint is in the TS's cost gradients). Collective.
  void adjoint_reached(PetscInt b);
  /// Puts the durable state at `a` into the TS, to recompute the interval from it. Collective.
  void load_state(PetscInt a);
  /// The state recomputed at `b` must be the first sweep's (with -ts_trajectory_rewind_verify).
  /// Collective.
  void check(PetscInt b);
  /// The run ended: the manifest and the links go. Collective.
  void finish();
  const engine::DurableTraffic& traffic() const;

 private:
  /// Refuses (naming the option) what a resumable run cannot do.
  void refuse_unsupported(TSTrajectory tj, TS ts, const Options& o);
  /// With adaptive steps: the most steps TS may take, from an adapter that remembers nothing.
  void bound_adaptive_steps(TS ts);
  /// The interval between durable states, from the options and the disk budget.
  void place_intervals(const Options& o);
  /// The buffers of a durable state's step log, attempts and quadrature.
  void size_buffers(MPI_Comm comm);
  std::vector<engine::Field> state_fields();
  std::vector<engine::Field> adjoint_fields();
  void load_log(PetscInt k);
  /// The attempts of the steps before k, into the attempt log.
  void store_attempts(PetscInt k);
  /// Puts the durable state at `entry` in the TS, for TSSolve to go on from step k.
  /// `warm`: the TS has just taken the steps up to k again (check_program()) and keeps what
  /// they left for the next step; else it starts afresh from the durable state.
  void jump(const engine::ManifestEntry& entry, PetscInt k, bool warm);
  /// Before a resumed first sweep goes on from its durable state at k: takes the interval
  /// before k again from its durable state and refuses (the killed run's files left as they
  /// are) a program that does not reach x_k, before this run makes anything durable.
  void check_program(PetscInt k);
  std::string identity() const;

  TS ts_;
  TsStepper& stepper_;
  StepLog& log_;
  PetscInt steps_ = 0, interval_ = 0;
  bool adaptive_ = false;
  PetscInt final_ = 0;  // adaptive: the step count, once known
  PetscInt resumed_at_ = -1;
  PetscInt checked_steps_ = 0;
  bool adjoint_layout_ = false;
  Vec quadrature_ = nullptr;        // the quadrature's integral, if any
  std::vector<double> integral_;    // its value in a durable state (scratch)
  engine::Field integral_field_{};  // its layout
  std::vector<double> log_buffer_;  // the step log in a durable state
  std::int64_t log_offset_ = 0, log_global_ = 0;
  std::vector<double> attempt_buffer_;  // adaptive: the attempts in a durable state
  std::int64_t attempt_offset_ = 0, attempt_global_ = 0;
  std::vector<std::string> names_;  // the cost gradients' field names
  std::unique_ptr<engine::DurableLog> durable_;
};

}  // namespace rwd::petsc
