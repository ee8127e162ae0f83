#pragma once
// The driver's per-TS hooks: record the first sweep's times and exact step sizes and every
// forward, recomputed and adjoint step (the summary's timeline); show progress; or replay a
// recorded step sequence (the Taylor test's frozen steps).
#include <petscts.h>

#include <vector>

#include "report.hpp"

namespace rwd::apps {

/// What the hooks of one TS record and are told.
struct StepHooks {
  bool record = false;
  bool in_adjoint = false;
  double wall0 = 0;
  std::vector<PetscReal> times, dts;
  PetscReal proposed = 0;
  std::vector<StepEvent> events;
  const std::vector<PetscReal>* replay = nullptr;
  Progress* progress = nullptr;
  PetscInt planned = 0;  // fixed-step count, 0 if adaptive
  PetscReal t_final = 0;
  PetscInt adjoint_total = 0, recomputed = 0;
};

/// Installs `hooks` on `ts` as its application context, pre- and post-step hooks and adjoint
/// monitor. `hooks` must outlive the solves.
void install_step_hooks(TS ts, StepHooks& hooks);

}  // namespace rwd::apps
