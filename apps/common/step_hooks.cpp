#include "step_hooks.hpp"

#include <cstdio>

#include "handles.hpp"

namespace rwd::apps {

namespace {

StepHooks& hooks_of(TS ts) {
  void* ctx = nullptr;
  check(TSGetApplicationContext(ts, &ctx), "TSGetApplicationContext");
  return *static_cast<StepHooks*>(ctx);
}

PetscErrorCode pre_step(TS ts) {
  PetscInt k = 0;
  PetscReal t = 0;
  PetscFunctionBeginUser;
  StepHooks& h = hooks_of(ts);
  PetscCall(TSGetStepNumber(ts, &k));
  if (h.replay && k < static_cast<PetscInt>(h.replay->size())) {
    PetscCall(TSSetTimeStep(ts, (*h.replay)[static_cast<std::size_t>(k)]));
  }
  if (h.record && !h.in_adjoint) {
    PetscCall(TSGetTime(ts, &t));
    if (h.times.empty()) h.times.push_back(t);
    PetscCall(TSGetTimeStep(ts, &h.proposed));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode post_step(TS ts) {
  PetscInt k = 0;
  PetscReal t = 0;
  PetscFunctionBeginUser;
  StepHooks& h = hooks_of(ts);
  if (!h.record) PetscFunctionReturn(0);
  PetscCall(TSGetStepNumber(ts, &k));
  PetscCall(TSGetTime(ts, &t));
  const double wall = MPI_Wtime() - h.wall0;
  if (h.in_adjoint) {  // the trajectory recomputing step k-1
    h.events.push_back({wall, k - 1, 'R'});
    ++h.recomputed;
    PetscFunctionReturn(0);
  }
  // The exact size of the step just taken: what TS proposed before it, if it lands on t.
  const PetscReal prev = h.times.back();
  h.dts.push_back(prev + h.proposed == t ? h.proposed : t - prev);
  h.times.push_back(t);
  h.events.push_back({wall, k - 1, 'F'});
  if (h.progress) {
    char text[128];
    if (h.planned > 0) {
      std::snprintf(text, sizeof text, "%lld/%lld steps (%.0f%%), %.1f s", (long long)k,
                    (long long)h.planned, 100.0 * (double)k / (double)h.planned, wall);
    } else {
      std::snprintf(text, sizeof text, "%lld steps, t = %.4g of %g, %.1f s elapsed", (long long)k,
                    (double)t, (double)h.t_final, wall);
    }
    h.progress->update(text);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode adjoint_monitor(TS, PetscInt steps, PetscReal, Vec, PetscInt, Vec*, Vec*,
                               void* ctx) {
  auto& h = *static_cast<StepHooks*>(ctx);
  PetscFunctionBeginUser;
  if (!h.record || steps >= h.adjoint_total) PetscFunctionReturn(0);
  const double wall = MPI_Wtime() - h.wall0;
  h.events.push_back({wall, steps, 'A'});
  if (h.progress) {
    char text[128];
    const PetscInt done = h.adjoint_total - steps;
    std::snprintf(text, sizeof text, "%lld/%lld steps (%.0f%%), %lld recomputed so far",
                  (long long)done, (long long)h.adjoint_total,
                  100.0 * (double)done / (double)h.adjoint_total, (long long)h.recomputed);
    h.progress->update(text);
  }
  PetscFunctionReturn(0);
}

}  // namespace

void install_step_hooks(TS ts, StepHooks& hooks) {
  REWIND_APP_CALL(TSSetApplicationContext(ts, &hooks));
  REWIND_APP_CALL(TSSetPreStep(ts, pre_step));
  REWIND_APP_CALL(TSSetPostStep(ts, post_step));
  REWIND_APP_CALL(TSAdjointMonitorSet(ts, adjoint_monitor, &hooks, nullptr));
}

}  // namespace rwd::apps
