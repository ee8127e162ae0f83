#pragma once
// rewind-ensemble's checks of its gradient: bit for bit against a plain serial loop over the
// tasks with PETSc's store-all trajectory (-compare_serial), and against finite differences of
// Phi (-taylor).
#include <petscsys.h>

#include <vector>

#include "problem.hpp"
#include "report.hpp"

namespace rwd::apps::multisource {

struct CompareResult {
  bool identical = false, outputs_identical = false;
  long long differing = 0, values = 0;
  PetscReal max_abs_diff = 0;
  PetscReal relative = 0;  ///< max_abs_diff over the serial gradient's largest |value|
  PetscReal rtol = 0;      ///< -compare_serial_rtol
  /// Identical, or the outputs identical and the gradient within rtol (rtol > 0).
  bool passed = false;
};

/// The outputs and the gradient again by a loop over every task on group 0, each with PETSc's
/// store-all memory trajectory, summed with ReproducibleSum as the ensemble sums them; handed to
/// the same rank of every group and compared bit for bit with `y` and this rank's block `g` on
/// every rank. Collective on PETSC_COMM_WORLD.
CompareResult compare_serial(const Settings& s, const Layout& l,
                             const std::vector<PetscScalar>& kappa,
                             const std::vector<PetscScalar>& data,
                             const std::vector<PetscScalar>& y, const std::vector<PetscScalar>& g);

/// Phi(kappa + h dkappa) along a smooth bump for h = taylor_h, taylor_h / 2, ... by forward
/// solves only (task k on group k mod G), against Phi and the gradient block `g`. Collective on
/// PETSC_COMM_WORLD; throws rwd::Error without a task.
TaylorReport taylor_check(const Settings& s, const Layout& l, const std::vector<PetscScalar>& kappa,
                          const std::vector<PetscScalar>& data, PetscReal phi,
                          const std::vector<PetscScalar>& g);

}  // namespace rwd::apps::multisource
