#include "adapt_replay.hpp"

#include <map>
#include <utility>

#include "private_access.hpp"

namespace rwd::petsc {

struct Hook {
  detail::ChooseFn original = nullptr;
  std::vector<Attempt> attempts;  // since the last take_attempts()
  bool replaying = false;
  std::vector<PetscReal> script;  // the attempts to replay; all but the last rejected
  std::size_t played = 0;
  PetscReal proposal = 0;  // the next step size to hand back when the last attempt is accepted
};

namespace {

std::map<TSAdapt, Hook>& hooks() {
  static std::map<TSAdapt, Hook> table;
  return table;
}

PetscErrorCode recording_choose(TSAdapt adapt, TS ts, PetscReal h, PetscInt* next_sc,
                                PetscReal* next_h, PetscBool* accept, PetscReal* wlte,
                                PetscReal* wltea, PetscReal* wlter) {
  PetscFunctionBegin;
  auto it = hooks().find(adapt);
  PetscCheck(it != hooks().end(), PETSC_COMM_SELF, PETSC_ERR_PLIB, "rewind: lost TSAdapt hook");
  Hook& hook = it->second;
  if (hook.replaying) {
    // An attempt of a different size than recorded is accepted; the caller then finds the step
    // ending at the wrong time and says so.
    const std::size_t j = hook.played++;
    const bool reject = j + 1 < hook.script.size() && h == hook.script[j];
    *next_sc = 0;
    *accept = reject ? PETSC_FALSE : PETSC_TRUE;
    *next_h = reject ? hook.script[j + 1] : (hook.proposal > 0 ? hook.proposal : h);
    *wlte = *wltea = *wlter = -1;
    PetscFunctionReturn(0);
  }
  PetscCall(hook.original(adapt, ts, h, next_sc, next_h, accept, wlte, wltea, wlter));
  PetscCallCXX(hook.attempts.push_back({h, *accept == PETSC_TRUE}));
  PetscFunctionReturn(0);
}

TSAdapt adapt_of(TS ts) {
  TSAdapt adapt = nullptr;
  if (TSGetAdapt(ts, &adapt) != 0) return nullptr;
  return adapt;
}

Hook* active(TS ts) {
  TSAdapt adapt = adapt_of(ts);
  auto it = hooks().find(adapt);
  if (it == hooks().end() || detail::choose(adapt) != recording_choose) return nullptr;
  return &it->second;
}

}  // namespace

void hook_adapt(TS ts) {
  TSAdapt adapt = adapt_of(ts);
  if (!adapt || !detail::choose(adapt) || detail::choose(adapt) == recording_choose) return;
  Hook hook;
  hook.original = detail::choose(adapt);
  hooks()[adapt] = std::move(hook);
  detail::set_choose(adapt, recording_choose);
}

void unhook_adapt(TS ts) {
  if (!ts) return;
  TSAdapt adapt = adapt_of(ts);
  auto it = hooks().find(adapt);
  if (it == hooks().end()) return;
  if (detail::choose(adapt) == recording_choose) detail::set_choose(adapt, it->second.original);
  hooks().erase(it);
}

std::vector<Attempt> take_attempts(TS ts) {
  Hook* hook = active(ts);
  return hook ? std::exchange(hook->attempts, {}) : std::vector<Attempt>{};
}

bool can_replay(TS ts) {
  return active(ts) != nullptr && !detail::event_locating(ts);
}

ReplayAttempts::ReplayAttempts(TS ts, std::vector<PetscReal> sizes, PetscReal proposal)
    : hook_(active(ts)) {
  if (!hook_) return;
  hook_->replaying = true;
  hook_->script = std::move(sizes);
  hook_->played = 0;
  hook_->proposal = proposal;
}

ReplayAttempts::~ReplayAttempts() {
  if (hook_) hook_->replaying = false;
}

}  // namespace rwd::petsc
