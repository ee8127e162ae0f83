#pragma once
// The process's progress hook (TSTrajectoryRewindSetProgressHook in
// include/rewind/petsc/trajectory.h): told of every step of a run's first sweep and of every
// adjoint step, on every rank. For progress reports of long runs, and for tools that hold a run
// at a chosen step (the kill tests, tests/petsc/pause_hook.c).

#include <petscsys.h>

namespace rwd::petsc {

/// The first sweep reached step `step` ("forward"), or `step` adjoint steps are done and the
/// next is prepared ("adjoint"). Calls the hook, if one is set; throws Error(Client) naming it if
/// it returns an error.
void report_progress(const char* sweep, PetscInt step);

}  // namespace rwd::petsc
