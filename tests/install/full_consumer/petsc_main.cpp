// Links the installed rewind::petsc and registers the trajectory type.
#include <rewind/petsc/trajectory.h>

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(TSTrajectoryRegisterRewind());
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "rewind trajectory registered\n"));
  PetscCall(PetscFinalize());
  return 0;
}
