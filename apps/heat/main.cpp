// rewind-heat: gradient of a PDE objective by the discrete adjoint of an implicit solver, with
// the forward states checkpointed by rewind. 2D advection-diffusion with a spatially varying
// diffusivity kappa(x, y), on the periodic unit square (PETSc DMDA), Crank-Nicolson (TS cn):
//
//   u_t + v . grad(u) = div(kappa grad(u)),     v a steady cellular flow
//   J(u0, kappa) = 1/2 |u(T) - u_obs|^2 + int_0^T 1/2 (chi u, u) dt
//
// written implicitly, F(u_t, u; kappa) = u_t - G(u; kappa) = 0. TSAdjointSolve gives dJ/du0 and,
// through the parameter Jacobian dF/dkappa (TSSetIJacobianP), dJ/dkappa for the whole field. The
// trajectory type defaults to rewind and takes every -ts_trajectory_* option; -taylor checks the
// gradient, -compare_storeall checks it against store-all bit for bit.
//
//   mpirun -n 2 build/bin/rewind-heat
//   mpirun -n 2 build/bin/rewind-heat -ts_trajectory_max_cps_ram 5 -taylor -compare_storeall
//   mpirun -n 2 build/bin/rewind-heat -da_grid_x 128 -da_grid_y 128 -ts_dt 0.002
//       -ts_trajectory_max_cps_ram 4 -ts_trajectory_max_cps_disk 16
//       -ts_trajectory_dirname /tmp/rewind-heat -summary_json heat.json -gradient_out heat.h5
//       (one command)
#include <cmath>
#include <memory>

#include "adjoint_app.hpp"
#include "rewind/error.hpp"

namespace {

using rwd::apps::bump;
using rwd::apps::Ghosted;
using rwd::apps::OwnedMat;
using rwd::apps::OwnedVec;

constexpr char kHelp[] =
    "rewind-heat: gradient of J(u0, kappa) for 2D advection-diffusion by TSAdjointSolve, with\n"
    "the rewind checkpointing trajectory. Options: -da_grid_x/-da_grid_y (64), -ts_dt (0.005),\n"
    "-ts_max_time (0.5), -heat_kappa0 (0.01), -heat_velocity (1), -ts_trajectory_*, -taylor,\n"
    "-compare_storeall, -summary_json FILE, -gradient_out FILE.h5, -progress 0.\n";

class Heat final : public rwd::apps::Problem {
 public:
  Heat() : Problem(64) {
    REWIND_APP_CALL(read_options());
    rwd::require(kappa0_ > 0, "-heat_kappa0 must be > 0");
    REWIND_APP_CALL(DMCreateGlobalVector(dm_, kappa_.out()));
    REWIND_APP_CALL(DMCreateGlobalVector(dm_, vx_.out()));
    REWIND_APP_CALL(DMCreateGlobalVector(dm_, vy_.out()));
    const PetscReal k0 = kappa0_, v = speed_, tau = 2 * PETSC_PI;
    // A more diffusive blob in a uniform background.
    fill(kappa_, [k0](PetscReal x, PetscReal y) { return k0 * (1 + 2 * bump(x, y, .7, .3, .15)); });
    fill(vx_,
         [v, tau](PetscReal x, PetscReal y) { return v * std::sin(tau * x) * std::cos(tau * y); });
    fill(vy_,
         [v, tau](PetscReal x, PetscReal y) { return -v * std::cos(tau * x) * std::sin(tau * y); });
  }

  const char* name() const override { return "rewind-heat"; }
  std::string describe() const override {
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "model        u_t + v.grad(u) = div(kappa grad(u)) on the periodic unit "
                  "square, cellular flow |v| <= %g\n"
                  "controls     initial state u0 and diffusivity field kappa (%g to %g)",
                  (double)speed_, (double)kappa0_, (double)(3 * kappa0_));
    return buf;
  }
  Vec parameter() const override { return kappa_; }
  const char* parameter_name() const override { return "kappa"; }
  void parameter_changed() override { minus_dgdu_.reset(); }

  void configure(TS ts) override {
    OwnedMat J, Jp;
    REWIND_APP_CALL(TSSetDM(ts, dm_));
    REWIND_APP_CALL(TSSetProblemType(ts, TS_LINEAR));
    REWIND_APP_CALL(TSSetType(ts, TSCN));
    // The implicit form, assembled afresh at every call: PETSc's conversion of an RHS Jacobian
    // (shift - dG/du, undone later by arithmetic) would round differently when steps are
    // recomputed, and the gradient would not match store-all bit for bit.
    REWIND_APP_CALL(TSSetIFunction(ts, nullptr, ifunction, this));
    REWIND_APP_CALL(DMCreateMatrix(dm_, J.out()));
    REWIND_APP_CALL(TSSetIJacobian(ts, J, J, ijacobian, this));
    REWIND_APP_CALL(DMCreateMatrix(dm_, Jp.out()));  // dF_i/dkappa_j: the same 5-point pattern
    REWIND_APP_CALL(TSSetIJacobianP(ts, Jp, ijacobian_p, this));
    REWIND_APP_CALL(TSSetMaxTime(ts, 0.5));
    REWIND_APP_CALL(TSSetTimeStep(ts, 0.005));
    REWIND_APP_CALL(TSSetMaxSteps(ts, 100000000));
    // The gradient is exact for the discrete solver only if the linear solves are.
    SNES snes = nullptr;
    KSP ksp = nullptr;
    REWIND_APP_CALL(TSGetSNES(ts, &snes));
    REWIND_APP_CALL(SNESGetKSP(snes, &ksp));
    REWIND_APP_CALL(KSPSetTolerances(ksp, 1e-12, 1e-30, PETSC_DEFAULT, PETSC_DEFAULT));
  }

  void initial_condition(Vec u0) const override {
    fill(u0, [](PetscReal x, PetscReal y) { return bump(x, y, .3, .5, .1); });
  }
  void observation(Vec u_obs) const override {
    fill(u_obs, [](PetscReal x, PetscReal y) { return .5 * bump(x, y, .6, .65, .15); });
  }
  void sensor(Vec chi) const override {
    fill(chi, [](PetscReal x, PetscReal y) { return bump(x, y, .25, .5, .15); });
  }
  void directions(Vec du0, Vec dkappa) const override {
    fill(du0, [](PetscReal x, PetscReal y) { return bump(x, y, .4, .45, .15); });
    const PetscReal k0 = kappa0_;
    fill(dkappa, [k0](PetscReal x, PetscReal y) { return k0 * bump(x, y, .5, .5, .2); });
  }

 private:
  PetscErrorCode read_options() {
    PetscFunctionBeginUser;
    PetscOptionsBegin(PETSC_COMM_WORLD, nullptr, "rewind-heat model", nullptr);
    PetscCall(
        PetscOptionsReal("-heat_kappa0", "Background diffusivity", "", kappa0_, &kappa0_, nullptr));
    PetscCall(PetscOptionsReal("-heat_velocity", "Peak speed of the cellular flow", "", speed_,
                               &speed_, nullptr));
    PetscOptionsEnd();
    PetscFunctionReturn(0);
  }

  // F = u_t - G(u), G(u)_ij with face diffusivities kappa_{i+1/2,j} = (kappa_ij +
  // kappa_{i+1,j}) / 2 and central differences for the advection.
  static PetscErrorCode ifunction(TS, PetscReal, Vec U, Vec Udot, Vec F, void* ctx) {
    const auto& h = *static_cast<Heat*>(ctx);
    DMDALocalInfo info;
    Ghosted u, k;
    const PetscScalar **vx = nullptr, **vy = nullptr, **udot = nullptr;
    PetscScalar** f = nullptr;
    PetscFunctionBeginUser;
    PetscCall(DMDAGetLocalInfo(h.dm_, &info));
    PetscCall(u.get(h.dm_, U));
    PetscCall(DMDAVecGetArrayRead(h.dm_, Udot, &udot));
    PetscCall(k.get(h.dm_, h.kappa_));
    PetscCall(DMDAVecGetArrayRead(h.dm_, h.vx_, &vx));
    PetscCall(DMDAVecGetArrayRead(h.dm_, h.vy_, &vy));
    PetscCall(DMDAVecGetArray(h.dm_, F, &f));
    const PetscReal ax = info.mx * info.mx, ay = info.my * info.my;  // 1/h^2
    const PetscReal bx = 0.5 * info.mx, by = 0.5 * info.my;          // 1/(2h)
    for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
      for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
        const auto* a = u.a;
        const PetscScalar kc = k.a[j][i], uc = a[j][i];
        f[j][i] = udot[j][i] - (0.5 * ax *
                                    ((kc + k.a[j][i + 1]) * (a[j][i + 1] - uc) +
                                     (kc + k.a[j][i - 1]) * (a[j][i - 1] - uc)) +
                                0.5 * ay *
                                    ((kc + k.a[j + 1][i]) * (a[j + 1][i] - uc) +
                                     (kc + k.a[j - 1][i]) * (a[j - 1][i] - uc)) -
                                bx * vx[j][i] * (a[j][i + 1] - a[j][i - 1]) -
                                by * vy[j][i] * (a[j + 1][i] - a[j - 1][i]));
      }
    }
    PetscCall(DMDAVecRestoreArray(h.dm_, F, &f));
    PetscCall(DMDAVecRestoreArrayRead(h.dm_, Udot, &udot));
    PetscCall(DMDAVecRestoreArrayRead(h.dm_, h.vy_, &vy));
    PetscCall(DMDAVecRestoreArrayRead(h.dm_, h.vx_, &vx));
    PetscCall(k.restore());
    PetscCall(u.restore());
    PetscFunctionReturn(0);
  }

  // dF/du + shift dF/du_t = shift - dG/du: constant in time and u, linear in kappa, so -dG/du
  // is assembled once per kappa and each call copies and shifts it (the same arithmetic every
  // time: recomputed steps get bitwise the same matrix).
  static PetscErrorCode ijacobian(TS, PetscReal, Vec, Vec, PetscReal shift, Mat A, Mat, void* ctx) {
    auto& h = *static_cast<Heat*>(ctx);
    PetscFunctionBeginUser;
    if (!h.minus_dgdu_) {
      PetscCall(DMCreateMatrix(h.dm_, h.minus_dgdu_.out()));
      PetscCall(h.assemble_minus_dgdu(h.minus_dgdu_));
    }
    PetscCall(MatCopy(h.minus_dgdu_, A, SAME_NONZERO_PATTERN));
    PetscCall(MatShift(A, shift));
    PetscFunctionReturn(0);
  }

  PetscErrorCode assemble_minus_dgdu(Mat A) const {
    DMDALocalInfo info;
    Ghosted k;
    const PetscScalar **vx = nullptr, **vy = nullptr;
    PetscFunctionBeginUser;
    PetscCall(DMDAGetLocalInfo(dm_, &info));
    PetscCall(k.get(dm_, kappa_));
    PetscCall(DMDAVecGetArrayRead(dm_, vx_, &vx));
    PetscCall(DMDAVecGetArrayRead(dm_, vy_, &vy));
    const PetscReal ax = info.mx * info.mx, ay = info.my * info.my;
    const PetscReal bx = 0.5 * info.mx, by = 0.5 * info.my;
    for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
      for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
        const PetscScalar kc = k.a[j][i];
        const PetscScalar e = 0.5 * ax * (kc + k.a[j][i + 1]), w = 0.5 * ax * (kc + k.a[j][i - 1]);
        const PetscScalar n = 0.5 * ay * (kc + k.a[j + 1][i]), s = 0.5 * ay * (kc + k.a[j - 1][i]);
        const PetscScalar v[5] = {e + w + n + s, bx * vx[j][i] - e, -bx * vx[j][i] - w,
                                  by * vy[j][i] - n, -by * vy[j][i] - s};
        PetscCall(rwd::apps::set_star_row(A, i, j, v));
      }
    }
    PetscCall(DMDAVecRestoreArrayRead(dm_, vy_, &vy));
    PetscCall(DMDAVecRestoreArrayRead(dm_, vx_, &vx));
    PetscCall(k.restore());
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    PetscFunctionReturn(0);
  }

  // dF_ij/dkappa = -dG_ij/dkappa: each face flux is linear in the two diffusivities it averages.
  static PetscErrorCode ijacobian_p(TS, PetscReal, Vec U, Vec, PetscReal, Mat A, void* ctx) {
    const auto& h = *static_cast<Heat*>(ctx);
    DMDALocalInfo info;
    Ghosted u;
    PetscFunctionBeginUser;
    PetscCall(DMDAGetLocalInfo(h.dm_, &info));
    PetscCall(u.get(h.dm_, U));
    const PetscReal ax = 0.5 * info.mx * info.mx, ay = 0.5 * info.my * info.my;
    for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
      for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
        const auto* a = u.a;
        const PetscScalar uc = a[j][i];
        const PetscScalar e = ax * (a[j][i + 1] - uc), w = ax * (a[j][i - 1] - uc);
        const PetscScalar n = ay * (a[j + 1][i] - uc), s = ay * (a[j - 1][i] - uc);
        const PetscScalar v[5] = {-(e + w + n + s), -e, -w, -n, -s};
        PetscCall(rwd::apps::set_star_row(A, i, j, v));
      }
    }
    PetscCall(u.restore());
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    PetscFunctionReturn(0);
  }

  OwnedVec kappa_, vx_, vy_;
  OwnedMat minus_dgdu_;  // -dG/du for the current kappa_, built on first use
  PetscReal kappa0_ = 0.01, speed_ = 1.0;
};

}  // namespace

int main(int argc, char** argv) {
  return rwd::apps::run_app(argc, argv, kHelp, [] { return std::make_unique<Heat>(); });
}
