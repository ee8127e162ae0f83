#pragma once
// Recording what TS did to take each step, and doing it again.
//
// A step is one or more attempts. Each attempt is one call of the integrator's step function
// (TSStep), inside which the adapter may reject sizes before it accepts one; an event handler
// may then roll the attempt back (TSRollBack) and ask for a shorter one, to land on the event.
// Neither rejecting nor rolling back always gives the state back bit for bit (Runge-Kutta
// subtracts the update it added, x + h*sum(b_j k_j) - h*sum(b_j k_j)), and the accepted attempt
// started from that state. So a recomputed step repeats every attempt: the sizes the adapter
// chose, the rollbacks, and the exact size of the last. The exact size is not kept by TS either
// (TSStep adds it to the time and replaces it by the next proposal before TSTrajectorySet).
//
// The adapter's choose, the integrator's step and its rollback are wrapped while recording; while
// replaying, the wrapped choose plays the recorded choices instead of asking the adapter.

#include <petscts.h>

#include <functional>
#include <vector>

namespace rwd::petsc {

/// One call of the adapter's choose.
struct Choice {
  PetscReal h = 0;
  bool accepted = false;
};

/// One attempt at a step.
struct Attempt {
  PetscReal h = 0;              ///< the step size the attempt began with
  std::vector<Choice> choices;  ///< what the adapter chose inside it (none if it was bypassed)
  bool rolled_back = false;     ///< an event handler rolled it back
  /// The size the attempt ended with.
  PetscReal size() const { return choices.empty() ? h : choices.back().h; }
};

/// Wraps the adapter's choose and the integrator's step and rollback of `ts` (idempotent). Not
/// collective.
void hook_steps(TS ts);
/// Puts the originals back (harmless if they were not wrapped).
void unhook_steps(TS ts);
/// Calls `before` before each attempt at a step that is not a replay (null: none). Exceptions
/// become PETSc errors of TSStep.
void set_before_step(TS ts, std::function<void()> before);
/// The attempts recorded since the last call; clears them.
std::vector<Attempt> take_attempts(TS ts);
/// Whether recorded choices can be replayed: the adapter is wrapped.
bool can_replay(TS ts);

/// Takes one step as `attempts` say (the state is the step's starting state): each attempt from
/// its size with the adapter's recorded choices, rolled back where the forward run rolled it
/// back; the adapter hands back `proposal` as the next size after the last. Collective on the
/// TS's communicator, like TSStep.
void replay_step(TS ts, const std::vector<Attempt>& attempts, PetscReal proposal);

}  // namespace rwd::petsc
