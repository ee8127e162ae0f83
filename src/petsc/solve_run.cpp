#include "solve_run.hpp"

#include <algorithm>

#include "adapt_replay.hpp"
#include "check.hpp"
#include "log_events.hpp"
#include "private_access.hpp"
#include "rewind/timing.hpp"
#include "run_config.hpp"

namespace rwd::petsc {

namespace {

bool first_same_as_last(TS ts) {
  PetscBool is_rk = PETSC_FALSE, fsal = PETSC_FALSE;
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)ts, TSRK, &is_rk));
  if (is_rk) {
    REWIND_PETSC(
        TSRKGetTableau(ts, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &fsal));
  }
  return fsal == PETSC_TRUE;
}

bool same_stores(const engine::StoresConfig& a, const engine::StoresConfig& b) {
  return a.store.comm == b.store.comm && a.store.directory == b.store.directory &&
         a.store.keep_files == b.store.keep_files && a.store.label == b.store.label &&
         a.store.async_io == b.store.async_io;
}

}  // namespace

SolveRun::SolveRun(TSTrajectory tj, TS ts, PetscReal t0, Carry& carry)
    : tj_(tj), ts_(ts), carry_(carry) {
  if (!detail::adjoint_mode(tj)) {
    throw Error(ErrorCode::InvalidArgument,
                "-ts_trajectory_type rewind serves adjoint solves only; use -ts_trajectory_type "
                "memory for other uses of the trajectory");
  }
  carry_.report.finished = false;
  log_.times.assign(1, t0);
  log_.proposed.assign(1, detail::proposed_step(ts));
  stepper_ = std::make_unique<TsStepper>(ts, log_, first_same_as_last(ts));
  hook_adapt(ts);
  take_attempts(ts);
  steps_ = planned_steps(ts);
  last_set_time_ = std::chrono::steady_clock::now();
  // Measured disk costs are in units of a step: with no step timed yet, keep x_0 aside and
  // plan once the first step has been timed.
  if (carry_.options.auto_costs() && carry_.options.max_cps_disk != 0 && carry_.step_seconds <= 0) {
    REWIND_PETSC(VecDuplicate(detail::solution(ts), &x0_));
    REWIND_PETSC(VecCopy(detail::solution(ts), x0_));
    return;
  }
  plan();
}

SolveRun::~SolveRun() {
  VecDestroy(&x0_);
}

engine::Stores& SolveRun::stores_for(const engine::StoresConfig& config) {
  if (!carry_.shared_stores && (!carry_.stores || !same_stores(carry_.stores_config, config))) {
    carry_.stores = std::make_shared<engine::Stores>(config);
    carry_.stores_config = config;
  }
  return *carry_.stores;
}

void SolveRun::plan() {
  // The step time every rank plans with: the largest over the ranks.
  const bool from_last_run = carry_.step_seconds > 0;
  double local = from_last_run ? carry_.step_seconds : first_step_seconds_, worst = 0.0;
  MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, PetscObjectComm((PetscObject)ts_));
  const RunConfig config = make_run_config(
      tj_, ts_, carry_.options, steps_,
      {worst, from_last_run ? "mean step of the last run" : "first step of this run"});
  stores_for(config.stores);
  REWIND_PETSC(PetscLogEventBegin(log_events().plan, 0, 0, 0, 0));
  recording_ = std::make_unique<engine::Recording>(*stepper_, carry_.stores, config.recording);
  REWIND_PETSC(PetscLogEventEnd(log_events().plan, 0, 0, 0, 0));
  // Kept only once the recording exists, so a failed plan leaves the last run's report intact.
  carry_.report.planned = true;
  carry_.report.plan = recording_->plan();
  carry_.report.cost_note = config.cost_note;
}

void SolveRun::set(PetscInt stepnum, PetscReal time) {
  if (x0_ && stepnum == 1) {
    first_step_seconds_ = seconds_since(last_set_time_);
    // Plan as if at x_0: the recording stores what the schedule wants of x_0, then the run goes on.
    const Vec sol = detail::solution(ts_);
    REWIND_PETSC(VecSwap(sol, x0_));
    try {
      plan();
    } catch (...) {
      VecSwap(sol, x0_);
      throw;
    }
    REWIND_PETSC(VecSwap(sol, x0_));
    REWIND_PETSC(VecDestroy(&x0_));
  }
  if (!recording_ || stepnum == last_set_) return;  // not planned, or a repeated set
  if (stepnum != last_set_ + 1 || forward_ended_) {
    throw Error(ErrorCode::InvalidArgument,
                "rewind: TSTrajectorySet for step " + std::to_string(stepnum) + " after step " +
                    std::to_string(last_set_) + "; steps must be recorded in order from 0");
  }
  const auto k = static_cast<std::size_t>(stepnum);
  log_.times.push_back(time);
  // The exact size step k-1 used: its last attempt (or what TS proposed at set(k-1) if the
  // adapter is not wrapped), if it lands on t_k. Its rejected attempts are replayed with it.
  const std::vector<Attempt> attempts = take_attempts(ts_);
  const PetscReal guess = attempts.empty() ? log_.proposed[k - 1] : attempts.back().h;
  const bool exact = log_.times[k - 1] + guess == time;
  log_.dts.push_back(exact ? guess : time - log_.times[k - 1]);
  if (exact && attempts.size() > 1 && attempts.back().accepted &&
      std::none_of(attempts.begin(), attempts.end() - 1,
                   [](const Attempt& a) { return a.accepted; })) {
    auto& sizes = log_.rejected[k - 1];
    for (auto a = attempts.begin(); a != attempts.end() - 1; ++a) sizes.push_back(a->h);
  }
  log_.proposed.push_back(detail::proposed_step(ts_));
  step_seconds_sum_ += seconds_since(last_set_time_);
  ++step_seconds_count_;
  const bool last = detail::reason(ts_) != 0;
  recording_->forward_step_done(stepnum - 1, last);
  last_set_time_ = std::chrono::steady_clock::now();  // checkpoint time is not step time
  last_set_ = stepnum;
  if (last) {
    recording_->end_forward(stepnum);
    forward_ended_ = true;
    carry_.step_seconds = step_seconds_sum_ / static_cast<double>(step_seconds_count_);
  }
}

void SolveRun::get(PetscInt stepnum, PetscReal* t) {
  if (!recording_) {
    throw Error(ErrorCode::InvalidArgument,
                "rewind: TSTrajectoryGet without a recorded forward run (call TSSolve first)");
  }
  if (!forward_ended_) {
    recording_->end_forward(last_set_);
    forward_ended_ = true;
  }
  require(stepnum >= 1 && stepnum <= last_set_, "rewind: TSTrajectoryGet for step " +
                                                    std::to_string(stepnum) + " of " +
                                                    std::to_string(last_set_));
  if (prepared_ >= 0) recording_->adjoint_done(prepared_);
  recording_->prepare_adjoint(stepnum - 1);
  prepared_ = stepnum - 1;
  const auto k = static_cast<std::size_t>(stepnum);
  detail::set_clock(ts_, {stepnum, log_.times[k], log_.times[k - 1]});
  REWIND_PETSC(TSSetTimeStep(ts_, log_.times[k - 1] - log_.times[k]));
  *t = log_.times[k];
}

bool SolveRun::finish() {
  if (!recording_ || prepared_ != 0) return false;
  recording_->adjoint_done(0);
  RunReport& r = carry_.report;
  r.stats = recording_->finish();
  r.finished = true;
  r.replayed_rejections = log_.replayed_rejections;
  if (engine::Stores* stores = carry_.stores.get()) {
    const storage::Store* disk = stores->disk_if_open();
    r.io_mode = disk ? disk->io_mode() : std::string("no disk checkpoints");
    if (!carry_.shared_stores) stores->close();
  }
  detail::set_counts(tj_, static_cast<PetscInt>(r.stats.recomputed()),
                     static_cast<PetscInt>(r.stats.disk.reads),
                     static_cast<PetscInt>(r.stats.disk.writes));
  prepared_ = -1;
  return true;
}

}  // namespace rwd::petsc
