#pragma once
// A recording's sweeps over the stepper: the first sweep as the host reports its steps (pull)
// or as the recording drives them, the end of the first sweep, recomputing steps from a restored
// state, and the schedule's copies and moves of checkpoints between levels.

#include <string>

#include "recording_state.hpp"

namespace rwd::engine::detail {

struct Sweeps : RecordingState {
  using RecordingState::RecordingState;

  // An online run's end, agreed: every rank must say the same (a rank that stopped alone would
  // leave the others waiting in the next collective call).
  bool finished_everywhere(Step i);
  void transfer(Step n, Level from, Level to, bool move);
  void restore_from_pullback(Step n, Level from);
  // x_n, or with `pullback` step n-1's pullback data, dropped over a compressed budget:
  // recomputed from the latest state held before it.
  void recompute_dropped(Step n, bool pullback);
  // A plan that counts on compression keeps x_0 in RAM until its reverse ends, whatever the
  // schedule does with it: what is dropped is recomputed from it at worst.
  bool keeps_x0() const;
  // The restart data a Forward from the working state stores first: the schedule's, or x_0 when
  // keeps_x0() and the schedule does not keep it.
  void put_forward_restart(const schedule::Forward& f);
  // A host that owns the time loop cannot go back to a stored state during the first sweep.
  void refuse_restore_in_first_sweep() const;
  bool transfer_action(const Action& a);
  // Pulls actions until a Forward from the current position is open, or EndForward.
  void pull_first_sweep();
  bool record_wanted(Step i) const;
  void forward_step_done(Step i, bool last);
  void end_forward(Step n);
  void recompute(const schedule::Forward& f);
  // Stepper::pullback_from_states() against step i, just recorded: the pullback fields that
  // come from x_{i+1} must hold state()'s bits, and with `start` (x_i's source variables, taken
  // before the step) those from x_i must hold them. Agreed over the ranks: a declaration that is
  // wrong on one rank is an error on every rank (composed_pullback.cpp).
  void check_sources(Step i, const std::vector<std::vector<double>>* start);
  // The plan composes pullback data from states (`endpoints`): its declaration is checked.
  bool composes() const { return plan.composes_pullback; }
  // x_i's variables that pullback fields come from, when the next recorded step is to be checked.
  std::vector<std::vector<double>> source_copies();
};

}  // namespace rwd::engine::detail
