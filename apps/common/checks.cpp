#include "checks.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace rwd::apps {

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
    f.max_abs_reference = std::max(f.max_abs_reference, PetscAbsScalar(y[i]));
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
  allreduce(&f.max_abs_reference, 1, MPIU_REAL, MPI_MAX, comm);
  return f;
}

TaylorReport taylor_test(Driver& driver, Problem& pb, Vec u0, const SolveResult& base,
                         const CheckOptions& o) {
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

}  // namespace rwd::apps
