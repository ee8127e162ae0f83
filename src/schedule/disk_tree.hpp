#pragma once
// Private: where disk-mixed puts its disk checkpoints, by H-Revolve's recursion at the disk level
// (Herrmann and Pallez) over a RAM level whose segment costs are given (the mixed table's).
//
// T(L, d) is the least cost to reverse L steps whose start x_l is in work and on disk, with d
// more free disk slots, where the RAM level reverses a segment of L from work in M(L) (+inf where
// it cannot):
//   T(1, d) = M(1)
//   T(L, d) = min( M(L),                                  drop x_l from disk, the RAM level
//                  min_{1<=k<L} k + R(L-k, d) + rd + T(k, d) )
//   R(L, d) = min( M(L),  wd + T(L, d-1) [d >= 1, L >= 2] )
// A split advances k steps, reverses the right part from x_{l+k} (by the RAM level, or written
// to disk and split again), reads x_l back and reverses the left part the same way. The whole
// run costs min(M(n), wd + T(n, D-1)): x_0 is written first. Periodic disk checkpoints are one
// such schedule (every right part on disk, every left part in RAM), so T is never dearer.
//
// Columns d = 0, 1, ... are built up to D - 1, until a column equals the one before it (every
// later one then does too: a column depends only on itself and the one before), or until the
// work (L, k) pairs reach the limit. A table stopped by the limit is still a schedule within the
// disk slots, one that uses fewer of them; exact() says whether it is the optimum.
#include <cstdint>
#include <vector>

#include "rewind/schedule/action.hpp"
#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule::detail {

class DiskTree {
 public:
  /// What a segment of a given length does: `split` steps advanced before the right part, whose
  /// start goes to disk if `right_disk`; split 0: the RAM level reverses the segment.
  struct Choice {
    Step split = 0;
    bool right_disk = false;
  };

  /// `ram_costs`: M(L) for L = 0..n (index 0 unused); `disk`: the disk slots of the whole run
  /// (kUnlimited = -1); `work_limit`: (L, k) pairs the build may search.
  DiskTree(std::vector<double> ram_costs, std::int64_t disk, double write_cost, double read_cost,
           double work_limit);

  /// False when not even the first column fits the work limit (nothing to plan with).
  bool built() const { return !columns_.empty(); }
  /// Every column the disk slots allow was built (or the last built one saturates).
  bool exact() const { return exact_; }
  /// The whole run's cost, and whether x_0 goes to disk (else the RAM level does it all).
  double cost() const { return root_cost_; }
  bool root_on_disk() const { return root_on_disk_; }
  /// The planned free disk slots of the segment under x_0 (the run's less x_0's).
  std::int64_t root_free_disk() const { return root_free_; }

  /// The free disk slots a segment plans with: `free_disk` (kUnlimited = -1) capped at the last
  /// column built. A segment's parts get this less one (right part on disk) or this (left part):
  /// the replayed cost is then the table's, also when the build stopped at the work limit.
  std::int64_t planned_free(std::int64_t free_disk) const;
  /// The choice for a segment of `length` >= 2 whose start is on disk, planning with
  /// `planned_free` slots.
  Choice choose(Step length, std::int64_t planned_free) const;

 private:
  struct Column {
    std::vector<double> cost;          // T(L, d), L = 0..n
    std::vector<std::uint32_t> split;  // 0 = the RAM level
    std::vector<bool> right_disk;
  };
  void build_column(std::int64_t d);

  std::vector<double> ram_;
  Step n_;
  double wd_;
  double rd_;
  std::vector<Column> columns_;
  bool exact_ = false;
  double root_cost_;
  bool root_on_disk_ = false;
  std::int64_t root_free_ = 0;
};

}  // namespace rwd::schedule::detail
