#pragma once
/// @file
/// The per-rank tape: which state variables form the restart data at each step boundary, and
/// where every restart state and every step's pullback data lives. Rank-local, not collective.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "rewind/schedule/action.hpp"
#include "rewind/storage/key.hpp"

namespace rwd::tape {

using schedule::Level;
using schedule::Step;
using storage::Key;

/// Which state variables (indices into the stepper's state list) step i reads and writes. A
/// variable both read and written by a step is read first.
struct StepAccess {
  std::vector<std::size_t> reads;
  std::vector<std::size_t> writes;
};

using AccessFn = std::function<StepAccess(Step)>;

/// Derives restart sets from declared accesses and tracks where checkpoints live.
class Tape {
 public:
  /// `steps` = n if known (exact analysis), 0 if not (online): then a variable not seen
  /// written within `lookahead` steps is still treated as overwritten later, which is safe.
  Tape(std::size_t variables, AccessFn access, Step steps, Step lookahead = 64);

  /// The state variables to store in a restart checkpoint at boundary b (state x_b): those a
  /// later step reads before any step writes them (live at b), and that some step >= b
  /// overwrites (a variable nobody overwrites again, such as a parameter set before step 0,
  /// stays valid in memory and is not stored). Sorted, cached per boundary.
  const std::vector<std::size_t>& restart_set(Step b);

  /// Sets the step count once an online run has ended; later analyses are exact.
  void set_steps(Step n);

  /// Records that checkpoint `key` now lives at `level` (RAM or DISK).
  void stored(const Key& key, Level level);
  /// Records that checkpoint `key` no longer lives at `level`.
  void freed(const Key& key, Level level);
  /// True if `key` lives at `level`.
  bool holds(const Key& key, Level level) const;
  /// The cheapest level holding `key` (RAM before DISK), if any.
  std::optional<Level> find(const Key& key) const;

  /// The step whose pullback data sits in the stepper's own buffers (level WORK), if any.
  std::optional<Step> work_adjoint() const { return work_adjoint_; }
  void set_work_adjoint(std::optional<Step> step) { work_adjoint_ = step; }

  /// Checkpoints live at `level` now, and the most ever.
  std::int64_t live(Level level) const;
  std::int64_t peak(Level level) const;

  /// Everything still recorded (for the end-of-run check): pairs of key and level bitmask.
  const std::map<Key, std::uint8_t>& entries() const { return where_; }

 private:
  bool reads_before_write(std::size_t v, Step b, Step horizon) const;
  bool written_from(std::size_t v, Step b, Step horizon) const;

  std::size_t variables_;
  AccessFn access_;
  Step steps_;
  Step lookahead_;
  std::map<Step, std::vector<std::size_t>> restart_sets_;
  std::vector<Step> last_write_;  // per variable, last step < steps_ writing it (-1: none)
  std::map<Key, std::uint8_t> where_;
  std::int64_t live_[2] = {0, 0};
  std::int64_t peak_[2] = {0, 0};
  std::optional<Step> work_adjoint_;
};

}  // namespace rwd::tape
