#include "resumable_solve.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "check.hpp"
#include "private_access.hpp"
#include "resume_identity.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/storage/sealed_blocks.hpp"

namespace rwd::petsc {

namespace {

using comm::agree;
using comm::capture;
using engine::Field;

void mark_changed(Vec v) {
  PetscScalar* a = nullptr;
  REWIND_PETSC(VecGetArray(v, &a));
  REWIND_PETSC(VecRestoreArray(v, &a));
}

// The most steps an adaptive resumable run may be given (-ts_max_steps): its step log is sized
// by them (7 values a step and rank in each durable state).
constexpr PetscInt kMostAdaptiveSteps = 10'000'000;

PetscInt ceil_div(PetscInt a, PetscInt b) {
  return (a + b - 1) / b;
}

}  // namespace

void agree_resume_options(MPI_Comm comm, const Options& o) {
  using comm::setting_hash;
  const comm::Setting settings[] = {
      {"-ts_trajectory_rewind_resume", setting_hash(o.resume)},
      {"-ts_trajectory_rewind_resume_interval", setting_hash(o.resume_interval)},
      // A resumable run places its durable states by it before any recording agrees it.
      {"-ts_trajectory_max_cps_disk", setting_hash(o.max_cps_disk)}};
  comm::agree_settings(comm, settings);
}

namespace {

[[noreturn]] void refuse(const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "-ts_trajectory_rewind_resume: " + why);
}

}  // namespace

void ResumableSolve::refuse_unsupported(TSTrajectory tj, TS ts, const Options& o) {
  if (!detail::dirname(tj)) {
    refuse(
        "a resumable run keeps its durable checkpoints and its manifest on disk: give "
        "-ts_trajectory_dirname");
  }
  if (o.max_cps_disk == 0) {
    refuse(
        "a resumable run keeps its durable checkpoints on disk: give -ts_trajectory_max_cps_disk "
        "(>= 4, or -1 with -ts_trajectory_rewind_resume_interval)");
  }
  if (detail::has_events(ts)) {
    refuse(
        "this TS has an event handler, and a run with events cannot be resumed yet "
        "(docs/resume.md, "
        "\"PETSc\"); run it without -ts_trajectory_rewind_resume");
  }
  if (detail::exact_final_time(ts) == TS_EXACTFINALTIME_INTERPOLATE) {
    refuse(
        "TSSolve interpolates its final state (-ts_exact_final_time interpolate) from the last "
        "step's stages, which a run resumed after its first sweep does not have; give "
        "-ts_exact_final_time matchstep (or stepover)");
  }
  {
    PetscInt order = 0;
    Vec* hessian = nullptr;
    REWIND_PETSC(TSGetCostHessianProducts(ts, &order, &hessian, nullptr, nullptr));
    if (hessian) refuse("second-order adjoints (TSSetCostHessianProducts) are not resumable yet");
  }
}

// Adaptive steps: the step count is learnt at the end. Durable states go every interval steps,
// and the step log in each is sized by the most steps TS may take.
void ResumableSolve::bound_adaptive_steps(TS ts) {
  TSAdapt adapt = nullptr;
  TSAdaptType type = nullptr;
  REWIND_PETSC(TSGetAdapt(ts, &adapt));
  REWIND_PETSC(TSAdaptGetType(adapt, &type));
  const std::string name = type ? type : "";
  if (name != TSADAPTBASIC || detail::adapt_increase_delay(adapt) != 0) {
    refuse("the adapter '" + name +
           (name == TSADAPTBASIC ? "' with -ts_adapt_time_step_increase_delay" : "'") +
           " remembers earlier steps, which a resumed run would not; adaptive steps are "
           "resumable with -ts_adapt_type basic (or a fixed step: -ts_adapt_type none)");
  }
  const PetscInt most = detail::max_steps(ts);
  if (most <= 0 || most > kMostAdaptiveSteps) {
    refuse(
        "with adaptive steps the step count is learnt at the end, and a resumable run sizes "
        "its durable step log by the most steps TS may take: give -ts_max_steps (at most " +
        std::to_string(kMostAdaptiveSteps) + ")");
  }
  adaptive_ = true;
  steps_ = most;
}

void ResumableSolve::place_intervals(const Options& o) {
  const PetscInt steps = steps_;
  if (o.resume_interval > 0) {
    interval_ = std::min(o.resume_interval, steps);
  } else {
    if (o.max_cps_disk < 0) {
      refuse(
          "with unlimited disk checkpoints (-ts_trajectory_max_cps_disk -1), give the interval "
          "between durable states: -ts_trajectory_rewind_resume_interval");
    }
    if (o.max_cps_disk < 4) {
      refuse("-ts_trajectory_max_cps_disk " + std::to_string(o.max_cps_disk) +
             " is too few: a resumable run keeps x_0, x_n, an adjoint state and at least one "
             "durable state between on disk (>= 4)");
    }
    interval_ = ceil_div(steps, o.max_cps_disk - 2);
  }
  // ceil(n / interval) durable states, x_n and an adjoint state.
  const PetscInt durable = ceil_div(steps, interval_) + 2;
  if (o.max_cps_disk > 0 && durable > o.max_cps_disk) {
    // The interval that fits (as 0 makes it), if the disk budget holds 4; or the budget that
    // holds this interval's durable states.
    std::string fix = "-ts_trajectory_max_cps_disk " + std::to_string(durable);
    if (o.max_cps_disk >= 4) {
      fix = "-ts_trajectory_rewind_resume_interval " +
            std::to_string(ceil_div(steps, o.max_cps_disk - 2)) + " (or 0, which chooses it), or " +
            fix;
    }
    refuse("-ts_trajectory_rewind_resume_interval " + std::to_string(interval_) + " makes " +
           std::to_string(durable) + " durable checkpoints over " + std::to_string(steps) +
           (adaptive_ ? " steps (-ts_max_steps, with adaptive steps)" : " steps") +
           " (x_0 and every interval, x_n and an adjoint state), more than "
           "-ts_trajectory_max_cps_disk " +
           std::to_string(o.max_cps_disk) + ": give " + fix);
  }
}

// The quadrature's integral and the step log a durable state holds, each rank's copy side by
// side.
void ResumableSolve::size_buffers(MPI_Comm comm) {
  const PetscInt steps = steps_;
  Vec q = nullptr;
  TS quadrature = nullptr;
  REWIND_PETSC(TSGetQuadratureTS(ts_, nullptr, &quadrature));
  if (quadrature) REWIND_PETSC(TSGetSolution(quadrature, &q));
  quadrature_ = q;
  if (quadrature_) {
    integral_field_ = vec_field("integral", quadrature_, comm);
    integral_.assign(integral_field_.data.size(), 0.0);
  }
  PetscMPIInt rank = 0, ranks = 1;
  REWIND_PETSC(MPI_Comm_rank(comm, &rank));
  REWIND_PETSC(MPI_Comm_size(comm, &ranks));
  // The step log: [steps logged, t_0..t_n, dt_0..dt_{n-1}, proposed_0..proposed_n], each rank's
  // copy side by side.
  log_buffer_.assign(3 * static_cast<std::size_t>(steps) + 3, 0.0);
  log_offset_ = static_cast<std::int64_t>(rank) * static_cast<std::int64_t>(log_buffer_.size());
  log_global_ = static_cast<std::int64_t>(ranks) * static_cast<std::int64_t>(log_buffer_.size());
  if (adaptive_) {
    // The attempts of the steps the adapter rejected sizes in, which a recomputation repeats:
    // [steps listed, then per step: step, attempts, per attempt: size, rolled back, choices,
    // per choice: size, accepted], room for about one rejection in two steps.
    attempt_buffer_.assign(4 * static_cast<std::size_t>(steps) + 64, 0.0);
    const auto size = static_cast<std::int64_t>(attempt_buffer_.size());
    attempt_offset_ = static_cast<std::int64_t>(rank) * size;
    attempt_global_ = static_cast<std::int64_t>(ranks) * size;
  }
}

void note_resume_files(TSTrajectory tj, TS ts, const Options& o) {
  const char* dir = detail::dirname(tj);
  if (!dir || o.max_cps_disk == 0) return;
  PetscMPIInt rank = 0;
  MPI_Comm comm = PetscObjectComm((PetscObject)ts);
  REWIND_PETSC(MPI_Comm_rank(comm, &rank));
  if (rank != 0) return;
  const std::string manifest = engine::resume_manifest_path(dir, "ts");
  std::error_code ec;
  if (!std::filesystem::exists(manifest, ec)) return;
  if (engine::resume_run_live(dir, "ts")) {  // its lock is held: a job that has not ended
    std::fprintf(stderr,
                 "rewind: '%s' lists the checkpoints of a resumable run that is live (another "
                 "job, still running, holds '%s.lock'); this run starts at x_0 with checkpoint "
                 "files of its own and leaves that run's files alone\n",
                 manifest.c_str(), manifest.c_str());
    return;
  }
  std::fprintf(stderr,
               "rewind: '%s' lists a killed resumable run's checkpoints; this run does not "
               "resume it (-ts_trajectory_rewind_resume), starts at x_0 with checkpoint files of "
               "its own, and leaves the killed run's files as they are\n",
               manifest.c_str());
}

ResumableSolve::ResumableSolve(TSTrajectory tj, TS ts, const Options& o,
                               std::shared_ptr<engine::Stores> stores, TsStepper& stepper,
                               StepLog& log, PetscInt steps)
    : ts_(ts), stepper_(stepper), log_(log), steps_(steps) {
  const MPI_Comm comm = PetscObjectComm((PetscObject)ts);
  refuse_unsupported(tj, ts, o);
  if (steps_ <= 0) bound_adaptive_steps(ts);
  place_intervals(o);
  size_buffers(comm);
  engine::DurableSettings settings;
  settings.directory = detail::dirname(tj);
  settings.label = "ts";
  settings.identity = identity();
  settings.resume = true;
  // Always: a resumed run whose model is not the killed run's is stopped, not given a wrong
  // gradient (one hash an interval; -ts_trajectory_rewind_verify 0 turns off only the checks
  // inside intervals).
  settings.verify = true;
  settings.steps = steps_;
  settings.interval = interval_;
  settings.elsewhere = "another -ts_trajectory_dirname";
  durable_ = std::make_unique<engine::DurableLog>(std::move(stores), settings, state_fields(),
                                                  std::vector<Field>{});
}

ResumableSolve::~ResumableSolve() = default;

std::string ResumableSolve::identity() const {
  return resume_identity(ts_);
}

std::vector<Field> ResumableSolve::state_fields() {
  std::vector<Field> out = stepper_.state();
  if (quadrature_) {
    out.push_back({"integral", integral_, integral_field_.offset, integral_field_.global_size});
  }
  out.push_back({"step_log", log_buffer_, log_offset_, log_global_});
  if (adaptive_) out.push_back({"attempt_log", attempt_buffer_, attempt_offset_, attempt_global_});
  return out;
}

std::vector<Field> ResumableSolve::adjoint_fields() {
  PetscInt numcost = 0;
  Vec *lambda = nullptr, *mu = nullptr;
  REWIND_PETSC(TSGetCostGradients(ts_, &numcost, &lambda, &mu));
  if (!lambda || numcost <= 0) {
    throw Error(ErrorCode::InvalidArgument,
                "rewind: TSAdjointSolve without cost gradients (TSSetCostGradients)");
  }
  const MPI_Comm comm = PetscObjectComm((PetscObject)ts_);
  names_.clear();
  for (PetscInt i = 0; i < numcost; ++i) {
    names_.push_back("lambda" + std::to_string(i));
    if (mu) names_.push_back("mu" + std::to_string(i));
  }
  std::vector<Field> out;
  std::size_t k = 0;
  for (PetscInt i = 0; i < numcost; ++i) {
    out.push_back(vec_field(names_[k++], lambda[i], comm));
    if (mu) out.push_back(vec_field(names_[k++], mu[i], comm));
  }
  if (quadrature_) out.push_back(vec_field("integral", quadrature_, comm));
  return out;
}

void ResumableSolve::load_log(PetscInt k) {
  const auto n = static_cast<std::size_t>(steps_);
  const auto logged = static_cast<PetscInt>(log_buffer_[0]);
  if (logged < k || logged > steps_) {
    throw Error(ErrorCode::Corrupt, "resume: the durable step log holds " + std::to_string(logged) +
                                        " steps, not " + std::to_string(k));
  }
  const double* times = log_buffer_.data() + 1;
  const double* dts = times + n + 1;
  const double* proposed = dts + n;
  const auto m = static_cast<std::size_t>(k);
  log_.times.assign(times, times + m + 1);
  log_.dts.assign(dts, dts + m);
  log_.proposed.assign(proposed, proposed + m + 1);
  log_.attempts.clear();
  if (!adaptive_) return;
  std::size_t at = 0;
  const auto next = [&] {
    if (at >= attempt_buffer_.size()) {
      throw Error(ErrorCode::Corrupt, "resume: the durable attempt log runs past its end");
    }
    return attempt_buffer_[at++];
  };
  const auto listed = static_cast<std::size_t>(next());
  for (std::size_t j = 0; j < listed; ++j) {
    const auto step = static_cast<std::size_t>(next());
    std::vector<Attempt> attempts(static_cast<std::size_t>(next()));
    for (Attempt& a : attempts) {
      a.h = next();
      a.rolled_back = next() != 0.0;
      a.choices.resize(static_cast<std::size_t>(next()));
      for (Choice& c : a.choices) {
        c.h = next();
        c.accepted = next() != 0.0;
      }
    }
    if (step < m) log_.attempts[step] = std::move(attempts);
  }
}

void ResumableSolve::store_attempts(PetscInt k) {
  std::fill(attempt_buffer_.begin(), attempt_buffer_.end(), 0.0);
  std::size_t at = 1;
  const auto put = [&](double v) {
    if (at >= attempt_buffer_.size()) {
      throw Error(ErrorCode::InvalidArgument,
                  "-ts_trajectory_rewind_resume: the adapter rejected sizes in so many steps "
                  "before step " +
                      std::to_string(k) + " that their attempts do not fit the durable step log (" +
                      std::to_string(attempt_buffer_.size()) +
                      " values); give a larger -ts_max_steps or run without resume");
    }
    attempt_buffer_[at++] = v;
  };
  double listed = 0;
  for (const auto& [step, attempts] : log_.attempts) {
    if (static_cast<PetscInt>(step) >= k) break;
    ++listed;
    put(static_cast<double>(step));
    put(static_cast<double>(attempts.size()));
    for (const Attempt& a : attempts) {
      put(a.h);
      put(a.rolled_back ? 1.0 : 0.0);
      put(static_cast<double>(a.choices.size()));
      for (const Choice& c : a.choices) {
        put(c.h);
        put(c.accepted ? 1.0 : 0.0);
      }
    }
  }
  attempt_buffer_[0] = listed;
}

void ResumableSolve::jump(const engine::ManifestEntry& entry, PetscInt k, bool warm) {
  durable_->load(entry, state_fields());
  load_log(k);
  if (quadrature_) {
    PetscScalar* a = nullptr;
    REWIND_PETSC(VecGetArray(quadrature_, &a));
    for (std::size_t j = 0; j < integral_.size(); ++j) a[j] = integral_[j];
    REWIND_PETSC(VecRestoreArray(quadrature_, &a));
  }
  stepper_.loaded(engine::Kind::Restart);
  const auto m = static_cast<std::size_t>(k);
  if (warm) {
    // The TS has just taken step k - 1 again (check_program()), to the same bits: what it keeps
    // of its last steps (the theta method's previous state and step size, which its error
    // estimate reads; a first-same-as-last method's reused stage) is the killed run's, and the
    // next step must not start afresh.
    detail::restart_history(ts_, false);
  } else {
    stepper_.resume_at(k);  // (a first-same-as-last method's rebuild moves the clock)
  }
  detail::set_clock(ts_, {k, log_.times[m], log_.times[m > 0 ? m - 1 : 0]});
  REWIND_PETSC(TSSetTimeStep(ts_, log_.proposed[m]));
  resumed_at_ = k;
}

ResumableSolve::From ResumableSolve::open() {
  durable_->open();
  const engine::Manifest& m = durable_->manifest();
  if (m.states.empty()) {  // a fresh start
    reached(0, false);
    return From::Start;
  }
  // The killed run's x_0 must be this one's: a program that solves more than once (an
  // optimisation loop) resumes the solve it was killed in only if it starts it again first.
  {
    // The solution only: at x_0 a first-same-as-last method's reused stage holds nothing yet.
    const std::vector<Field> now = stepper_.state();
    const auto& blocks =
        m.states.front()
            .blocks[static_cast<std::size_t>(comm::comm_rank(PetscObjectComm((PetscObject)ts_)))];
    std::optional<Error> differs;
    for (std::size_t f = 0; f < 1 && f < now.size() && f < blocks.size(); ++f) {
      if (storage::block_checksum(now[f].data) == blocks[f].checksum) continue;
      differs.emplace(ErrorCode::InvalidArgument,
                      "-ts_trajectory_rewind_resume: this TSSolve starts from another initial "
                      "state than the killed run's (field '" +
                          std::string(now[f].name) +
                          "' differs), so it is not resumed; a program that solves more than "
                          "once resumes only the solve it was killed in, started again from the "
                          "same state. Remove the killed run's files (rewind-ts.resume*) to "
                          "start again");
      break;
    }
    agree(PetscObjectComm((PetscObject)ts_), differs);
  }
  if (m.final_state) {
    final_ = static_cast<PetscInt>(m.final_state->step);
    jump(*m.final_state, final_, false);
    return m.reverse ? From::Reverse : From::Complete;
  }
  const engine::ManifestEntry& last = m.states.back();
  if (last.step == 0) {
    resumed_at_ = 0;
    return From::Start;
  }
  const auto k = static_cast<PetscInt>(last.step);
  check_program(k);
  jump(last, k, true);
  return From::Forward;
}

void ResumableSolve::check_program(PetscInt k) {
  // The step log up to k (the durable state at a holds it only up to a), then x_a.
  durable_->load(durable_->state_at(k), state_fields());
  load_log(k);
  const PetscInt a = k - interval_;
  load_state(a);
  stepper_.set_first(a);
  for (PetscInt i = 0; i < k - a; ++i) {
    stepper_.forward(i, engine::StepContext{.record = false, .recompute = true});
  }
  durable_->check_resume_point(a, k, stepper_.state());
  checked_steps_ = k - a;
}

void ResumableSolve::reached(PetscInt k, bool last) {
  if (!last && k % interval_ != 0) return;
  const auto n = static_cast<std::size_t>(steps_);
  std::fill(log_buffer_.begin(), log_buffer_.end(), 0.0);
  log_buffer_[0] = static_cast<double>(k);
  double* times = log_buffer_.data() + 1;
  double* dts = times + n + 1;
  double* proposed = dts + n;
  const auto m = static_cast<std::size_t>(k);
  if (log_.times.size() <= m || log_.dts.size() < m || log_.proposed.size() <= m) {
    throw Error(ErrorCode::Internal,
                "resume: the step log does not reach step " + std::to_string(k));
  }
  log_.times.copy_to(times, m + 1);
  log_.proposed.copy_to(proposed, m + 1);
  log_.dts.copy_to(dts, m);
  if (quadrature_) {
    const PetscScalar* a = nullptr;
    REWIND_PETSC(VecGetArrayRead(quadrature_, &a));
    for (std::size_t j = 0; j < integral_.size(); ++j) integral_[j] = PetscRealPart(a[j]);
    REWIND_PETSC(VecRestoreArrayRead(quadrature_, &a));
  }
  if (adaptive_) store_attempts(k);
  if (last) {
    final_ = k;
    durable_->save_final(k, state_fields());
  } else {
    durable_->save(false, k, state_fields());
  }
}

PetscInt ResumableSolve::load_adjoint() {
  const engine::Manifest& m = durable_->manifest();
  if (!m.reverse) throw Error(ErrorCode::Internal, "resume: no durable adjoint state");
  const std::vector<Field> fields = adjoint_fields();
  if (!adjoint_layout_) durable_->set_adjoint_layout(fields);
  adjoint_layout_ = true;
  durable_->load(*m.reverse, fields);
  PetscInt numcost = 0;
  Vec *lambda = nullptr, *mu = nullptr;
  REWIND_PETSC(TSGetCostGradients(ts_, &numcost, &lambda, &mu));
  for (PetscInt i = 0; i < numcost; ++i) {
    mark_changed(lambda[i]);
    if (mu) mark_changed(mu[i]);
  }
  if (quadrature_) mark_changed(quadrature_);
  resumed_at_ = static_cast<PetscInt>(m.reverse->step);
  return resumed_at_;
}

void ResumableSolve::adjoint_reached(PetscInt b) {
  const std::vector<Field> fields = adjoint_fields();
  if (!adjoint_layout_) durable_->set_adjoint_layout(fields);
  adjoint_layout_ = true;
  durable_->save(true, b, fields);
}

void ResumableSolve::load_state(PetscInt a) {
  durable_->load(durable_->state_at(a), state_fields());
  stepper_.loaded(engine::Kind::Restart);
}

void ResumableSolve::check(PetscInt b) {
  durable_->check_replay(b, stepper_.state());
}

void ResumableSolve::finish() {
  durable_->finish();
}

const engine::DurableTraffic& ResumableSolve::traffic() const {
  return durable_->traffic();
}

}  // namespace rwd::petsc
