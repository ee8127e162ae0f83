#pragma once
// Private: the action stream of nested segments, shared by twolevel, disk-revolve and online.
//
// A segment [l, h) is reversed starting with the working state at x_l. A RAM segment keeps x_l
// in a RAM slot and is Revolve with the slots it is given. A disk segment keeps x_l on disk and
// asks a DiskPolicy what to do: copy x_l into RAM and run a RAM segment with every RAM slot, or
// advance m steps, reverse the right part [l+m, h) (its start in RAM, on disk, or a single
// step), read x_l back and reverse [l, l+m) the same way. An explicit stack of frames replaces
// the recursion, so memory is O(live checkpoints).
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "rewind/schedule/action.hpp"

namespace rwd::schedule::detail {

/// What a disk segment of a given length does.
struct DiskChoice {
  enum class Kind : std::uint8_t { ToRam, Split };
  Kind kind = Kind::ToRam;
  Step m = 0;               ///< Split: steps advanced before the right part
  bool right_disk = false;  ///< Split: the right part's start goes to disk (else RAM)
};

/// Free disk slots of a segment, or kUnlimited (-1).
inline std::int64_t fewer_disk(std::int64_t free_disk) {
  return free_disk < 0 ? free_disk : free_disk - 1;
}

/// Decides disk segments; `free_disk` excludes the slot of the segment's own start.
class DiskPolicy {
 public:
  virtual ~DiskPolicy() = default;
  virtual DiskChoice choose(Step length, std::int64_t free_disk) const = 0;
  /// Free disk slots to give a right part whose start goes to disk (default: one fewer).
  virtual std::int64_t right_free_disk(std::int64_t free_disk) const {
    return fewer_disk(free_disk);
  }
};

/// The optimal Revolve split (steps to advance) for `length` >= 2 steps and `slots` >= 2.
Step revolve_split(Step length, std::int64_t slots);

/// Forward steps Revolve takes for every length 0..n with `slots` RAM slots (index 0 unused).
/// With 0 slots only length 1 is possible; longer lengths get +infinity.
std::vector<double> revolve_costs(Step n, std::int64_t slots);

/// Emits the actions of the segments pushed onto it, last pushed first.
class SegmentStream {
 public:
  /// `ram_slots`: RAM slots a disk segment's RAM part may use; `policy` may be null if no disk
  /// segment is pushed. `forward_done`: EndForward was already emitted by the caller.
  SegmentStream(std::int64_t ram_slots, const DiskPolicy* policy, bool forward_done = false)
      : ram_slots_(ram_slots), policy_(policy), forward_done_(forward_done) {}

  enum class Start : std::uint8_t { Held, WriteFirst, Absent };

  /// Reverse [l, h) with x_l in work and `slots` RAM slots counting x_l's; `stored`: x_l is
  /// already in RAM (else the first Forward stores it).
  void push_ram(Step l, Step h, std::int64_t slots, bool stored);

  /// Reverse [l, h) with x_l in work. `start`: x_l is on disk (Held), is written to disk by the
  /// first Forward (WriteFirst), or is not on disk (Absent: only valid if the policy moves the
  /// segment to RAM). `free_disk` excludes x_l's slot.
  void push_disk(Step l, Step h, std::int64_t free_disk, Start start);

  /// Reverse the single step [l, l+1) with x_l in work.
  void push_step(Step l);

  /// Restore x_l from RAM (Copy, or Move if nothing after needs it) and reverse [l, h).
  void push_restore_ram(Step l, Step h, std::int64_t slots);

  /// Restore x_l from disk and reverse [l, h) as a disk segment.
  void push_restore_disk(Step l, Step h, std::int64_t free_disk);

  /// The next action, or nothing when every pushed segment has been reversed.
  std::optional<Action> next();

  bool empty() const { return frames_.empty() && pending_.empty(); }

 private:
  enum class Kind : std::uint8_t { Ram, Disk, RestoreRam, RestoreDisk };
  struct Frame {
    Kind kind;
    Step l;
    Step h;
    std::int64_t slots;  // RAM slots (Ram, RestoreRam) or free disk slots (Disk, RestoreDisk)
    bool stored;         // Ram: x_l already in RAM
    Start start;         // Disk
  };
  void expand(const Frame& f);
  void step(Step l);

  std::int64_t ram_slots_;
  const DiskPolicy* policy_;
  bool forward_done_;
  std::vector<Frame> frames_;
  std::deque<Action> pending_;
};

}  // namespace rwd::schedule::detail
