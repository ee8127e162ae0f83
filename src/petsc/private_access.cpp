// The one file that includes PETSc's private TS header: the TSTrajectory ops table and the TS
// and TSAdapt fields a trajectory must restore live there.
#include "private_access.hpp"

#include <petsc/private/tsimpl.h>
#include <petscversion.h>

// The releases rewind is tested against are 3.18, 3.22 and 3.25 (CMake refuses others unless
// told REWIND_PETSC_UNTESTED); the branches below follow PETSc's changes between 3.18 and 3.25,
// each at the release that made it.
#if PETSC_VERSION_LT(3, 18, 0) || PETSC_VERSION_GE(3, 26, 0)
#error "rewind reads PETSc's private TS structures as they are in PETSc 3.18 to 3.25"
#endif

namespace rwd::petsc::detail {

Vec solution(TS ts) {
  return ts->vec_sol;
}
Clock clock(TS ts) {
  return {ts->steps, ts->ptime, ts->ptime_prev};
}
void set_clock(TS ts, const Clock& c) {
  ts->steps = c.steps;
  ts->ptime = c.time;
  ts->ptime_prev = c.previous_time;
}
PetscReal proposed_step(TS ts) {
  return ts->time_step;
}
TSConvergedReason reason(TS ts) {
  return ts->reason;
}
void set_reason(TS ts, TSConvergedReason r) {
  ts->reason = r;
}
void restart_history(TS ts, bool restart) {
  ts->steprestart = restart ? PETSC_TRUE : PETSC_FALSE;
}
PetscInt rejections(TS ts) {
  return ts->reject;
}
void set_rejections(TS ts, PetscInt n) {
  ts->reject = n;
}
void set_adjoint_steps(TS ts, PetscInt done) {
  ts->adjoint_steps = done;
}
PetscInt adjoint_max_steps(TS ts) {
  return ts->adjoint_max_steps;
}
PetscInt max_steps(TS ts) {
  return ts->max_steps;
}
PetscInt adapt_increase_delay(TSAdapt adapt) {
  return adapt->timestepjustdecreased_delay;
}
PetscReal max_time(TS ts) {
  return ts->max_time;
}
TSExactFinalTimeOption exact_final_time(TS ts) {
  return ts->exact_final_time;
}
// 3.21 rewrote event handling (src/ts/event/tsevent.c): the TSEventStatus field and enum
// (TSEVENT_NONE, TSEVENT_LOCATED_INTERVAL, ...) are gone, and TSAdaptChoose skips the adapter
// while `processing` is set (the bracket being refined, or the post-event steps being taken).
#if PETSC_VERSION_GE(3, 21, 0)
bool event_locating(TS ts) {
  return ts->event != nullptr && ts->event->processing == PETSC_TRUE;
}
QuietEvents::QuietEvents(TS ts) : ts_(ts) {
  if (!ts_->event) return;
  saved_ = ts_->event->processing == PETSC_TRUE ? 1 : 0;
  ts_->event->processing = PETSC_FALSE;
}
QuietEvents::~QuietEvents() {
  if (ts_->event) ts_->event->processing = saved_ ? PETSC_TRUE : PETSC_FALSE;
}
#else
bool event_locating(TS ts) {
  return ts->event != nullptr && ts->event->status != TSEVENT_NONE;
}
QuietEvents::QuietEvents(TS ts) : ts_(ts) {
  if (!ts_->event) return;
  saved_ = static_cast<int>(ts_->event->status);
  ts_->event->status = TSEVENT_NONE;
}
QuietEvents::~QuietEvents() {
  if (ts_->event) ts_->event->status = static_cast<TSEventStatus>(saved_);
}
#endif
bool has_events(TS ts) {
  return ts->event != nullptr;
}
PetscInt events_recorded(TS ts) {
  return ts->event ? ts->event->recorder.ctr : 0;
}
TsFn step_op(TS ts) {
  return ts->ops->step;
}
void set_step_op(TS ts, TsFn fn) {
  ts->ops->step = fn;
}
TsFn rollback_op(TS ts) {
  return ts->ops->rollback;
}
void set_rollback_op(TS ts, TsFn fn) {
  ts->ops->rollback = fn;
}

ChooseFn choose(TSAdapt adapt) {
  return adapt->ops->choose;
}
void set_choose(TSAdapt adapt, ChooseFn fn) {
  adapt->ops->choose = fn;
}
PetscBool always_accept(TSAdapt adapt) {
  return adapt->always_accept;
}

void set_ops(TSTrajectory tj, const TrajectoryOps& ops) {
  tj->ops->set = ops.set;
  tj->ops->get = ops.get;
  tj->ops->view = ops.view;
  tj->ops->reset = ops.reset;
  tj->ops->destroy = ops.destroy;
  tj->ops->setfromoptions = ops.setfromoptions;
  tj->ops->setup = ops.setup;
}
void* data(TSTrajectory tj) {
  return tj->data;
}
void set_data(TSTrajectory tj, void* d) {
  tj->data = d;
}
const char* dirname(TSTrajectory tj) {
  return tj->dirname;
}
bool keep_files(TSTrajectory tj) {
  return tj->keepfiles == PETSC_TRUE;
}

void set_keep_files(TSTrajectory tj, bool keep) {
  tj->keepfiles = keep ? PETSC_TRUE : PETSC_FALSE;
}
bool solution_only(TSTrajectory tj) {
  return tj->solution_only == PETSC_TRUE;
}
bool adjoint_mode(TSTrajectory tj) {
  return tj->adjoint_solve_mode == PETSC_TRUE;
}
void set_counts(TSTrajectory tj, PetscInt recomputations, PetscInt disk_reads,
                PetscInt disk_writes) {
  tj->recomps = recomputations;
  tj->diskreads = disk_reads;
  tj->diskwrites = disk_writes;
}

}  // namespace rwd::petsc::detail
