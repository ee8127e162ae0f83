#pragma once
// rewind's PETSc log events (-log_view): registered once with the trajectory type.

#include <petscsys.h>

namespace rwd::petsc {

struct LogEvents {
  PetscLogEvent plan = 0;       ///< RewindPlan: choosing the schedule
  PetscLogEvent recompute = 0;  ///< RewindRecompute: one recomputed step
  PetscLogEvent store = 0;      ///< RewindStore: one checkpoint written
  PetscLogEvent load = 0;       ///< RewindLoad: one checkpoint read
};

/// The events; zero until register_log_events() ran.
LogEvents& log_events();
PetscErrorCode register_log_events(PetscClassId classid);

}  // namespace rwd::petsc
