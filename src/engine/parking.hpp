#pragma once
// What a recording does between its first sweep and its reverse: parking (what only the stepper
// holds goes to the stores, so the stepper may run other work), spilling RAM checkpoints to disk,
// losing its working state and rebuilding it, thinning down to its first restart checkpoint and
// planning the rest again before its reverse.

#include "sweeps.hpp"

namespace rwd::engine::detail {

struct Parking : Sweeps {
  using Sweeps::Sweeps;

  // What park() will add: the final state (not for a thinned recording that kept step n-1's
  // data, which stands for it) and step n-1's pullback data if the stepper holds it.
  std::pair<int, double> park_adds() const;
  // What park() will hold: the added checkpoints in RAM, or on disk if the stores cannot grant
  // them in RAM but can on disk.
  std::pair<Claim, Level> park_plan() const;
  Claim park_claim() const;
  bool can_rebuild() const;
  std::optional<std::pair<Key, Level>> last_held_state() const;
  bool whole() const;
  void park();
  void unpark();
  void spill(std::int64_t at_most);
  void lose_work();
  // Recomputes the end of the first sweep from the last restart checkpoint held: the state x_n
  // and the pullback data the schedule left in the stepper's buffers, which the host lost.
  void rebuild();
  bool tail_held() const;
  // A thinned recording that kept step n-1's data may drop its final state when its first
  // restart checkpoint holds every state variable (none stays in the stepper's memory unstored)
  // and the host seeds its own adjoint (thin(false)).
  bool thinned_without_final() const;
  Claim thin(bool keep_final);
  // A thinned recording, before the adjoint of step m-1: plans steps base..m-1 again (m now
  // known) over what the stores grant now, next to what it holds, and runs their first sweep
  // again from x_base. The steps before base are served from the pullback data kept.
  void replan(Step m);
};

}  // namespace rwd::engine::detail
