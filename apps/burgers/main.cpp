// rewind-burgers: the gradient of a PDE objective with respect to the initial state, by the
// discrete adjoint of an explicit Runge-Kutta solver with adaptive time steps, checkpointed by
// rewind. The step count is known only when the forward run ends, so a checkpoint budget is
// served by an online schedule. 2D viscous Burgers on the periodic unit square (PETSc DMDA),
// TS rk (3bs) with -ts_adapt_type basic:
//
//   u_t + (u^2/2)_x + (u^2/2)_y = nu (u_xx + u_yy)   (central differences)
//   J(u0) = 1/2 |u(T) - u_obs|^2 + int_0^T 1/2 (chi u, u) dt
//
// The trajectory type defaults to rewind and takes every -ts_trajectory_* option; -taylor
// checks the gradient (with the step sizes of the run frozen, as the discrete adjoint assumes),
// -compare_storeall checks it against store-all bit for bit.
//
//   mpirun -n 2 build/bin/rewind-burgers
//   mpirun -n 2 build/bin/rewind-burgers -ts_trajectory_max_cps_ram 6 -taylor -compare_storeall
//   mpirun -n 2 build/bin/rewind-burgers -ts_adapt_type none -ts_dt 0.004
//       -ts_trajectory_max_cps_ram 3 -ts_trajectory_max_cps_disk 8 -ts_trajectory_dirname /tmp/b
//       (one command: fixed steps, two levels)
#include <memory>

#include "adjoint_app.hpp"
#include "rewind/error.hpp"

namespace {

using rwd::apps::bump;
using rwd::apps::Ghosted;
using rwd::apps::OwnedMat;

constexpr char kHelp[] =
    "rewind-burgers: gradient of J(u0) for 2D viscous Burgers by TSAdjointSolve of adaptive\n"
    "explicit RK, with the rewind checkpointing trajectory. Options: -da_grid_x/-da_grid_y (64),\n"
    "-ts_max_time (0.6), -burgers_nu (0.01), -ts_adapt_type (basic), -ts_trajectory_*, -taylor,\n"
    "-compare_storeall, -summary_json FILE, -gradient_out FILE.h5, -progress 0.\n";

class Burgers final : public rwd::apps::Problem {
 public:
  Burgers() : Problem(64) {
    REWIND_APP_CALL(read_options());
    rwd::require(nu_ > 0, "-burgers_nu must be > 0");
  }

  const char* name() const override { return "rewind-burgers"; }
  std::string describe() const override {
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "model        u_t + (u^2/2)_x + (u^2/2)_y = nu laplace(u), nu = %g, on the "
                  "periodic unit square\n"
                  "method       explicit RK 3(2) (TS rk 3bs), adaptive steps (tolerance 1e-6, "
                  "capped below the stability limit)\n"
                  "controls     initial state u0 (a bump riding on u = 0.5 that steepens into a "
                  "front)",
                  (double)nu_);
    return buf;
  }

  void configure(TS ts) override {
    OwnedMat J;
    TSAdapt adapt = nullptr;
    REWIND_APP_CALL(TSSetDM(ts, dm_));
    REWIND_APP_CALL(TSSetType(ts, TSRK));
    REWIND_APP_CALL(TSRKSetType(ts, TSRK3BS));
    REWIND_APP_CALL(TSGetAdapt(ts, &adapt));
    REWIND_APP_CALL(TSAdaptSetType(adapt, TSADAPTBASIC));
    REWIND_APP_CALL(TSSetRHSFunction(ts, nullptr, rhs, this));
    REWIND_APP_CALL(DMCreateMatrix(dm_, J.out()));
    REWIND_APP_CALL(TSSetRHSJacobian(ts, J, J, rhs_jacobian, this));
    REWIND_APP_CALL(TSSetMaxTime(ts, 0.6));
    REWIND_APP_CALL(TSSetTimeStep(ts, 0.001));
    REWIND_APP_CALL(TSSetMaxSteps(ts, 100000000));
    REWIND_APP_CALL(TSSetTolerances(ts, 1e-6, nullptr, 1e-6, nullptr));
    // An error controller alone lets explicit steps ride the edge of linear stability, where
    // the forward run stays bounded but the adjoint (same steps, no controller) can blow up
    // in the high-frequency modes. Cap the step at 80% of an estimate of that edge: RK3's
    // stability interval (2.5 on the real axis, 1.7 on the imaginary axis) against the
    // diffusion and central-advection eigenvalues, with |u| <= 2 (the initial state stays
    // below 1.6, and viscous Burgers obeys a maximum principle).
    DMDALocalInfo info;
    REWIND_APP_CALL(DMDAGetLocalInfo(dm_, &info));
    const PetscReal ix2 = info.mx * info.mx + info.my * info.my, ix = info.mx + info.my;
    const PetscReal hmax = 0.8 / (4 * nu_ * ix2 / 2.5 + 2.0 * ix / 1.7);
    REWIND_APP_CALL(TSAdaptSetStepLimits(adapt, PETSC_DEFAULT, hmax));
  }

  void initial_condition(Vec u0) const override {
    fill(u0, [](PetscReal x, PetscReal y) { return .5 + bump(x, y, .3, .3, .12); });
  }
  void observation(Vec u_obs) const override {
    fill(u_obs, [](PetscReal x, PetscReal y) { return .5 + .7 * bump(x, y, .7, .7, .15); });
  }
  void sensor(Vec chi) const override {
    fill(chi, [](PetscReal x, PetscReal y) { return bump(x, y, .5, .5, .12); });
  }
  void directions(Vec du0, Vec) const override {
    fill(du0, [](PetscReal x, PetscReal y) { return bump(x, y, .35, .25, .1); });
  }

 private:
  PetscErrorCode read_options() {
    PetscFunctionBeginUser;
    PetscOptionsBegin(PETSC_COMM_WORLD, nullptr, "rewind-burgers model", nullptr);
    PetscCall(PetscOptionsReal("-burgers_nu", "Viscosity", "", nu_, &nu_, nullptr));
    PetscOptionsEnd();
    PetscFunctionReturn(0);
  }

  // G(u) with central differences: -(u_E^2 - u_W^2)/(4 hx) - ... + nu (5-point Laplacian).
  static PetscErrorCode rhs(TS, PetscReal, Vec U, Vec F, void* ctx) {
    const auto& b = *static_cast<Burgers*>(ctx);
    DMDALocalInfo info;
    Ghosted u;
    PetscScalar** f = nullptr;
    PetscFunctionBeginUser;
    PetscCall(DMDAGetLocalInfo(b.dm_, &info));
    PetscCall(u.get(b.dm_, U));
    PetscCall(DMDAVecGetArray(b.dm_, F, &f));
    const PetscReal ax = b.nu_ * info.mx * info.mx, ay = b.nu_ * info.my * info.my;
    const PetscReal cx = 0.25 * info.mx, cy = 0.25 * info.my;
    for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
      for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
        const auto* a = u.a;
        const PetscScalar e = a[j][i + 1], w = a[j][i - 1], n = a[j + 1][i], s = a[j - 1][i];
        const PetscScalar c = a[j][i];
        f[j][i] = -cx * (e * e - w * w) - cy * (n * n - s * s) + ax * (e - 2 * c + w) +
                  ay * (n - 2 * c + s);
      }
    }
    PetscCall(DMDAVecRestoreArray(b.dm_, F, &f));
    PetscCall(u.restore());
    PetscFunctionReturn(0);
  }

  static PetscErrorCode rhs_jacobian(TS, PetscReal, Vec U, Mat A, Mat, void* ctx) {
    const auto& b = *static_cast<Burgers*>(ctx);
    DMDALocalInfo info;
    Ghosted u;
    PetscFunctionBeginUser;
    PetscCall(DMDAGetLocalInfo(b.dm_, &info));
    PetscCall(u.get(b.dm_, U));
    const PetscReal ax = b.nu_ * info.mx * info.mx, ay = b.nu_ * info.my * info.my;
    const PetscReal cx = 0.5 * info.mx, cy = 0.5 * info.my;
    for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
      for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
        const auto* a = u.a;
        const PetscScalar v[5] = {-2 * (ax + ay), ax - cx * a[j][i + 1], ax + cx * a[j][i - 1],
                                  ay - cy * a[j + 1][i], ay + cy * a[j - 1][i]};
        PetscCall(rwd::apps::set_star_row(A, i, j, v));
      }
    }
    PetscCall(u.restore());
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    PetscFunctionReturn(0);
  }

  PetscReal nu_ = 0.01;
};

}  // namespace

int main(int argc, char** argv) {
  return rwd::apps::run_app(argc, argv, kHelp, [] { return std::make_unique<Burgers>(); });
}
