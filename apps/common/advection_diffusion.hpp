#pragma once
// The model rewind-heat and rewind-ensemble share: 2D advection-diffusion with a diffusivity
// field kappa(x, y) on a periodic DMDA,
//
//   u_t + v . grad(u) = div(kappa grad(u)) + s,      v a steady cellular flow, s a steady source
//
// written implicitly, F(u_t, u; kappa) = u_t - G(u; kappa) - s = 0, for Crank-Nicolson, with its
// Jacobian and the parameter Jacobian dF/dkappa (TSSetIJacobianP), so that TSAdjointSolve gives
// the gradient with respect to kappa at every cell.
#include <petscdmda.h>
#include <petscts.h>

#include "adjoint_app.hpp"

namespace rwd::apps {

class AdvectionDiffusion {
 public:
  /// The model on `dm` (one dof, a 5-point stencil; kept, not owned: it must outlive the model),
  /// with kappa, v and s zero until set. Collective on the DM's communicator.
  explicit AdvectionDiffusion(DM dm);

  /// The diffusivity field the callbacks read. Call kappa_changed() after changing it.
  Vec kappa() const { return kappa_; }
  /// Drops what was computed from kappa (the Jacobian).
  void kappa_changed() { minus_dgdu_.reset(); }
  /// v = speed (sin 2 pi x cos 2 pi y, -cos 2 pi x sin 2 pi y): four counter-rotating cells.
  void set_cellular_flow(PetscReal speed);
  /// The source term s (created, zero, on first use; without it the model has none).
  Vec source();

  /// Makes `ts` solve the model: DM, linear problem, Crank-Nicolson, the implicit function,
  /// Jacobian and parameter Jacobian, and linear solves to 1e-12 (the gradient is exact for the
  /// discrete solver only if they are). Time span and step size are the caller's. Collective.
  void configure(TS ts);

 private:
  static PetscErrorCode ifunction(TS, PetscReal, Vec U, Vec Udot, Vec F, void* ctx);
  static PetscErrorCode ijacobian(TS, PetscReal, Vec, Vec, PetscReal shift, Mat A, Mat, void* ctx);
  static PetscErrorCode ijacobian_p(TS, PetscReal, Vec U, Vec, PetscReal, Mat A, void* ctx);
  PetscErrorCode assemble_minus_dgdu(Mat A) const;

  DM dm_;
  OwnedVec kappa_, vx_, vy_, source_;
  OwnedMat minus_dgdu_;  // -dG/du for the current kappa_, built on first use
};

}  // namespace rwd::apps
