#include "advection_diffusion.hpp"

#include <cmath>

namespace rwd::apps {

AdvectionDiffusion::AdvectionDiffusion(DM dm) : dm_(dm) {
  REWIND_APP_CALL(DMCreateGlobalVector(dm_, kappa_.out()));
  REWIND_APP_CALL(DMCreateGlobalVector(dm_, vx_.out()));
  REWIND_APP_CALL(DMCreateGlobalVector(dm_, vy_.out()));
}

void AdvectionDiffusion::set_cellular_flow(PetscReal speed) {
  const PetscReal v = speed, tau = 2 * PETSC_PI;
  fill(dm_, vx_,
       [v, tau](PetscReal x, PetscReal y) { return v * std::sin(tau * x) * std::cos(tau * y); });
  fill(dm_, vy_,
       [v, tau](PetscReal x, PetscReal y) { return -v * std::cos(tau * x) * std::sin(tau * y); });
}

Vec AdvectionDiffusion::source() {
  if (!source_) {
    REWIND_APP_CALL(DMCreateGlobalVector(dm_, source_.out()));
    REWIND_APP_CALL(VecSet(source_, 0.0));
  }
  return source_;
}

void AdvectionDiffusion::configure(TS ts) {
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
  SNES snes = nullptr;
  KSP ksp = nullptr;
  REWIND_APP_CALL(TSGetSNES(ts, &snes));
  REWIND_APP_CALL(SNESGetKSP(snes, &ksp));
  REWIND_APP_CALL(KSPSetTolerances(ksp, 1e-12, 1e-30, PETSC_DEFAULT, PETSC_DEFAULT));
}

// F = u_t - G(u) - s, G(u)_ij with face diffusivities kappa_{i+1/2,j} = (kappa_ij +
// kappa_{i+1,j}) / 2 and central differences for the advection.
PetscErrorCode AdvectionDiffusion::ifunction(TS, PetscReal, Vec U, Vec Udot, Vec F, void* ctx) {
  const auto& h = *static_cast<AdvectionDiffusion*>(ctx);
  DMDALocalInfo info;
  Ghosted u, k;
  const PetscScalar **vx = nullptr, **vy = nullptr, **udot = nullptr, **s = nullptr;
  PetscScalar** f = nullptr;
  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(h.dm_, &info));
  PetscCall(u.get(h.dm_, U));
  PetscCall(DMDAVecGetArrayRead(h.dm_, Udot, &udot));
  PetscCall(k.get(h.dm_, h.kappa_));
  PetscCall(DMDAVecGetArrayRead(h.dm_, h.vx_, &vx));
  PetscCall(DMDAVecGetArrayRead(h.dm_, h.vy_, &vy));
  if (h.source_) PetscCall(DMDAVecGetArrayRead(h.dm_, h.source_, &s));
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
      if (s) f[j][i] -= s[j][i];
    }
  }
  PetscCall(DMDAVecRestoreArray(h.dm_, F, &f));
  if (h.source_) PetscCall(DMDAVecRestoreArrayRead(h.dm_, h.source_, &s));
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
PetscErrorCode AdvectionDiffusion::ijacobian(TS, PetscReal, Vec, Vec, PetscReal shift, Mat A, Mat,
                                             void* ctx) {
  auto& h = *static_cast<AdvectionDiffusion*>(ctx);
  PetscFunctionBeginUser;
  if (!h.minus_dgdu_) {
    PetscCall(DMCreateMatrix(h.dm_, h.minus_dgdu_.out()));
    PetscCall(h.assemble_minus_dgdu(h.minus_dgdu_));
  }
  PetscCall(MatCopy(h.minus_dgdu_, A, SAME_NONZERO_PATTERN));
  PetscCall(MatShift(A, shift));
  PetscFunctionReturn(0);
}

PetscErrorCode AdvectionDiffusion::assemble_minus_dgdu(Mat A) const {
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
      PetscCall(set_star_row(A, i, j, v));
    }
  }
  PetscCall(DMDAVecRestoreArrayRead(dm_, vy_, &vy));
  PetscCall(DMDAVecRestoreArrayRead(dm_, vx_, &vx));
  PetscCall(k.restore());
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

// dF_ij/dkappa = -dG_ij/dkappa: each face flux is linear in the two diffusivities it averages
// (the source does not depend on kappa).
PetscErrorCode AdvectionDiffusion::ijacobian_p(TS, PetscReal, Vec U, Vec, PetscReal, Mat A,
                                               void* ctx) {
  const auto& h = *static_cast<AdvectionDiffusion*>(ctx);
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
      PetscCall(set_star_row(A, i, j, v));
    }
  }
  PetscCall(u.restore());
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

}  // namespace rwd::apps
