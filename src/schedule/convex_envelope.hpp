#pragma once
// Private: the lower convex envelope of points added with increasing x, used by the two-level
// and mixed programmes to evaluate piecewise-linear cost functions, and the descent that
// minimises their convex split functions.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace rwd::schedule::detail {

/// An extended-value convex function: +infinity past the last point if the points added after it
/// were infinite (their domain ends there), else the last segment continued (a convex extension,
/// below any value there).
class ConvexEnvelope {
 public:
  void add(double x, double y) {
    if (!std::isfinite(y)) {
      open_end_ = false;
      return;
    }
    open_end_ = true;
    while (x_.size() >= 2) {
      const std::size_t k = x_.size();
      // Drop the last vertex if it is not strictly below the chord to the new point.
      if ((y_[k - 1] - y_[k - 2]) * (x - x_[k - 2]) >= (y - y_[k - 2]) * (x_[k - 1] - x_[k - 2])) {
        x_.pop_back();
        y_.pop_back();
      } else {
        break;
      }
    }
    x_.push_back(x);
    y_.push_back(y);
  }

  /// The largest x with a finite value.
  double domain_end() const { return open_end_ ? kInf : x_.back(); }

  /// The vertices, in increasing x.
  const std::vector<double>& xs() const { return x_; }
  const std::vector<double>& ys() const { return y_; }

  double at(double x) const {
    if (x_.empty() || x > domain_end()) return kInf;
    const std::size_t k = x_.size();
    if (k == 1) return y_[0];
    std::size_t i =
        static_cast<std::size_t>(std::upper_bound(x_.begin(), x_.end(), x) - x_.begin());
    i = std::clamp<std::size_t>(i, 1, k - 1);
    const double t = (x - x_[i - 1]) / (x_[i] - x_[i - 1]);
    return y_[i - 1] + t * (y_[i] - y_[i - 1]);
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> x_, y_;
  bool open_end_ = true;
};

/// The least of f over [lo, hi] (lo <= hi), f convex there: a descent from `start`, which is
/// where the previous length's minimum was, so a sweep over lengths moves it O(1) on average.
template <class F>
std::pair<std::int64_t, double> descend(const F& f, std::int64_t start, std::int64_t lo,
                                        std::int64_t hi) {
  std::int64_t m = std::clamp(start, lo, hi);
  double fm = f(m);
  while (m > lo) {
    const double g = f(m - 1);
    if (!(g < fm)) break;
    --m;
    fm = g;
  }
  while (m < hi) {
    const double g = f(m + 1);
    if (!(g < fm)) break;
    ++m;
    fm = g;
  }
  return {m, fm};
}

}  // namespace rwd::schedule::detail
