// The parts of a run that survive a kill (-ts_trajectory_rewind_resume): its start, the length
// of its intervals and the adjoint's reads of them. The rest of SolveRun is in solve_run.cpp.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "check.hpp"
#include "private_access.hpp"
#include "progress.hpp"
#include "run_config.hpp"
#include "solve_run.hpp"

namespace rwd::petsc {

void SolveRun::start_resumable() {
  const Options& o = carry_.options;
  if (carry_.shared_stores) {
    throw Error(ErrorCode::InvalidArgument,
                "-ts_trajectory_rewind_resume: the runs of an ensemble are not resumable yet; run "
                "without it");
  }
  // The step count TS will take with a fixed step; none with an adaptive one (learnt at the
  // end: the durable states go every interval steps).
  PetscInt n = planned_steps(ts_);
  if (o.steps > 0 && n > 0 && o.steps != n) {
    throw Error(ErrorCode::InvalidArgument, "-ts_trajectory_rewind_steps " +
                                                std::to_string(o.steps) + " differs from the " +
                                                std::to_string(n) + " steps TS will take");
  }
  planned_ = n;
  RunConfig config = make_run_config(tj_, ts_, o, n, {0.0, "none"});
  segments_.stores_for(config.stores);
  durable_ = std::make_unique<ResumableSolve>(tj_, ts_, o, carry_.stores, *stepper_, log_, n);
  carry_.report.resume_interval = durable_->interval();  // for a view before the run ends
  const ResumableSolve::From from = durable_->open();
  MPI_Comm comm = PetscObjectComm((PetscObject)ts_);
  const PetscInt at = durable_->resumed_at();
  switch (from) {
    case ResumableSolve::From::Start:
      if (at == 0) {
        REWIND_PETSC(PetscFPrintf(comm, PETSC_STDERR,
                                  "rewind: resuming a killed run from step 0 (it had made no "
                                  "state past x_0 durable)\n"));
      }
      break;
    case ResumableSolve::From::Forward:
      last_set_ = at;
      first_sweep_from_ = at;
      REWIND_PETSC(PetscFPrintf(comm, PETSC_STDERR,
                                "rewind: resuming a killed run's first sweep from its durable "
                                "state at step %" PetscInt_FMT " of %s%" PetscInt_FMT
                                " (steps %" PetscInt_FMT " to %" PetscInt_FMT
                                " taken again first: they reached the killed run's state)\n",
                                at, durable_->adaptive() ? "at most " : "", durable_->steps(),
                                at - durable_->checked_steps(), at));
      break;
    case ResumableSolve::From::Complete:
    case ResumableSolve::From::Reverse:
      n = durable_->final_step();
      // TSSolve's loop does not run: the TS holds x_n, as the killed run's TSSolve left it.
      last_set_ = n;
      first_sweep_from_ = n;
      forward_ended_ = true;
      adjoint_pending_ = from == ResumableSolve::From::Reverse;
      detail::set_reason(ts_, n >= detail::max_steps(ts_) ? TS_CONVERGED_ITS : TS_CONVERGED_TIME);
      REWIND_PETSC(PetscFPrintf(
          comm, PETSC_STDERR,
          "rewind: resuming a killed run whose first sweep was complete (%" PetscInt_FMT
          " steps): TSSolve returns its final state%s\n",
          n,
          adjoint_pending_ ? ", and TSAdjointSolve goes on from its durable adjoint state" : ""));
      return;
  }
  if (durable_->adaptive() || last_set_ == durable_->interval_start(n - 1)) {
    start_segment(last_set_);
  }
}

PetscInt SolveRun::interval_steps(PetscInt first) const {
  // With adaptive steps, an interval of the first sweep ends where the run does: unknown.
  if (!forward_ended_ && durable_->adaptive()) return 0;
  return std::min(durable_->interval(), durable_->final_step() - first);
}

void SolveRun::get_resumable(PetscInt stepnum, PetscReal* t) {
  if (reversed_ == 0 && detail::adjoint_max_steps(ts_) != last_set_) {
    throw Error(ErrorCode::InvalidArgument,
                "-ts_trajectory_rewind_resume: this TSAdjointSolve takes " +
                    std::to_string(detail::adjoint_max_steps(ts_)) + " of the run's " +
                    std::to_string(last_set_) +
                    " steps (TSAdjointSetSteps); a resumable run is reversed by one "
                    "TSAdjointSolve of every step");
  }
  if (!forward_ended_) {
    segments_.end(last_set_, false);
    forward_ended_ = true;
  }
  if (adjoint_pending_) {
    // TSAdjointSolve asks for step n: it goes on from the durable adjoint state instead, its
    // count of adjoint steps taken as if it had run them.
    adjoint_pending_ = false;
    adjoint_resumed_ = true;
    const PetscInt m = durable_->load_adjoint();
    detail::set_adjoint_steps(ts_, stepnum - m);
    REWIND_PETSC(PetscFPrintf(PetscObjectComm((PetscObject)ts_), PETSC_STDERR,
                              "rewind: resuming a killed run's reverse sweep from its durable "
                              "adjoint state at step %" PetscInt_FMT "\n",
                              m));
    stepnum = m;
  }
  require(stepnum >= 1 && stepnum <= last_set_, "rewind: TSTrajectoryGet for step " +
                                                    std::to_string(stepnum) + " of " +
                                                    std::to_string(last_set_));
  const PetscInt i = stepnum - 1;
  const std::optional<std::size_t> was = prepared_;
  complete_prepared();
  if (was && segments_[*was].done && segments_[*was].recording) {
    // The reverse sweep reached the interval's first step: its adjoint there is made durable.
    Segment& s = segments_[*was];
    s.recording.reset();
    if (s.first > 0) durable_->adjoint_reached(s.first);
  }
  std::optional<std::size_t> j = segments_.find(i);
  if (!j) {
    // The interval holding step i is recomputed from its durable state, and must reach the
    // first sweep's state at its end.
    const PetscInt a = durable_->interval_start(i);
    durable_->load_state(a);
    Segment& fresh = segments_.add(a);
    fresh.again = true;
    fresh.ended = true;
    plan(fresh);
    Segment& s = segments_.back();
    stepper_->set_first(a);
    s.recording->record();
    durable_->check(a + s.recording->steps());
    j = segments_.size() - 1;
  }
  prepare_step(*j, stepnum, t);
}

}  // namespace rwd::petsc
