#include "driver.hpp"

#include <cmath>

namespace rwd::apps {

namespace {

using OwnedTS = Owned<TS, TSDestroy>;

// The time-integrated term r(u) = 1/2 area (chi u, u), for PETSc's quadrature TS.
PetscErrorCode integrand(TS, PetscReal, Vec U, Vec R, void* ctx) {
  auto* o = static_cast<Objective*>(ctx);
  PetscScalar dot = 0, *r = nullptr;
  PetscFunctionBeginUser;
  PetscCall(VecPointwiseMult(o->work, o->chi, U));
  PetscCall(VecDot(o->work, U, &dot));
  PetscCall(VecGetArray(R, &r));
  r[0] = 0.5 * o->area * dot;
  PetscCall(VecRestoreArray(R, &r));
  PetscFunctionReturn(0);
}

// dr/du as the one column of a dense matrix laid out like the state.
PetscErrorCode integrand_gradient(TS, PetscReal, Vec U, Mat A, Mat, void* ctx) {
  auto* o = static_cast<Objective*>(ctx);
  PetscScalar* a = nullptr;
  const PetscScalar *u = nullptr, *c = nullptr;
  PetscInt n = 0;
  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(U, &n));
  PetscCall(MatDenseGetArrayWrite(A, &a));
  PetscCall(VecGetArrayRead(U, &u));
  PetscCall(VecGetArrayRead(o->chi, &c));
  for (PetscInt i = 0; i < n; ++i) a[i] = o->area * c[i] * u[i];
  PetscCall(VecRestoreArrayRead(o->chi, &c));
  PetscCall(VecRestoreArrayRead(U, &u));
  PetscCall(MatDenseRestoreArrayWrite(A, &a));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

std::string option_string(const char* name) {
  char buf[PETSC_MAX_PATH_LEN] = "";
  PetscBool set = PETSC_FALSE;
  REWIND_APP_CALL(PetscOptionsGetString(nullptr, nullptr, name, buf, sizeof buf, &set));
  return set ? buf : "";
}

TrajectoryReport trajectory_report(TSTrajectory tj, const SolveResult& run) {
  TrajectoryReport out;
  const char* type = nullptr;
  REWIND_APP_CALL(PetscObjectGetType((PetscObject)tj, &type));
  out.type = type ? type : "?";
  if (out.type != TSTRAJECTORYREWIND) return out;
  MPI_Comm comm = PetscObjectComm((PetscObject)tj);
  auto& s = out.stats;
  REWIND_APP_CALL(TSTrajectoryRewindGetStats(tj, &s));
  PetscReal times[4] = {s.io_seconds, s.io_hidden_seconds, s.recompute_seconds, 0};
  allreduce(times, 4, MPIU_REAL, MPI_MAX, comm);
  PetscReal bytes[3] = {s.bytes_written, s.ram_peak_bytes, s.disk_peak_bytes};
  allreduce(bytes, 3, MPIU_REAL, MPI_SUM, comm);
  s.bytes_written = bytes[0];
  s.ram_peak_bytes = bytes[1];  // the ranks' peaks added up
  s.disk_peak_bytes = bytes[2];
  s.io_seconds = times[0];
  s.io_hidden_seconds = times[1];
  s.recompute_seconds = times[2];
  out.have_stats = true;
  out.dirname = option_string("-ts_trajectory_dirname");

  // The schedule "auto" resolved to, and the budget and costs it was planned with.
  TSTrajectoryRewindSchedule plan;
  REWIND_APP_CALL(TSTrajectoryRewindGetSchedule(tj, &plan));
  const auto budget = [](PetscInt slots) {
    return slots < 0 ? std::string("unlimited") : std::to_string(slots);
  };
  out.schedule = plan.schedule;
  out.ram_budget = budget(plan.max_cps_ram);
  out.disk_budget = budget(plan.max_cps_disk);
  out.online = plan.online == PETSC_TRUE;
  const std::int64_t n = run.steps;
  out.checkpoints = replay_checkpoints(out.schedule, out.online ? 0 : n, n,
                                       plan.max_cps_ram < 0 ? n : plan.max_cps_ram,
                                       plan.max_cps_disk < 0 ? -1 : plan.max_cps_disk,
                                       plan.write_cost, plan.read_cost, s.forward_steps);
  return out;
}

}  // namespace

Driver::Driver(Problem& problem, Progress& progress) : pb_(problem), progress_(progress) {
  DM dm = pb_.dm();
  DMDALocalInfo info;
  REWIND_APP_CALL(DMDAGetLocalInfo(dm, &info));
  obj_.area = 1.0 / ((PetscReal)info.mx * (PetscReal)info.my);
  REWIND_APP_CALL(DMCreateGlobalVector(dm, obj_.u_obs.out()));
  REWIND_APP_CALL(DMCreateGlobalVector(dm, obj_.chi.out()));
  REWIND_APP_CALL(DMCreateGlobalVector(dm, obj_.work.out()));
  pb_.observation(obj_.u_obs);
  pb_.sensor(obj_.chi);
}

SolveResult Driver::solve(Mode mode, Vec u0, const std::vector<PetscReal>* replay) {
  MPI_Comm comm = PetscObjectComm((PetscObject)pb_.dm());
  SolveResult r;
  Vec lambda[1] = {nullptr}, mu[1] = {nullptr};  // TS keeps pointers to these arrays
  OwnedVec u;
  OwnedMat drdu;
  OwnedTS ts;
  REWIND_APP_CALL(TSCreate(comm, ts.out()));
  REWIND_APP_CALL(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  pb_.configure(ts);
  add_quadrature(ts, mode, u0, drdu);
  TSTrajectory tj = set_up(ts, mode, replay, r.hooks);
  REWIND_APP_CALL(VecDuplicate(u0, u.out()));
  REWIND_APP_CALL(VecCopy(u0, u));
  REWIND_APP_CALL(TSSetSolution(ts, u));
  REWIND_APP_CALL(TSSetUp(ts));
  describe_steps(ts, r);
  forward(ts, u, r);
  if (mode == Mode::ForwardOnly) {
    add_integral(ts, r);
    return r;
  }
  adjoint(ts, u, lambda, mu, r);
  add_integral(ts, r);
  if (tj) r.trajectory = trajectory_report(tj, r);
  return r;
}

// The time-integrated term by PETSc's quadrature TS, with its gradient dr/du in `drdu`.
void Driver::add_quadrature(TS ts, Mode mode, Vec u0, OwnedMat& drdu) {
  MPI_Comm comm = PetscObjectComm((PetscObject)pb_.dm());
  TS quad = nullptr;
  PetscInt n = 0, N = 0;
  REWIND_APP_CALL(VecGetLocalSize(u0, &n));
  REWIND_APP_CALL(VecGetSize(u0, &N));
  // With the adjoint, the integral is taken during the reverse sweep: PETSc 3.18's forward
  // integration is wrong when adaptive RK rejects a step (TSRollBack_RK takes back a
  // contribution TSSolve never added).
  const PetscBool forward_integral = mode == Mode::ForwardOnly ? PETSC_TRUE : PETSC_FALSE;
  REWIND_APP_CALL(TSCreateQuadratureTS(ts, forward_integral, &quad));
  REWIND_APP_CALL(TSSetRHSFunction(quad, nullptr, integrand, &obj_));
  REWIND_APP_CALL(MatCreateDense(comm, n, PETSC_DECIDE, N, 1, nullptr, drdu.out()));
  REWIND_APP_CALL(MatSetUp(drdu));
  REWIND_APP_CALL(TSSetRHSJacobian(quad, drdu, drdu, integrand_gradient, &obj_));
}

// The trajectory (saved unless ForwardOnly; PETSc's memory for StoreAll), the step hooks, the
// options, and a replayed step sequence. Returns the trajectory (null if none).
TSTrajectory Driver::set_up(TS ts, Mode mode, const std::vector<PetscReal>* replay, StepHooks& h) {
  if (mode != Mode::ForwardOnly) REWIND_APP_CALL(TSSetSaveTrajectory(ts));
  h.record = mode != Mode::ForwardOnly;
  h.replay = replay;
  h.progress = mode == Mode::User ? &progress_ : nullptr;
  install_step_hooks(ts, h);
  REWIND_APP_CALL(TSSetFromOptions(ts));

  TSTrajectory tj = nullptr;
  REWIND_APP_CALL(TSGetTrajectory(ts, &tj));
  if (mode == Mode::StoreAll) {
    REWIND_APP_CALL(TSTrajectorySetType(tj, ts, TSTRAJECTORYMEMORY));
    REWIND_APP_CALL(TSTrajectorySetSolutionOnly(tj, PETSC_FALSE));
  } else if (mode == Mode::ForwardOnly && tj) {
    REWIND_APP_CALL(TSRemoveTrajectory(ts));
    tj = nullptr;
  }
  TSAdapt adapt = nullptr;
  REWIND_APP_CALL(TSGetAdapt(ts, &adapt));
  if (replay) {
    REWIND_APP_CALL(TSAdaptSetType(adapt, TSADAPTNONE));
    REWIND_APP_CALL(TSSetMaxSteps(ts, static_cast<PetscInt>(replay->size())));
    REWIND_APP_CALL(TSSetMaxTime(ts, PETSC_MAX_REAL));
    REWIND_APP_CALL(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_STEPOVER));
  }
  return tj;
}

// After TSSetUp: the TS type, fixed or adaptive steps, and the planned step count.
void Driver::describe_steps(TS ts, SolveResult& r) {
  StepHooks& h = r.hooks;
  TSAdapt adapt = nullptr;
  PetscBool fixed = PETSC_FALSE;
  REWIND_APP_CALL(TSGetAdapt(ts, &adapt));
  REWIND_APP_CALL(PetscObjectTypeCompare((PetscObject)adapt, TSADAPTNONE, &fixed));
  r.adaptive = !fixed;
  TSType type = nullptr;
  PetscInt max_steps = 0;
  PetscReal t0 = 0;
  REWIND_APP_CALL(TSGetType(ts, &type));
  r.ts_type = type ? type : "?";
  REWIND_APP_CALL(TSGetMaxTime(ts, &h.t_final));
  REWIND_APP_CALL(TSGetMaxSteps(ts, &max_steps));
  REWIND_APP_CALL(TSGetTime(ts, &t0));
  REWIND_APP_CALL(TSGetTimeStep(ts, &r.dt));
  if (!r.adaptive && r.dt > 0) {
    const PetscReal k = std::ceil((h.t_final - t0) / r.dt - 1e-9);
    h.planned = k < (PetscReal)max_steps ? static_cast<PetscInt>(k) : max_steps;
  }
}

// TSSolve, and the final misfit of J.
void Driver::forward(TS ts, Vec u, SolveResult& r) {
  StepHooks& h = r.hooks;
  h.wall0 = MPI_Wtime();
  if (h.progress) progress_.start("forward");
  REWIND_APP_CALL(TSSolve(ts, u));
  if (h.progress) progress_.finish();
  r.forward_seconds = MPI_Wtime() - h.wall0;
  REWIND_APP_CALL(TSGetStepNumber(ts, &r.steps));
  REWIND_APP_CALL(TSGetSolveTime(ts, &r.t_final));
  if (r.adaptive) r.dt = 0;

  // J = final misfit + the quadrature TS's integral (after the adjoint if it runs).
  PetscReal misfit = 0;
  REWIND_APP_CALL(VecWAXPY(obj_.work, -1.0, obj_.u_obs, u));
  REWIND_APP_CALL(VecNorm(obj_.work, NORM_2, &misfit));
  r.J_terminal = 0.5 * obj_.area * misfit * misfit;
}

// The adjoint: lambda(T) = dJ/du(T), mu(T) = 0; TSAdjointSolve leaves dJ/du0 and dJ/dp.
void Driver::adjoint(TS ts, Vec u, Vec lambda[1], Vec mu[1], SolveResult& r) {
  StepHooks& h = r.hooks;
  REWIND_APP_CALL(VecDuplicate(u, &lambda[0]));
  r.g_u0 = OwnedVec(lambda[0]);
  REWIND_APP_CALL(VecWAXPY(lambda[0], -1.0, obj_.u_obs, u));
  REWIND_APP_CALL(VecScale(lambda[0], obj_.area));
  if (pb_.parameter()) {
    REWIND_APP_CALL(VecDuplicate(pb_.parameter(), &mu[0]));
    r.g_p = OwnedVec(mu[0]);
    REWIND_APP_CALL(VecSet(mu[0], 0.0));
  }
  REWIND_APP_CALL(TSSetCostGradients(ts, 1, lambda, mu[0] ? mu : nullptr));
  h.in_adjoint = true;
  h.adjoint_total = r.steps;
  const double a0 = MPI_Wtime();
  if (h.progress) progress_.start("adjoint");
  REWIND_APP_CALL(TSAdjointSolve(ts));
  if (h.progress) progress_.finish();
  r.adjoint_seconds = MPI_Wtime() - a0;
}

// J = the final misfit + the quadrature TS's integral.
void Driver::add_integral(TS ts, SolveResult& r) {
  TS quad = nullptr;
  Vec q = nullptr;
  const PetscScalar* qa = nullptr;
  REWIND_APP_CALL(TSGetQuadratureTS(ts, nullptr, &quad));
  REWIND_APP_CALL(TSGetSolution(quad, &q));
  REWIND_APP_CALL(VecGetArrayRead(q, &qa));
  r.J_integral = PetscRealPart(qa[0]);
  REWIND_APP_CALL(VecRestoreArrayRead(q, &qa));
  r.J = r.J_terminal + r.J_integral;
}

}  // namespace rwd::apps
