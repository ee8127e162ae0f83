#pragma once
// The grid the apps share, a periodic DMDA on the unit square, and what they do on it: fill a
// field, read it with ghosts, set a stencil row (field_file.hpp writes fields to HDF5).
#include <petscdmda.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "handles.hpp"

namespace rwd::apps {

/// The grid every app uses: a periodic DMDA on the unit square, n x n cells by default
/// (-da_grid_x, -da_grid_y and the other -da_ options override), one dof, a 5-point stencil.
/// Collective on `comm`.
OwnedDM make_grid(PetscInt n, MPI_Comm comm = PETSC_COMM_WORLD);

/// Read access, with ghost cells, to a global DMDA vector inside a PETSc callback:
/// a[j][i] for i in [xs - 1, xs + xm], j in [ys - 1, ys + ym].
struct Ghosted {
  PetscErrorCode get(DM dm, Vec global);
  PetscErrorCode restore();
  DM dm = nullptr;
  Vec local = nullptr;
  const PetscScalar* const* a = nullptr;
};

/// Sets row (i, j) of a 5-point stencil matrix on a DMDA: v = {centre, east (i + 1), west,
/// north (j + 1), south}. For PETSc callbacks.
PetscErrorCode set_star_row(Mat A, PetscInt i, PetscInt j, const PetscScalar v[5]);

/// Sets v(x, y) = f(x, y) at the cell centres of the DMDA `dm` (periodic unit square).
void fill(DM dm, Vec v, const std::function<PetscReal(PetscReal x, PetscReal y)>& f);

/// A smooth bump exp(-((x-x0)^2 + (y-y0)^2) / width^2) on the periodic unit square (distances
/// wrap around).
PetscReal bump(PetscReal x, PetscReal y, PetscReal x0, PetscReal y0, PetscReal width);

}  // namespace rwd::apps
