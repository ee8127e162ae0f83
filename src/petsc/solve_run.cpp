#include "solve_run.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "check.hpp"
#include "log_events.hpp"
#include "private_access.hpp"
#include "progress.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/engine/room.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/storage/codec.hpp"
#include "rewind/timing.hpp"
#include "run_config.hpp"
#include "step_replay.hpp"

namespace rwd::petsc {

namespace {

// The RAM codec in the view's words: its name, and for a lossy one its tolerance and what it
// compresses ("zfp (within 1e-08; solution checkpoints only, stages exact)").
std::string codec_words(const engine::StoresConfig& s) {
  const storage::CodecSpec& c = s.store.codec;
  if (!storage::codec_is_lossy(c.name)) {
    return c.level > 0 ? c.name + " (level " + std::to_string(c.level) + ")" : c.name;
  }
  char bound[48];
  if (c.precision > 0) {
    std::snprintf(bound, sizeof bound, "%d bits", c.precision);
  } else {
    std::snprintf(bound, sizeof bound, "within %g", c.tolerance);
  }
  return c.name + " (" + bound + "; " +
         (s.lossy_pullbacks ? "solution and stage checkpoints"
                            : "solution checkpoints only, stages exact") +
         ")";
}

// Recomputed states that drifted more than this from the first sweep's, relative to their norm,
// under a lossy codec, are worth a warning: the gradient may be about as far off.
constexpr double kLossyDriftWarning = 1e-4;

// Said once a run, on rank 0, on stderr, when lossy checkpoints moved recomputed states by more
// than kLossyDriftWarning on any rank. Collective (every rank has the same codec).
void warn_lossy_drift(const engine::RunStats& s, const engine::StoresConfig& stores,
                      const char* option) {
  if (!s.verify_lossy) return;
  double drift = s.verify_largest_drift;
  REWIND_PETSC(MPI_Allreduce(MPI_IN_PLACE, &drift, 1, MPI_DOUBLE, MPI_MAX, stores.store.comm));
  if (drift <= kLossyDriftWarning || comm::comm_rank(stores.store.comm) != 0) return;
  std::fprintf(stderr,
               "rewind: warning: lossy checkpoints (%s %s) moved "
               "recomputed states by up to %.1e relative to their norm, and the gradient may be "
               "off by about as much. A zfp tolerance is absolute: scale it to the size of the "
               "states, or check once against a lossless run\n",
               option, codec_words(stores).c_str(), drift);
}

}  // namespace

namespace {

// A store's text with its settings' names (StoreConfig::async_io) replaced by the options a PETSc
// user gives (-ts_trajectory_rewind_async).
std::string with_option_names(std::string text) {
  const engine::SettingNames petsc = option_names();
  const engine::SettingNames plain;
  for (const auto& [from, to] : {std::pair{plain.async_io, petsc.async_io},
                                 std::pair{plain.max_staged_bytes, petsc.max_staged_bytes}}) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

// Whether `free` (less `extra`) still holds half of every limited level of `capacity`: a new
// segment planned with less would recompute far more than rerunning an earlier segment costs.

}  // namespace

SolveRun::SolveRun(TSTrajectory tj, TS ts, PetscReal t0, Carry& carry)
    : tj_(tj),
      ts_(ts),
      carry_(carry),
      stepper_(std::make_unique<TsStepper>(ts, log_,
                                           first_same_as_last(ts) ? Fsal::KeepStage : Fsal::None)),
      segments_(carry, *stepper_, log_) {
  if (!detail::adjoint_mode(tj)) {
    throw Error(ErrorCode::InvalidArgument,
                "-ts_trajectory_type rewind serves adjoint solves only; use -ts_trajectory_type "
                "memory for other uses of the trajectory");
  }
  const Options& o = carry_.options;
  const bool adaptive = o.steps <= 0 && adapts_step_size(ts);
  if ((detail::has_events(ts) || adaptive) && o.schedule != "auto") {
    for (const auto& e : schedule::ScheduleRegistry::instance().list()) {
      if (e.name == o.schedule && !e.online) {
        throw Error(ErrorCode::InvalidArgument,
                    "-ts_trajectory_rewind_schedule " + o.schedule +
                        " needs the step count in advance, and " +
                        (detail::has_events(ts)
                             ? "this TS has an event handler: locating an event splits steps, "
                               "and rewind starts a new segment at each event, so no step "
                               "count is known before the run; choose an online schedule "
                               "(-ts_trajectory_rewind_schedule online or dynamic) or auto"
                             : "this TS adapts its step size, so no step count is known before "
                               "the run; choose an online schedule "
                               "(-ts_trajectory_rewind_schedule online or dynamic) or auto, or "
                               "a fixed step size (-ts_adapt_type none), or give the exact "
                               "count the adaptive run takes (-ts_trajectory_rewind_steps)"));
      }
    }
  }
  carry_.report.finished = false;
  carry_.report.fsal_note.clear();
  if (stepper_->fsal() != Fsal::None && (!o.fsal_restart_checked() || o.resume)) {
    carry_.report.fsal_note = std::string(
                                  "each solution checkpoint keeps the last stage, and a "
                                  "restored step rebuilds the derivative it reuses (") +
                              (!o.fsal_restart ? "-ts_trajectory_rewind_fsal_restart 0"
                               : !o.verify     ? "the replay check is off"
                                               : "a resumable run") +
                              ")";
  }
  carry_.report.kept_file.clear();  // an earlier run's, until this one keeps its own
  log_.times.assign(1, t0);
  log_.proposed.assign(1, detail::proposed_step(ts));
  hook_steps(ts);
  take_attempts(ts);
  set_before_step(ts, [this] { before_step(); });
  events_seen_ = detail::events_recorded(ts);
  planned_ = detail::has_events(ts) ? 0 : o.steps > 0 ? o.steps : planned_steps(ts);
  last_set_time_ = std::chrono::steady_clock::now();
  agree_resume_options(PetscObjectComm((PetscObject)ts), o);
  if (o.resume) {
    start_resumable();
    return;
  }
  note_resume_files(tj, ts, o);
  segments_.add(0);
  // Measured disk costs are in units of a step: with no step timed yet, keep x_0 aside and
  // plan once a step has been timed (plan_when_timed()). A first-same-as-last method that may
  // restart its steps after a restore plans after its first step, which shows whether its last
  // stage is the solution bit for bit (else it keeps the last stage: Fsal::KeepStage).
  wait_for_time_ = o.auto_costs() && o.max_cps_disk != 0 && carry_.step_seconds <= 0;
  probe_fsal_ = stepper_->fsal() != Fsal::None && o.fsal_restart_checked();
  if (wait_for_time_ || probe_fsal_) {
    REWIND_PETSC(VecDuplicate(detail::solution(ts), &x0_));
    REWIND_PETSC(VecCopy(detail::solution(ts), x0_));
    return;
  }
  plan(segments_.back());
}

SolveRun::~SolveRun() {
  set_before_step(ts_, nullptr);
  VecDestroy(&x0_);
}

void SolveRun::plan(Segment& segment) {
  // The step time every rank plans with: the largest over the ranks.
  const bool from_last_run = carry_.step_seconds > 0;
  double local = from_last_run ? carry_.step_seconds : timed_step_.seconds, worst = 0.0;
  MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, PetscObjectComm((PetscObject)ts_));
  const bool first = &segment == &segments_.front();
  // An interval of a resumable run has its own length (the TS may be in the reverse sweep).
  const PetscInt steps = durable_                  ? interval_steps(segment.first)
                         : first                   ? planned_
                         : detail::has_events(ts_) ? 0
                                                   : planned_steps(ts_);
  Options options = carry_.options;
  if (durable_) {
    // An interval of a resumable run: in RAM (the disk holds the durable states), so disk
    // costs are not measured.
    options.write_cost = std::max<PetscReal>(options.write_cost, 0);
    options.read_cost = std::max<PetscReal>(options.read_cost, 0);
  }
  // What an earlier run's checkpoints reached, in place of a ratio that was too high for them.
  const bool learned =
      carry_.learned_ratio > 0.0 && options.compress_ratio != 1 &&
      (options.compress_ratio == 0 || carry_.learned_ratio < options.compress_ratio);
  if (learned) options.compress_ratio = static_cast<PetscReal>(carry_.learned_ratio);
  RunConfig config =
      make_run_config(tj_, ts_, options, steps,
                      {worst, from_last_run ? "mean step of the last run" : timed_step_.source});
  if (learned) {
    char source[192];
    std::snprintf(source, sizeof source,
                  "what an earlier run's checkpoints reached, with the margin; %s asked for %g",
                  config.recording.names.compress_ratio.c_str(),
                  static_cast<double>(carry_.options.compress_ratio));
    config.recording.compress_ratio_source = source;
  }
  if (durable_) config.recording.params.disk = 0;
  if (stepper_->fsal() == Fsal::Restart) {
    config.recording.verify_note = fsal_restart_note();
    // PETSc's CAMS gets stages + 1 vectors a checkpoint (TSRK is not stiffly accurate to it).
    config.recording.slot_counts_state = true;
  }
  segments_.plan(segment, std::move(config));
}

void SolveRun::start_segment(PetscInt first) {
  segments_.make_room({}, nullptr);
  plan(segments_.add(first));
}

void SolveRun::before_step() {
  if (durable_ && forward_ended_) {
    throw Error(ErrorCode::InvalidArgument,
                "-ts_trajectory_rewind_resume: this TSSolve continues a resumable run, which is "
                "not supported; start a new run with TSSetStepNumber(ts, 0), or run without "
                "-ts_trajectory_rewind_resume");
  }
  if (!forward_ended_ || segments_.empty() || !segments_.front().recording) return;
  // A TSSolve continues the run from the state the program left in the TS; the program may have
  // changed its model and its state since the last solve.
  const PetscReal t = detail::clock(ts_).time;
  const auto s = static_cast<std::size_t>(last_set_);
  Segment& previous = segments_.back();
  if (previous.recording) {
    // The segment the last solve ended is reversed from what it holds: running one of its steps
    // again would run it with the model as the program leaves it, not as that solve had it.
    if (!previous.recording->whole() && carry_.options.recompute_solves != PETSC_TRUE) {
      std::int64_t held = 0;
      for (std::size_t j = 0; j < segments_.size(); ++j) {
        if (segments_[j].recording) held += segments_[j].recording->steps() + 1;
      }
      throw Error(ErrorCode::InvalidArgument,
                  not_whole(previous, last_set_, detail::solution_only(tj_), held));
    }
    // Its final state and last stages were in the TS, which this solve moves on: kept when its
    // solve ended (set()), or else recomputed in its reverse (-ts_trajectory_rewind_recompute_
    // _solves), or lost for want of room.
    if (previous.recording->phase() == engine::Phase::Recorded) {
      if (unkept_ &&
          (carry_.options.recompute_solves != PETSC_TRUE || !previous.recording->can_rebuild())) {
        throw *unkept_;
      }
      previous.recording->lose_work();
    }
    previous.keep_whole = carry_.options.recompute_solves != PETSC_TRUE;
  }
  unkept_.reset();
  // A solve that sets the clock elsewhere (PETSc's ex9busadj goes back to the fault's time)
  // starts its segment there; the last solve's end stays where that segment's reverse wants it.
  if (t != log_.times[s]) {
    log_.ended_at[s] = log_.times[s];
    log_.times.set_back(t);
  }
  forward_ended_ = false;
  if (log_.proposed.size() != s + 1) {
    throw Error(ErrorCode::Internal, "rewind: the step log's proposals end at step " +
                                         std::to_string(log_.proposed.size() - 1) + ", not " +
                                         std::to_string(s));
  }
  log_.proposed.set_back(detail::proposed_step(ts_));
  start_segment(last_set_);
}

bool SolveRun::plan_when_timed(PetscInt stepnum, double step_seconds) {
  const bool last = detail::reason(ts_) != 0;
  if (probe_fsal_) {  // stepnum is 1: the first step's last stage and solution are in the TS
    probe_fsal_ = false;
    const bool here = stepper_->last_stage_is_solution();
    int all = here ? 1 : 0;
    REWIND_PETSC(
        MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, PetscObjectComm((PetscObject)ts_)));
    // Where it is not (the solution is summed with one term more, and a vector kernel may group
    // the terms otherwise), a restart differs in the last bits: only within a tolerance given.
    const bool tolerated = carry_.options.verify_tolerance > 0;
    stepper_->set_fsal(all == 1 || tolerated ? Fsal::Restart : Fsal::KeepStage);
    if (all != 1) stepper_->skip_restart_check();
    carry_.report.fsal_note =
        all == 1 ? "its last stage is the solution bit for bit (checked after the first step), "
                   "so a solution checkpoint is the solution alone and a restored step restarts, "
                   "as in PETSc's memory trajectory"
        : tolerated
            ? "its last stage differs from the solution in the last bits, and a restored step "
              "restarts anyway, as in PETSc's memory trajectory: recomputed states are accepted "
              "within -ts_trajectory_rewind_verify_tolerance"
            : "its last stage differs from the solution in the last bits (checked after the "
              "first step), so each solution checkpoint keeps it and a restored step rebuilds "
              "the derivative it reuses exactly; -ts_trajectory_rewind_verify_tolerance (e.g. "
              "1e-12) restarts instead, as PETSc's memory trajectory does, within it";
  }
  // The first step pays for the solver's set-up (ex5adj: 2.4 times a later step; rewind-heat:
  // 5 times): the plan waits for the second, holding the first step's data meanwhile. With an
  // event handler it does not wait (an event at the first step ends a segment).
  if (wait_for_time_ && stepnum == 1 && !last && !detail::has_events(ts_)) {
    held_.emplace(*stepper_);
    last_set_ = stepnum;
    last_set_time_ = std::chrono::steady_clock::now();
    return true;
  }
  timed_step_ = {step_seconds, stepnum == 2 ? "second step of this run"
                               : last       ? "first step of this run, its only one"
                                            : "first step of this run: an event handler "
                                              "plans it at once"};
  // Plan as if at x_0: the recording stores what the schedule wants of x_0, then it is handed
  // the steps taken since.
  const Vec sol = detail::solution(ts_);
  REWIND_PETSC(VecSwap(sol, x0_));
  try {
    plan(segments_.front());
  } catch (...) {
    VecSwap(sol, x0_);
    throw;
  }
  REWIND_PETSC(VecSwap(sol, x0_));
  REWIND_PETSC(VecDestroy(&x0_));
  if (held_) {  // step 0, from its copy; then the TS's own buffers again
    const HeldStep now(*stepper_);
    held_->put_back(*stepper_);
    held_.reset();
    segments_.front().recording->forward_step_done(0, false);
    now.put_back(*stepper_);
  }
  return false;
}

void SolveRun::set(PetscInt stepnum, PetscReal time) {
  // Not planned (nor waiting to be), or a repeat.
  if ((!durable_ && !segments_.front().recording && !x0_) || stepnum == last_set_) return;
  if (stepnum != last_set_ + 1) {
    throw Error(ErrorCode::InvalidArgument,
                "rewind: TSTrajectorySet for step " + std::to_string(stepnum) + " after step " +
                    std::to_string(last_set_) +
                    "; a TSSolve that continues a run must continue its step numbering (or start "
                    "again from step 0: TSSetStepNumber(ts, 0))");
  }
  const auto k = static_cast<std::size_t>(stepnum);
  log_.times.push_back(time);
  // The exact size step k-1 ended with: its last attempt's (or what TS proposed at set(k-1) if
  // nothing was recorded), if it lands on t_k. Every attempt is replayed with it.
  const std::vector<Attempt> attempts = take_attempts(ts_);
  const PetscReal guess = attempts.empty() ? log_.proposed[k - 1] : attempts.back().size();
  const bool exact = log_.times[k - 1] + guess == time;
  log_.dts.push_back(exact ? guess : time - log_.times[k - 1]);
  if (exact && (attempts.size() > 1 || (!attempts.empty() && attempts.back().choices.size() > 1))) {
    log_.attempts[k - 1] = attempts;
  }
  log_.proposed.push_back(detail::proposed_step(ts_));
  const double step_seconds = seconds_since(last_set_time_);
  step_seconds_sum_ += step_seconds;
  ++step_seconds_count_;
  report_progress("forward", stepnum);
  if (x0_ && plan_when_timed(stepnum, step_seconds)) return;
  const bool last = detail::reason(ts_) != 0;
  last_set_ = stepnum;
  if (forward_ended_) {
    throw Error(ErrorCode::Internal, "rewind: step " + std::to_string(stepnum) +
                                         " was taken after the run ended, unseen by the step hook");
  }
  if (!segments_.empty() && segments_.back().recording) {
    Segment& s = segments_.back();
    s.recording->forward_step_done(stepnum - 1 - s.first, last);
  }
  if (durable_) {
    if (last && !durable_->adaptive() && stepnum != durable_->steps()) {
      throw Error(ErrorCode::InvalidArgument,
                  "-ts_trajectory_rewind_resume: the run ended at step " + std::to_string(stepnum) +
                      ", and its durable states were placed for the " +
                      std::to_string(durable_->steps()) +
                      " steps TS predicted; give -ts_max_steps and -ts_max_time that end it "
                      "there");
    }
    durable_->reached(stepnum, last);
    // The last interval is recorded as the first sweep takes it; with adaptive steps, which one
    // is last is known only at the end, so each interval is, and its recording dropped at the
    // next boundary (the interval is taken again from its durable state in the reverse sweep).
    if (!last && durable_->adaptive() && stepnum % durable_->interval() == 0) {
      segments_.drop_last();
      start_segment(stepnum);
    } else if (!last && !durable_->adaptive() &&
               stepnum == durable_->interval_start(durable_->steps() - 1)) {
      start_segment(stepnum);
    }
  }
  const PetscInt events = detail::events_recorded(ts_);
  if (events > events_seen_) {
    // The post-event function may have changed the model: a new segment starts here, and the
    // ended one keeps its last step's data (the adjoint needs it before it changes the model
    // back).
    events_seen_ = events;
    segments_.end(stepnum, true);
    if (!last) start_segment(stepnum);
  }
  last_set_time_ = std::chrono::steady_clock::now();  // checkpoint time is not step time
  if (last) {
    segments_.end(stepnum, false);
    // Another TSSolve may continue this run and move the TS past its final state and last
    // stages, after the program changed its model: a recording that could not recompute them,
    // or that must not (it holds every step's data), keeps them now, where the budget has room.
    Segment& s = segments_.back();
    if (!durable_ && s.recording && s.recording->phase() == engine::Phase::Recorded &&
        (!s.recording->can_rebuild() || s.recording->whole())) {
      try {
        s.recording->park();
      } catch (const Error& e) {
        // Nothing is lost yet: the TS still holds them for a TSAdjointSolve. Only a TSSolve
        // that continues the run would lose them (before_step()).
        unkept_.emplace(e.code(),
                        segments_.note(s.first) +
                            " ended with a TSSolve that another TSSolve continues; its final "
                            "state and last stages had to be kept when its TSSolve ended (the "
                            "program may change its model before the next), and the budget had "
                            "no room left for them. " +
                            kRoomAdvice + " (" + cause_of(e) + ")");
      }
    }
    forward_ended_ = true;
    carry_.step_seconds = step_seconds_sum_ / static_cast<double>(step_seconds_count_);
  }
}

std::int64_t RunReport::ram_peak_slots() const {
  return engine::two_sizes(plan.sizes)
             ? engine::slots_filled(stats.ram.peak_bytes, plan.slot_bytes > 0
                                                              ? plan.slot_bytes
                                                              : engine::any_slot_bytes(plan.sizes))
             : stats.ram.peak;
}

void SolveRun::complete_prepared() {
  if (!prepared_) return;
  Segment& s = segments_[*prepared_];
  if (prepared_local_ >= 0) {
    s.recording->adjoint_done(prepared_local_);
    if (prepared_local_ == 0) {
      engine::RunStats st = s.recording->finish();
      if (s.again) {  // its first sweep recomputed steps the run took before
        st.recompute_seconds += st.forward_seconds;
        st.forward_seconds = 0.0;
        st.steps = 0;
      }
      total_.add(st);
      s.done = true;
    }
  }
  prepared_.reset();
}

void SolveRun::get(PetscInt stepnum, PetscReal* t) {
  if (durable_) {
    get_resumable(stepnum, t);
    return;
  }
  if (!segments_.front().recording) {
    throw Error(ErrorCode::InvalidArgument,
                "rewind: TSTrajectoryGet without a recorded forward run (call TSSolve first)");
  }
  if (!forward_ended_) {
    segments_.end(last_set_, false);
    forward_ended_ = true;
  }
  require(stepnum >= 1 && stepnum <= last_set_, "rewind: TSTrajectoryGet for step " +
                                                    std::to_string(stepnum) + " of " +
                                                    std::to_string(last_set_));
  const PetscInt i = stepnum - 1;
  complete_prepared();
  prepare_step(segments_.of(i), stepnum, t);
}

void SolveRun::prepare_step(std::size_t j, PetscInt stepnum, PetscReal* t) {
  const PetscInt i = stepnum - 1;
  Segment& s = segments_[j];
  stepper_->set_first(s.first);
  s.recording->prepare_adjoint(i - s.first);
  prepared_local_ = i - s.first;
  prepared_ = j;
  ++reversed_;
  report_progress("adjoint", last_set_ - stepnum);
  const auto k = static_cast<std::size_t>(stepnum);
  const PetscReal end = log_.end_time(k);
  detail::set_clock(ts_, {stepnum, end, log_.times[k - 1]});
  REWIND_PETSC(TSSetTimeStep(ts_, log_.times[k - 1] - end));
  *t = end;
}

bool SolveRun::finish() {
  if (!prepared_ || segments_[*prepared_].first != 0 || prepared_local_ != 0) return false;
  complete_prepared();
  RunReport& r = carry_.report;
  if (durable_) {
    const PetscInt n = durable_->final_step(), last = durable_->interval_start(n - 1);
    total_.forward_steps +=
        std::max<PetscInt>(0, last - first_sweep_from_) + durable_->checked_steps();
    total_.steps = n - first_sweep_from_;
    const engine::DurableTraffic& io = durable_->traffic();
    total_.add_durable(io, io.seconds);
    total_.resumed_at = durable_->resumed_at();
    total_.resumed_in_reverse = adjoint_resumed_;
    // The manifest goes first: once the store closes, its file is gone.
    durable_finished_ = true;
    durable_->finish();
  }
  r.stats = total_;
  r.finished = true;
  if (total_.ram_codec.replanned_ratio > 0.0)
    carry_.learned_ratio = total_.ram_codec.replanned_ratio;
  r.replayed_rejections = log_.replayed_rejections;
  if (stepper_->restart_check() == TsStepper::RestartCheck::Same) {
    r.fsal_note +=
        "; the first restored step was taken both ways, restarted and rebuilt as the "
        "forward run evaluated it: the same bits";
  } else if (stepper_->restart_check() == TsStepper::RestartCheck::Differed) {
    r.fsal_note +=
        "; but the first restored step, restarted, differed from the step rebuilt as "
        "the forward run evaluated it (a right-hand side that reads the step number?), "
        "so every restored step was rebuilt (a zero-length TSStep each)";
  }
  r.segments = static_cast<PetscInt>(segments_.size());
  r.events = events_seen_;
  r.thinned = segments_.thinned();
  r.segment_plans = segments_.plans(8);
  r.verify = carry_.options.verify == PETSC_TRUE;
  r.resume_interval = durable_ ? durable_->interval() : 0;
  r.resume_bound = durable_ && durable_->adaptive() ? durable_->steps() : 0;
  r.resume_steps = durable_ ? durable_->final_step() : 0;
  if (engine::Stores* stores = carry_.stores.get()) {
    storage::Store* disk = stores->disk_if_open();
    if (segments_.size() > 1 && !carry_.shared_stores) {
      // Segments hold checkpoints at once: the stores saw the run's peaks, no recording did.
      for (auto [to, store] :
           {std::pair{&r.stats.ram, &stores->ram()}, std::pair{&r.stats.disk, disk}}) {
        if (!store) continue;
        const storage::StoreStats st = store->stats();
        to->peak = st.peak_live;
        to->peak_bytes = st.peak_bytes;
      }
    }
    r.io_mode = disk ? with_option_names(disk->io_mode()) : std::string("no disk checkpoints");
    r.codec = codec_words(carry_.stores_config);
    r.ram_io_mode = with_option_names(stores->ram().io_mode());
    r.ram_store = stores->ram().stats();
    r.group_stores = carry_.shared_stores;
    r.disk_codec = carry_.shared_stores ? r.stats.disk_codec : stores->disk_codec_stats();
    if (!carry_.shared_stores) {
      // The name the file keeps once closed (closing destroys the store).
      const storage::DurableStore* durable = disk ? disk->durable() : nullptr;
      const std::string kept =
          durable && carry_.stores_config.store.keep_files ? durable->final_path() : std::string();
      stores->close();
      r.kept_file = kept;
    }
  }
  // A task of a PETSc ensemble compresses with its group's stores' codec.
  warn_lossy_drift(
      r.stats, carry_.stores_config,
      carry_.shared_stores ? "-rewind_ensemble_compress" : "-ts_trajectory_rewind_compress");
  detail::set_counts(tj_, static_cast<PetscInt>(r.stats.recomputed()),
                     static_cast<PetscInt>(r.stats.disk.reads),
                     static_cast<PetscInt>(r.stats.disk.writes));
  return true;
}

void SolveRun::abandon() {
  // Not after a failure: what is durable stays for a resume (the process may be about to end).
  if (!durable_ || failed_ || durable_finished_) return;
  durable_finished_ = true;
  durable_->finish();
}

}  // namespace rwd::petsc
