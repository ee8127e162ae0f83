#pragma once
/// @file
/// Restart sets from declared accesses: which state variables a checkpoint of x_b must hold.
/// Rank-local, not collective, no MPI.

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "rewind/schedule/action.hpp"

namespace rwd::record {

using schedule::Step;

/// Which state variables (indices into the stepper's state list) step i reads and writes. A
/// variable both read and written by a step is read first.
struct StepAccess {
  std::vector<std::size_t> reads;
  std::vector<std::size_t> writes;
};

using AccessFn = std::function<StepAccess(Step)>;

/// How far the analysis may look.
struct Horizon {
  Step steps = 0;       ///< n if known (exact analysis); 0 if not (online)
  Step max_steps = 0;   ///< online: a bound the run cannot pass (0: none known)
  Step lookahead = 64;  ///< online without a bound: steps looked at past a boundary
};

/// The restart set of boundary b (state x_b): the variables a later step reads before any step
/// writes them (live at b) and that some step >= b overwrites. A variable nobody overwrites
/// again, such as a parameter set before step 0, stays valid in the stepper's memory and is
/// not stored. With the step count unknown, a bound on it (Horizon::max_steps) keeps the
/// analysis exact up to that bound; without one, a variable not written within the lookahead
/// is still assumed overwritten later, which is safe but stores more.
class RestartSets {
 public:
  /// access(i) is called for steps i >= 0 up to the horizon, possibly before they are taken.
  RestartSets(std::size_t variables, AccessFn access, Horizon horizon);
  // Movable (a std::set's nodes stay where they are), not copyable: a copy's cache would point
  // into the original's sets.
  RestartSets(RestartSets&&) = default;
  RestartSets& operator=(RestartSets&&) = default;
  RestartSets(const RestartSets&) = delete;
  RestartSets& operator=(const RestartSets&) = delete;

  /// Sorted. The reference stays valid as long as this object: each distinct set is kept once,
  /// and a bounded cache maps recent boundaries to it (a run recomputes through every boundary,
  /// so a set per boundary grew with the step count).
  const std::vector<std::size_t>& at(Step b);

  /// The variables some step writes (every variable while the end is unknown and unbounded):
  /// no restart set holds any other. Sorted.
  std::vector<std::size_t> written() const;

  /// The step count of an online run, once known; later analyses are exact.
  void set_steps(Step n);

  std::size_t variables() const { return variables_; }

 private:
  Step end() const;  // the last step + 1 the analysis knows of, 0 if none
  bool live(std::size_t v, Step b) const;
  bool overwritten_from(std::size_t v, Step b) const;

  std::size_t variables_;
  AccessFn access_;
  Horizon horizon_;
  static constexpr std::size_t kCachedBoundaries = 4096;
  std::set<std::vector<std::size_t>> distinct_;  // every set at() returned (nodes never move)
  std::map<Step, const std::vector<std::size_t>*> cache_;  // at most kCachedBoundaries
  std::vector<Step> last_write_;  // per variable, the last step < end() writing it (-1: none)
};

}  // namespace rwd::record
