#pragma once
// What a recording keeps between its first sweep and its reverse: thinning down to its first
// restart checkpoint (and the pullback data before it, and step n-1's data where it is held),
// the restart checkpoints a lost working state is rebuilt from, and the budget to plan the rest
// of a thinned recording again with. Rank-local decisions on the recording's checkpoint record,
// which every rank holds alike; erasing a disk checkpoint is collective.

#include <optional>
#include <string>
#include <utility>

#include "checkpoint_io.hpp"
#include "rewind/engine/plan.hpp"
#include "rewind/engine/stores.hpp"

namespace rwd::engine::detail {

/// The earliest restart checkpoint held before x_steps (x_0's for most schedules; some keep
/// step 0's pullback data instead and restart from x_1).
std::optional<Key> first_restart(const CheckpointIo& io, Step steps);
/// The latest restart checkpoint held before x_steps, and its level.
std::optional<std::pair<Key, Level>> last_restart(const CheckpointIo& io, Step steps);
/// With pullback_holds_next, the latest state a stored step's pullback data holds: x_{k+1} from
/// step k's, for k + 1 < steps (the last step's data gives x_n itself, what a rebuild makes).
std::optional<std::pair<Key, Level>> last_held_state(const CheckpointIo& io, Step steps,
                                                     bool holds_next);

/// A state the recording can restore: x_step, from restart checkpoint `key` or, with
/// pullback_holds_next, from `key`, step (step-1)'s pullback data; at `level`, its cheapest.
struct HeldState {
  Step step = 0;
  Key key;
  Level level = Level::None;
};
/// The state checkpoint `k` holds: x_k of restart data, x_{k+1} of pullback data with
/// `holds_next`; none otherwise.
std::optional<Step> state_held_by(const Key& k, bool holds_next);
/// The latest state x_j, j <= m, the recording holds (a dropped checkpoint is recomputed from it).
std::optional<HeldState> latest_state(const CheckpointIo& io, Step m, bool holds_next);

/// What thinning kept.
struct Thinned {
  Step base = 0;               ///< the restart checkpoint kept is x_base's
  bool held_base = false;      ///< x_base is held by step base-1's pullback data, kept
  bool tail_kept = false;      ///< step n-1's pullback data stays where it is held
  bool final_dropped = false;  ///< the final state was dropped (step n-1's data stands for it)
};

/// Erases every checkpoint of a recording of `steps` steps but the first restart checkpoint,
/// the pullback data of the steps before it, step n-1's data in the stepper's buffers if
/// `tail` (the recording still holds it there) and the final state unless `tail` and, with
/// `keep_final` false, the first restart checkpoint holds all `variables` state variables.
/// With `holds_next` and no restart checkpoint, x_base is the state the pullback data of the
/// steps 0..base-1, stored in a row, ends in (held by step base-1's). Throws
/// Error(InvalidArgument) naming `schedule` if it kept no state to start from. Collective (disk
/// checkpoints are erased).
Thinned thin(CheckpointIo& io, Step steps, bool tail, bool keep_final, std::size_t variables,
             const std::string& schedule, bool holds_next);

/// The configuration to plan `steps` steps of a thinned recording again with: `config`, its
/// budget cut to what `free` (what the stores grant it now) leaves next to what it holds,
/// `held`; an online schedule becomes "auto" (the count is known now).
RecordingConfig replan_config(RecordingConfig config, Step steps, const Claim& free,
                              const Claim& held);

}  // namespace rwd::engine::detail
