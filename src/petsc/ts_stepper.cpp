#include "ts_stepper.hpp"

#include <span>

#include "check.hpp"
#include "log_events.hpp"
#include "private_access.hpp"

namespace rwd::petsc {

using engine::Field;
using engine::Step;

TsStepper::TsStepper(TS ts, StepLog& log, bool fsal) : ts_(ts), log_(log), fsal_(fsal) {}

TsStepper::~TsStepper() {
  VecDestroy(&integral_kept_);
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
          N};
}

Field TsStepper::field(const std::string& name, Vec v) {
  return vec_field(*names_.insert(name).first, v, PetscObjectComm((PetscObject)ts_));
}

// For a first-same-as-last RK method the restart data also holds the previous step's last
// stage value, from which a restored run rebuilds the reused stage derivative (forward()).
std::vector<Field> TsStepper::state() {
  std::vector<Field> out{field("X", detail::solution(ts_))};
  if (fsal_) {
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
// Not for a first-same-as-last method, whose restart data is the solution with its last stage.
bool TsStepper::stages_only() const {
  PetscBool rk = PETSC_FALSE;
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)ts_, TSRK, &rk));
  return rk == PETSC_TRUE && !fsal_;
}

std::vector<std::size_t> TsStepper::next_state_in_pullback() {
  if (stages_only()) return {};
  PetscInt ns = 0;
  Vec* Y = nullptr;
  REWIND_PETSC(TSGetStages(ts_, &ns, &Y));
  const Vec x = detail::solution(ts_);
  auto x_at = static_cast<std::size_t>(ns);  // the X pullback() appends
  for (PetscInt j = 0; j < ns; ++j) {
    if (Y[j] == x) x_at = static_cast<std::size_t>(j);
  }
  std::vector<std::size_t> out{x_at};
  if (fsal_) out.push_back(static_cast<std::size_t>(ns - 1));
  return out;
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
// leaving it where the next step takes it from; then x_i is put back. The step number is step
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
  REWIND_PETSC(VecCopy(Y[ns - 1], sol));
  detail::restart_history(ts_, true);
  detail::set_clock(ts_, {static_cast<PetscInt>(i - 1), log_.end_time(k), log_.times[k - 1]});
  replay_step(ts_, {Attempt{0.0, {}, false}}, 0);
  REWIND_PETSC(VecCopy(x, sol));
  REWIND_PETSC(VecDestroy(&x));
  detail::set_clock(ts_, {static_cast<PetscInt>(i), log_.times[k], log_.times[k - 1]});
  detail::restart_history(ts_, false);
}

void TsStepper::resume_at(Step i) {
  if (fsal_ && i > 0) rebuild_reused_stage(i);
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
  detail::set_clock(
      ts_, {static_cast<PetscInt>(i), log_.times[k], k > 0 ? log_.times[k - 1] : log_.times[0]});
  detail::set_reason(ts_, TS_CONVERGED_ITERATING);
  REWIND_PETSC(TSAdaptSetAlwaysAccept(adapt, PETSC_TRUE));  // if the adapter is not wrapped
  if (fsal_ && restored_ && i > 0) rebuild_reused_stage(i);
  restored_ = false;
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
  REWIND_PETSC(TSPostStep(ts_));
  detail::set_reason(ts_, reason);
}

}  // namespace rwd::petsc
