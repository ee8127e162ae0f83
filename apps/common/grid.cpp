#include "grid.hpp"

#include <cmath>

namespace rwd::apps {

OwnedDM make_grid(PetscInt n, MPI_Comm comm) {
  OwnedDM dm;
  REWIND_APP_CALL(DMDACreate2d(comm, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_STAR,
                               n, n, PETSC_DECIDE, PETSC_DECIDE, 1, 1, nullptr, nullptr, dm.out()));
  REWIND_APP_CALL(DMSetFromOptions(dm));
  REWIND_APP_CALL(DMSetUp(dm));
  DMDALocalInfo info;
  REWIND_APP_CALL(DMDAGetLocalInfo(dm, &info));
  rwd::require(info.mx >= 3 && info.my >= 3,
               "the grid needs at least 3 x 3 cells (-da_grid_x, -da_grid_y)");
  return dm;
}

PetscErrorCode Ghosted::get(DM da, Vec global) {
  PetscFunctionBeginUser;
  dm = da;
  PetscCall(DMGetLocalVector(dm, &local));
  PetscCall(DMGlobalToLocalBegin(dm, global, INSERT_VALUES, local));
  PetscCall(DMGlobalToLocalEnd(dm, global, INSERT_VALUES, local));
  PetscCall(DMDAVecGetArrayRead(dm, local, (void*)&a));
  PetscFunctionReturn(0);
}

PetscErrorCode Ghosted::restore() {
  PetscFunctionBeginUser;
  PetscCall(DMDAVecRestoreArrayRead(dm, local, (void*)&a));
  PetscCall(DMRestoreLocalVector(dm, &local));
  PetscFunctionReturn(0);
}

PetscErrorCode set_star_row(Mat A, PetscInt i, PetscInt j, const PetscScalar v[5]) {
  const MatStencil row = {0, j, i, 0};
  const MatStencil col[5] = {
      {0, j, i, 0}, {0, j, i + 1, 0}, {0, j, i - 1, 0}, {0, j + 1, i, 0}, {0, j - 1, i, 0}};
  PetscFunctionBeginUser;
  PetscCall(MatSetValuesStencil(A, 1, &row, 5, col, v, INSERT_VALUES));
  PetscFunctionReturn(0);
}

void fill(DM dm, Vec v, const std::function<PetscReal(PetscReal, PetscReal)>& f) {
  DMDALocalInfo info;
  PetscScalar** a = nullptr;
  REWIND_APP_CALL(DMDAGetLocalInfo(dm, &info));
  REWIND_APP_CALL(DMDAVecGetArray(dm, v, &a));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      a[j][i] = f((i + 0.5) / info.mx, (j + 0.5) / info.my);
    }
  }
  REWIND_APP_CALL(DMDAVecRestoreArray(dm, v, &a));
}

PetscReal bump(PetscReal x, PetscReal y, PetscReal x0, PetscReal y0, PetscReal width) {
  PetscReal dx = x - x0, dy = y - y0;
  dx -= std::round(dx);
  dy -= std::round(dy);
  return std::exp(-(dx * dx + dy * dy) / (width * width));
}

}  // namespace rwd::apps
