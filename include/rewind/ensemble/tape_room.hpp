#pragma once
/// @file
/// How a group makes room for a new tape next to the ones it holds, and in which order it
/// reverses them; shared by the ensemble's front ends.
///
/// The rule: a new tape must fit next to the held ones in the group's stores. While it does
/// not, the oldest held tape that still has RAM checkpoints is spilled to disk (it is reversed
/// last, so its checkpoints wait longest), as long as the disk capacity can take them; once
/// nothing can be spilled, the held tape with the fewest steps is cut (its checkpoints are
/// dropped and its forward runs again before its reverse, which costs about its step count).
/// Tapes are reversed in RAM first, newest first (their reverse frees the RAM the others
/// need), then spilled ones, newest first, then cut ones.

#include <cstdint>
#include <functional>
#include <vector>

#include "rewind/engine/recording.hpp"

namespace rwd::ensemble {

/// A tape a group holds.
struct HeldTape {
  std::int64_t task = -1;
  engine::Recording* recording = nullptr;  ///< null once cut
  std::int64_t order = 0;                  ///< when it was recorded (0 = first)
  std::int64_t steps = 0;
  bool spilled = false;
};

/// Spills and cuts tapes of `tapes` until `need` fits in `stores` for run `run` (a held tape's
/// own id, whose claim `need` replaces, or 0 for a new tape). `cut(task)` must drop that task's
/// recording; `spilled(task)` is told of each spill. Collective on the stores' communicator.
/// Throws Error(InvalidArgument) naming `task` if `need` does not fit with every other tape cut.
void make_room(engine::Stores& stores, const std::vector<HeldTape>& tapes, std::int64_t task,
               const engine::Claim& need, std::int64_t run,
               const std::function<void(std::int64_t)>& spilled,
               const std::function<void(std::int64_t)>& cut);

/// The reverse order of `tapes` (see the file comment), as task indices.
std::vector<std::int64_t> reverse_order(std::vector<HeldTape> tapes);

}  // namespace rwd::ensemble
