#include "step_replay.hpp"

#include <map>
#include <utility>

#include "check.hpp"
#include "private_access.hpp"

namespace rwd::petsc {

namespace {

struct Hook {
  TSAdapt adapt = nullptr;
  detail::ChooseFn choose = nullptr;  // the originals
  detail::TsFn step = nullptr;
  detail::TsFn rollback = nullptr;
  std::vector<Attempt> attempts;  // since the last take_attempts()
  bool replaying = false;
  std::vector<PetscReal> script;  // the replayed attempt's choices; all but the last rejected
  std::size_t played = 0;
  PetscReal proposal = 0;  // the next size to hand back when the last choice is accepted
  std::function<void()> before_step;
};

std::map<TS, Hook>& hooks() {
  static std::map<TS, Hook> table;
  return table;
}

Hook* find(TS ts) {
  auto it = hooks().find(ts);
  return it == hooks().end() ? nullptr : &it->second;
}

PetscErrorCode recording_choose(TSAdapt adapt, TS ts, PetscReal h, PetscInt* next_sc,
                                PetscReal* next_h, PetscBool* accept, PetscReal* wlte,
                                PetscReal* wltea, PetscReal* wlter) {
  PetscFunctionBegin;
  Hook* hook = find(ts);
  PetscCheck(hook && hook->adapt == adapt, PETSC_COMM_SELF, PETSC_ERR_PLIB,
             "rewind: lost TSAdapt hook");
  if (hook->replaying) {
    // A choice of a different size than recorded is accepted; the caller then finds the step
    // ending at the wrong time and says so.
    const std::size_t j = hook->played++;
    const bool reject = j + 1 < hook->script.size() && h == hook->script[j];
    *next_sc = 0;
    *accept = reject ? PETSC_FALSE : PETSC_TRUE;
    *next_h = reject ? hook->script[j + 1] : (hook->proposal > 0 ? hook->proposal : h);
    *wlte = *wltea = *wlter = -1;
    PetscFunctionReturn(0);
  }
  PetscCall(hook->choose(adapt, ts, h, next_sc, next_h, accept, wlte, wltea, wlter));
  if (!hook->attempts.empty()) {
    PetscCallCXX(hook->attempts.back().choices.push_back({h, *accept == PETSC_TRUE}));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode recording_step(TS ts) {
  PetscFunctionBegin;
  Hook* hook = find(ts);
  PetscCheck(hook, PETSC_COMM_SELF, PETSC_ERR_PLIB, "rewind: lost TS step hook");
  if (!hook->replaying) {
    if (hook->before_step) PetscCallCXX(hook->before_step());
    PetscReal h = 0;
    PetscCall(TSGetTimeStep(ts, &h));
    PetscCallCXX(hook->attempts.push_back({h, {}, false}));
  }
  PetscCall(hook->step(ts));
  PetscFunctionReturn(0);
}

PetscErrorCode recording_rollback(TS ts) {
  PetscFunctionBegin;
  Hook* hook = find(ts);
  PetscCheck(hook, PETSC_COMM_SELF, PETSC_ERR_PLIB, "rewind: lost TS rollback hook");
  if (!hook->replaying && !hook->attempts.empty()) hook->attempts.back().rolled_back = true;
  PetscCall(hook->rollback(ts));
  PetscFunctionReturn(0);
}

}  // namespace

void hook_steps(TS ts) {
  if (find(ts)) return;
  TSAdapt adapt = nullptr;
  REWIND_PETSC(TSGetAdapt(ts, &adapt));
  Hook hook;
  hook.adapt = adapt;
  hook.choose = adapt ? detail::choose(adapt) : nullptr;
  hook.step = detail::step_op(ts);
  hook.rollback = detail::rollback_op(ts);
  if (!hook.step) return;  // not set up yet: nothing to wrap
  hooks()[ts] = std::move(hook);
  if (adapt && detail::choose(adapt)) detail::set_choose(adapt, recording_choose);
  detail::set_step_op(ts, recording_step);
  if (detail::rollback_op(ts)) detail::set_rollback_op(ts, recording_rollback);
}

void unhook_steps(TS ts) {
  if (!ts) return;
  Hook* hook = find(ts);
  if (!hook) return;
  if (hook->adapt && detail::choose(hook->adapt) == recording_choose) {
    detail::set_choose(hook->adapt, hook->choose);
  }
  if (detail::step_op(ts) == recording_step) detail::set_step_op(ts, hook->step);
  if (detail::rollback_op(ts) == recording_rollback) detail::set_rollback_op(ts, hook->rollback);
  hooks().erase(ts);
}

void set_before_step(TS ts, std::function<void()> before) {
  if (Hook* hook = find(ts)) hook->before_step = std::move(before);
}

std::vector<Attempt> take_attempts(TS ts) {
  Hook* hook = find(ts);
  return hook ? std::exchange(hook->attempts, {}) : std::vector<Attempt>{};
}

bool can_replay(TS ts) {
  Hook* hook = find(ts);
  return hook && hook->adapt && detail::choose(hook->adapt) == recording_choose;
}

void replay_step(TS ts, const std::vector<Attempt>& attempts, PetscReal proposal) {
  Hook* hook = find(ts);
  // The adapter is consulted (and so plays the script) even where an event handler made the
  // forward run bypass it: the script then accepts the attempt's size as it was.
  const detail::QuietEvents quiet(ts);
  struct Replaying {
    Hook* hook;
    explicit Replaying(Hook* h) : hook(h) {
      if (hook) hook->replaying = true;
    }
    ~Replaying() {
      if (hook) hook->replaying = false;
    }
  } replaying(hook);
  for (std::size_t a = 0; a < attempts.size(); ++a) {
    const Attempt& attempt = attempts[a];
    if (hook) {
      hook->script.clear();
      for (const Choice& c : attempt.choices) hook->script.push_back(c.h);
      if (hook->script.empty()) hook->script.push_back(attempt.h);
      hook->played = 0;
      hook->proposal = a + 1 == attempts.size() ? proposal : 0;
    }
    REWIND_PETSC(TSSetTimeStep(ts, attempt.h));
    REWIND_PETSC(TSStep(ts));
    if (attempt.rolled_back) REWIND_PETSC(TSRollBack(ts));
  }
}

}  // namespace rwd::petsc
