#include "adjoint_app.hpp"

#include <petscviewerhdf5.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "report.hpp"
#include "rewind/error.hpp"
#include "rewind/petsc/trajectory.h"

namespace rwd::apps {

void check(PetscErrorCode ierr, const char* what) {
  if (ierr) throw Error(ErrorCode::Internal, std::string("PETSc call failed: ") + what);
}

OwnedDM make_grid(PetscInt n, MPI_Comm comm) {
  OwnedDM dm;
  REWIND_APP_CALL(DMDACreate2d(comm, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_STAR,
                               n, n, PETSC_DECIDE, PETSC_DECIDE, 1, 1, nullptr, nullptr, dm.out()));
  REWIND_APP_CALL(DMSetFromOptions(dm));
  REWIND_APP_CALL(DMSetUp(dm));
  DMDALocalInfo info;
  REWIND_APP_CALL(DMDAGetLocalInfo(dm, &info));
  rwd::require(info.mx >= 3 && info.my >= 3,
               "the grid needs at least 3 x 3 cells (-da_grid_x, -da_grid_y)");
  return dm;
}

PetscErrorCode Ghosted::get(DM da, Vec global) {
  PetscFunctionBeginUser;
  dm = da;
  PetscCall(DMGetLocalVector(dm, &local));
  PetscCall(DMGlobalToLocalBegin(dm, global, INSERT_VALUES, local));
  PetscCall(DMGlobalToLocalEnd(dm, global, INSERT_VALUES, local));
  PetscCall(DMDAVecGetArrayRead(dm, local, (void*)&a));
  PetscFunctionReturn(0);
}

PetscErrorCode Ghosted::restore() {
  PetscFunctionBeginUser;
  PetscCall(DMDAVecRestoreArrayRead(dm, local, (void*)&a));
  PetscCall(DMRestoreLocalVector(dm, &local));
  PetscFunctionReturn(0);
}

PetscErrorCode set_star_row(Mat A, PetscInt i, PetscInt j, const PetscScalar v[5]) {
  const MatStencil row = {0, j, i, 0};
  const MatStencil col[5] = {
      {0, j, i, 0}, {0, j, i + 1, 0}, {0, j, i - 1, 0}, {0, j + 1, i, 0}, {0, j - 1, i, 0}};
  PetscFunctionBeginUser;
  PetscCall(MatSetValuesStencil(A, 1, &row, 5, col, v, INSERT_VALUES));
  PetscFunctionReturn(0);
}

void fill(DM dm, Vec v, const std::function<PetscReal(PetscReal, PetscReal)>& f) {
  DMDALocalInfo info;
  PetscScalar** a = nullptr;
  REWIND_APP_CALL(DMDAGetLocalInfo(dm, &info));
  REWIND_APP_CALL(DMDAVecGetArray(dm, v, &a));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      a[j][i] = f((i + 0.5) / info.mx, (j + 0.5) / info.my);
    }
  }
  REWIND_APP_CALL(DMDAVecRestoreArray(dm, v, &a));
}

PetscReal bump(PetscReal x, PetscReal y, PetscReal x0, PetscReal y0, PetscReal width) {
  PetscReal dx = x - x0, dy = y - y0;
  dx -= std::round(dx);
  dy -= std::round(dy);
  return std::exp(-(dx * dx + dy * dy) / (width * width));
}

PetscErrorCode read_check_options(PetscOptionItems* PetscOptionsObject, CheckOptions* o) {
  PetscFunctionBeginUser;
  PetscCall(PetscOptionsBool("-taylor", "Check the gradient with a Taylor test", "", o->taylor,
                             &o->taylor, nullptr));
  PetscCall(PetscOptionsReal("-taylor_h", "Largest Taylor test step h", "", o->taylor_h,
                             &o->taylor_h, nullptr));
  PetscCall(PetscOptionsInt("-taylor_points", "Taylor test steps h, h/2, ...", "", o->taylor_points,
                            &o->taylor_points, nullptr));
  PetscCall(PetscOptionsString("-summary_json", "Write the run summary as JSON", "", o->json,
                               o->json, sizeof o->json, nullptr));
  PetscCall(PetscOptionsString("-gradient_out", "Write the gradient fields to HDF5", "",
                               o->gradient, o->gradient, sizeof o->gradient, nullptr));
  PetscFunctionReturn(0);
}

void validate(const CheckOptions& o) {
  rwd::require(o.taylor_points >= 2,
               "-taylor_points must be >= 2, got " + std::to_string(o.taylor_points));
  rwd::require(o.taylor_h > 0, "-taylor_h must be > 0");
}

void write_summary(const char* path, const std::string& text) {
  FILE* f = std::fopen(path, "w");
  rwd::require(f != nullptr, std::string("-summary_json: cannot write ") + path);
  std::fputs(text.c_str(), f);
  rwd::require(std::fclose(f) == 0, std::string("-summary_json: cannot write ") + path);
}

void write_fields(const char* file, DM dm, const std::vector<std::pair<Vec, std::string>>& fields,
                  const char* app, PetscReal objective) {
  using OwnedViewer = Owned<PetscViewer, PetscViewerDestroy>;
  OwnedViewer v;
  REWIND_APP_CALL(
      PetscViewerHDF5Open(PetscObjectComm((PetscObject)dm), file, FILE_MODE_WRITE, v.out()));
  for (const auto& [x, name] : fields) {
    OwnedVec g;  // a DMDA vector, so the dataset is the 2D field in natural ordering
    REWIND_APP_CALL(DMCreateGlobalVector(dm, g.out()));
    REWIND_APP_CALL(VecCopy(x, g));
    REWIND_APP_CALL(PetscObjectSetName((PetscObject)g.get(), name.c_str()));
    REWIND_APP_CALL(VecView(g, v));
  }
  if (fields.empty()) return;
  const char* first = fields.front().second.c_str();
  REWIND_APP_CALL(PetscViewerHDF5WriteAttribute(v, first, "app", PETSC_STRING, (void*)app));
  REWIND_APP_CALL(PetscViewerHDF5WriteAttribute(v, first, "objective", PETSC_REAL, &objective));
}

namespace {

void allreduce(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (MPI_Allreduce(MPI_IN_PLACE, data, count, type, op, comm) != MPI_SUCCESS) {
    throw Error(ErrorCode::Mpi, "MPI_Allreduce failed");
  }
}

using OwnedTS = Owned<TS, TSDestroy>;

// The objective's pieces: J = 1/2 area |u(T) - u_obs|^2 + int 1/2 area (chi u, u) dt.
struct Objective {
  OwnedVec u_obs, chi, work;
  PetscReal area = 0;  // cell area: sums over cells approximate integrals
};

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

// Per-TS hooks: record the first sweep's times and exact step sizes and every forward,
// recomputed and adjoint step; show progress; or replay a recorded step sequence.
struct StepHooks {
  bool record = false;
  bool in_adjoint = false;
  double wall0 = 0;
  std::vector<PetscReal> times, dts;
  PetscReal proposed = 0;
  std::vector<StepEvent> events;
  const std::vector<PetscReal>* replay = nullptr;
  Progress* progress = nullptr;
  PetscInt planned = 0;  // fixed-step count, 0 if adaptive
  PetscReal t_final = 0;
  PetscInt adjoint_total = 0, recomputed = 0;
};

StepHooks& hooks_of(TS ts) {
  void* ctx = nullptr;
  check(TSGetApplicationContext(ts, &ctx), "TSGetApplicationContext");
  return *static_cast<StepHooks*>(ctx);
}

PetscErrorCode pre_step(TS ts) {
  PetscInt k = 0;
  PetscReal t = 0;
  PetscFunctionBeginUser;
  StepHooks& h = hooks_of(ts);
  PetscCall(TSGetStepNumber(ts, &k));
  if (h.replay && k < static_cast<PetscInt>(h.replay->size())) {
    PetscCall(TSSetTimeStep(ts, (*h.replay)[static_cast<std::size_t>(k)]));
  }
  if (h.record && !h.in_adjoint) {
    PetscCall(TSGetTime(ts, &t));
    if (h.times.empty()) h.times.push_back(t);
    PetscCall(TSGetTimeStep(ts, &h.proposed));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode post_step(TS ts) {
  PetscInt k = 0;
  PetscReal t = 0;
  PetscFunctionBeginUser;
  StepHooks& h = hooks_of(ts);
  if (!h.record) PetscFunctionReturn(0);
  PetscCall(TSGetStepNumber(ts, &k));
  PetscCall(TSGetTime(ts, &t));
  const double wall = MPI_Wtime() - h.wall0;
  if (h.in_adjoint) {  // the trajectory recomputing step k-1
    h.events.push_back({wall, k - 1, 'R'});
    ++h.recomputed;
    PetscFunctionReturn(0);
  }
  // The exact size of the step just taken: what TS proposed before it, if it lands on t.
  const PetscReal prev = h.times.back();
  h.dts.push_back(prev + h.proposed == t ? h.proposed : t - prev);
  h.times.push_back(t);
  h.events.push_back({wall, k - 1, 'F'});
  if (h.progress) {
    char text[128];
    if (h.planned > 0) {
      std::snprintf(text, sizeof text, "%lld/%lld steps (%.0f%%), %.1f s", (long long)k,
                    (long long)h.planned, 100.0 * (double)k / (double)h.planned, wall);
    } else {
      std::snprintf(text, sizeof text, "%lld steps, t = %.4g of %g, %.1f s elapsed", (long long)k,
                    (double)t, (double)h.t_final, wall);
    }
    h.progress->update(text);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode adjoint_monitor(TS, PetscInt steps, PetscReal, Vec, PetscInt, Vec*, Vec*,
                               void* ctx) {
  auto& h = *static_cast<StepHooks*>(ctx);
  PetscFunctionBeginUser;
  if (!h.record || steps >= h.adjoint_total) PetscFunctionReturn(0);
  const double wall = MPI_Wtime() - h.wall0;
  h.events.push_back({wall, steps, 'A'});
  if (h.progress) {
    char text[128];
    const PetscInt done = h.adjoint_total - steps;
    std::snprintf(text, sizeof text, "%lld/%lld steps (%.0f%%), %lld recomputed so far",
                  (long long)done, (long long)h.adjoint_total,
                  100.0 * (double)done / (double)h.adjoint_total, (long long)h.recomputed);
    h.progress->update(text);
  }
  PetscFunctionReturn(0);
}

enum class Mode {
  User,         // forward + adjoint with the trajectory the options ask for (default rewind)
  StoreAll,     // forward + adjoint with PETSc's memory trajectory storing every step
  ForwardOnly,  // the objective only
};

struct SolveResult {
  PetscReal J = 0, J_terminal = 0, J_integral = 0;
  OwnedVec g_u0, g_p;
  StepHooks hooks;
  double forward_seconds = 0, adjoint_seconds = 0;
  PetscInt steps = 0;
  std::string ts_type;
  bool adaptive = false;
  PetscReal t_final = 0, dt = 0;
  TrajectoryReport trajectory;
};

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
  allreduce(&s.bytes_written, 1, MPIU_REAL, MPI_SUM, comm);
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

class Driver {
 public:
  Driver(Problem& problem, Progress& progress) : pb_(problem), progress_(progress) {
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

  // One solve from u0 (and the problem's current parameter), with the adjoint unless
  // ForwardOnly. `replay` fixes the step sizes (the Taylor test's frozen step sequence).
  SolveResult solve(Mode mode, Vec u0, const std::vector<PetscReal>* replay) {
    MPI_Comm comm = PetscObjectComm((PetscObject)pb_.dm());
    SolveResult r;
    Vec lambda[1] = {nullptr}, mu[1] = {nullptr};  // TS keeps pointers to these arrays
    OwnedVec u;
    OwnedMat drdu;
    OwnedTS ts;
    REWIND_APP_CALL(TSCreate(comm, ts.out()));
    REWIND_APP_CALL(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
    pb_.configure(ts);

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

    if (mode != Mode::ForwardOnly) REWIND_APP_CALL(TSSetSaveTrajectory(ts));
    StepHooks& h = r.hooks;
    h.record = mode != Mode::ForwardOnly;
    h.replay = replay;
    h.progress = mode == Mode::User ? &progress_ : nullptr;
    REWIND_APP_CALL(TSSetApplicationContext(ts, &h));
    REWIND_APP_CALL(TSSetPreStep(ts, pre_step));
    REWIND_APP_CALL(TSSetPostStep(ts, post_step));
    REWIND_APP_CALL(TSAdjointMonitorSet(ts, adjoint_monitor, &h, nullptr));
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
    REWIND_APP_CALL(VecDuplicate(u0, u.out()));
    REWIND_APP_CALL(VecCopy(u0, u));
    REWIND_APP_CALL(TSSetSolution(ts, u));
    REWIND_APP_CALL(TSSetUp(ts));
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
    const auto add_integral = [&] {
      Vec q = nullptr;
      const PetscScalar* qa = nullptr;
      REWIND_APP_CALL(TSGetQuadratureTS(ts, nullptr, &quad));
      REWIND_APP_CALL(TSGetSolution(quad, &q));
      REWIND_APP_CALL(VecGetArrayRead(q, &qa));
      r.J_integral = PetscRealPart(qa[0]);
      REWIND_APP_CALL(VecRestoreArrayRead(q, &qa));
      r.J = r.J_terminal + r.J_integral;
    };
    if (mode == Mode::ForwardOnly) {
      add_integral();
      return r;
    }

    // The adjoint: lambda(T) = dJ/du(T), mu(T) = 0; TSAdjointSolve leaves dJ/du0 and dJ/dp.
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
    add_integral();
    if (tj) r.trajectory = trajectory_report(tj, r);
    return r;
  }

 private:
  Problem& pb_;
  Progress& progress_;
  Objective obj_;
};

// Bitwise comparison of two distributed vectors, agreed on by every rank.
FieldComparison compare_bits(const std::string& name, Vec a, Vec b) {
  FieldComparison f;
  f.name = name;
  PetscInt n = 0;
  const PetscScalar *x = nullptr, *y = nullptr;
  REWIND_APP_CALL(VecGetSize(a, &f.size));
  REWIND_APP_CALL(VecGetLocalSize(a, &n));
  REWIND_APP_CALL(VecGetArrayRead(a, &x));
  REWIND_APP_CALL(VecGetArrayRead(b, &y));
  for (PetscInt i = 0; i < n; ++i) {
    if (std::memcmp(&x[i], &y[i], sizeof(PetscScalar)) != 0) {
      ++f.differing;
      f.max_abs_diff = std::max(f.max_abs_diff, PetscAbsScalar(x[i] - y[i]));
    }
  }
  REWIND_APP_CALL(VecRestoreArrayRead(b, &y));
  REWIND_APP_CALL(VecRestoreArrayRead(a, &x));
  MPI_Comm comm = PetscObjectComm((PetscObject)a);
  allreduce(&f.differing, 1, MPIU_INT, MPI_SUM, comm);
  allreduce(&f.max_abs_diff, 1, MPIU_REAL, MPI_MAX, comm);
  return f;
}

struct AppOptions : CheckOptions {
  PetscBool compare = PETSC_FALSE, progress = PETSC_TRUE;
};

PetscErrorCode read_options(const char* app, AppOptions* o) {
  PetscFunctionBeginUser;
  PetscOptionsBegin(PETSC_COMM_WORLD, nullptr, "rewind application options", app);
  PetscCall(read_check_options(PetscOptionsObject, o));
  PetscCall(PetscOptionsBool("-compare_storeall",
                             "Re-run with a store-all trajectory; fail unless the gradients are "
                             "bitwise identical",
                             "", o->compare, &o->compare, nullptr));
  PetscCall(PetscOptionsBool("-progress", "Show progress of long runs", "", o->progress,
                             &o->progress, nullptr));
  PetscOptionsEnd();
  PetscFunctionReturn(0);
}

AppOptions read_options(const char* app) {
  AppOptions o;
  REWIND_APP_CALL(read_options(app, &o));
  validate(o);
  return o;
}

void write_gradient(const char* file, Problem& pb, Vec u0, const SolveResult& r) {
  std::vector<std::pair<Vec, std::string>> fields = {{r.g_u0, "grad_u0"}, {u0, "u0"}};
  if (pb.parameter()) {
    fields.emplace_back(r.g_p, std::string("grad_") + pb.parameter_name());
    fields.emplace_back(pb.parameter(), pb.parameter_name());
  }
  write_fields(file, pb.dm(), fields, pb.name(), r.J);
}

TaylorReport taylor_test(Driver& driver, Problem& pb, Vec u0, const SolveResult& base,
                         const AppOptions& o) {
  const std::vector<PetscReal>& replay = base.hooks.dts;  // the gradient's frozen step sizes
  Vec p = pb.parameter();
  OwnedVec du0, dp, p0, uh;
  REWIND_APP_CALL(VecDuplicate(u0, du0.out()));
  REWIND_APP_CALL(VecDuplicate(u0, uh.out()));
  if (p) {
    REWIND_APP_CALL(VecDuplicate(p, dp.out()));
    REWIND_APP_CALL(VecDuplicate(p, p0.out()));
    REWIND_APP_CALL(VecCopy(p, p0));
  }
  pb.directions(du0, dp);
  PetscScalar d1 = 0, d2 = 0;
  REWIND_APP_CALL(VecDot(base.g_u0, du0, &d1));
  if (p) REWIND_APP_CALL(VecDot(base.g_p, dp, &d2));
  const PetscReal J = driver.solve(Mode::ForwardOnly, u0, &replay).J;
  TaylorReport t =
      taylor_table(J, PetscRealPart(d1 + d2), o.taylor_h, o.taylor_points, [&](PetscReal h) {
        REWIND_APP_CALL(VecWAXPY(uh, h, du0, u0));
        if (p) {
          REWIND_APP_CALL(VecWAXPY(p, h, dp, p0));
          pb.parameter_changed();
        }
        return driver.solve(Mode::ForwardOnly, uh, &replay).J;
      });
  if (p) {
    REWIND_APP_CALL(VecCopy(p0, p));
    pb.parameter_changed();
  }
  return t;
}

void print0(const std::string& text) {
  REWIND_APP_CALL(PetscPrintf(PETSC_COMM_WORLD, "%s", text.c_str()));
}

int run(const ProblemFactory& make, const char* program) {
  REWIND_APP_CALL(TSTrajectoryRegisterRewind());
  PetscBool has = PETSC_FALSE;
  REWIND_APP_CALL(PetscOptionsHasName(nullptr, nullptr, "-ts_trajectory_type", &has));
  if (!has) REWIND_APP_CALL(PetscOptionsSetValue(nullptr, "-ts_trajectory_type", "rewind"));
  const AppOptions opt = read_options(program);
  std::unique_ptr<Problem> pb = make();
  PetscMPIInt ranks = 1;
  REWIND_APP_CALL(MPI_Comm_size(PETSC_COMM_WORLD, &ranks));
  PetscMPIInt rank = 0;
  REWIND_APP_CALL(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  DMDALocalInfo info;
  REWIND_APP_CALL(DMDAGetLocalInfo(pb->dm(), &info));

  Progress progress(opt.progress && rank == 0);
  Driver driver(*pb, progress);
  OwnedVec u0;
  REWIND_APP_CALL(DMCreateGlobalVector(pb->dm(), u0.out()));
  pb->initial_condition(u0);

  print0(std::string(pb->name()) + ": forward solve, then adjoint solve (" +
         std::to_string(info.mx) + " x " + std::to_string(info.my) + " grid, " +
         std::to_string(ranks) + " rank" + (ranks == 1 ? "" : "s") + ")\n");
  SolveResult main = driver.solve(Mode::User, u0, nullptr);

  Report rep;
  rep.app = pb->name();
  rep.description = pb->describe();
  rep.mx = info.mx;
  rep.my = info.my;
  rep.ranks = ranks;
  rep.ts_type = main.ts_type;
  rep.adaptive = main.adaptive;
  rep.steps = main.steps;
  rep.t_final = main.t_final;
  rep.dt = main.dt;
  rep.trajectory = main.trajectory;
  rep.forward_seconds = main.forward_seconds;
  rep.adjoint_seconds = main.adjoint_seconds;
  rep.J = main.J;
  rep.J_terminal = main.J_terminal;
  rep.J_integral = main.J_integral;
  rep.parameter = pb->parameter_name() ? pb->parameter_name() : "";
  REWIND_APP_CALL(VecNorm(main.g_u0, NORM_2, &rep.norm_u0));
  if (main.g_p) REWIND_APP_CALL(VecNorm(main.g_p, NORM_2, &rep.norm_p));
  rep.timeline = main.hooks.events;
  print0("\n" + summary_text(rep));
  if (opt.gradient[0]) {
    write_gradient(opt.gradient, *pb, u0, main);
    print0(std::string("  wrote        the gradient fields to ") + opt.gradient + "\n");
  }

  int code = 0;
  if (opt.compare) {
    print0("\n" + compare_header());
    SolveResult ref = driver.solve(Mode::StoreAll, u0, nullptr);
    CompareReport c;
    c.reference =
        "with PETSc's memory trajectory storing all " + std::to_string(ref.steps + 1) + " states";
    c.fields.push_back(compare_bits("dJ/du0", main.g_u0, ref.g_u0));
    if (main.g_p) c.fields.push_back(compare_bits("dJ/d" + rep.parameter, main.g_p, ref.g_p));
    c.identical = ref.steps == main.steps;
    for (const auto& f : c.fields) c.identical = c.identical && f.differing == 0;
    print0(compare_text(c));
    if (!c.identical) code = 1;
    rep.compare = c;
  }
  if (opt.taylor) {
    print0("\n" + taylor_header(rep.parameter, opt.taylor_points));
    TaylorReport t = taylor_test(driver, *pb, u0, main, opt);
    print0(taylor_text(t));
    if (!t.passed) code = 1;
    rep.taylor = t;
  }
  if (opt.json[0] && rank == 0) write_summary(opt.json, summary_json(rep));
  return code;
}

}  // namespace

int run_app(int argc, char** argv, const char* help, const ProblemFactory& make) {
  if (PetscInitialize(&argc, &argv, nullptr, help)) return 1;
  const char* program = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
  program = program ? program + 1 : (argc > 0 ? argv[0] : "rewind-app");
  int code = 0;
  try {
    code = run(make, program);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    std::fflush(stderr);
    MPI_Abort(PETSC_COMM_WORLD, 2);
  }
  if (PetscFinalize()) return 1;
  return code;
}

}  // namespace rwd::apps
