#pragma once
// rewind-ensemble's problem: K sources on rewind-heat's model, each at its own place and on for
// its own number of steps, the receiver cells that read the field, the first-guess and "true"
// diffusivities, and the misfit Phi that couples the tasks (main.cpp states the equations).
#include <petscsys.h>

#include <vector>

#include "adjoint_app.hpp"

namespace rwd::apps::multisource {

constexpr PetscInt kGrid = 64;
constexpr PetscInt kReceivers = 9;  // a 3 x 3 lattice

/// The app's options (and the checks every app offers).
struct Settings : CheckOptions {
  PetscInt tasks = 12, steps_min = 20, steps_max = 80;
  PetscReal kappa0 = 0.01, speed = 1.0, dt = 0.005;
  PetscBool compare = PETSC_FALSE;
  /// -compare_serial_rtol: the relative difference of the gradient accepted (0: bitwise), for
  /// lossy group checkpoints (-rewind_ensemble_compress zfp).
  PetscReal compare_rtol = 0;
};

/// Reads and checks the -ensemble_* options, -compare_serial, the check options and -ts_dt.
/// Collective on PETSC_COMM_WORLD; throws rwd::Error naming an option out of range.
Settings read_settings();

/// Where source k sits (a low-discrepancy sequence spreads the sources over the square) and how
/// many steps it runs (spread over the range, in no particular order).
struct Source {
  PetscReal x = 0, y = 0;
  PetscInt steps = 0;
};
Source source_of(PetscInt k, const Settings& s);

/// Receiver r's cell on an mx x my grid.
void receiver_cell(PetscInt r, PetscInt mx, PetscInt my, PetscInt* i, PetscInt* j);

/// The diffusivity fields: the first guess, the truth the data come from, and the Taylor test's
/// direction.
using Field = PetscReal (*)(const Settings&, PetscReal x, PetscReal y);
PetscReal kappa_guess(const Settings& s, PetscReal x, PetscReal y);
PetscReal kappa_true(const Settings& s, PetscReal x, PetscReal y);
PetscReal kappa_direction(const Settings& s, PetscReal x, PetscReal y);

/// This rank's block of a field on the group's grid (every task lays kappa out this way).
/// Collective on `group`.
std::vector<PetscScalar> field_block(MPI_Comm group, const Settings& s, Field f);
/// Copies a block into the vector `v` laid out the same way.
void copy_in(Vec v, const std::vector<PetscScalar>& block);

/// Phi = log(S / D), S = sum |y - d|^2, D = sum |d|^2; ybar = dPhi/dy = 2 (y - d) / S.
struct Misfit {
  PetscReal phi = 0;
  std::vector<PetscScalar> ybar;
};
Misfit misfit(const std::vector<PetscScalar>& y, const std::vector<PetscScalar>& d);

/// This run's groups, as the ensemble split the communicator.
struct Layout {
  MPI_Comm group = MPI_COMM_NULL;  // this rank's group (the app's duplicate)
  int index = 0, groups = 1, group_size = 1, rank = 0, size = 1;
};

/// The sum over the group of this rank's block's x . y (the same on every group). Collective on
/// the group.
PetscReal group_dot(const Layout& l, const std::vector<PetscScalar>& x,
                    const std::vector<PetscScalar>& y);

}  // namespace rwd::apps::multisource
