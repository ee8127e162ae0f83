#include "checks.hpp"

#include <algorithm>
#include <cstring>

#include "rewind/ensemble/reproducible_sum.hpp"
#include "rewind/error.hpp"
#include "source_task.hpp"

namespace rwd::apps::multisource {

namespace {

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

}  // namespace

CompareResult compare_serial(const Settings& s, const Layout& l,
                             const std::vector<PetscScalar>& kappa,
                             const std::vector<PetscScalar>& data,
                             const std::vector<PetscScalar>& y, const std::vector<PetscScalar>& g) {
  const std::size_t block = kappa.size();
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
  PetscReal largest = 0;
  for (std::size_t i = 0; i < block; ++i)
    largest = std::max(largest, PetscAbsScalar(ref.gradient[i]));
  for (std::size_t i = 0; i < block; ++i) {
    if (std::memcmp(&g[i], &ref.gradient[i], sizeof(PetscScalar)) != 0) {
      ++c.differing;
      c.max_abs_diff = std::max(c.max_abs_diff, PetscAbsScalar(g[i] - ref.gradient[i]));
    }
  }
  c.values = static_cast<long long>(block);
  int outputs_same =
      y.empty() || std::memcmp(y.data(), ref.y.data(), y.size() * sizeof(PetscScalar)) == 0 ? 1 : 0;
  REWIND_APP_CALL(
      MPI_Allreduce(MPI_IN_PLACE, &c.differing, 1, MPI_LONG_LONG, MPI_SUM, PETSC_COMM_WORLD));
  REWIND_APP_CALL(
      MPI_Allreduce(MPI_IN_PLACE, &c.values, 1, MPI_LONG_LONG, MPI_SUM, PETSC_COMM_WORLD));
  REWIND_APP_CALL(
      MPI_Allreduce(MPI_IN_PLACE, &c.max_abs_diff, 1, MPIU_REAL, MPI_MAX, PETSC_COMM_WORLD));
  REWIND_APP_CALL(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPIU_REAL, MPI_MAX, PETSC_COMM_WORLD));
  c.relative = largest > 0 ? c.max_abs_diff / largest : c.max_abs_diff;
  c.rtol = s.compare_rtol;
  REWIND_APP_CALL(
      MPI_Allreduce(MPI_IN_PLACE, &outputs_same, 1, MPI_INT, MPI_MIN, PETSC_COMM_WORLD));
  c.outputs_identical = outputs_same == 1;
  c.identical = c.outputs_identical && c.differing == 0;
  // The outputs come from the forward pass, which checkpoints do not change: bitwise always.
  c.passed = c.identical || (c.outputs_identical && c.rtol > 0 && c.relative <= c.rtol);
  return c;
}

TaylorReport taylor_check(const Settings& s, const Layout& l, const std::vector<PetscScalar>& kappa,
                          const std::vector<PetscScalar>& data, PetscReal phi,
                          const std::vector<PetscScalar>& g) {
  rwd::require(s.tasks > 0, "-taylor needs at least one task");
  const std::vector<PetscScalar> dkappa = field_block(l.group, s, kappa_direction);
  std::vector<PetscScalar> kh(kappa.size());
  return taylor_table(phi, group_dot(l, g, dkappa), s.taylor_h, s.taylor_points, [&](PetscReal h) {
    for (std::size_t i = 0; i < kappa.size(); ++i) kh[i] = kappa[i] + h * dkappa[i];
    return misfit(outputs_everywhere(s, l, kh), data).phi;
  });
}

}  // namespace rwd::apps::multisource
