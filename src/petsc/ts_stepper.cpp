#include "ts_stepper.hpp"

#include <petscdmda.h>

#include <algorithm>
#include <cstring>
#include <span>

#include "check.hpp"
#include "log_events.hpp"
#include "private_access.hpp"

namespace rwd::petsc {

using engine::Field;
using engine::Step;

bool first_same_as_last(TS ts) {
  PetscBool is_rk = PETSC_FALSE, fsal = PETSC_FALSE;
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)ts, TSRK, &is_rk));
  if (is_rk) {
    REWIND_PETSC(
        TSRKGetTableau(ts, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &fsal));
  }
  return fsal == PETSC_TRUE;
}

std::string fsal_restart_note() {
  return ". This run's first-same-as-last Runge-Kutta method restarts the step after each "
         "restore, as PETSc's memory trajectory does: the stage derivative the step reuses is "
         "evaluated at the restored solution with the step's own number, where the forward run "
         "evaluated it at the previous step's last stage with the previous step's number. A "
         "right-hand side that reads the step number, or a last stage that is not the solution "
         "bit for bit, differs there; -ts_trajectory_rewind_fsal_restart 0 keeps the last stage "
         "with each restart checkpoint and rebuilds the derivative exactly";
}

TsStepper::TsStepper(TS ts, StepLog& log, Fsal fsal) : ts_(ts), log_(log), fsal_(fsal) {}

bool TsStepper::last_stage_is_solution() {
  PetscInt ns = 0, n = 0;
  Vec* Y = nullptr;
  REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
  const Vec x = detail::solution(ts_);
  REWIND_PETSC(VecGetLocalSize(x, &n));
  const PetscScalar *a = nullptr, *b = nullptr;
  REWIND_PETSC(VecGetArrayRead(x, &a));
  REWIND_PETSC(VecGetArrayRead(Y[ns - 1], &b));
  const bool same = n == 0 || std::memcmp(a, b, static_cast<std::size_t>(n) * sizeof *a) == 0;
  REWIND_PETSC(VecRestoreArrayRead(Y[ns - 1], &b));
  REWIND_PETSC(VecRestoreArrayRead(x, &a));
  return same;
}

TsStepper::~TsStepper() {
  VecDestroy(&integral_kept_);
}

storage::Grid grid_of(Vec v, PetscInt n) {
  DM dm = nullptr;
  REWIND_PETSC(VecGetDM(v, &dm));
  PetscBool da = PETSC_FALSE;
  if (dm != nullptr) REWIND_PETSC(PetscObjectTypeCompare((PetscObject)dm, DMDA, &da));
  if (!da) return {};
  PetscInt dof = 0, xs = 0, ys = 0, zs = 0, xm = 0, ym = 0, zm = 0;
  REWIND_PETSC(DMDAGetDof(dm, &dof));
  REWIND_PETSC(DMDAGetCorners(dm, &xs, &ys, &zs, &xm, &ym, &zm));
  const storage::Grid g{dof, xm, std::max<PetscInt>(ym, 1), std::max<PetscInt>(zm, 1)};
  return g.dof >= 1 && g.nx >= 1 && g.size() == n ? g : storage::Grid{};
}

Field vec_field(std::string_view name, Vec v, MPI_Comm comm) {
  PetscScalar* a = nullptr;
  PetscInt n = 0, lo = 0, hi = 0, N = 0;
  REWIND_PETSC(VecGetLocalSize(v, &n));
  REWIND_PETSC(VecGetOwnershipRange(v, &lo, &hi));
  REWIND_PETSC(VecGetSize(v, &N));
  REWIND_PETSC(VecGetArray(v, &a));
  PetscScalar* keep = a;
  REWIND_PETSC(VecRestoreArray(v, &a));  // standard vectors keep their array; see loaded()
  PetscMPIInt own = 1, ranks = 1, rank = 0;
  REWIND_PETSC(MPI_Comm_size(PetscObjectComm((PetscObject)v), &own));
  REWIND_PETSC(MPI_Comm_size(comm, &ranks));
  REWIND_PETSC(MPI_Comm_rank(comm, &rank));
  if (own == 1 && ranks > 1) {  // every rank's copy, side by side
    lo = static_cast<PetscInt>(rank) * n;
    N = static_cast<PetscInt>(ranks) * n;
  }
  return {name, std::span<double>(reinterpret_cast<double*>(keep), static_cast<std::size_t>(n)), lo,
          N, grid_of(v, n)};
}

Field TsStepper::field(const std::string& name, Vec v) {
  return vec_field(*names_.insert(name).first, v, PetscObjectComm((PetscObject)ts_));
}

// For a first-same-as-last RK method that keeps it, the restart data also holds the previous
// step's last stage value, from which a restored run rebuilds the reused stage derivative.
std::vector<Field> TsStepper::state() {
  std::vector<Field> out{field("X", detail::solution(ts_))};
  if (fsal_ == Fsal::KeepStage) {
    PetscInt ns = 0;
    Vec* Y = nullptr;
    REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
    out.push_back(field("Y_last", Y[ns - 1]));
  }
  return out;
}

std::vector<Field> TsStepper::pullback() {
  PetscInt ns = 0;
  Vec* Y = nullptr;
  REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
  const Vec x = detail::solution(ts_);
  std::vector<Field> out;
  bool has_solution = false;
  for (PetscInt j = 0; j < ns; ++j) {
    has_solution = has_solution || Y[j] == x;
    out.push_back(field("Y" + std::to_string(j), Y[j]));
  }
  if (!has_solution && !stages_only()) out.push_back(field("X", x));
  return out;
}

// An explicit Runge-Kutta method's adjoint step reads its stages alone (TSAdjointStep_RK), so a
// step's pullback data need not hold the solution it ends in: a stage checkpoint then takes
// `stages` vectors, as CAMS's does, and the schedule stores the solution apart when it pays.
// Not for a first-same-as-last method that keeps its last stage with the solution.
bool TsStepper::stages_only() const {
  PetscBool rk = PETSC_FALSE;
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)ts_, TSRK, &rk));
  return rk == PETSC_TRUE && fsal_ != Fsal::KeepStage;
}

// A first-same-as-last method's last stage is the state the step ends in (Fsal::Restart).
std::vector<std::size_t> TsStepper::next_state_in_pullback() {
  PetscInt ns = 0;
  Vec* Y = nullptr;
  REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
  if (fsal_ == Fsal::Restart) return {static_cast<std::size_t>(ns - 1)};
  if (stages_only()) return {};
  const Vec x = detail::solution(ts_);
  auto x_at = static_cast<std::size_t>(ns);  // the X pullback() appends
  for (PetscInt j = 0; j < ns; ++j) {
    if (Y[j] == x) x_at = static_cast<std::size_t>(j);
  }
  std::vector<std::size_t> out{x_at};
  if (fsal_ == Fsal::KeepStage) out.push_back(static_cast<std::size_t>(ns - 1));
  return out;
}

std::vector<engine::Stepper::StateSource> TsStepper::pullback_from_states() {
  PetscBool theta = PETSC_FALSE, cn = PETSC_FALSE, beuler = PETSC_FALSE;
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)ts_, TSTHETA, &theta));
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)ts_, TSCN, &cn));
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)ts_, TSBEULER, &beuler));
  if (!theta && !cn && !beuler) return {};
  PetscInt ns = 0;
  Vec* Y = nullptr;
  REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
  // The midpoint form's one stage is the midpoint value, not a state.
  if (ns != 2 || Y[1] != detail::solution(ts_) || fsal_ == Fsal::KeepStage) return {};
  return {{false, 0}, {true, 0}};
}

namespace {
// The engine wrote into v's array behind PETSc's back: restoring the array is the public way to
// mark the vector changed (it increases the object state, so cached norms are dropped).
void mark_changed(Vec v) {
  PetscScalar* a = nullptr;
  REWIND_PETSC(VecGetArray(v, &a));
  REWIND_PETSC(VecRestoreArray(v, &a));
}
}  // namespace

void TsStepper::loaded(engine::Kind kind) {
  mark_changed(detail::solution(ts_));
  if (kind == engine::Kind::Pullback) {
    PetscInt ns = 0;
    Vec* Y = nullptr;
    REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
    for (PetscInt j = 0; j < ns; ++j) mark_changed(Y[j]);
  } else {
    detail::restart_history(ts_, true);  // first-same-as-last methods must not reuse a stage
    restored_ = true;
  }
}

void TsStepper::on_io(engine::IoEvent event) {
  const LogEvents& e = log_events();
  switch (event) {
    case engine::IoEvent::WriteBegin:
      REWIND_PETSC(PetscLogEventBegin(e.store, 0, 0, 0, 0));
      break;
    case engine::IoEvent::WriteEnd:
      REWIND_PETSC(PetscLogEventEnd(e.store, 0, 0, 0, 0));
      break;
    case engine::IoEvent::ReadBegin:
      REWIND_PETSC(PetscLogEventBegin(e.load, 0, 0, 0, 0));
      break;
    case engine::IoEvent::ReadEnd:
      REWIND_PETSC(PetscLogEventEnd(e.load, 0, 0, 0, 0));
      break;
  }
}

void TsStepper::adjoint(Step) {
  throw Error(ErrorCode::Internal, "rewind: PETSc runs the adjoint steps itself");
}

// In the forward run step i reused f(t_i, Y_last) of step i-1 as its first stage derivative. A
// zero-length step from Y_last at t_i evaluates exactly that (every stage of it is Y_last),
// leaving it where the next step takes it from; then x_i is put back. (Fsal::Restart: Y_last is
// x_i, which the solution vector holds already.) The step number is step
// i-1's, as it was when the forward run evaluated it: a right-hand side may read it
// (TSGetStepNumber; PETSc's optimal_control/ex1 indexes its controls by it); the time is where
// step i-1 ended (a TSSolve that continues the run may have set the clock elsewhere since: TS
// still reuses the stage).
void TsStepper::rebuild_reused_stage(Step i) {
  const auto k = static_cast<std::size_t>(i);
  PetscInt ns = 0;
  Vec* Y = nullptr;
  REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
  const Vec sol = detail::solution(ts_);
  Vec x = nullptr;
  REWIND_PETSC(VecDuplicate(sol, &x));
  REWIND_PETSC(VecCopy(sol, x));
  if (fsal_ == Fsal::KeepStage) REWIND_PETSC(VecCopy(Y[ns - 1], sol));
  detail::restart_history(ts_, true);
  detail::set_clock(ts_, {static_cast<PetscInt>(i - 1), log_.end_time(k), log_.times[k - 1]});
  replay_step(ts_, {Attempt{0.0, {}, false}}, 0);
  REWIND_PETSC(VecCopy(x, sol));
  REWIND_PETSC(VecDestroy(&x));
  detail::set_clock(ts_, {static_cast<PetscInt>(i), log_.times[k], log_.times[k - 1]});
  detail::restart_history(ts_, false);
}

// After a restore of x_i (i > 0), the reused stage derivative: rebuilt, or the step marked a
// restart, which loaded() did (restarts()).
void TsStepper::restore_reused_stage(Step i) {
  if (fsal_ != Fsal::None && i > 0 && !restarts(i)) rebuild_reused_stage(i);
}

void TsStepper::resume_at(Step i) {
  restore_reused_stage(i);
  restored_ = false;
}

void TsStepper::forward(Step local, const engine::StepContext&) {
  const Step i = first_ + local;  // the TS's step number
  // Recompute step i from x_i (already in the solution vector) as the forward run took it: the
  // attempts the adapter rejected, then the accepted one with the exact size it used.
  const TSConvergedReason reason = detail::reason(ts_);
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
      detail::set_rejections(ts, reject);
      PetscLogEventEnd(log_events().recompute, 0, 0, 0, 0);
    }
  };
  REWIND_PETSC(PetscLogEventBegin(log_events().recompute, 0, 0, 0, 0));
  const Restore restore{ts_, adapt, detail::always_accept(adapt), detail::rejections(ts_)};
  const auto k = static_cast<std::size_t>(i);
  // Every attempt of the forward run when they were recorded; otherwise the exact size alone.
  std::vector<Attempt> attempts{Attempt{log_.dts[k], {}, false}};
  if (auto r = log_.attempts.find(k); can_replay(ts_) && r != log_.attempts.end()) {
    attempts = r->second;
    for (const Attempt& a : attempts) {
      log_.replayed_rejections +=
          (a.rolled_back ? 1 : 0) +
          static_cast<PetscInt>(a.choices.empty() ? 0 : a.choices.size() - 1);
    }
  }
  REWIND_PETSC(TSAdaptSetAlwaysAccept(adapt, PETSC_TRUE));  // if the adapter is not wrapped
  if (restored_ && restarts(i) && restart_check_ == RestartCheck::NotRun) {
    check_restart(i, attempts);
  } else {
    start_step(i);
    if (restored_) restore_reused_stage(i);
    take_step(i, attempts);
  }
  restored_ = false;
  REWIND_PETSC(TSPostStep(ts_));
  detail::set_reason(ts_, reason);
}

void TsStepper::start_step(Step i) {
  const auto k = static_cast<std::size_t>(i);
  detail::set_clock(
      ts_, {static_cast<PetscInt>(i), log_.times[k], k > 0 ? log_.times[k - 1] : log_.times[0]});
  detail::set_reason(ts_, TS_CONVERGED_ITERATING);
}

void TsStepper::take_step(Step i, const std::vector<Attempt>& attempts) {
  const auto k = static_cast<std::size_t>(i);
  // A recomputed step leaves the quadrature's integral as the forward run left it: TSSolve adds
  // a step's part after TSStep, but a rolled-back attempt (a size the adapter rejected)
  // subtracts its part inside TSStep, so repeating one would change the integral.
  TS quadrature = nullptr;
  Vec integral = nullptr;
  REWIND_PETSC(TSGetQuadratureTS(ts_, nullptr, &quadrature));
  if (quadrature) REWIND_PETSC(TSGetSolution(quadrature, &integral));
  if (integral) {
    if (!integral_kept_) REWIND_PETSC(VecDuplicate(integral, &integral_kept_));
    REWIND_PETSC(VecCopy(integral, integral_kept_));
  }
  replay_step(ts_, attempts, log_.proposed[k + 1]);
  if (integral) REWIND_PETSC(VecCopy(integral_kept_, integral));
  if (detail::reason(ts_) < 0) {
    throw Error(ErrorCode::Internal, "rewind: recomputing step " + std::to_string(i) + " failed (" +
                                         TSConvergedReasons[detail::reason(ts_)] + ")");
  }
  const PetscReal t = detail::clock(ts_).time;
  if (t != log_.end_time(k + 1)) {
    throw Error(ErrorCode::Internal, "rewind: recomputed step " + std::to_string(i) +
                                         " ended at t = " + std::to_string(t) +
                                         ", the forward run at " +
                                         std::to_string(log_.end_time(k + 1)));
  }
}

// The first restored step of a run that restarts them: taken restarted, then again from the same
// x_i with the reused derivative rebuilt as the forward run evaluated it (step number i-1); the
// second result is kept. Where the two differ (a right-hand side that reads the step number, as
// PETSc's optimal_control/ex1 does), every later restored step is rebuilt too. Collective.
void TsStepper::check_restart(Step i, const std::vector<Attempt>& attempts) {
  const Vec sol = detail::solution(ts_);
  Vec from = nullptr, restarted = nullptr;
  REWIND_PETSC(VecDuplicate(sol, &from));
  REWIND_PETSC(VecDuplicate(sol, &restarted));
  struct Destroy {
    Vec* a;
    Vec* b;
    ~Destroy() {
      VecDestroy(a);
      VecDestroy(b);
    }
  } destroy{&from, &restarted};
  REWIND_PETSC(VecCopy(sol, from));
  start_step(i);
  take_step(i, attempts);
  REWIND_PETSC(VecCopy(sol, restarted));
  REWIND_PETSC(VecCopy(from, sol));
  start_step(i);
  rebuild_reused_stage(i);
  take_step(i, attempts);
  PetscBool same = PETSC_FALSE;
  REWIND_PETSC(VecEqual(sol, restarted, &same));  // collective: equal on every rank
  restart_check_ = same == PETSC_TRUE ? RestartCheck::Same : RestartCheck::Differed;
}

// Whether a restored step i restarts (Fsal::Restart) rather than being rebuilt: not where step
// i-1 ended at another time than step i starts (a TSSolve set the clock since), nor where step
// i had attempts rejected: TSStep_RK decides once per call whether to reuse the stage, and the
// forward run's retries after a rollback reused it too, where a restarted step's would evaluate
// f at the rolled-back state; nor once a restarted step differed from a rebuilt one.
bool TsStepper::restarts(Step i) const {
  if (fsal_ != Fsal::Restart || i == 0) return false;
  const auto k = static_cast<std::size_t>(i);
  return log_.end_time(k) == log_.times[k] && log_.attempts.count(k) == 0 &&
         restart_check_ != RestartCheck::Differed;
}

}  // namespace rwd::petsc
