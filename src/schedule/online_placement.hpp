#pragma once
// Private: where an online schedule keeps checkpoints while the run length is unknown.
//
// With s slots, a run that ends after n steps is in phase r = min{r : beta(s, r) >= n}. In phase
// r the offline optimum is reached by any s checkpoints whose gaps lie in the ranges
// [beta(sigma, r-2), beta(sigma, r-1)], sigma = s, s-1, ..., 2 from the left, and whose tail to
// n-1 is r-1 or r steps. The placement keeps the checkpoints of the end of phase r ("anchors":
// x_0, then gaps beta(s, r-1), beta(s-1, r-1), ...) once it passes them, appends the current
// state whenever the tail reaches max(r + 1, beta(2, r-2)) steps, and then drops the checkpoint
// (never an anchor or x_0) whose removal leaves the gaps closest to their ranges, the rightmost
// on ties. Phase 1 stores every state while a slot is free. The cost stays within 1 step of the
// offline optimum up to beta(s, 2) (the best any online placement can do in this cost model, see
// tests/unit/online_test.cpp) and within 3 up to beta(s, 3); beyond, measured, it stays within
// one extra forward step per step of the optimum (repetition number at most r + 1).
#include <cstdint>
#include <optional>
#include <vector>

#include "rewind/schedule/action.hpp"

namespace rwd::schedule::detail {

class OnlinePlacement {
 public:
  explicit OnlinePlacement(std::int64_t slots);

  struct Decision {
    bool store = false;        ///< keep x_t
    std::optional<Step> drop;  ///< free this checkpoint first
  };

  /// The decision at position t (the run is at x_t and continues). t must increase; positions
  /// between events (see next_event) may be skipped.
  Decision at(Step t);

  /// The next position after t at which at() may store something.
  Step next_event(Step t) const;

  /// Positions kept, increasing (x_0 first).
  const std::vector<Step>& kept() const { return kept_; }

 private:
  void enter_phase(std::int64_t r);
  bool is_anchor(Step t) const;
  std::int64_t phase_of(Step t) const;  // phase of a run ending at t + 1

  std::int64_t slots_;
  std::vector<Step> kept_;
  std::int64_t phase_ = -1;
  Step phase_end_ = 0;         // last t of the current phase
  std::vector<Step> anchors_;  // of the current phase, increasing
};

/// Cost of reversing a run of n steps from the kept positions (all < n) with `slots` RAM slots,
/// the last step recorded during the sweep: n + the cheapest way to reverse the intervals, some
/// checkpoints possibly left unused. `use` receives the positions used, increasing.
double reverse_from_kept(const std::vector<Step>& kept, Step n, std::int64_t slots,
                         std::vector<Step>* use = nullptr);

}  // namespace rwd::schedule::detail
