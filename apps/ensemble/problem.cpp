#include "problem.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"

namespace rwd::apps::multisource {

namespace {

PetscErrorCode read_options(Settings* s) {
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
  PetscCall(PetscOptionsReal("-compare_serial_rtol",
                             "With -compare_serial: accept a gradient within this relative "
                             "difference of the serial loop's (lossy group checkpoints); 0: "
                             "bitwise",
                             "", s->compare_rtol, &s->compare_rtol, nullptr));
  PetscCall(read_check_options(PetscOptionsObject, s));
  PetscOptionsEnd();
  // The step size by either name (PETSc 3.25 renamed -ts_dt to -ts_time_step).
  PetscCall(PetscOptionsGetReal(nullptr, nullptr, "-ts_dt", &s->dt, nullptr));
  PetscCall(PetscOptionsGetReal(nullptr, nullptr, "-ts_time_step", &s->dt, nullptr));
  PetscFunctionReturn(0);
}

PetscReal frac(PetscReal x) {
  return x - std::floor(x);
}

}  // namespace

Settings read_settings() {
  Settings s;
  REWIND_APP_CALL(read_options(&s));
  // Ranks given other values would run other problems or wait in other collectives (a hang):
  // refused on every rank by name first.
  using rwd::comm::setting_hash;
  const rwd::comm::Setting settings[] = {{"-ensemble_tasks", setting_hash(s.tasks)},
                                         {"-ensemble_steps_min", setting_hash(s.steps_min)},
                                         {"-ensemble_steps_max", setting_hash(s.steps_max)},
                                         {"-ensemble_kappa0", setting_hash(s.kappa0)},
                                         {"-ensemble_velocity", setting_hash(s.speed)},
                                         {"-compare_serial", setting_hash(s.compare)},
                                         {"-compare_serial_rtol", setting_hash(s.compare_rtol)},
                                         {"-taylor", setting_hash(s.taylor)},
                                         {"-taylor_h", setting_hash(s.taylor_h)},
                                         {"-taylor_points", setting_hash(s.taylor_points)},
                                         {"-ts_dt (-ts_time_step)", setting_hash(s.dt)}};
  rwd::comm::agree_settings(PETSC_COMM_WORLD, settings);
  rwd::require(s.tasks >= 0, "-ensemble_tasks must be >= 0, got " + std::to_string(s.tasks));
  rwd::require(s.steps_min >= 1 && s.steps_max >= s.steps_min,
               "-ensemble_steps_min must be >= 1 and <= -ensemble_steps_max");
  rwd::require(s.kappa0 > 0, "-ensemble_kappa0 must be > 0");
  rwd::require(s.compare_rtol >= 0 && s.compare_rtol < 1,
               "-compare_serial_rtol must be in [0, 1), got " + std::to_string(s.compare_rtol));
  rwd::require(s.compare_rtol == 0 || s.compare,
               "-compare_serial_rtol is given without -compare_serial, which it qualifies");
  validate(s);
  return s;
}

Source source_of(PetscInt k, const Settings& s) {
  const auto kk = static_cast<PetscReal>(k + 1);
  Source src;
  src.x = frac(0.5 + 0.7548776662466927 * kk);
  src.y = frac(0.5 + 0.5698402909980532 * kk);
  const auto span = static_cast<PetscReal>(s.steps_max - s.steps_min);
  src.steps = s.steps_min + static_cast<PetscInt>(std::lround(span * frac(0.3 + 0.618034 * kk)));
  return src;
}

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

std::vector<PetscScalar> field_block(MPI_Comm group, const Settings& s, Field f) {
  OwnedDM dm = make_grid(kGrid, group);
  OwnedVec v;
  REWIND_APP_CALL(DMCreateGlobalVector(dm, v.out()));
  fill(dm, v, [&](PetscReal x, PetscReal y) { return f(s, x, y); });
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

PetscReal group_dot(const Layout& l, const std::vector<PetscScalar>& x,
                    const std::vector<PetscScalar>& y) {
  PetscReal d = 0;
  for (std::size_t i = 0; i < x.size(); ++i) d += PetscRealPart(x[i] * y[i]);
  REWIND_APP_CALL(MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPIU_REAL, MPI_SUM, l.group));
  return d;
}

}  // namespace rwd::apps::multisource
