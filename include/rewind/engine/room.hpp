#pragma once
/// @file
/// One policy for recordings that share Stores (docs/runtime.md, "Sharing stores"): when one
/// more recording, a recording's reverse or its parking needs room, recordings that wait for
/// their reverse give some back, in the order the caller's policy names:
///  - thin: a recording keeps only its first restart checkpoint, its last step's data and its
///    final state, and runs its steps again before its reverse (Recording::thin);
///  - spill: its RAM checkpoints move to the disk, as many as the disk capacity takes
///    (Recording::spill);
///  - cut: the recording is dropped, and its owner runs its forward sweep again before its
///    reverse.
/// Thinning and spilling take the oldest recording first (reversed last, it waits longest),
/// cutting the one with the fewest steps (the cheapest to run again). The PETSc trajectory
/// thins, then spills, the segments of a run split by events; an ensemble group spills, then
/// cuts, its tasks' recordings.
/// Words (checkpoint, recording, run, segment, slot, row, tape, ...): docs/runtime.md#glossary.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "rewind/engine/recording.hpp"

namespace rwd::engine {

/// A recording that waits for its reverse in shared stores.
struct HeldRecording {
  std::int64_t owner = -1;         ///< the caller's name for it (an ensemble task, a segment)
  Recording* recording = nullptr;  ///< null once cut
  std::int64_t order = 0;          ///< when it was recorded (0 = first)
  std::int64_t steps = 0;          ///< its step count: what cutting it costs again
  bool spilled = false;            ///< some of its checkpoints moved to the disk
  /// Its reverse must run no step again (the host may change its model before it): it may be
  /// spilled, never thinned or cut.
  bool whole = false;
};

/// A way of giving room back.
enum class RoomStep { Thin, Spill, Cut };

/// Told of each owner whose recording make_room() thinned, spilled or cut. `cut` must drop the
/// owner's recording (the caller owns it); the others may be empty.
struct RoomHooks {
  std::function<void(std::int64_t owner)> thinned, spilled, cut;
};

/// Until `enough()` holds: the first of `steps` (in their order) that some recording of `held`
/// can take is applied to one recording, and `enough()` asked again. A recording is thinned at
/// most once (a schedule that kept no restart checkpoint to thin down to, store-all, stays
/// whole), spilled while the disk capacity takes some of its RAM checkpoints, and cut at most
/// once; recording `except` (an id, 0 for none: the one the room is for) never. Returns whether
/// `enough()` holds in the end. `held` is updated (spilled, cut). Collective on the stores'
/// communicator (spills write to the disk, cuts and thinning erase).
bool make_room(Stores& stores, std::vector<HeldRecording>& held, std::span<const RoomStep> steps,
               const std::function<bool()>& enough, const RoomHooks& hooks,
               std::int64_t except = 0);

/// The order in which held recordings are reversed, as owners: those in RAM first, newest first
/// (their reverse frees the RAM the others need); then spilled ones, newest first; then cut
/// ones.
std::vector<std::int64_t> reverse_order(std::vector<HeldRecording> held);

}  // namespace rwd::engine
