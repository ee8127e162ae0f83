// The `rewind` TSTrajectory type. This is the only file that includes PETSc's private TS header:
// the TSTrajectory ops table and the TS fields a trajectory must restore live there.
#include <petsc/private/tsimpl.h>
#include <petscversion.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rewind/engine/cursor.hpp"
#include "rewind/error.hpp"
#include "rewind/petsc/trajectory.h"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "rewind/timing.hpp"

#if PETSC_VERSION_LT(3, 18, 0) || PETSC_VERSION_GE(3, 23, 0)
#error "rewind's trajectory is written against the TSTrajectory ops table of PETSc 3.18-3.22"
#endif

namespace {

using rwd::Error;
using rwd::ErrorCode;
using rwd::engine::Field;
using rwd::engine::Step;
namespace rs = rwd::schedule;

// Throws rwd::Error if a PETSc call failed (the PETSc error stack is already printed).
void check(PetscErrorCode ierr, const char* what) {
  if (ierr) throw Error(ErrorCode::Internal, std::string("PETSc call failed: ") + what);
}
#define REWIND_PETSC(call) check((call), #call)

constexpr std::int64_t kUnlimitedRam = std::int64_t{1} << 40;

struct Options {
  std::string schedule = "auto";
  PetscInt max_cps_ram = -1;   // -1: not given (store everything)
  PetscInt max_cps_disk = 0;   // -1: unlimited
  PetscReal write_cost = 1.0;  // < 0: measure ("auto")
  PetscReal read_cost = 1.0;   // < 0: measure ("auto")
  PetscBool async = PETSC_TRUE;
  PetscReal ram_bytes = 0;  // 0: not given
};

struct Rewind;

// The engine's view of a PETSc TS: the state is vec_sol; a step's pullback data is its stages
// plus the solution at its end; recomputing a step is TSStep with the step size it used.
class TsStepper final : public rwd::engine::Stepper {
 public:
  TsStepper(TS ts, Rewind& rw) : ts_(ts), rw_(rw) {}

  // For a first-same-as-last RK method the restart data also holds the previous step's last
  // stage value, from which a restored run rebuilds the reused stage derivative (forward()).
  std::vector<Field> state() override {
    std::vector<Field> out{field("X", ts_->vec_sol)};
    if (fsal) {
      PetscInt ns = 0;
      Vec* Y = nullptr;
      REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
      out.push_back(field("Y_last", Y[ns - 1]));
    }
    return out;
  }

  bool fsal = false;      // first-same-as-last RK: see state() and forward()
  bool restored = false;  // a restart checkpoint was just loaded

  std::vector<Field> pullback() override {
    PetscInt ns = 0;
    Vec* Y = nullptr;
    REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
    std::vector<Field> out;
    bool has_solution = false;
    for (PetscInt j = 0; j < ns; ++j) {
      has_solution = has_solution || Y[j] == ts_->vec_sol;
      out.push_back(field(stage_name(j), Y[j]));
    }
    if (!has_solution) out.push_back(field("X", ts_->vec_sol));
    return out;
  }

  void loaded(bool restart) override {
    REWIND_PETSC(PetscObjectStateIncrease((PetscObject)ts_->vec_sol));
    if (!restart) {
      PetscInt ns = 0;
      Vec* Y = nullptr;
      REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
      for (PetscInt j = 0; j < ns; ++j) REWIND_PETSC(PetscObjectStateIncrease((PetscObject)Y[j]));
    } else {
      ts_->steprestart = PETSC_TRUE;  // first-same-as-last methods must not reuse a stale stage
      restored = true;
    }
  }

  void forward(Step i, bool record) override;
  void on_io(bool write, bool begin) override;
  void adjoint(Step) override {
    throw Error(ErrorCode::Internal, "rewind: PETSc runs the adjoint steps itself");
  }

 private:
  std::string stage_name(PetscInt j) const { return "Y" + std::to_string(j); }

  Field field(const std::string& name, Vec v) {
    PetscScalar* a = nullptr;
    PetscInt n = 0, lo = 0, hi = 0, N = 0;
    REWIND_PETSC(VecGetLocalSize(v, &n));
    REWIND_PETSC(VecGetOwnershipRange(v, &lo, &hi));
    REWIND_PETSC(VecGetSize(v, &N));
    REWIND_PETSC(VecGetArray(v, &a));
    PetscScalar* keep = a;
    REWIND_PETSC(VecRestoreArray(v, &a));  // standard vectors keep their array; see loaded()
    return {*names_.insert(name).first,
            std::span<double>(reinterpret_cast<double*>(keep), static_cast<std::size_t>(n)), lo, N};
  }

  TS ts_;
  Rewind& rw_;
  std::set<std::string> names_;  // stable storage for field names
};

// The exact size of an accepted adaptive step is not kept by TS: TSStep adds it to ptime and
// replaces it by the next proposal before TSTrajectorySet runs. TSAdaptChoose receives it,
// though, so the adapter's choose method is wrapped to record the size of every attempt and
// whether it was accepted; the attempts before set(k) are those of step k-1, the last accepted.
//
// A recomputed step must also repeat the attempts its forward run rejected: rejecting does not
// always restore the state bit for bit (RK rolls back by subtracting the update it added,
// x + h*sum(b_j k_j) - h*sum(b_j k_j), which may differ from x in the last bit), and the
// accepted attempt started from that rolled-back state. So while a step is recomputed the
// wrapper plays a script instead of the adapter: it rejects the recorded rejected attempts,
// handing the next recorded size, and accepts the last.
using ChooseFn = PetscErrorCode (*)(TSAdapt, TS, PetscReal, PetscInt*, PetscReal*, PetscBool*,
                                    PetscReal*, PetscReal*, PetscReal*);
struct Attempt {
  PetscReal h = 0;
  bool accepted = false;
};
struct ChooseHook {
  ChooseFn original = nullptr;
  std::vector<Attempt> attempts;  // since the last take_attempts()
  bool replaying = false;
  std::vector<PetscReal> script;  // the sizes of the attempts to replay; all but the last rejected
  std::size_t played = 0;
  PetscReal proposal = 0;  // the next step size to hand back when the last attempt is accepted
};
std::map<TSAdapt, ChooseHook>& choose_hooks() {
  static std::map<TSAdapt, ChooseHook> hooks;
  return hooks;
}

PetscErrorCode recording_choose(TSAdapt adapt, TS ts, PetscReal h, PetscInt* next_sc,
                                PetscReal* next_h, PetscBool* accept, PetscReal* wlte,
                                PetscReal* wltea, PetscReal* wlter) {
  PetscFunctionBegin;
  auto it = choose_hooks().find(adapt);
  PetscCheck(it != choose_hooks().end(), PETSC_COMM_SELF, PETSC_ERR_PLIB,
             "rewind: lost TSAdapt hook");
  ChooseHook& hook = it->second;
  if (hook.replaying) {
    // An attempt of a different size than recorded is accepted; the caller then finds the step
    // ending at the wrong time and says so.
    const std::size_t j = hook.played++;
    const bool reject = j + 1 < hook.script.size() && h == hook.script[j];
    *next_sc = 0;
    *accept = reject ? PETSC_FALSE : PETSC_TRUE;
    *next_h = reject ? hook.script[j + 1] : (hook.proposal > 0 ? hook.proposal : h);
    *wlte = *wltea = *wlter = -1;
    PetscFunctionReturn(0);
  }
  PetscCall(hook.original(adapt, ts, h, next_sc, next_h, accept, wlte, wltea, wlter));
  PetscCallCXX(hook.attempts.push_back({h, *accept == PETSC_TRUE}));
  PetscFunctionReturn(0);
}

void hook_adapt(TS ts) {
  TSAdapt adapt = nullptr;
  REWIND_PETSC(TSGetAdapt(ts, &adapt));
  if (!adapt->ops->choose || adapt->ops->choose == recording_choose) return;
  ChooseHook hook;
  hook.original = adapt->ops->choose;
  choose_hooks()[adapt] = std::move(hook);
  adapt->ops->choose = recording_choose;
}

void unhook_adapt(TS ts) {
  if (!ts || !ts->adapt) return;
  auto it = choose_hooks().find(ts->adapt);
  if (it == choose_hooks().end()) return;
  if (ts->adapt->ops->choose == recording_choose) ts->adapt->ops->choose = it->second.original;
  choose_hooks().erase(it);
}

ChooseHook* active_hook(TS ts) {
  auto it = choose_hooks().find(ts->adapt);
  if (it == choose_hooks().end() || ts->adapt->ops->choose != recording_choose) return nullptr;
  return &it->second;
}

// The attempts the hook saw since the last call (none if it is not installed); clears them.
std::vector<Attempt> take_attempts(TS ts) {
  ChooseHook* hook = active_hook(ts);
  return hook ? std::exchange(hook->attempts, {}) : std::vector<Attempt>{};
}

// While alive, the hook replays `script` (see ChooseHook) instead of asking the adapter.
class ReplayAttempts {
 public:
  ReplayAttempts(TS ts, std::vector<PetscReal> script, PetscReal proposal)
      : hook_(active_hook(ts)) {
    if (!hook_) return;
    hook_->replaying = true;
    hook_->script = std::move(script);
    hook_->played = 0;
    hook_->proposal = proposal;
  }
  ~ReplayAttempts() {
    if (hook_) hook_->replaying = false;
  }
  ReplayAttempts(const ReplayAttempts&) = delete;
  ReplayAttempts& operator=(const ReplayAttempts&) = delete;

 private:
  ChooseHook* hook_;
};

struct Rewind {
  Options opt;
  std::unique_ptr<TsStepper> stepper;
  std::unique_ptr<rwd::engine::Cursor> cursor;
  std::vector<PetscReal> times;     // t_k for k = 0..last_set
  std::vector<PetscReal> proposed;  // the step size TS proposed at set(k)
  std::vector<PetscReal> dts;       // the exact size of step k (t_k -> t_{k+1})
  // The sizes of the attempts the adapter rejected before accepting step k (few steps have any).
  std::map<std::size_t, std::vector<PetscReal>> rejected;
  PetscInt replayed_rejections = 0;  // rejected attempts repeated while recomputing, this run
  PetscInt last_set = -1;
  PetscInt prepared = -1;  // the adjoint step whose data the cursor prepared
  bool forward_ended = false;
  rs::ScheduleParams params;
  std::string schedule;        // what the run uses ("auto" resolved); empty until planned
  bool stores_stages = false;  // its checkpoints hold stages (RAM slots counted in those)
  rwd::engine::RunStats stats;
  bool have_stats = false;
  // For the "auto" disk costs: wall time between accepted steps of the last first sweep.
  std::chrono::steady_clock::time_point last_set_time;
  double step_seconds_sum = 0.0;
  PetscInt step_seconds_count = 0;
  double measured_step_seconds = 0.0;  // mean over the previous run, 0 if none yet
  double first_step_seconds = 0.0;     // this run's first step
  bool deferred = false;               // planning waits for the first step (auto costs)
  PetscInt planned_steps = 0;          // counted at set(0); 0 = adaptive (online)
  Vec x0 = nullptr;                    // x_0, kept while planning waits
  TS ts = nullptr;                     // the TS whose adapter is hooked
  ~Rewind() {
    unhook_adapt(ts);
    VecDestroy(&x0);
  }
  std::string cost_note;  // how the costs were obtained, for the view
};

PetscLogEvent ev_plan = 0, ev_recompute = 0, ev_store = 0, ev_load = 0;

void TsStepper::on_io(bool write, bool begin) {
  const PetscLogEvent e = write ? ev_store : ev_load;
  REWIND_PETSC(begin ? PetscLogEventBegin(e, 0, 0, 0, 0) : PetscLogEventEnd(e, 0, 0, 0, 0));
}

void TsStepper::forward(Step i, bool) {
  // Recompute step i from x_i (already in vec_sol) as the forward run took it: the attempts the
  // adapter rejected, then the accepted one with the exact size it used.
  const TSConvergedReason reason = ts_->reason;
  TSAdapt adapt = nullptr;
  REWIND_PETSC(TSGetAdapt(ts_, &adapt));
  // On every exit, an error included: the adapter accepts as the user set it, the rejection
  // count is the forward run's (it counted these attempts already), the log event is closed.
  struct Restore {
    TS ts;
    TSAdapt adapt;
    PetscBool always_accept;
    PetscInt reject;
    ~Restore() {
      TSAdaptSetAlwaysAccept(adapt, always_accept);
      ts->reject = reject;
      PetscLogEventEnd(ev_recompute, 0, 0, 0, 0);
    }
  };
  REWIND_PETSC(PetscLogEventBegin(ev_recompute, 0, 0, 0, 0));
  const Restore restore{ts_, adapt, adapt->always_accept, ts_->reject};
  const auto k = static_cast<std::size_t>(i);
  // The rejected attempts can be replayed only through the hooked adapter, and only while no
  // event handler makes TSAdaptChoose skip it; otherwise the accepted size alone.
  const bool scripted =
      active_hook(ts_) != nullptr && (ts_->event == nullptr || ts_->event->status == TSEVENT_NONE);
  std::vector<PetscReal> attempts;
  if (auto r = rw_.rejected.find(k); scripted && r != rw_.rejected.end()) attempts = r->second;
  rw_.replayed_rejections += static_cast<PetscInt>(attempts.size());
  attempts.push_back(rw_.dts[k]);
  ts_->steps = static_cast<PetscInt>(i);
  ts_->ptime = rw_.times[k];
  ts_->ptime_prev = k > 0 ? rw_.times[k - 1] : rw_.times[0];
  ts_->reason = TS_CONVERGED_ITERATING;
  REWIND_PETSC(TSAdaptSetAlwaysAccept(adapt, PETSC_TRUE));  // if the adapter is not hooked
  if (fsal && restored && i > 0) {
    // In the forward run step i reused f(t_i, Y_last) of step i-1 as its first stage
    // derivative. A zero-length step from Y_last at t_i evaluates exactly that (every stage of
    // it is Y_last), leaving it where the next step takes it from; then x_i is put back.
    PetscInt ns = 0;
    Vec* Y = nullptr;
    REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
    Vec x = nullptr;
    REWIND_PETSC(VecDuplicate(ts_->vec_sol, &x));
    REWIND_PETSC(VecCopy(ts_->vec_sol, x));
    REWIND_PETSC(VecCopy(Y[ns - 1], ts_->vec_sol));
    REWIND_PETSC(TSSetTimeStep(ts_, 0.0));
    ts_->steprestart = PETSC_TRUE;
    {
      ReplayAttempts accept_it(ts_, {}, 0);
      REWIND_PETSC(TSStep(ts_));
    }
    REWIND_PETSC(VecCopy(x, ts_->vec_sol));
    REWIND_PETSC(VecDestroy(&x));
    ts_->steps = static_cast<PetscInt>(i);
    ts_->ptime = rw_.times[k];
    ts_->ptime_prev = rw_.times[k - 1];
    ts_->steprestart = PETSC_FALSE;
  }
  restored = false;
  REWIND_PETSC(TSSetTimeStep(ts_, attempts.front()));
  {
    ReplayAttempts replay(ts_, std::move(attempts), rw_.proposed[k + 1]);
    REWIND_PETSC(TSStep(ts_));
  }
  if (ts_->reason < 0) {
    throw Error(ErrorCode::Internal, "rewind: recomputing step " + std::to_string(i) + " failed (" +
                                         TSConvergedReasons[ts_->reason] + ")");
  }
  if (ts_->ptime != rw_.times[k + 1]) {
    throw Error(ErrorCode::Internal, "rewind: recomputed step " + std::to_string(i) +
                                         " ended at t = " + std::to_string(ts_->ptime) +
                                         ", the forward run at " +
                                         std::to_string(rw_.times[k + 1]));
  }
  REWIND_PETSC(TSPostStep(ts_));
  ts_->reason = reason;
}

Rewind& data(TSTrajectory tj) {
  return *static_cast<Rewind*>(tj->data);
}

// The number of steps TSSolve will take with a fixed step (adapter "none"), replaying its
// arithmetic: ptime += time_step, and MATCHSTEP's clipping in TSAdaptChoose.
PetscInt planned_steps(TS ts) {
  PetscReal t = ts->ptime, dt = ts->time_step;
  PetscInt k = ts->steps;
  if (k >= ts->max_steps || t >= ts->max_time) return 0;
  while (true) {
    t += dt;
    ++k;
    if (k >= ts->max_steps || t >= ts->max_time) break;
    if (ts->exact_final_time == TS_EXACTFINALTIME_MATCHSTEP && t + dt >= ts->max_time) {
      const PetscReal rest = ts->max_time - t;
      if (rest > PETSC_SMALL) {
        dt = rest;
      } else {
        break;
      }
    }
  }
  return k - ts->steps;
}

bool adaptive(TS ts) {
  TSAdapt adapt = nullptr;
  REWIND_PETSC(TSGetAdapt(ts, &adapt));
  PetscBool none = PETSC_FALSE;
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)adapt, TSADAPTNONE, &none));
  return !none;
}

// Seconds to write (with fsync) and read back (with the page cache dropped) one checkpoint of
// this rank's state in the checkpoint directory; the largest over the ranks.
std::pair<double, double> probe_disk(TSTrajectory tj, TS ts) {
  using Clock = std::chrono::steady_clock;
  MPI_Comm comm = PetscObjectComm((PetscObject)ts);
  PetscMPIInt rank = 0;
  MPI_Comm_rank(comm, &rank);
  PetscInt n = 0;
  REWIND_PETSC(VecGetLocalSize(ts->vec_sol, &n));
  std::vector<char> bytes(
      std::max<std::size_t>(static_cast<std::size_t>(n) * sizeof(PetscScalar), 4096), 'r');
  const std::string dir = tj->dirname ? tj->dirname : ".";
  const std::string path =
      dir + "/rewind-probe-" + std::to_string(getpid()) + "-" + std::to_string(rank) + ".tmp";
  double times[2] = {0.0, 0.0};
  int failed = 0;
  auto t0 = Clock::now();
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()) ||
      ::fsync(fd) != 0) {
    failed = 1;
  }
  if (fd >= 0) {
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  times[0] = rwd::seconds_since(t0);
  t0 = Clock::now();
  fd = failed ? -1 : ::open(path.c_str(), O_RDONLY);
  if (fd < 0 || ::read(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
    failed = 1;
  if (fd >= 0) ::close(fd);
  times[1] = rwd::seconds_since(t0);
  ::unlink(path.c_str());
  int any_failed = 0;
  double worst[2] = {0.0, 0.0};
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm);
  MPI_Allreduce(times, worst, 2, MPI_DOUBLE, MPI_MAX, comm);
  if (any_failed) {
    throw Error(ErrorCode::Io,
                "measuring disk costs: could not write and read a probe file in "
                "-ts_trajectory_dirname " +
                    dir +
                    "; give a writable directory or "
                    "numeric -ts_trajectory_rewind_write_cost/read_cost");
  }
  return {worst[0], worst[1]};
}

// Seconds per step, the largest over the ranks: the mean of the previous run's steps if there
// was one, else the first step of this run (planning waits for it; see set()).
double step_seconds(const Rewind& rw, TS ts) {
  double local = rw.measured_step_seconds > 0 ? rw.measured_step_seconds : rw.first_step_seconds;
  double worst = 0.0;
  MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, PetscObjectComm((PetscObject)ts));
  return std::max(worst, 1e-9);
}

bool auto_costs(const Rewind& rw) {
  return rw.opt.write_cost < 0 || rw.opt.read_cost < 0;
}

void plan_run(TSTrajectory tj, TS ts);

void start_run(TSTrajectory tj, TS ts, PetscReal t0) {
  Rewind& rw = data(tj);
  rw.cursor.reset();
  rw.have_stats = false;
  rw.times.assign(1, t0);
  rw.proposed.assign(1, ts->time_step);
  rw.dts.clear();
  rw.rejected.clear();
  rw.replayed_rejections = 0;
  rw.last_set = 0;
  rw.prepared = -1;
  rw.forward_ended = false;
  if (!tj->adjoint_solve_mode) {
    throw Error(ErrorCode::InvalidArgument,
                "-ts_trajectory_type rewind serves adjoint solves only; use -ts_trajectory_type "
                "memory for other uses of the trajectory");
  }
  rw.stepper = std::make_unique<TsStepper>(ts, rw);
  rw.ts = ts;
  hook_adapt(ts);
  take_attempts(ts);
  rw.planned_steps = adaptive(ts) ? 0 : planned_steps(ts);
  PetscBool is_rk = PETSC_FALSE, fsal = PETSC_FALSE;
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)ts, TSRK, &is_rk));
  if (is_rk) {
    REWIND_PETSC(
        TSRKGetTableau(ts, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &fsal));
  }
  rw.stepper->fsal = fsal == PETSC_TRUE;
  rw.step_seconds_sum = 0.0;
  rw.step_seconds_count = 0;
  rw.first_step_seconds = 0.0;
  rw.last_set_time = std::chrono::steady_clock::now();
  // Measured disk costs are in units of a step: with no step timed yet, keep x_0 aside and plan
  // once the first step has been timed.
  rw.deferred = auto_costs(rw) && rw.opt.max_cps_disk != 0 && rw.measured_step_seconds <= 0;
  if (rw.deferred) {
    REWIND_PETSC(VecDestroy(&rw.x0));
    REWIND_PETSC(VecDuplicate(ts->vec_sol, &rw.x0));
    REWIND_PETSC(VecCopy(ts->vec_sol, rw.x0));
    return;
  }
  plan_run(tj, ts);
}

void plan_run(TSTrajectory tj, TS ts) {
  Rewind& rw = data(tj);
  MPI_Comm comm = PetscObjectComm((PetscObject)ts);
  // Planned into locals and kept only once the cursor exists, so a failed plan leaves the last
  // run's schedule, budget and costs for the view and TSTrajectoryRewindGetSchedule intact.
  rs::ScheduleParams p;
  std::string cost_note = "given";
  p.steps = rw.planned_steps;
  p.write_cost = rw.opt.write_cost;
  p.read_cost = rw.opt.read_cost;
  p.disk = rw.opt.max_cps_disk < 0 ? rs::kUnlimited : rw.opt.max_cps_disk;
  if (rw.opt.write_cost < 0 || rw.opt.read_cost < 0) {
    if (p.disk == 0) {
      p.write_cost = std::max<PetscReal>(rw.opt.write_cost, 0);
      p.read_cost = std::max<PetscReal>(rw.opt.read_cost, 0);
      cost_note = "auto: no disk budget, not measured";
    } else {
      const auto [write_s, read_s] = probe_disk(tj, ts);
      const double step_s = step_seconds(rw, ts);
      if (rw.opt.write_cost < 0) p.write_cost = std::clamp(write_s / step_s, 1e-3, 1e6);
      if (rw.opt.read_cost < 0) p.read_cost = std::clamp(read_s / step_s, 1e-3, 1e6);
      char note[160];
      std::snprintf(
          note, sizeof note, "auto: write %.3g ms, read %.3g ms, step %.3g ms (%s)", write_s * 1e3,
          read_s * 1e3, step_s * 1e3,
          rw.measured_step_seconds > 0 ? "mean step of the last run" : "first step of this run");
      cost_note = note;
    }
  }
  const bool budget_given = rw.opt.max_cps_ram >= 0 || rw.opt.ram_bytes > 0;
  // A restart checkpoint holds the state; a stage checkpoint (one step's pullback data) holds the
  // stages and the state. A byte budget therefore gives the two kinds different slot counts:
  // schedules that store stages are priced with stage-sized slots.
  p.ram = rw.opt.max_cps_ram >= 0 ? rw.opt.max_cps_ram : (p.steps > 0 ? p.steps : kUnlimitedRam);
  std::int64_t ram_for_stages = p.ram;
  if (rw.opt.ram_bytes > 0) {
    // Every rank must plan the same schedule: size slots by the largest local state.
    PetscInt n = 0;
    REWIND_PETSC(VecGetLocalSize(ts->vec_sol, &n));
    long long local = static_cast<long long>(n) * static_cast<long long>(sizeof(PetscScalar));
    long long vector_bytes = 0;
    MPI_Allreduce(&local, &vector_bytes, 1, MPI_LONG_LONG, MPI_MAX, comm);
    // A restart checkpoint holds every state field (two vectors for FSAL Runge-Kutta); a stage
    // checkpoint holds the stages and the solution.
    const long long largest = vector_bytes * static_cast<long long>(rw.stepper->state().size());
    const long long per_stage_checkpoint =
        vector_bytes * static_cast<long long>(rw.stepper->pullback().size());
    const auto slots = [&](long long bytes) {
      return bytes > 0 ? static_cast<std::int64_t>(rw.opt.ram_bytes / static_cast<double>(bytes))
                       : kUnlimitedRam;
    };
    rwd::require(slots(largest) >= 1, "-ts_trajectory_rewind_ram_bytes " +
                                          std::to_string(static_cast<long long>(rw.opt.ram_bytes)) +
                                          " holds no checkpoint of " + std::to_string(largest) +
                                          " bytes; raise it");
    p.ram = std::min<std::int64_t>(p.ram, slots(largest));
    ram_for_stages = std::min<std::int64_t>(ram_for_stages, slots(per_stage_checkpoint));
  }
  if (p.steps > 0) {  // more slots than steps are of no use
    p.ram = std::min<std::int64_t>(p.ram, p.steps);
    ram_for_stages = std::min<std::int64_t>(ram_for_stages, p.steps);
  }

  // Schedules that store stages are priced, and run, with stage-sized slots; none may when
  // stages are not allowed or do not fit.
  const auto& registry = rs::ScheduleRegistry::instance();
  const std::optional<std::int64_t> stage_slots =
      tj->solution_only ? std::nullopt : std::optional<std::int64_t>(ram_for_stages);
  std::string name = rw.opt.schedule;
  std::optional<bool> stores_stages;  // known exactly when the schedule was replayed
  if (name == "auto" && !budget_given && p.disk == 0 && !tj->solution_only) {
    name = "storeall";
  } else if (name == "auto" && p.steps == 0) {
    name = registry.choose(p);
  } else if (name == "auto") {
    // Replay every registered schedule that fits and keep the cheapest.
    rs::PricedSchedule best;
    try {
      best = registry.choose_priced(p, stage_slots);
    } catch (const Error& err) {
      if (err.code() != ErrorCode::InvalidArgument) throw;
      throw Error(ErrorCode::InvalidArgument,
                  "no schedule fits " + rs::describe(p) +
                      (tj->solution_only ? " without storing stages" : "") +
                      "; raise -ts_trajectory_max_cps_ram or -ts_trajectory_max_cps_disk\n" +
                      err.what());
    }
    name = best.name;
    p = best.params;
    stores_stages = best.stores_pullback;
  } else if (p.steps > 0) {
    const auto priced = registry.price(name, p, stage_slots);
    if (!priced) {
      throw Error(ErrorCode::InvalidArgument,
                  "-ts_trajectory_rewind_schedule " + name +
                      (tj->solution_only
                           ? " stores stages, which -ts_trajectory_solution_only forbids; choose "
                             "another schedule or drop -ts_trajectory_solution_only"
                           : " stores stages, and -ts_trajectory_rewind_ram_bytes holds none; "
                             "raise it or choose another schedule"));
    }
    p = priced->params;
    stores_stages = priced->stores_pullback;
  }
  if (!stores_stages) {
    // Not replayed (no step count, or store-all by default): what the schedule may do.
    stores_stages = false;
    for (const auto& e : registry.list()) {
      if (e.name == name) stores_stages = !tj->solution_only && !e.restart_only;
    }
  }

  rwd::engine::EngineConfig config;
  config.schedule = name;
  config.params = p;
  config.async_io = rw.opt.async;
  config.store.comm = comm;
  config.store.directory = tj->dirname ? tj->dirname : ".";
  config.store.keep_files = tj->keepfiles;
  config.store.label = "ts";
  REWIND_PETSC(PetscLogEventBegin(ev_plan, 0, 0, 0, 0));
  rw.cursor = std::make_unique<rwd::engine::Cursor>(*rw.stepper, config);
  REWIND_PETSC(PetscLogEventEnd(ev_plan, 0, 0, 0, 0));
  rw.params = p;
  rw.schedule = name;
  rw.stores_stages = *stores_stages;
  rw.cost_note = cost_note;
}

// Completes the run once the adjoint of step 0 has been prepared (PETSc has run it by the time
// it calls get() after its loop, or views the trajectory). A reverse sweep split over several
// TSAdjointSolve calls (TSAdjointSetSteps) keeps its cursor until then.
void finish_run(TSTrajectory tj) {
  Rewind& rw = data(tj);
  if (!rw.cursor || rw.prepared != 0) return;
  rw.cursor->adjoint_done(0);
  rw.stats = rw.cursor->finish();
  rw.have_stats = true;
  tj->recomps = static_cast<PetscInt>(rw.stats.recomputed());
  tj->diskreads = static_cast<PetscInt>(rw.stats.disk.reads);
  tj->diskwrites = static_cast<PetscInt>(rw.stats.disk.writes);
  rw.cursor.reset();
  rw.prepared = -1;
}

void set(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal time) {
  Rewind& rw = data(tj);
  if (stepnum == 0) {
    if (rw.last_set == 0 && (rw.cursor || rw.deferred) && rw.times.size() == 1)
      return;  // repeated set(0)
    start_run(tj, ts, time);
    return;
  }
  if (rw.deferred && stepnum == 1) {
    rw.first_step_seconds = rwd::seconds_since(rw.last_set_time);
    // Plan as if at x_0: the cursor stores what the schedule wants of x_0, then the run goes on.
    REWIND_PETSC(VecSwap(ts->vec_sol, rw.x0));
    try {
      plan_run(tj, ts);
    } catch (...) {
      VecSwap(ts->vec_sol, rw.x0);
      throw;
    }
    REWIND_PETSC(VecSwap(ts->vec_sol, rw.x0));
    REWIND_PETSC(VecDestroy(&rw.x0));
    rw.deferred = false;
  }
  if (!rw.cursor || stepnum == rw.last_set) return;
  if (stepnum != rw.last_set + 1 || rw.forward_ended) {
    throw Error(ErrorCode::InvalidArgument,
                "rewind: TSTrajectorySet for step " + std::to_string(stepnum) + " after step " +
                    std::to_string(rw.last_set) + "; steps must be recorded in order from 0");
  }
  const auto k = static_cast<std::size_t>(stepnum);
  rw.times.push_back(time);
  // The exact size step k-1 used: its last attempt (or what TS proposed at set(k-1) if the
  // adapter is not hooked), if it lands on t_k. Its rejected attempts are replayed with it.
  const std::vector<Attempt> attempts = take_attempts(ts);
  const PetscReal guess = attempts.empty() ? rw.proposed[k - 1] : attempts.back().h;
  const bool exact = rw.times[k - 1] + guess == time;
  rw.dts.push_back(exact ? guess : time - rw.times[k - 1]);
  if (exact && attempts.size() > 1 && attempts.back().accepted &&
      std::none_of(attempts.begin(), attempts.end() - 1,
                   [](const Attempt& a) { return a.accepted; })) {
    auto& sizes = rw.rejected[k - 1];
    for (auto a = attempts.begin(); a != attempts.end() - 1; ++a) sizes.push_back(a->h);
  }
  rw.proposed.push_back(ts->time_step);
  const auto now = std::chrono::steady_clock::now();
  rw.step_seconds_sum += std::chrono::duration<double>(now - rw.last_set_time).count();
  ++rw.step_seconds_count;
  rw.cursor->forward_step_done(stepnum - 1, ts->reason != 0);
  rw.last_set_time = std::chrono::steady_clock::now();  // checkpoint time is not step time
  rw.last_set = stepnum;
  if (ts->reason) {
    rw.cursor->end_forward(stepnum);
    rw.forward_ended = true;
    rw.measured_step_seconds = rw.step_seconds_sum / static_cast<double>(rw.step_seconds_count);
  }
}

void get(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal* t) {
  Rewind& rw = data(tj);
  if (ts->reason) {  // after TSAdjointSolve's loop: the adjoint of step 0 is done
    finish_run(tj);
    *t = ts->ptime;
    return;
  }
  if (!rw.cursor) {
    throw Error(ErrorCode::InvalidArgument,
                "rewind: TSTrajectoryGet without a recorded forward run (call TSSolve first)");
  }
  if (!rw.forward_ended) {
    rw.cursor->end_forward(rw.last_set);
    rw.forward_ended = true;
  }
  rwd::require(stepnum >= 1 && stepnum <= rw.last_set, "rewind: TSTrajectoryGet for step " +
                                                           std::to_string(stepnum) + " of " +
                                                           std::to_string(rw.last_set));
  if (rw.prepared >= 0) rw.cursor->adjoint_done(rw.prepared);
  rw.cursor->prepare_adjoint(stepnum - 1);
  rw.prepared = stepnum - 1;
  const auto k = static_cast<std::size_t>(stepnum);
  ts->steps = stepnum;
  ts->ptime = rw.times[k];
  ts->ptime_prev = rw.times[k - 1];
  REWIND_PETSC(TSSetTimeStep(ts, rw.times[k - 1] - rw.times[k]));
  *t = rw.times[k];
}

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

PetscErrorCode view(TSTrajectory tj, PetscViewer viewer) {
  PetscBool ascii = PETSC_FALSE;
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  PetscCallCXX(finish_run(tj));
  Rewind& rw = data(tj);
  const auto& p = rw.params;
  std::string disk = p.disk == rs::kUnlimited ? "unlimited" : std::to_string(p.disk);
  std::string ram = p.ram >= kUnlimitedRam ? "unlimited" : std::to_string(p.ram);
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "  rewind: schedule %s, budget %s RAM + %s disk checkpoints%s\n", rw.schedule.c_str(),
      ram.c_str(), disk.c_str(), p.steps == 0 ? " (online: step count not known in advance)" : ""));
  PetscCall(
      PetscViewerASCIIPrintf(viewer, "    disk costs in forward steps: write %g, read %g (%s)\n",
                             (double)p.write_cost, (double)p.read_cost, rw.cost_note.c_str()));
  if (rw.stores_stages) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "    RAM checkpoints hold one step's stages each (budget counted in those)\n"));
  }
  if (!rw.have_stats) {
    if (rw.cursor && rw.prepared > 0) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "    adjoint in progress: %lld of %lld steps done\n",
                                       (long long)(rw.last_set - rw.prepared),
                                       (long long)rw.last_set));
    } else {
      PetscCall(PetscViewerASCIIPrintf(viewer, "    no completed adjoint run yet\n"));
    }
    PetscFunctionReturn(0);
  }
  const auto& s = rw.stats;
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "    steps %lld, forward steps %lld, recomputations %lld, adjoint steps %lld\n",
      (long long)s.steps, (long long)s.forward_steps, (long long)s.recomputed(),
      (long long)s.adjoint_steps));
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "    RAM checkpoints: %lld written, %lld read, peak %lld (budget %s)\n",
      (long long)s.ram.writes, (long long)s.ram.reads, (long long)s.ram.peak, ram.c_str()));
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "    disk checkpoints: %lld written, %lld read, peak %lld (budget %s)\n",
      (long long)s.disk.writes, (long long)s.disk.reads, (long long)s.disk.peak, disk.c_str()));
  PetscCall(PetscViewerASCIIPrintf(viewer, "    bytes written: RAM %s, disk %s (this rank)\n",
                                   mib((double)s.ram.bytes_written).c_str(),
                                   mib((double)s.disk.bytes_written).c_str()));
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "    time: recompute %.4f s, I/O wait %.4f s, I/O overlapped %.4f s\n",
      s.recompute_seconds, s.io_seconds, s.io_hidden_seconds));
  if (rw.replayed_rejections > 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "    recomputations repeated %lld attempts the adapter had rejected\n",
        (long long)rw.replayed_rejections));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode set_op(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal time, Vec) {
  PetscFunctionBegin;
  PetscCallCXX(set(tj, ts, stepnum, time));
  PetscFunctionReturn(0);
}

PetscErrorCode get_op(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal* t) {
  PetscFunctionBegin;
  PetscCallCXX(get(tj, ts, stepnum, t));
  PetscFunctionReturn(0);
}

PetscErrorCode reset_op(TSTrajectory tj) {
  PetscFunctionBegin;
  Rewind& rw = data(tj);
  rw.cursor.reset();
  rw.prepared = -1;
  rw.last_set = -1;
  PetscFunctionReturn(0);
}

PetscErrorCode destroy_op(TSTrajectory tj) {
  PetscFunctionBegin;
  delete static_cast<Rewind*>(tj->data);
  tj->data = nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode setfromoptions_op(TSTrajectory tj, PetscOptionItems* PetscOptionsObject) {
  Rewind& rw = data(tj);
  Options& o = rw.opt;
  char schedule[256];
  PetscBool flg = PETSC_FALSE;
  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "rewind trajectory options (adjoint checkpointing)");
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_max_cps_ram", "Checkpoints in RAM (default: store every step)",
      "TSTrajectoryRewindSetMaxCheckpoints", o.max_cps_ram, &o.max_cps_ram, NULL));
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_max_cps_disk", "Checkpoints on disk in parallel HDF5 (-1: unlimited)",
      "TSTrajectoryRewindSetMaxCheckpoints", o.max_cps_disk, &o.max_cps_disk, NULL));
  PetscCall(PetscStrncpy(schedule, o.schedule.c_str(), sizeof schedule));
  const std::string names = rs::ScheduleRegistry::instance().names();
  const std::string help = "Checkpoint schedule: " + names;
  PetscCall(PetscOptionsString("-ts_trajectory_rewind_schedule", help.c_str(),
                               "TSTrajectoryRewindSetSchedule", schedule, schedule, sizeof schedule,
                               &flg));
  char write_cost[64], read_cost[64];
  PetscBool write_set = PETSC_FALSE, read_set = PETSC_FALSE;
  PetscCall(PetscSNPrintf(write_cost, sizeof write_cost, "%g", (double)o.write_cost));
  PetscCall(PetscSNPrintf(read_cost, sizeof read_cost, "%g", (double)o.read_cost));
  if (o.write_cost < 0) PetscCall(PetscStrncpy(write_cost, "auto", sizeof write_cost));
  if (o.read_cost < 0) PetscCall(PetscStrncpy(read_cost, "auto", sizeof read_cost));
  PetscCall(PetscOptionsString(
      "-ts_trajectory_rewind_write_cost",
      "Cost of one disk checkpoint write in forward steps, or auto (measured)",
      "TSTrajectoryRewindSetCosts", write_cost, write_cost, sizeof write_cost, &write_set));
  PetscCall(PetscOptionsString(
      "-ts_trajectory_rewind_read_cost",
      "Cost of one disk checkpoint read in forward steps, or auto (measured)",
      "TSTrajectoryRewindSetCosts", read_cost, read_cost, sizeof read_cost, &read_set));
  PetscCall(PetscOptionsBool("-ts_trajectory_rewind_async",
                             "Write and read disk checkpoints on a background thread",
                             "TSTrajectoryRewindSetAsync", o.async, &o.async, NULL));
  PetscCall(PetscOptionsReal(
      "-ts_trajectory_rewind_ram_bytes", "RAM budget for checkpoints in bytes (0: none)",
      "TSTrajectoryRewindSetMaxCheckpoints", o.ram_bytes, &o.ram_bytes, NULL));
  PetscOptionsHeadEnd();
  MPI_Comm comm = PetscObjectComm((PetscObject)tj);
  if (flg) {
    PetscCheck(rs::ScheduleRegistry::instance().contains(schedule), comm,
               PETSC_ERR_ARG_UNKNOWN_TYPE,
               "-ts_trajectory_rewind_schedule %s is not a rewind schedule; choose one of: %s",
               schedule, names.c_str());
    o.schedule = schedule;
  }
  PetscCheck(o.max_cps_ram == -1 || o.max_cps_ram >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_max_cps_ram must be >= 1 (it counts the checkpoint of the initial "
             "state), got %" PetscInt_FMT,
             o.max_cps_ram);
  PetscCheck(o.max_cps_disk >= -1, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_max_cps_disk must be >= 0, or -1 for unlimited, got %" PetscInt_FMT,
             o.max_cps_disk);
  for (auto [name, text, out, given] :
       {std::tuple{"-ts_trajectory_rewind_write_cost", write_cost, &o.write_cost, write_set},
        std::tuple{"-ts_trajectory_rewind_read_cost", read_cost, &o.read_cost, read_set}}) {
    if (!given) continue;
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (std::string(text) == "auto") {
      *out = -1.0;
    } else {
      PetscCheck(end != text && *end == '\0' && v >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
                 "%s must be a number >= 0 (forward steps) or auto, got %s", name, text);
      *out = v;
    }
  }
  PetscCheck(o.ram_bytes >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_rewind_ram_bytes must be >= 0");
  PetscFunctionReturn(0);
}

PetscErrorCode setup_op(TSTrajectory tj, TS) {
  PetscFunctionBegin;
  if (tj->dirname && data(tj).opt.max_cps_disk != 0) {
    // Make the checkpoint directory if it is missing (rank 0), then agree it is usable.
    MPI_Comm comm = PetscObjectComm((PetscObject)tj);
    PetscMPIInt rank = 0;
    PetscCallMPI(MPI_Comm_rank(comm, &rank));
    PetscBool exists = PETSC_FALSE;
    if (rank == 0) {
      PetscCall(PetscTestDirectory(tj->dirname, 'w', &exists));
      if (!exists) {
        PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
        const PetscErrorCode ierr = PetscMkdir(tj->dirname);
        PetscCall(PetscPopErrorHandler());
        if (!ierr) PetscCall(PetscTestDirectory(tj->dirname, 'w', &exists));
      }
    }
    PetscCallMPI(MPI_Bcast(&exists, 1, MPIU_BOOL, 0, comm));
    PetscCheck(exists, comm, PETSC_ERR_FILE_OPEN,
               "-ts_trajectory_dirname %s is not a writable directory and could not be created; "
               "give a writable directory",
               tj->dirname);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode create(TSTrajectory tj, TS) {
  PetscFunctionBegin;
  tj->data = new Rewind();
  tj->ops->set = set_op;
  tj->ops->get = get_op;
  tj->ops->view = view;
  tj->ops->reset = reset_op;
  tj->ops->destroy = destroy_op;
  tj->ops->setfromoptions = setfromoptions_op;
  tj->ops->setup = setup_op;
  PetscFunctionReturn(0);
}

bool is_rewind(TSTrajectory tj) {
  PetscBool same = PETSC_FALSE;
  return !PetscObjectTypeCompare((PetscObject)tj, TSTRAJECTORYREWIND, &same) && same;
}

}  // namespace

extern "C" {

PetscErrorCode TSTrajectoryRegisterRewind(void) {
  static PetscBool registered = PETSC_FALSE;
  PetscFunctionBegin;
  if (registered) PetscFunctionReturn(0);
  registered = PETSC_TRUE;
  PetscCall(TSTrajectoryRegister(TSTRAJECTORYREWIND, create));
  PetscCall(PetscLogEventRegister("RewindPlan", TSTRAJECTORY_CLASSID, &ev_plan));
  PetscCall(PetscLogEventRegister("RewindRecompute", TSTRAJECTORY_CLASSID, &ev_recompute));
  PetscCall(PetscLogEventRegister("RewindStore", TSTRAJECTORY_CLASSID, &ev_store));
  PetscCall(PetscLogEventRegister("RewindLoad", TSTRAJECTORY_CLASSID, &ev_load));
  PetscFunctionReturn(0);
}

PetscErrorCode PetscDLLibraryRegister_rewind(void) {
  return TSTrajectoryRegisterRewind();
}

PetscErrorCode TSTrajectoryRewindSetSchedule(TSTrajectory tj, const char name[]) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck(rs::ScheduleRegistry::instance().contains(name), PetscObjectComm((PetscObject)tj),
             PETSC_ERR_ARG_UNKNOWN_TYPE, "unknown rewind schedule %s; choose one of: %s", name,
             rs::ScheduleRegistry::instance().names().c_str());
  data(tj).opt.schedule = name;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetCosts(TSTrajectory tj, PetscReal write_cost,
                                          PetscReal read_cost) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck((write_cost >= 0 || write_cost == PETSC_DETERMINE) &&
                 (read_cost >= 0 || read_cost == PETSC_DETERMINE),
             PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "disk write and read costs must be >= 0, or PETSC_DETERMINE to measure them");
  data(tj).opt.write_cost = write_cost;
  data(tj).opt.read_cost = read_cost;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetAsync(TSTrajectory tj, PetscBool async) {
  PetscFunctionBegin;
  if (is_rewind(tj)) data(tj).opt.async = async;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetMaxCheckpoints(TSTrajectory tj, PetscInt ram, PetscInt disk) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck(ram == -1 || ram >= 1, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "RAM checkpoints must be >= 1 (or -1: store every step), got %" PetscInt_FMT, ram);
  PetscCheck(disk >= -1, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "disk checkpoints must be >= 0 (or -1: unlimited), got %" PetscInt_FMT, disk);
  data(tj).opt.max_cps_ram = ram;
  data(tj).opt.max_cps_disk = disk;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindGetSchedule(TSTrajectory tj, TSTrajectoryRewindSchedule* out) {
  PetscFunctionBegin;
  PetscCheck(is_rewind(tj), PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_WRONG,
             "the trajectory is not of type rewind");
  PetscValidPointer(out, 2);
  const Rewind& rw = data(tj);
  PetscCheck(!rw.schedule.empty(), PetscObjectComm((PetscObject)tj), PETSC_ERR_ORDER,
             "the rewind trajectory has not planned a run yet; call "
             "TSTrajectoryRewindGetSchedule() after the first step of TSSolve()");
  const auto& p = rw.params;
  PetscCall(PetscStrncpy(out->schedule, rw.schedule.c_str(), sizeof out->schedule));
  out->steps = (PetscInt)p.steps;
  // Counts beyond PetscInt (a huge byte budget with 32-bit indices) are reported as unlimited.
  const auto count = [](std::int64_t c) {
    return c < 0 || c >= kUnlimitedRam || c > PETSC_MAX_INT ? PetscInt{-1} : (PetscInt)c;
  };
  out->max_cps_ram = count(p.ram);
  out->max_cps_disk = count(p.disk);
  out->write_cost = p.write_cost;
  out->read_cost = p.read_cost;
  out->online = p.steps == 0 ? PETSC_TRUE : PETSC_FALSE;
  out->stores_stages = rw.stores_stages ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindGetStats(TSTrajectory tj, TSTrajectoryRewindStats* out) {
  PetscFunctionBegin;
  PetscCheck(is_rewind(tj), PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_WRONG,
             "the trajectory is not of type rewind");
  PetscCallCXX(finish_run(tj));
  const auto& s = data(tj).stats;
  out->steps = (PetscInt)s.steps;
  out->forward_steps = (PetscInt)s.forward_steps;
  out->recomputed = (PetscInt)s.recomputed();
  out->adjoint_steps = (PetscInt)s.adjoint_steps;
  out->ram_writes = (PetscInt)s.ram.writes;
  out->ram_reads = (PetscInt)s.ram.reads;
  out->ram_peak = (PetscInt)s.ram.peak;
  out->disk_writes = (PetscInt)s.disk.writes;
  out->disk_reads = (PetscInt)s.disk.reads;
  out->disk_peak = (PetscInt)s.disk.peak;
  out->bytes_written = (PetscReal)(s.ram.bytes_written + s.disk.bytes_written);
  out->io_seconds = s.io_seconds;
  out->io_hidden_seconds = s.io_hidden_seconds;
  out->recompute_seconds = s.recompute_seconds;
  PetscFunctionReturn(0);
}

}  // extern "C"
