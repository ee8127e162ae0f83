#pragma once
// Private: Maddison's mixed table (a RAM slot holds a restart state or one step's pullback data)
// and the action stream of mixed segments, shared by mixed and disk-mixed.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "choice_table.hpp"
#include "rewind/schedule/action.hpp"
#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule::detail {

// Checkpoint sizes in the units of a budget: a restart checkpoint takes `restart`, one step's
// pullback data `pullback`; with `holds_next`, step i's pullback data also gives x_{i+1}.
// Slots (the default) are 1 and 1.
struct MixedUnits {
  std::int64_t restart = 1;
  std::int64_t pullback = 1;
  bool holds_next = false;
  auto operator<=>(const MixedUnits&) const = default;
};

// The RAM budget mixed and disk-mixed plan with: units when the parameters give them
// (ScheduleParams::ram_units), slots otherwise; and the sizes of the two kinds in it.
std::int64_t mixed_budget(const std::string& schedule, const ScheduleParams& p);
MixedUnits mixed_units(const ScheduleParams& p);

// M(L, c), the least forward steps to reverse L steps from a state in work that is not stored
// with c free units, for every L <= n at c = budget; and the choice per (length, units):
// 0 = record the first step's data; i >= 1 = store the start and split after i steps (a single
// step is length 1). With holds_next, a second table H(L, c) for a start held by the pullback
// data of the step before it (nothing to store, nothing to free):
//   M(1, c) = H(1, c) = 1
//   M(L, c) = min( 1 + N(L-1, c-p) [c >= p],  min_{1<=i<L} i + M(L-i, c-r) + M(i, c) [c >= r] )
//   H(L, c) = min( 1 + N(L-1, c-p) [c >= p],  min_{1<=i<L} i + M(L-i, c)   + H(i, c) )
// where N = H with holds_next and M without. O(n^2 c) when searched exhaustively; for large n
// only splits near the previous entry's are tried, and a convex relaxation gives a proven lower
// bound (slots without holds_next; otherwise the bound is n when the search was not exhaustive).
class MixedTable {
 public:
  // Called with c and M(., c) (index 0 unused) as each budget's row is built: every budget's
  // costs, for tests that compare whole grids.
  using RowObserver = std::function<void(std::int64_t, const std::vector<double>&)>;

  /// Throws Error(InvalidArgument) for n < 1, a budget that holds no checkpoint with n >= 2,
  /// units < 1, or a table too large.
  MixedTable(Step n, std::int64_t budget, MixedUnits units = {}, const RowObserver& observer = {});

  double cost() const { return cost_; }
  double lower_bound() const { return lower_; }
  bool exact() const { return exact_; }
  const MixedUnits& units() const { return units_; }
  /// M(L, budget) for L = 0..n (index 0 unused): what the stream takes for a segment of L.
  const std::vector<double>& costs() const { return costs_; }

  // 0 = record the first step's pullback data, i >= 1 = split after i (length >= 2).
  Step choice(Step length, std::int64_t units) const { return pick(choices_, length, units); }
  // The same for a start held by the previous step's pullback data (holds_next only).
  Step held_choice(Step length, std::int64_t units) const {
    return pick(held_choices_, length, units);
  }
  /// Bytes the choices take (about one a cell; the table is most of a long run's memory that
  /// grows with n).
  std::size_t choice_bytes() const { return choices_.bytes() + held_choices_.bytes(); }

 private:
  Step pick(const ChoiceTable& table, Step length, std::int64_t units) const {
    return length <= 1 ? 1 : table.at(units < s_ ? units : s_, length);
  }
  void build(const RowObserver& observer);
  void relax(std::vector<double>& value, std::vector<std::uint32_t>& arg,
             const std::vector<double>& record, const std::vector<double>& split,
             std::int64_t c) const;

  Step n_;
  std::int64_t s_;
  MixedUnits units_;
  double cost_ = 0.0;
  double lower_ = 0.0;
  bool exact_ = true;
  std::vector<double> costs_;
  ChoiceTable choices_;       // (s + 1) rows (units) of n + 1 (lengths)
  ChoiceTable held_choices_;  // the same for H, with holds_next; empty otherwise
};

// The table for (n, budget, units), built once and shared while anything holds it: pricing a
// schedule, creating it and replaying it for statistics ask for the same table, and so do the
// parked runs of one rank with the same budget and step count. The last table asked for stays
// built even when nothing holds it (pricing drops it just before creating the schedule asks for
// it again), unless it is larger than a few MiB. Thread-safe. Throws as the constructor.
std::shared_ptr<const MixedTable> shared_mixed_table(Step n, std::int64_t budget,
                                                     MixedUnits units = {});

// The actions of mixed segments pushed onto it, last pushed first. EndForward comes before the
// first Reverse (the first sweep ends in the first segment reversed); nullopt once every pushed
// segment is reversed.
class MixedStream {
 public:
  explicit MixedStream(const MixedTable& table) : table_(table) {}
  /// Reverse [l, h) from x_l in work, not stored, with `units` free RAM units.
  void push_segment(Step l, Step h, std::int64_t units) {
    frames_.push_back({Kind::Segment, l, h, units, Start::Plain});
  }
  /// Read x_l from disk (freeing it there), then reverse [l, h) as push_segment().
  void push_from_disk(Step l, Step h, std::int64_t units) {
    frames_.push_back({Kind::FromDisk, l, h, units, Start::Plain});
  }
  std::optional<Action> next();

 private:
  enum class Kind : std::uint8_t { Segment, RestoreLeft, ReverseStep, FromDisk };
  // Where a segment's start x_l is besides work: nowhere, stored as a restart checkpoint of its
  // own (its units counted as free: it may be dropped), or held by step l-1's pullback data.
  enum class Start : std::uint8_t { Plain, Stored, Held };
  struct Frame {
    Kind kind;
    Step l, h;
    std::int64_t units;  // free units, counting x_l's if it is Stored
    Start start;
  };
  Step choice(Step length, std::int64_t units, Start start) const {
    return start == Start::Held ? table_.held_choice(length, units) : table_.choice(length, units);
  }
  void reverse(Step from, Step to);
  void expand(const Frame& f);

  const MixedTable& table_;
  std::vector<Frame> frames_;
  std::deque<Action> pending_;
  bool forward_done_ = false;
};

}  // namespace rwd::schedule::detail
