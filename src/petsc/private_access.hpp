#pragma once
// The fields of PETSc's TS, TSAdapt and TSTrajectory objects that a trajectory must read or
// restore and that PETSc's public API does not reach. Implemented in private_access.cpp, the
// only file that includes petsc/private/tsimpl.h (whose layout changes between releases).

#include <petscts.h>
#include <petscversion.h>

namespace rwd::petsc::detail {

/// What a setfromoptions op receives: 3.23 made PetscOptionItems a pointer type and passes it by
/// value, where 3.18-3.22 pass a pointer to the struct. Both are pointers to the items, so
/// PETSc's PetscOptions* macros work on either.
#if PETSC_VERSION_GE(3, 23, 0)
using OptionItems = PetscOptionItems;
#else
using OptionItems = PetscOptionItems*;
#endif

// ---- TS -------------------------------------------------------------------------------------
/// The solution vector (ts->vec_sol).
Vec solution(TS ts);
/// Step number, time and previous time as TS keeps them.
struct Clock {
  PetscInt steps = 0;
  PetscReal time = 0;
  PetscReal previous_time = 0;
};
Clock clock(TS ts);
void set_clock(TS ts, const Clock& clock);
/// ts->time_step: after a step, the size the next step will try.
PetscReal proposed_step(TS ts);
TSConvergedReason reason(TS ts);
void set_reason(TS ts, TSConvergedReason reason);
/// Tells the next TSStep that its history is stale (first-same-as-last methods must not reuse a
/// stage of the previous step).
void restart_history(TS ts, bool restart);
PetscInt rejections(TS ts);
void set_rejections(TS ts, PetscInt rejections);
/// The adjoint steps TSAdjointSolve counts as done (ts->adjoint_steps): its loop ends when they
/// reach the steps it was asked for.
void set_adjoint_steps(TS ts, PetscInt done);
/// The adjoint steps this TSAdjointSolve takes (TSAdjointSetSteps, or all of them).
PetscInt adjoint_max_steps(TS ts);
PetscInt max_steps(TS ts);
/// TSAdaptSetTimeStepIncreaseDelay's count (the adapter remembers a decrease that long).
PetscInt adapt_increase_delay(TSAdapt adapt);
PetscReal max_time(TS ts);
TSExactFinalTimeOption exact_final_time(TS ts);
/// An event handler is locating an event (TSAdaptChoose then skips the adapter).
bool event_locating(TS ts);
/// The TS has an event handler (TSSetEventHandler).
bool has_events(TS ts);
/// Events recorded so far in the forward run (the recorder's counter; 0 without events).
PetscInt events_recorded(TS ts);
/// While alive, the event handler's status reads "no event" (TSAdaptChoose consults the
/// adapter); the status is put back afterwards. Does nothing without events.
class QuietEvents {
 public:
  explicit QuietEvents(TS ts);
  ~QuietEvents();
  QuietEvents(const QuietEvents&) = delete;
  QuietEvents& operator=(const QuietEvents&) = delete;

 private:
  TS ts_;
  int saved_ = 0;
};

// ---- the integrator's own step and roll-back (TS ops) --------------------------------------
using TsFn = PetscErrorCode (*)(TS);
TsFn step_op(TS ts);
void set_step_op(TS ts, TsFn fn);
TsFn rollback_op(TS ts);
void set_rollback_op(TS ts, TsFn fn);

// ---- TSAdapt --------------------------------------------------------------------------------
using ChooseFn = PetscErrorCode (*)(TSAdapt, TS, PetscReal, PetscInt*, PetscReal*, PetscBool*,
                                    PetscReal*, PetscReal*, PetscReal*);
ChooseFn choose(TSAdapt adapt);
void set_choose(TSAdapt adapt, ChooseFn fn);
PetscBool always_accept(TSAdapt adapt);

// ---- TSTrajectory ---------------------------------------------------------------------------
struct TrajectoryOps {
  PetscErrorCode (*set)(TSTrajectory, TS, PetscInt, PetscReal, Vec);
  PetscErrorCode (*get)(TSTrajectory, TS, PetscInt, PetscReal*);
  PetscErrorCode (*view)(TSTrajectory, PetscViewer);
  PetscErrorCode (*reset)(TSTrajectory);
  PetscErrorCode (*destroy)(TSTrajectory);
  PetscErrorCode (*setfromoptions)(TSTrajectory, OptionItems);
  PetscErrorCode (*setup)(TSTrajectory, TS);
};
void set_ops(TSTrajectory tj, const TrajectoryOps& ops);
void* data(TSTrajectory tj);
void set_data(TSTrajectory tj, void* data);
/// -ts_trajectory_dirname, or null.
const char* dirname(TSTrajectory tj);
bool keep_files(TSTrajectory tj);
/// Tells TSTrajectoryDestroy to leave -ts_trajectory_dirname alone (it removes the whole tree
/// otherwise, whoever made it).
void set_keep_files(TSTrajectory tj, bool keep);
bool solution_only(TSTrajectory tj);
/// The trajectory serves TSAdjointSolve (not TSGetSolutionAtTime and the like).
bool adjoint_mode(TSTrajectory tj);
/// The counts PETSc's own view prints.
void set_counts(TSTrajectory tj, PetscInt recomputations, PetscInt disk_reads,
                PetscInt disk_writes);

}  // namespace rwd::petsc::detail
