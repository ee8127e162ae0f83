#include "log_events.hpp"

namespace rwd::petsc {

LogEvents& log_events() {
  static LogEvents events;
  return events;
}

PetscErrorCode register_log_events(PetscClassId classid) {
  LogEvents& e = log_events();
  PetscFunctionBegin;
  PetscCall(PetscLogEventRegister("RewindPlan", classid, &e.plan));
  PetscCall(PetscLogEventRegister("RewindRecompute", classid, &e.recompute));
  PetscCall(PetscLogEventRegister("RewindStore", classid, &e.store));
  PetscCall(PetscLogEventRegister("RewindLoad", classid, &e.load));
  PetscFunctionReturn(0);
}

}  // namespace rwd::petsc
