#pragma once
// Recording and replaying the attempts TSAdapt made for each step.
//
// The exact size of an accepted adaptive step is not kept by TS: TSStep adds it to the time and
// replaces it by the next proposal before TSTrajectorySet runs. TSAdaptChoose receives it,
// though, so the adapter's choose method is wrapped to record the size of every attempt and
// whether it was accepted; the attempts before set(k) are those of step k-1.
//
// A recomputed step must also repeat the attempts its forward run rejected: rejecting does not
// always restore the state bit for bit (RK rolls back by subtracting the update it added,
// x + h*sum(b_j k_j) - h*sum(b_j k_j), which may differ from x in the last bit), and the
// accepted attempt started from that rolled-back state. So while a step is recomputed the
// wrapper plays a script instead of the adapter: it rejects the recorded rejected attempts,
// handing the next recorded size, and accepts the last.

#include <petscts.h>

#include <vector>

namespace rwd::petsc {

/// One call of the adapter's choose.
struct Attempt {
  PetscReal h = 0;
  bool accepted = false;
};

/// Wraps the adapter of `ts` (idempotent). Not collective.
void hook_adapt(TS ts);
/// Puts the adapter's own choose back (harmless if it was not wrapped).
void unhook_adapt(TS ts);
/// The attempts recorded since the last call (none if the adapter is not wrapped); clears them.
std::vector<Attempt> take_attempts(TS ts);
/// Whether recomputations can repeat rejected attempts: the adapter is wrapped, and no event
/// handler is locating an event (TSAdaptChoose then skips the adapter).
bool can_replay(TS ts);

/// While alive, the wrapped adapter plays `sizes` (all but the last rejected, the last accepted,
/// `proposal` handed back as the next step's size) instead of choosing.
class ReplayAttempts {
 public:
  ReplayAttempts(TS ts, std::vector<PetscReal> sizes, PetscReal proposal);
  ~ReplayAttempts();
  ReplayAttempts(const ReplayAttempts&) = delete;
  ReplayAttempts& operator=(const ReplayAttempts&) = delete;

 private:
  struct Hook* hook_;
};

}  // namespace rwd::petsc
