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
// gradient, -compare_storeall checks it against store-all bit for bit. The model (its callbacks
// and Jacobians) is apps/common/advection_diffusion.hpp, shared with rewind-ensemble.
//
//   mpirun -n 2 build/bin/rewind-heat
//   mpirun -n 2 build/bin/rewind-heat -ts_trajectory_max_cps_ram 5 -taylor -compare_storeall
//   mpirun -n 2 build/bin/rewind-heat -da_grid_x 128 -da_grid_y 128 -ts_dt 0.002
//       -ts_trajectory_max_cps_ram 4 -ts_trajectory_max_cps_disk 16
//       -ts_trajectory_dirname /tmp/rewind-heat -summary_json heat.json -gradient_out heat.h5
//       (one command)
#include <memory>

#include "adjoint_app.hpp"
#include "advection_diffusion.hpp"
#include "rewind/error.hpp"

namespace {

using rwd::apps::bump;

constexpr char kHelp[] =
    "rewind-heat: gradient of J(u0, kappa) for 2D advection-diffusion by TSAdjointSolve, with\n"
    "the rewind checkpointing trajectory. Options: -da_grid_x/-da_grid_y (64), -ts_dt (0.005),\n"
    "-ts_max_time (0.5), -heat_kappa0 (0.01), -heat_velocity (1), -ts_trajectory_*, -taylor,\n"
    "-compare_storeall, -summary_json FILE, -gradient_out FILE.h5, -progress 0.\n";

class Heat final : public rwd::apps::Problem {
 public:
  Heat() : Problem(64), model_(dm_) {
    REWIND_APP_CALL(read_options());
    rwd::require(kappa0_ > 0, "-heat_kappa0 must be > 0");
    const PetscReal k0 = kappa0_;
    // A more diffusive blob in a uniform background.
    fill(model_.kappa(),
         [k0](PetscReal x, PetscReal y) { return k0 * (1 + 2 * bump(x, y, .7, .3, .15)); });
    model_.set_cellular_flow(speed_);
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
  Vec parameter() const override { return model_.kappa(); }
  const char* parameter_name() const override { return "kappa"; }
  void parameter_changed() override { model_.kappa_changed(); }

  void configure(TS ts) override {
    model_.configure(ts);
    REWIND_APP_CALL(TSSetMaxTime(ts, 0.5));
    REWIND_APP_CALL(TSSetTimeStep(ts, 0.005));
    REWIND_APP_CALL(TSSetMaxSteps(ts, 100000000));
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

  rwd::apps::AdvectionDiffusion model_;  // the PDE: kappa, the flow, the callbacks
  PetscReal kappa0_ = 0.01, speed_ = 1.0;
};

}  // namespace

int main(int argc, char** argv) {
  return rwd::apps::run_app(argc, argv, kHelp, [] { return std::make_unique<Heat>(); });
}
