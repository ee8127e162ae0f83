#pragma once
// Private: Maddison's mixed table (a RAM slot holds a restart state or one step's pullback data)
// and the action stream of mixed segments, shared by mixed and disk-mixed.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "choice_table.hpp"
#include "rewind/schedule/action.hpp"

namespace rwd::schedule::detail {

// M(L, s), the least forward steps to reverse L steps from a state in work that is not stored
// with s free slots, for every L <= n at s = slots; and the choice per (length, slots):
// 0 = record the first step's data; i >= 2 = store the start and split after i steps; 1 = a
// single step. O(n^2 s) when searched exhaustively; for large n only splits near the previous
// entry's are tried, and a convex relaxation gives a proven lower bound.
class MixedTable {
 public:
  /// Throws Error(InvalidArgument) for n < 1, no slot with n >= 2, or a table too large.
  MixedTable(Step n, std::int64_t slots);

  double cost() const { return cost_; }
  double lower_bound() const { return lower_; }
  bool exact() const { return exact_; }
  /// M(L, slots) for L = 0..n (index 0 unused): what the stream takes for a segment of L.
  const std::vector<double>& costs() const { return costs_; }

  // 0 = record the first step's pullback data, 1 = single step, i >= 2 = split after i.
  Step choice(Step length, std::int64_t slots) const {
    if (length == 1) return 1;
    return choices_.at(slots < s_ ? slots : s_, length);
  }
  /// Bytes the choices take (about one a cell; the table is most of a long run's memory that
  /// grows with n).
  std::size_t choice_bytes() const { return choices_.bytes(); }

 private:
  void build();
  void relax(std::vector<double>& value, std::vector<std::uint32_t>& arg,
             const std::vector<double>& below, std::int64_t s) const;

  Step n_;
  std::int64_t s_;
  double cost_ = 0.0;
  double lower_ = 0.0;
  bool exact_ = true;
  std::vector<double> costs_;
  ChoiceTable choices_;  // (s + 1) rows (slots) of n + 1 (lengths)
};

// The table for (n, slots), built once and shared while anything holds it: pricing a schedule,
// creating it and replaying it for statistics ask for the same table, and so do the parked runs
// of one rank with the same budget and step count. The last table asked for stays built even
// when nothing holds it (pricing drops it just before creating the schedule asks for it again),
// unless it is larger than a few MiB. Thread-safe. Throws as the constructor.
std::shared_ptr<const MixedTable> shared_mixed_table(Step n, std::int64_t slots);

// The actions of mixed segments pushed onto it, last pushed first. EndForward comes before the
// first Reverse (the first sweep ends in the first segment reversed); nullopt once every pushed
// segment is reversed.
class MixedStream {
 public:
  explicit MixedStream(const MixedTable& table) : table_(table) {}
  /// Reverse [l, h) from x_l in work, not stored, with `slots` free RAM slots.
  void push_segment(Step l, Step h, std::int64_t slots) {
    frames_.push_back({Kind::Segment, l, h, slots, false});
  }
  /// Read x_l from disk (freeing it there), then reverse [l, h) as push_segment().
  void push_from_disk(Step l, Step h, std::int64_t slots) {
    frames_.push_back({Kind::FromDisk, l, h, slots, false});
  }
  std::optional<Action> next();

 private:
  enum class Kind : std::uint8_t { Segment, RestoreLeft, ReverseStep, FromDisk };
  struct Frame {
    Kind kind;
    Step l, h;
    std::int64_t slots;  // free slots, counting x_l's if it is stored
    bool stored;         // Segment: x_l is in RAM
  };
  void reverse(Step from, Step to);
  void expand(const Frame& f);

  const MixedTable& table_;
  std::vector<Frame> frames_;
  std::deque<Action> pending_;
  bool forward_done_ = false;
};

}  // namespace rwd::schedule::detail
