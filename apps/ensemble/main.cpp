// rewind-ensemble: one gradient from many adjoint solves, spread over groups of MPI ranks by
// rewind's ensemble map (include/rewind/petsc/ensemble.h). A multi-source inverse problem on
// rewind-heat's model (apps/common/advection_diffusion.hpp): K sources at different places, each
// switched on for its own duration (so the tasks have different step counts), the field read at
// a few receiver cells at each source's final time, and a misfit that couples the sources:
//
//   u_t + v . grad(u) = div(kappa grad(u)) + s_k,   u(0) = 0,   0 <= t <= T_k   (task k)
//   y_k = u(T_k) at the receiver cells;   d_k = the same for a "true" kappa
//   Phi(kappa) = log( sum_k |y_k - d_k|^2 / sum_k |d_k|^2 )
//
// dPhi/dkappa = sum_k (the adjoint of task k seeded with ybar_k = dPhi/dy_k), and ybar_k is
// known only when every task has run forward. Each task is a TS with the rewind trajectory on
// its group's communicator (its own DMDA there); the ensemble runs the forwards on the groups as
// they come free, keeps each task's checkpoints on the group that made them, sends each group
// the cotangents of its own tasks and sums the gradient reproducibly. -compare_serial checks the
// gradient bit for bit against a plain loop over the tasks on one group with PETSc's store-all
// trajectory; -taylor checks it against finite differences of Phi.
//
//   mpirun -n 2 build/bin/rewind-ensemble
//   mpirun -n 2 build/bin/rewind-ensemble -ensemble_tasks 12 -ts_trajectory_max_cps_ram 4
//       -compare_serial -taylor                                                  (one command)
//   mpirun -n 4 --oversubscribe build/bin/rewind-ensemble -rewind_ensemble_group_size 2
//       -rewind_ensemble_assign static -ts_trajectory_max_cps_ram 3
//       -rewind_ensemble_max_cps_ram 6 -rewind_ensemble_max_cps_disk 6
//       -summary_json ens.json -gradient_out ens.h5                              (one command)
#include <petscdmda.h>
#include <petscts.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "adjoint_app.hpp"
#include "advection_diffusion.hpp"
#include "report.hpp"
#include "rewind/ensemble/reproducible_sum.hpp"
#include "rewind/error.hpp"
#include "rewind/petsc/ensemble.h"

namespace {

using rwd::apps::AdvectionDiffusion;
using rwd::apps::bump;
using rwd::apps::format;
using rwd::apps::JsonObject;
using rwd::apps::OwnedDM;
using rwd::apps::OwnedVec;
using rwd::apps::TaylorReport;

constexpr char kHelp[] =
    "rewind-ensemble: the gradient of a multi-source misfit Phi(kappa) for 2D\n"
    "advection-diffusion, one TS adjoint task per source, spread over groups of ranks by\n"
    "rewind's ensemble map. Options: -ensemble_tasks K (12), -ensemble_steps_min/_max (20/80),\n"
    "-ensemble_kappa0 (0.01), -ensemble_velocity (1), -da_grid_x/-da_grid_y (64),\n"
    "-ts_dt (0.005), -rewind_ensemble_* (groups, assignment, group budget), -ts_trajectory_*\n"
    "(each task's budget), -compare_serial, -taylor, -summary_json FILE, -gradient_out FILE.h5.\n";

constexpr PetscInt kGrid = 64;
constexpr PetscInt kReceivers = 9;  // a 3 x 3 lattice

struct Settings : rwd::apps::CheckOptions {
  PetscInt tasks = 12, steps_min = 20, steps_max = 80;
  PetscReal kappa0 = 0.01, speed = 1.0, dt = 0.005;
  PetscBool compare = PETSC_FALSE;
};

PetscErrorCode read_settings(Settings* s) {
  PetscFunctionBeginUser;
  PetscOptionsBegin(PETSC_COMM_WORLD, nullptr, "rewind-ensemble options", nullptr);
  PetscCall(PetscOptionsInt("-ensemble_tasks", "Number of sources (tasks) K", "", s->tasks,
                            &s->tasks, nullptr));
  PetscCall(PetscOptionsInt("-ensemble_steps_min", "Fewest time steps of a task", "", s->steps_min,
                            &s->steps_min, nullptr));
  PetscCall(PetscOptionsInt("-ensemble_steps_max", "Most time steps of a task", "", s->steps_max,
                            &s->steps_max, nullptr));
  PetscCall(PetscOptionsReal("-ensemble_kappa0", "Background diffusivity", "", s->kappa0,
                             &s->kappa0, nullptr));
  PetscCall(PetscOptionsReal("-ensemble_velocity", "Peak speed of the cellular flow", "", s->speed,
                             &s->speed, nullptr));
  PetscCall(PetscOptionsBool("-compare_serial",
                             "Compute the gradient again by a serial loop over the tasks on the "
                             "first group; fail unless it is bitwise the same",
                             "", s->compare, &s->compare, nullptr));
  PetscCall(rwd::apps::read_check_options(PetscOptionsObject, s));
  PetscOptionsEnd();
  PetscCall(PetscOptionsGetReal(nullptr, nullptr, "-ts_dt", &s->dt, nullptr));
  PetscFunctionReturn(0);
}

PetscReal frac(PetscReal x) {
  return x - std::floor(x);
}

// Where source k sits (a low-discrepancy sequence spreads the sources over the square) and how
// many steps it runs (spread over the range, in no particular order).
struct Source {
  PetscReal x = 0, y = 0;
  PetscInt steps = 0;
};

Source source_of(PetscInt k, const Settings& s) {
  const auto kk = static_cast<PetscReal>(k + 1);
  Source src;
  src.x = frac(0.5 + 0.7548776662466927 * kk);
  src.y = frac(0.5 + 0.5698402909980532 * kk);
  const auto span = static_cast<PetscReal>(s.steps_max - s.steps_min);
  src.steps = s.steps_min + static_cast<PetscInt>(std::lround(span * frac(0.3 + 0.618034 * kk)));
  return src;
}

// Receiver r's cell on an mx x my grid.
void receiver_cell(PetscInt r, PetscInt mx, PetscInt my, PetscInt* i, PetscInt* j) {
  *i = static_cast<PetscInt>((1.0 + 2.0 * static_cast<PetscReal>(r % 3)) / 6.0 * mx);
  *j = static_cast<PetscInt>((1.0 + 2.0 * static_cast<PetscReal>(r / 3)) / 6.0 * my);
}

PetscReal kappa_guess(const Settings& s, PetscReal, PetscReal) {
  return s.kappa0;
}
PetscReal kappa_true(const Settings& s, PetscReal x, PetscReal y) {
  return s.kappa0 * (1 + 2 * bump(x, y, .7, .3, .15));  // rewind-heat's field
}
PetscReal kappa_direction(const Settings& s, PetscReal x, PetscReal y) {
  return s.kappa0 * bump(x, y, .5, .5, .2);
}

// This rank's block of a field on the group's grid (every task lays kappa out this way).
std::vector<PetscScalar> field_block(MPI_Comm group, const Settings& s,
                                     PetscReal (*f)(const Settings&, PetscReal, PetscReal)) {
  OwnedDM dm = rwd::apps::make_grid(kGrid, group);
  OwnedVec v;
  REWIND_APP_CALL(DMCreateGlobalVector(dm, v.out()));
  rwd::apps::fill(dm, v, [&](PetscReal x, PetscReal y) { return f(s, x, y); });
  const PetscScalar* a = nullptr;
  PetscInt n = 0;
  REWIND_APP_CALL(VecGetLocalSize(v, &n));
  REWIND_APP_CALL(VecGetArrayRead(v, &a));
  std::vector<PetscScalar> out(a, a + n);
  REWIND_APP_CALL(VecRestoreArrayRead(v, &a));
  return out;
}

void copy_in(Vec v, const std::vector<PetscScalar>& block) {
  PetscInt n = 0;
  PetscScalar* a = nullptr;
  REWIND_APP_CALL(VecGetLocalSize(v, &n));
  rwd::require(static_cast<std::size_t>(n) == block.size(),
               "rewind-ensemble: a field block does not match the grid's layout");
  REWIND_APP_CALL(VecGetArray(v, &a));
  std::copy(block.begin(), block.end(), a);
  REWIND_APP_CALL(VecRestoreArray(v, &a));
}

enum class Trajectory {
  None,      // forward only (data, Taylor test)
  Ensemble,  // saved; the ensemble makes it rewind and gives it the group's stores
  Memory,    // PETSc's store-all trajectory (the serial reference)
};

// One source task on a group: its own grid and model, its state and adjoint vectors, its TS.
class SourceTask {
 public:
  SourceTask(const Settings& s, PetscInt k, MPI_Comm group, const std::vector<PetscScalar>& kappa,
             Trajectory trajectory)
      : dm_(rwd::apps::make_grid(kGrid, group)), model_(dm_), comm_(group) {
    copy_in(model_.kappa(), kappa);
    model_.set_cellular_flow(s.speed);
    const Source src = source_of(k, s);
    rwd::apps::fill(dm_, model_.source(),
                    [&](PetscReal x, PetscReal y) { return bump(x, y, src.x, src.y, 0.08); });
    REWIND_APP_CALL(DMCreateGlobalVector(dm_, u_.out()));
    REWIND_APP_CALL(VecSet(u_, 0.0));
    REWIND_APP_CALL(DMCreateGlobalVector(dm_, &lambda_[0]));
    REWIND_APP_CALL(DMCreateGlobalVector(dm_, &mu_[0]));
    REWIND_APP_CALL(TSCreate(group, &ts_));
    REWIND_APP_CALL(TSSetExactFinalTime(ts_, TS_EXACTFINALTIME_MATCHSTEP));
    model_.configure(ts_);
    REWIND_APP_CALL(TSSetTimeStep(ts_, s.dt));
    if (trajectory != Trajectory::None) REWIND_APP_CALL(TSSetSaveTrajectory(ts_));
    REWIND_APP_CALL(TSSetFromOptions(ts_));
    if (trajectory == Trajectory::Memory) {
      TSTrajectory tj = nullptr;
      REWIND_APP_CALL(TSGetTrajectory(ts_, &tj));
      REWIND_APP_CALL(TSTrajectorySetType(tj, ts_, TSTRAJECTORYMEMORY));
      REWIND_APP_CALL(TSTrajectorySetSolutionOnly(tj, PETSC_FALSE));
    }
    // The task's length is its definition: set after the options.
    REWIND_APP_CALL(TSSetMaxSteps(ts_, src.steps));
    REWIND_APP_CALL(TSSetMaxTime(ts_, PETSC_MAX_REAL));
    REWIND_APP_CALL(TSSetSolution(ts_, u_));
  }
  ~SourceTask() {
    if (ts_) (void)TSDestroy(&ts_);
    (void)VecDestroy(&lambda_[0]);
    (void)VecDestroy(&mu_[0]);
  }
  SourceTask(const SourceTask&) = delete;
  SourceTask& operator=(const SourceTask&) = delete;

  TS ts() const { return ts_; }
  /// Gives up the TS (the ensemble destroys it).
  void release_ts() { ts_ = nullptr; }
  void solve() { REWIND_APP_CALL(TSSolve(ts_, nullptr)); }

  /// y_k: the final state at the receivers, the same on every rank of the group.
  std::vector<PetscScalar> output() const {
    std::vector<PetscScalar> y(kReceivers, 0.0);
    DMDALocalInfo info;
    const PetscScalar** a = nullptr;
    REWIND_APP_CALL(DMDAGetLocalInfo(dm_, &info));
    REWIND_APP_CALL(DMDAVecGetArrayRead(dm_, u_, &a));
    for (PetscInt r = 0; r < kReceivers; ++r) {
      PetscInt i = 0, j = 0;
      receiver_cell(r, info.mx, info.my, &i, &j);
      if (owns(info, i, j)) y[static_cast<std::size_t>(r)] = a[j][i];
    }
    REWIND_APP_CALL(DMDAVecRestoreArrayRead(dm_, u_, &a));
    // One rank holds each value and the others add zero: the sum is exact.
    REWIND_APP_CALL(MPI_Allreduce(MPI_IN_PLACE, y.data(), kReceivers, MPIU_SCALAR, MPI_SUM, comm_));
    return y;
  }

  /// lambda(T) = dPhi/du(T) = sum_r ybar_r e_(cell r), mu(T) = 0.
  void seed(const PetscScalar ybar[]) {
    DMDALocalInfo info;
    PetscScalar** l = nullptr;
    REWIND_APP_CALL(DMDAGetLocalInfo(dm_, &info));
    REWIND_APP_CALL(VecSet(lambda_[0], 0.0));
    REWIND_APP_CALL(VecSet(mu_[0], 0.0));
    REWIND_APP_CALL(DMDAVecGetArray(dm_, lambda_[0], &l));
    for (PetscInt r = 0; r < kReceivers; ++r) {
      PetscInt i = 0, j = 0;
      receiver_cell(r, info.mx, info.my, &i, &j);
      if (owns(info, i, j)) l[j][i] += ybar[r];
    }
    REWIND_APP_CALL(DMDAVecRestoreArray(dm_, lambda_[0], &l));
    REWIND_APP_CALL(TSSetCostGradients(ts_, 1, lambda_, mu_));
  }

  /// After TSAdjointSolve: this rank's block of dPhi/dkappa from this task.
  void gradient(PetscScalar g[]) const {
    PetscInt n = 0;
    const PetscScalar* a = nullptr;
    REWIND_APP_CALL(VecGetLocalSize(mu_[0], &n));
    REWIND_APP_CALL(VecGetArrayRead(mu_[0], &a));
    std::copy(a, a + n, g);
    REWIND_APP_CALL(VecRestoreArrayRead(mu_[0], &a));
  }

 private:
  static bool owns(const DMDALocalInfo& info, PetscInt i, PetscInt j) {
    return i >= info.xs && i < info.xs + info.xm && j >= info.ys && j < info.ys + info.ym;
  }

  OwnedDM dm_;
  AdvectionDiffusion model_;
  MPI_Comm comm_;
  OwnedVec u_;
  Vec lambda_[1] = {nullptr}, mu_[1] = {nullptr};  // TS keeps pointers to these arrays
  TS ts_ = nullptr;
};

// What the ensemble's callbacks reach through their context: the tasks alive on this rank.
struct EnsembleTasks {
  const Settings* settings = nullptr;
  const std::vector<PetscScalar>* kappa = nullptr;
  std::map<PetscInt, std::unique_ptr<SourceTask>> live;

  SourceTask& at(PetscInt k) { return *live.at(k); }
  TS create(PetscInt k, MPI_Comm group) {
    auto task = std::make_unique<SourceTask>(*settings, k, group, *kappa, Trajectory::Ensemble);
    TS ts = task->ts();
    live[k] = std::move(task);
    return ts;
  }
  void destroy(PetscInt k) {
    auto it = live.find(k);
    if (it == live.end()) return;
    it->second->release_ts();
    live.erase(it);
  }
};

EnsembleTasks& tasks_of(void* ctx) {
  return *static_cast<EnsembleTasks*>(ctx);
}

// The ensemble's callbacks (RewindEnsembleTaskOps): thin, errors through PetscCallCXX.
PetscErrorCode task_create(PetscInt k, MPI_Comm group, void* ctx, TS* ts) {
  PetscFunctionBeginUser;
  PetscCallCXX(*ts = tasks_of(ctx).create(k, group));
  PetscFunctionReturn(0);
}
PetscErrorCode task_output(PetscInt k, TS, void* ctx, PetscScalar y[]) {
  PetscFunctionBeginUser;
  PetscCallCXX({
    const auto out = tasks_of(ctx).at(k).output();
    std::copy(out.begin(), out.end(), y);
  });
  PetscFunctionReturn(0);
}
PetscErrorCode task_seed(PetscInt k, TS, void* ctx, const PetscScalar ybar[]) {
  PetscFunctionBeginUser;
  PetscCallCXX(tasks_of(ctx).at(k).seed(ybar));
  PetscFunctionReturn(0);
}
PetscErrorCode task_gradient(PetscInt k, TS, void* ctx, PetscScalar g[]) {
  PetscFunctionBeginUser;
  PetscCallCXX(tasks_of(ctx).at(k).gradient(g));
  PetscFunctionReturn(0);
}
PetscErrorCode task_destroy(PetscInt k, TS, void* ctx) {
  PetscFunctionBeginUser;
  PetscCallCXX(tasks_of(ctx).destroy(k));
  PetscFunctionReturn(0);
}

// Phi = log(S / D), S = sum |y - d|^2, D = sum |d|^2; ybar = dPhi/dy = 2 (y - d) / S.
struct Misfit {
  PetscReal phi = 0;
  std::vector<PetscScalar> ybar;
};

Misfit misfit(const std::vector<PetscScalar>& y, const std::vector<PetscScalar>& d) {
  PetscReal S = 0, D = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    S += PetscRealPart((y[i] - d[i]) * (y[i] - d[i]));
    D += PetscRealPart(d[i] * d[i]);
  }
  rwd::require(S > 0 && D > 0, "rewind-ensemble: the misfit or the data are zero");
  Misfit m;
  m.phi = std::log(S / D);
  m.ybar.resize(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) m.ybar[i] = 2 * (y[i] - d[i]) / S;
  return m;
}

// This run's groups, as the ensemble split the communicator.
struct Layout {
  MPI_Comm group = MPI_COMM_NULL;  // this rank's group (the app's duplicate)
  int index = 0, groups = 1, group_size = 1, rank = 0, size = 1;
};

// Forward solves only (no trajectory): every task's outputs on every rank, task k on group
// k mod G. For the data and the Taylor test.
std::vector<PetscScalar> outputs_everywhere(const Settings& s, const Layout& l,
                                            const std::vector<PetscScalar>& kappa) {
  std::vector<PetscScalar> all(static_cast<std::size_t>(s.tasks * kReceivers), 0.0);
  for (PetscInt k = l.index; k < s.tasks; k += l.groups) {
    SourceTask t(s, k, l.group, kappa, Trajectory::None);
    t.solve();
    const auto y = t.output();
    if (l.rank % l.group_size == 0) {
      std::copy(y.begin(), y.end(), all.begin() + k * kReceivers);
    }
  }
  REWIND_APP_CALL(MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()), MPIU_SCALAR,
                                MPI_SUM, PETSC_COMM_WORLD));
  return all;
}

// The serial reference on one group: every task one after the other, forward only for the
// outputs, then each with PETSc's store-all trajectory for its adjoint; the contributions summed
// as the ensemble sums them.
struct Serial {
  std::vector<PetscScalar> y, gradient;
};

Serial serial_loop(const Settings& s, MPI_Comm group, const std::vector<PetscScalar>& kappa,
                   const std::vector<PetscScalar>& data) {
  Serial out;
  for (PetscInt k = 0; k < s.tasks; ++k) {
    SourceTask t(s, k, group, kappa, Trajectory::None);
    t.solve();
    const auto yk = t.output();
    out.y.insert(out.y.end(), yk.begin(), yk.end());
  }
  const Misfit m = misfit(out.y, data);
  rwd::ensemble::ReproducibleSum sum(kappa.size());
  std::vector<PetscScalar> gk(kappa.size());
  for (PetscInt k = 0; k < s.tasks; ++k) {
    SourceTask t(s, k, group, kappa, Trajectory::Memory);
    t.solve();
    t.seed(m.ybar.data() + k * kReceivers);
    REWIND_APP_CALL(TSAdjointSolve(t.ts()));
    t.gradient(gk.data());
    sum.add(gk);
  }
  out.gradient = sum.result();
  return out;
}

// The ensemble's report (RewindEnsembleGetReport), read back for the summary.
struct MappedTask {
  long long task = -1, group = -1, position = -1, steps = 0, forward_steps = 0, adjoint_steps = 0;
  double forward[2] = {0, 0}, backward[2] = {0, 0};
  bool spilled = false, cut = false;
};

struct ReportView {
  double forward_seconds = 0, backward_seconds = 0;
  long long cotangent_bytes = 0, reduction_bytes = 0;
  std::vector<MappedTask> mapping;
};

const char* json_value(const std::string& json, const char* key) {
  const std::string k = std::string("\"") + key + "\": ";
  const auto at = json.find(k);
  rwd::require(at != std::string::npos,
               std::string("rewind-ensemble: the ensemble report has no ") + key);
  return json.c_str() + at + k.size();
}

double json_number(const std::string& json, const char* key) {
  return std::strtod(json_value(json, key), nullptr);
}

void json_pair(const std::string& json, const char* key, double out[2]) {
  char* end = nullptr;
  out[0] = std::strtod(json_value(json, key) + 1, &end);  // past the '['
  out[1] = std::strtod(end + 1, nullptr);                 // past the ','
}

ReportView read_report(const std::string& json) {
  ReportView r;
  r.forward_seconds = json_number(json, "forward_seconds");
  r.backward_seconds = json_number(json, "backward_seconds");
  r.cotangent_bytes = std::llround(json_number(json, "backward_cotangent_bytes"));
  r.reduction_bytes = std::llround(json_number(json, "backward_reduction_bytes"));
  const std::string mapping = json_value(json, "mapping");  // [{...}, {...}]}
  for (std::size_t at = mapping.rfind('[', 0) == 0 ? 1 : std::string::npos;
       at < mapping.size() && mapping[at] == '{';) {
    const std::size_t end = mapping.find('}', at);
    const std::string e = mapping.substr(at, end - at + 1);
    at = mapping.compare(end + 1, 2, ", ") == 0 ? end + 3 : std::string::npos;
    MappedTask t;
    t.task = std::llround(json_number(e, "task"));
    t.group = std::llround(json_number(e, "group"));
    t.position = std::llround(json_number(e, "position"));
    t.steps = std::llround(json_number(e, "steps"));
    t.forward_steps = std::llround(json_number(e, "forward_steps"));
    t.adjoint_steps = std::llround(json_number(e, "adjoint_steps"));
    json_pair(e, "forward", t.forward);
    json_pair(e, "backward", t.backward);
    t.spilled = std::strncmp(json_value(e, "spilled"), "true", 4) == 0;
    t.cut = std::strncmp(json_value(e, "cut"), "true", 4) == 0;
    r.mapping.push_back(t);
  }
  return r;
}

// A checkpoint budget option as the summary shows it (-1: unlimited).
std::string budget_option(const char* name, PetscInt unset) {
  PetscInt n = unset;
  REWIND_APP_CALL(PetscOptionsGetInt(nullptr, nullptr, name, &n, nullptr));
  return n >= 0 ? std::to_string(n) : std::string("unlimited");
}

std::string assign_option() {
  char buf[32] = "dynamic";
  REWIND_APP_CALL(
      PetscOptionsGetString(nullptr, nullptr, "-rewind_ensemble_assign", buf, sizeof buf, nullptr));
  return buf;
}

struct CompareResult {
  bool identical = false, outputs_identical = false;
  long long differing = 0, values = 0;
  PetscReal max_abs_diff = 0;
};

struct Times {
  double data = 0, forward = 0, backward = 0, compare = 0, taylor = 0, total = 0;
};

struct Run {
  Settings settings;
  Layout layout;
  PetscInt mx = 0, my = 0;
  PetscReal phi = 0, gradient_norm = 0;
  ReportView report;
  std::string report_json;
  Times times;
  std::optional<CompareResult> compare;
  std::optional<TaylorReport> taylor;
};

std::string summary_text(const Run& r) {
  const Settings& s = r.settings;
  const Layout& l = r.layout;
  std::ostringstream os;
  long long total_steps = 0, fewest = -1, most = 0;
  for (PetscInt k = 0; k < s.tasks; ++k) {
    const long long n = source_of(k, s).steps;
    total_steps += n;
    fewest = fewest < 0 ? n : std::min(fewest, n);
    most = std::max(most, n);
  }
  os << format(
      "rewind-ensemble: one gradient from %lld adjoint solve%s, spread over %d group%s of %d "
      "rank%s (%d MPI rank%s)\n",
      (long long)s.tasks, s.tasks == 1 ? "" : "s", l.groups, l.groups == 1 ? "" : "s", l.group_size,
      l.group_size == 1 ? "" : "s", l.size, l.size == 1 ? "" : "s");
  os << format(
      "  model        u_t + v.grad(u) = div(kappa grad(u)) + s_k on the periodic unit square, "
      "cellular flow |v| <= %g,\n"
      "               %lld x %lld cells, Crank-Nicolson, dt = %g, u(0) = 0\n",
      (double)s.speed, (long long)r.mx, (long long)r.my, (double)s.dt);
  os << format(
      "  tasks        task k: the source s_k, a bump at its own place, on for its own T_k: %lld to "
      "%lld steps (%lld in all)\n",
      fewest, most, total_steps);
  os << format(
      "  outputs      y_k = u(T_k) at %d receiver cells (a 3 x 3 lattice); data d_k: the same "
      "for a true kappa\n"
      "               with a more diffusive blob at (0.7, 0.3); first guess kappa = %g "
      "everywhere\n",
      (int)kReceivers, (double)s.kappa0);
  os << format(
      "  objective    Phi = log(sum_k |y_k - d_k|^2 / sum_k |d_k|^2) = %.12e: it couples the "
      "tasks,\n"
      "               so the cotangents ybar_k = dPhi/dy_k are known only after every forward "
      "solve\n",
      (double)r.phi);
  os << format(
      "  gradient     dPhi/dkappa at every cell (the sum of the %lld adjoints): |dPhi/dkappa| = "
      "%.6e\n",
      (long long)s.tasks, (double)r.gradient_norm);
  os << "  checkpoints  each task: the rewind trajectory, " +
            budget_option("-ts_trajectory_max_cps_ram", -1) + " RAM + " +
            budget_option("-ts_trajectory_max_cps_disk", 0) +
            " disk checkpoints (-ts_trajectory_max_cps_*);\n"
            "               each group: its tapes share " +
            budget_option("-rewind_ensemble_max_cps_ram", -1) + " RAM + " +
            budget_option("-rewind_ensemble_max_cps_disk", -1) +
            " disk checkpoints (-rewind_ensemble_max_cps_*)\n";

  const std::string assign = assign_option();
  os << "\nThe mapping (" << assign
     << (assign == "dynamic"
             ? ": a group that comes free claims the next task by a one-sided fetch-and-add on "
               "rank 0)\n"
             : ": task k on group k mod G, whatever the tasks cost)\n");
  os << "  group  ranks   tasks  steps  forward order (* spilled to disk, + cut and run again)\n"
        "                               backward order (in RAM newest first, then spilled, then "
        "cut)\n";
  int spilled = 0, cut = 0;
  for (int q = 0; q < l.groups; ++q) {
    std::vector<MappedTask> mine;
    for (const auto& t : r.report.mapping) {
      if (t.group == q) mine.push_back(t);
    }
    long long steps = 0;
    std::string forward, backward;
    std::sort(mine.begin(), mine.end(),
              [](const MappedTask& a, const MappedTask& b) { return a.position < b.position; });
    for (const auto& t : mine) {
      steps += t.steps;
      forward += " " + std::to_string(t.task) + (t.spilled ? "*" : "") + (t.cut ? "+" : "");
      spilled += t.spilled ? 1 : 0;
      cut += t.cut ? 1 : 0;
    }
    std::sort(mine.begin(), mine.end(), [](const MappedTask& a, const MappedTask& b) {
      return a.backward[0] < b.backward[0];
    });
    for (const auto& t : mine) backward += " " + std::to_string(t.task);
    const int first = q * l.group_size, last = first + l.group_size - 1;
    const std::string ranks =
        first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
    os << format("  %5d  %-6s %6zu %6lld %s\n", q, ranks.c_str(), mine.size(), steps,
                 forward.empty() ? " (none)" : forward.c_str());
    os << format("  %5s  %-6s %6s %6s %s\n", "", "", "", "", backward.c_str());
  }
  os << format(
      "  group budget %d tape%s spilled from RAM to disk, %d cut (checkpoints dropped, forward "
      "run again before the adjoint)\n",
      spilled, spilled == 1 ? "" : "s", cut);
  os << format(
      "  backward     each group got one message with the cotangents of its own tasks (%lld "
      "bytes in all);\n"
      "               the tapes never moved; the gradient was summed reproducibly across the "
      "groups (%lld bytes)\n",
      r.report.cotangent_bytes, r.report.reduction_bytes);
  os << format(
      "  time         data %.2f s, forward pass %.2f s, backward pass %.2f s (slowest rank)\n",
      r.times.data, r.times.forward, r.times.backward);
  return os.str();
}

std::string compare_text(const CompareResult& c, const Layout& l, PetscInt tasks) {
  std::ostringstream os;
  os << format("  outputs y_k  %s\n", c.outputs_identical ? "bitwise identical" : "DIFFER");
  if (c.differing == 0) {
    os << format("  dPhi/dkappa  bitwise identical on all %d ranks (%lld values)\n", l.size,
                 c.values);
  } else {
    os << format("  dPhi/dkappa  %lld of %lld values differ, by up to %.3e\n", c.differing,
                 c.values, (double)c.max_abs_diff);
  }
  os << (c.identical
             ? format("Serial comparison passed: the ensemble's gradient is bitwise the serial "
                      "loop's over the %lld task%s\n",
                      (long long)tasks, tasks == 1 ? "" : "s")
             : std::string("Serial comparison FAILED: the gradients differ\n"));
  return os.str();
}

std::string run_json(const Run& r) {
  const Settings& s = r.settings;
  std::string sources = "[";
  for (PetscInt k = 0; k < s.tasks; ++k) {
    const Source src = source_of(k, s);
    JsonObject o;
    o.integer("task", (long long)k).num("x", src.x).num("y", src.y);
    o.integer("steps", (long long)src.steps);
    sources += (k ? ", " : "") + o.done();
  }
  std::string receivers = "[";
  for (PetscInt q = 0; q < kReceivers; ++q) {
    PetscInt i = 0, j = 0;
    receiver_cell(q, r.mx, r.my, &i, &j);
    receivers += (q ? ", " : "") +
                 format("[%.17g, %.17g]", (i + 0.5) / (double)r.mx, (j + 0.5) / (double)r.my);
  }
  JsonObject grid, time, o;
  grid.integer("mx", (long long)r.mx).integer("my", (long long)r.my);
  time.num("data_seconds", r.times.data).num("forward_seconds", r.times.forward);
  time.num("backward_seconds", r.times.backward).num("compare_seconds", r.times.compare);
  time.num("taylor_seconds", r.times.taylor).num("total_seconds", r.times.total);
  o.str("app", "rewind-ensemble").integer("K", (long long)s.tasks);
  o.integer("g", r.layout.group_size).integer("G", r.layout.groups);
  o.integer("ranks", r.layout.size).str("assign", assign_option()).raw("grid", grid.done());
  o.num("dt", s.dt).num("kappa0", s.kappa0).num("phi", r.phi);
  o.num("gradient_norm", r.gradient_norm).raw("sources", sources + "]");
  o.raw("receivers", receivers + "]").raw("time", time.done());
  if (r.compare) {
    JsonObject c;
    c.boolean("identical", r.compare->identical);
    c.boolean("outputs_identical", r.compare->outputs_identical);
    c.integer("values", r.compare->values).integer("differing", r.compare->differing);
    c.num("max_abs_diff", r.compare->max_abs_diff);
    o.raw("compare_serial", c.done());
  } else {
    o.raw("compare_serial", "null");
  }
  o.raw("taylor", r.taylor ? rwd::apps::taylor_json(*r.taylor) : "null");
  o.raw("ensemble", r.report_json);
  return o.done() + "\n";
}

void print0(const std::string& text) {
  REWIND_APP_CALL(PetscPrintf(PETSC_COMM_WORLD, "%s", text.c_str()));
}

// The sum over the group of this rank's block's x . y (the same on every group).
PetscReal group_dot(const Layout& l, const std::vector<PetscScalar>& x,
                    const std::vector<PetscScalar>& y) {
  PetscReal d = 0;
  for (std::size_t i = 0; i < x.size(); ++i) d += PetscRealPart(x[i] * y[i]);
  REWIND_APP_CALL(MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPIU_REAL, MPI_SUM, l.group));
  return d;
}

int run() {
  const double t_start = MPI_Wtime();
  Run r;
  Settings& s = r.settings;
  REWIND_APP_CALL(read_settings(&s));
  rwd::require(s.tasks >= 0, "-ensemble_tasks must be >= 0, got " + std::to_string(s.tasks));
  rwd::require(s.steps_min >= 1 && s.steps_max >= s.steps_min,
               "-ensemble_steps_min must be >= 1 and <= -ensemble_steps_max");
  rwd::require(s.kappa0 > 0, "-ensemble_kappa0 must be > 0");
  rwd::apps::validate(s);

  // Destroyed at the end of a run that did not throw; a failed run is aborted (main), and
  // nothing collective runs while a rank unwinds.
  RewindEnsemble ens = nullptr;
  REWIND_APP_CALL(RewindEnsembleCreate(PETSC_COMM_WORLD, &ens));
  REWIND_APP_CALL(RewindEnsembleSetFromOptions(ens));
  Layout& l = r.layout;
  PetscInt group = 0, groups = 1;
  MPI_Comm ensemble_group = MPI_COMM_NULL;  // the ensemble's: freed with it
  REWIND_APP_CALL(RewindEnsembleGetGroup(ens, &group, &groups, &ensemble_group));
  REWIND_APP_CALL(MPI_Comm_dup(ensemble_group, &l.group));
  l.index = static_cast<int>(group);
  l.groups = static_cast<int>(groups);
  REWIND_APP_CALL(MPI_Comm_rank(PETSC_COMM_WORLD, &l.rank));
  REWIND_APP_CALL(MPI_Comm_size(PETSC_COMM_WORLD, &l.size));
  l.group_size = l.size / l.groups;
  {
    OwnedDM dm = rwd::apps::make_grid(kGrid, l.group);
    DMDALocalInfo info;
    REWIND_APP_CALL(DMDAGetLocalInfo(dm, &info));
    r.mx = info.mx;
    r.my = info.my;
  }
  const std::vector<PetscScalar> kappa = field_block(l.group, s, kappa_guess);
  const std::size_t block = kappa.size();

  print0(
      format("rewind-ensemble: %lld sources on %d group%s of %d rank%s; synthetic data, "
             "then the forward and backward passes\n",
             (long long)s.tasks, l.groups, l.groups == 1 ? "" : "s", l.group_size,
             l.group_size == 1 ? "" : "s"));
  double t0 = MPI_Wtime();
  const std::vector<PetscScalar> data =
      outputs_everywhere(s, l, field_block(l.group, s, kappa_true));
  r.times.data = MPI_Wtime() - t0;

  // The map: forward, Phi and its cotangents, backward.
  EnsembleTasks tasks;
  tasks.settings = &s;
  tasks.kappa = &kappa;
  const RewindEnsembleTaskOps ops = {task_create, task_output, task_seed, task_gradient,
                                     task_destroy};
  REWIND_APP_CALL(RewindEnsembleSetTasks(ens, &ops, &tasks));
  REWIND_APP_CALL(RewindEnsembleSetSizes(ens, kReceivers, static_cast<PetscInt>(block)));
  std::vector<PetscScalar> y(static_cast<std::size_t>(s.tasks * kReceivers)), g(block);
  REWIND_APP_CALL(RewindEnsembleForward(ens, s.tasks, y.data()));
  Misfit m;
  if (s.tasks > 0) m = misfit(y, data);
  r.phi = m.phi;
  REWIND_APP_CALL(RewindEnsembleBackward(ens, m.ybar.data(), g.data()));
  const char* json = nullptr;
  REWIND_APP_CALL(RewindEnsembleGetReport(ens, &json));
  r.report_json = json;
  r.report = read_report(r.report_json);
  r.times.forward = r.report.forward_seconds;
  r.times.backward = r.report.backward_seconds;
  r.gradient_norm = std::sqrt(group_dot(l, g, g));
  print0("\n" + summary_text(r));

  int code = 0;
  if (s.compare) {
    print0(
        format("\nSerial comparison: the same gradient by a plain loop over the %lld tasks on "
               "group 0 (%d rank%s), each\n  with PETSc's store-all memory trajectory, summed "
               "the same reproducible way; compared bit for bit on every rank\n",
               (long long)s.tasks, l.group_size, l.group_size == 1 ? "" : "s"));
    t0 = MPI_Wtime();
    Serial ref;
    ref.y.assign(y.size(), 0.0);
    ref.gradient.assign(block, 0.0);
    if (l.index == 0 && s.tasks > 0) ref = serial_loop(s, l.group, kappa, data);
    // Hand group 0's blocks to the ranks with the same rank in the other groups.
    MPI_Comm cross = MPI_COMM_NULL;
    REWIND_APP_CALL(MPI_Comm_split(PETSC_COMM_WORLD, l.rank % l.group_size, l.rank, &cross));
    REWIND_APP_CALL(MPI_Bcast(ref.gradient.data(), static_cast<int>(block), MPIU_SCALAR, 0, cross));
    REWIND_APP_CALL(MPI_Comm_free(&cross));
    REWIND_APP_CALL(
        MPI_Bcast(ref.y.data(), static_cast<int>(ref.y.size()), MPIU_SCALAR, 0, PETSC_COMM_WORLD));
    CompareResult c;
    for (std::size_t i = 0; i < block; ++i) {
      if (std::memcmp(&g[i], &ref.gradient[i], sizeof(PetscScalar)) != 0) {
        ++c.differing;
        c.max_abs_diff = std::max(c.max_abs_diff, PetscAbsScalar(g[i] - ref.gradient[i]));
      }
    }
    c.values = static_cast<long long>(block);
    int outputs_same =
        y.empty() || std::memcmp(y.data(), ref.y.data(), y.size() * sizeof(PetscScalar)) == 0 ? 1
                                                                                              : 0;
    REWIND_APP_CALL(
        MPI_Allreduce(MPI_IN_PLACE, &c.differing, 1, MPI_LONG_LONG, MPI_SUM, PETSC_COMM_WORLD));
    REWIND_APP_CALL(
        MPI_Allreduce(MPI_IN_PLACE, &c.values, 1, MPI_LONG_LONG, MPI_SUM, PETSC_COMM_WORLD));
    REWIND_APP_CALL(
        MPI_Allreduce(MPI_IN_PLACE, &c.max_abs_diff, 1, MPIU_REAL, MPI_MAX, PETSC_COMM_WORLD));
    REWIND_APP_CALL(
        MPI_Allreduce(MPI_IN_PLACE, &outputs_same, 1, MPI_INT, MPI_MIN, PETSC_COMM_WORLD));
    c.outputs_identical = outputs_same == 1;
    c.identical = c.outputs_identical && c.differing == 0;
    r.times.compare = MPI_Wtime() - t0;
    print0(compare_text(c, l, s.tasks));
    if (!c.identical) code = 1;
    r.compare = c;
  }

  if (s.taylor) {
    print0(format(
        "\nTaylor test: Phi(kappa + h dkappa) for a smooth bump dkappa (%lld more forward passes "
        "over the tasks, task k on group k mod G);\n"
        "  with the adjoint gradient, |Phi(m + h dm) - Phi(m) - h dPhi.dm| must fall 4x each "
        "time h halves (order 2)\n",
        (long long)s.taylor_points));
    t0 = MPI_Wtime();
    rwd::require(s.tasks > 0, "-taylor needs at least one task");
    const std::vector<PetscScalar> dkappa = field_block(l.group, s, kappa_direction);
    std::vector<PetscScalar> kh(block);
    const TaylorReport t = rwd::apps::taylor_table(
        r.phi, group_dot(l, g, dkappa), s.taylor_h, s.taylor_points, [&](PetscReal h) {
          for (std::size_t i = 0; i < block; ++i) kh[i] = kappa[i] + h * dkappa[i];
          return misfit(outputs_everywhere(s, l, kh), data).phi;
        });
    r.times.taylor = MPI_Wtime() - t0;
    print0(rwd::apps::taylor_text(t, "Phi"));
    if (!t.passed) code = 1;
    r.taylor = t;
  }

  REWIND_APP_CALL(RewindEnsembleDestroy(&ens));

  if (s.gradient[0] && l.index == 0) {
    OwnedDM dm = rwd::apps::make_grid(kGrid, l.group);
    OwnedVec gv, kv, tv;
    REWIND_APP_CALL(DMCreateGlobalVector(dm, gv.out()));
    REWIND_APP_CALL(DMCreateGlobalVector(dm, kv.out()));
    REWIND_APP_CALL(DMCreateGlobalVector(dm, tv.out()));
    copy_in(gv, g);
    copy_in(kv, kappa);
    copy_in(tv, field_block(l.group, s, kappa_true));
    rwd::apps::write_fields(
        s.gradient, dm, {{gv.get(), "grad_kappa"}, {kv.get(), "kappa"}, {tv.get(), "kappa_true"}},
        "rewind-ensemble", r.phi);
  }
  if (s.gradient[0]) print0(std::string("\nwrote dPhi/dkappa to ") + s.gradient + "\n");
  r.times.total = MPI_Wtime() - t_start;
  if (s.json[0] && l.rank == 0) rwd::apps::write_summary(s.json, run_json(r));
  if (s.json[0]) print0(std::string("wrote the summary to ") + s.json + "\n");
  REWIND_APP_CALL(MPI_Comm_free(&l.group));
  print0(format("total %.2f s\n", r.times.total));
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (PetscInitialize(&argc, &argv, nullptr, kHelp)) return 1;
  int code = 0;
  try {
    code = run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rewind-ensemble: error: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(PETSC_COMM_WORLD, 2);
  }
  if (PetscFinalize()) return 1;
  return code;
}
