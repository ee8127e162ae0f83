#include "solve_run.hpp"

#include <algorithm>
#include <cstdio>

#include "check.hpp"
#include "log_events.hpp"
#include "private_access.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/timing.hpp"
#include "run_config.hpp"
#include "step_replay.hpp"

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
         a.store.async_io == b.store.async_io && a.ram == b.ram && a.ram_bytes == b.ram_bytes &&
         a.disk == b.disk;
}

// Whether `free` (less `extra`) still holds half of every limited level of `capacity`: a new
// segment planned with less would recompute far more than rerunning an earlier segment costs.
bool roomy(const engine::StoresConfig& capacity, const engine::Claim& free,
           const engine::Claim& extra) {
  using schedule::kUnlimited;
  if (capacity.ram != kUnlimited && 2 * (free.ram - extra.ram) < capacity.ram) return false;
  if (capacity.ram_bytes > 0 && 2 * (free.ram_bytes - extra.ram_bytes) < capacity.ram_bytes)
    return false;
  if (capacity.disk != kUnlimited && 2 * (free.disk - extra.disk) < capacity.disk) return false;
  return true;
}

// What a user can do when segments fill the budget.
const std::string kRoomAdvice =
    "Until its adjoint, each segment keeps at least 2 checkpoints (its first state and its last "
    "step's data; a segment planned as store-all keeps all of them): raise "
    "-ts_trajectory_max_cps_ram, or give disk checkpoints (-ts_trajectory_max_cps_disk with "
    "-ts_trajectory_dirname), where segments spill to";

std::string count(std::int64_t n) {
  return n == schedule::kUnlimited ? std::string("unlimited") : std::to_string(n);
}

}  // namespace

SolveRun::SolveRun(TSTrajectory tj, TS ts, PetscReal t0, Carry& carry)
    : tj_(tj), ts_(ts), carry_(carry) {
  if (!detail::adjoint_mode(tj)) {
    throw Error(ErrorCode::InvalidArgument,
                "-ts_trajectory_type rewind serves adjoint solves only; use -ts_trajectory_type "
                "memory for other uses of the trajectory");
  }
  const Options& o = carry_.options;
  if (detail::has_events(ts) && o.schedule != "auto") {
    for (const auto& e : schedule::ScheduleRegistry::instance().list()) {
      if (e.name == o.schedule && !e.online) {
        throw Error(ErrorCode::InvalidArgument,
                    "-ts_trajectory_rewind_schedule " + o.schedule +
                        " needs the step count in advance, and this TS has an event handler: "
                        "locating an event splits steps, and rewind starts a new segment at "
                        "each event, so no step count is known before the run; choose an online "
                        "schedule (online, dynamic) or auto");
      }
    }
  }
  carry_.report.finished = false;
  log_.times.assign(1, t0);
  log_.proposed.assign(1, detail::proposed_step(ts));
  stepper_ = std::make_unique<TsStepper>(ts, log_, first_same_as_last(ts));
  hook_steps(ts);
  take_attempts(ts);
  set_before_step(ts, [this] { before_step(); });
  events_seen_ = detail::events_recorded(ts);
  planned_ = detail::has_events(ts) ? 0 : o.steps > 0 ? o.steps : planned_steps(ts);
  last_set_time_ = std::chrono::steady_clock::now();
  segments_.emplace_back();
  // Measured disk costs are in units of a step: with no step timed yet, keep x_0 aside and
  // plan once the first step has been timed.
  if (o.auto_costs() && o.max_cps_disk != 0 && carry_.step_seconds <= 0) {
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

engine::Stores& SolveRun::stores_for(const engine::StoresConfig& config) {
  if (!carry_.shared_stores && (!carry_.stores || !same_stores(carry_.stores_config, config))) {
    carry_.stores = std::make_shared<engine::Stores>(config);
    carry_.stores_config = config;
  }
  return *carry_.stores;
}

void SolveRun::plan(Segment& segment) {
  // The step time every rank plans with: the largest over the ranks.
  const bool from_last_run = carry_.step_seconds > 0;
  double local = from_last_run ? carry_.step_seconds : first_step_seconds_, worst = 0.0;
  MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, PetscObjectComm((PetscObject)ts_));
  const bool first = &segment == &segments_.front();
  const PetscInt steps = first ? planned_ : detail::has_events(ts_) ? 0 : planned_steps(ts_);
  RunConfig config = make_run_config(
      tj_, ts_, carry_.options, steps,
      {worst, from_last_run ? "mean step of the last run" : "first step of this run"});
  // A segment is planned with what the segments before it leave of the budget (they keep what
  // their reverse needs; see docs/petsc.md, "Events and runs in segments").
  engine::Stores& stores = stores_for(config.stores);
  if (first && !carry_.shared_stores) {  // the peaks the view reports are this run's
    stores.ram().reset_peaks();
    if (storage::Store* disk = stores.disk_if_open()) disk->reset_peaks();
  }
  const engine::Claim free = stores.available(0);
  schedule::ScheduleParams& p = config.recording.params;
  if (free.ram != schedule::kUnlimited) p.ram = std::min(p.ram, free.ram);
  if (free.disk != schedule::kUnlimited) {
    p.disk = p.disk == schedule::kUnlimited ? free.disk : std::min(p.disk, free.disk);
  }
  if (free.ram_bytes > 0)
    config.recording.ram_bytes = std::min(config.recording.ram_bytes, free.ram_bytes);
  stepper_->set_first(segment.first);
  REWIND_PETSC(PetscLogEventBegin(log_events().plan, 0, 0, 0, 0));
  try {
    segment.recording =
        std::make_unique<engine::Recording>(*stepper_, carry_.stores, config.recording);
  } catch (const Error& e) {
    PetscLogEventEnd(log_events().plan, 0, 0, 0, 0);
    if (first || e.code() != ErrorCode::InvalidArgument) throw;
    throw Error(e.code(), segment_note(segment.first) + " is planned with what the " +
                              std::to_string(segments_.size() - 1) +
                              " segment(s) before it leave of the budget: " + count(p.ram) +
                              " RAM and " + count(p.disk) + " disk checkpoints, too few. " +
                              kRoomAdvice + " (" + e.what() + ")");
  }
  REWIND_PETSC(PetscLogEventEnd(log_events().plan, 0, 0, 0, 0));
  // Kept only once the recording exists, so a failed plan leaves the last run's report intact.
  if (first) {
    carry_.report.planned = true;
    carry_.report.plan = segment.recording->plan();
    carry_.report.cost_note = config.cost_note;
  }
}

void SolveRun::start_segment(PetscInt first) {
  make_room({}, nullptr);
  Segment segment;
  segment.first = first;
  segments_.push_back(std::move(segment));
  plan(segments_.back());
}

void SolveRun::before_step() {
  if (!forward_ended_ || !segments_.front().recording) return;
  // A TSSolve continues the run from the state the program left in the TS (it may have changed
  // the state and the model since the last solve).
  const PetscReal t = detail::clock(ts_).time;
  const auto s = static_cast<std::size_t>(last_set_);
  if (t != log_.times[s]) {
    char msg[512];
    std::snprintf(msg, sizeof msg,
                  "rewind: this TSSolve continues the run's step numbering from step %lld, which "
                  "ended at t = %.17g, but starts at t = %.17g; continue from the time the last "
                  "solve ended, or start a new run with TSSetStepNumber(ts, 0)",
                  static_cast<long long>(last_set_), static_cast<double>(log_.times[s]),
                  static_cast<double>(t));
    throw Error(ErrorCode::InvalidArgument, msg);
  }
  // The last segment's final state and its last step's data were in the TS, which the program
  // may have changed: its reverse rebuilds them (checked against the first sweep), or it kept
  // them when it could not (set()), or the budget had no room to keep them.
  if (unkept_) throw *unkept_;
  Segment& previous = segments_.back();
  if (previous.recording && previous.recording->phase() == engine::Phase::Recorded) {
    previous.recording->lose_work();
  }
  forward_ended_ = false;
  log_.proposed[s] = detail::proposed_step(ts_);
  start_segment(last_set_);
}

void SolveRun::end_segment(PetscInt at, bool park) {
  Segment& s = segments_.back();
  if (s.ended) return;
  s.ended = true;
  if (!s.recording) return;
  if (at == s.first) {  // no step of its own
    s.recording.reset();
    return;
  }
  s.recording->end_forward(at - s.first);
  if (!park) return;
  // Parked whole when that leaves half of the budget to the segments after it; otherwise thinned
  // first (x_0 and the last step's data kept, the rest planned again in its reverse), and room
  // made by thinning or spilling the segments before it.
  engine::Stores& stores = *carry_.stores;
  engine::Recording& r = *s.recording;
  if (!carry_.shared_stores && !roomy(stores.config(), stores.available(0), park_growth(r))) {
    try {
      r.thin(false);
      ++thinned_;
    } catch (const Error&) {
      // Its schedule kept no restart checkpoint of its first state (storeall): it stays whole.
    }
    make_room(park_growth(r), &s);
  }
  try {
    r.park();
  } catch (const Error& e) {
    throw Error(e.code(), segment_note(s.first) + " ends at step " + std::to_string(at) +
                              " (an event) and keeps its first state and its last step's data "
                              "until its adjoint, but the budget has no room left for them. " +
                              kRoomAdvice + " (" + e.what() + ")");
  }
}

engine::Claim SolveRun::park_growth(const engine::Recording& r) {
  const engine::Claim held = r.claim();
  engine::Claim grows = r.park_claim();
  grows.ram -= held.ram;
  grows.ram_bytes -= held.ram_bytes;
  grows.disk -= held.disk;
  return grows;
}

std::string SolveRun::segment_note(PetscInt first) const {
  const auto k = static_cast<std::size_t>(first);
  char t[32];
  std::snprintf(t, sizeof t, "%g", static_cast<double>(log_.times[k]));
  return "rewind: this run is planned in segments (an event or a continued TSSolve changes the "
         "model; docs/petsc.md, \"Events and runs in segments\"); the segment from step " +
         std::to_string(first) + " (t = " + t + ")";
}

void SolveRun::make_room(const engine::Claim& extra, const Segment* keep) {
  if (carry_.shared_stores) return;
  engine::Stores& stores = *carry_.stores;
  const auto enough = [&] { return roomy(stores.config(), stores.available(0), extra); };
  const auto waiting = [&](const Segment& s) {
    if (&s == keep || !s.recording || !s.ended || s.done) return false;
    const engine::Phase phase = s.recording->phase();
    return phase == engine::Phase::Recorded || phase == engine::Phase::Parked;
  };
  // Thinning first: a thinned segment costs its steps once more in the reverse...
  for (Segment& s : segments_) {
    if (enough()) return;
    if (!waiting(s) || s.recording->thinned()) continue;
    try {
      s.recording->thin(false);
      ++thinned_;
    } catch (const Error&) {
      // Its schedule kept no restart checkpoint of its first state (storeall): it stays whole.
    }
  }
  // ... then what the segments hold in RAM moves to the disk, where the disk budget has room.
  for (Segment& s : segments_) {
    if (enough()) return;
    if (!waiting(s)) continue;
    const engine::Claim held = s.recording->claim();
    if (held.ram == 0) continue;
    engine::Claim moved{0, 0.0, held.disk + held.ram};
    if (stores.config().disk == 0 || !stores.fits(s.recording->id(), moved)) continue;
    s.recording->spill();
  }
}

void SolveRun::set(PetscInt stepnum, PetscReal time) {
  if (x0_ && stepnum == 1) {
    first_step_seconds_ = seconds_since(last_set_time_);
    // Plan as if at x_0: the recording stores what the schedule wants of x_0, then the run goes on.
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
  }
  if (!segments_.front().recording || stepnum == last_set_) return;  // not planned, or a repeat
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
  step_seconds_sum_ += seconds_since(last_set_time_);
  ++step_seconds_count_;
  const bool last = detail::reason(ts_) != 0;
  last_set_ = stepnum;
  if (forward_ended_) {
    throw Error(ErrorCode::Internal, "rewind: step " + std::to_string(stepnum) +
                                         " was taken after the run ended, unseen by the step hook");
  }
  {
    Segment& s = segments_.back();
    s.recording->forward_step_done(stepnum - 1 - s.first, last);
  }
  const PetscInt events = detail::events_recorded(ts_);
  if (events > events_seen_) {
    // The post-event function may have changed the model: a new segment starts here, and the
    // ended one keeps its last step's data (the adjoint needs it before it changes the model
    // back).
    events_seen_ = events;
    end_segment(stepnum, true);
    if (!last) start_segment(stepnum);
  }
  last_set_time_ = std::chrono::steady_clock::now();  // checkpoint time is not step time
  if (last) {
    end_segment(stepnum, false);
    // Another TSSolve may continue this run and move the TS past its final state and last
    // stages; a recording that could not recompute them keeps them now.
    Segment& s = segments_.back();
    if (s.recording && s.recording->phase() == engine::Phase::Recorded &&
        !s.recording->can_rebuild()) {
      try {
        s.recording->park();
      } catch (const Error& e) {
        // Nothing is lost yet: the TS still holds them for a TSAdjointSolve. Only a TSSolve
        // that continues the run would lose them (before_step()).
        unkept_.emplace(e.code(),
                        segment_note(s.first) +
                            " ended with a TSSolve that another TSSolve continues; its schedule (" +
                            s.recording->plan().schedule +
                            ") keeps no state to recompute its last step from, so its final "
                            "state and last stages had to be kept when its TSSolve ended, "
                            "and the budget had no room left for them. " +
                            kRoomAdvice + " (" + e.what() + ")");
      }
    }
    forward_ended_ = true;
    carry_.step_seconds = step_seconds_sum_ / static_cast<double>(step_seconds_count_);
  }
}

std::size_t SolveRun::segment_of(PetscInt i) const {
  for (std::size_t j = segments_.size(); j-- > 0;) {
    const Segment& s = segments_[j];
    if (s.recording && i >= s.first && i < s.first + s.recording->steps()) return j;
  }
  throw Error(ErrorCode::Internal, "rewind: no segment holds step " + std::to_string(i));
}

void SolveRun::complete_prepared() {
  if (!prepared_) return;
  Segment& s = segments_[*prepared_];
  if (prepared_local_ >= 0) {
    s.recording->adjoint_done(prepared_local_);
    if (prepared_local_ == 0) {
      total_.add(s.recording->finish());
      s.done = true;
    }
  }
  prepared_.reset();
}

void SolveRun::get(PetscInt stepnum, PetscReal* t) {
  if (!segments_.front().recording) {
    throw Error(ErrorCode::InvalidArgument,
                "rewind: TSTrajectoryGet without a recorded forward run (call TSSolve first)");
  }
  if (!forward_ended_) {
    end_segment(last_set_, false);
    forward_ended_ = true;
  }
  require(stepnum >= 1 && stepnum <= last_set_, "rewind: TSTrajectoryGet for step " +
                                                    std::to_string(stepnum) + " of " +
                                                    std::to_string(last_set_));
  const PetscInt i = stepnum - 1;
  complete_prepared();
  const std::size_t j = segment_of(i);
  Segment& s = segments_[j];
  stepper_->set_first(s.first);
  s.recording->prepare_adjoint(i - s.first);
  prepared_local_ = i - s.first;
  prepared_ = j;
  ++reversed_;
  const auto k = static_cast<std::size_t>(stepnum);
  detail::set_clock(ts_, {stepnum, log_.times[k], log_.times[k - 1]});
  REWIND_PETSC(TSSetTimeStep(ts_, log_.times[k - 1] - log_.times[k]));
  *t = log_.times[k];
}

bool SolveRun::finish() {
  if (!prepared_ || *prepared_ != 0 || prepared_local_ != 0) return false;
  complete_prepared();
  RunReport& r = carry_.report;
  r.stats = total_;
  r.finished = true;
  r.replayed_rejections = log_.replayed_rejections;
  r.segments = static_cast<PetscInt>(segments_.size());
  r.events = events_seen_;
  r.thinned = thinned_;
  r.verify = carry_.options.verify == PETSC_TRUE;
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
    r.io_mode = disk ? disk->io_mode() : std::string("no disk checkpoints");
    if (!carry_.shared_stores) stores->close();
  }
  detail::set_counts(tj_, static_cast<PetscInt>(r.stats.recomputed()),
                     static_cast<PetscInt>(r.stats.disk.reads),
                     static_cast<PetscInt>(r.stats.disk.writes));
  return true;
}

}  // namespace rwd::petsc
