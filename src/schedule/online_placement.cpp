#include "online_placement.hpp"

#include <algorithm>
#include <limits>

#include "rewind/error.hpp"
#include "rewind/schedule/binomial.hpp"

namespace rwd::schedule::detail {

namespace {

// How far a gap of `length` is outside [beta(sigma, r-2), beta(sigma, r-1)].
std::int64_t deviation(Step length, std::int64_t sigma, std::int64_t r) {
  const std::int64_t lo = beta(sigma, r - 2);
  const std::int64_t hi = beta(sigma, r - 1);
  if (length < lo) return lo - length;
  if (length > hi) return length - hi;
  return 0;
}

double revolve_cost(Step length, std::int64_t slots) {
  if (length <= 0) return 0.0;
  if (length == 1) return 1.0;
  if (slots < 1) return std::numeric_limits<double>::infinity();
  return static_cast<double>(revolve_fwd_total(length, std::min<std::int64_t>(slots, length)));
}

}  // namespace

OnlinePlacement::OnlinePlacement(std::int64_t slots) : slots_(slots) {
  require(slots >= 1, "online: at least one slot is needed (it holds x_0)");
}

std::int64_t OnlinePlacement::phase_of(Step t) const {
  return repetitions(t + 1, slots_);
}

void OnlinePlacement::enter_phase(std::int64_t r) {
  phase_ = r;
  phase_end_ = beta(slots_, r) - 1;
  anchors_.clear();
  if (r < 2) return;
  Step p = 0;
  anchors_.push_back(p);
  for (std::int64_t j = 1; j < slots_; ++j) {
    p += beta(slots_ - j + 1, r - 1);
    anchors_.push_back(p);
  }
}

bool OnlinePlacement::is_anchor(Step t) const {
  return std::binary_search(anchors_.begin(), anchors_.end(), t);
}

OnlinePlacement::Decision OnlinePlacement::at(Step t) {
  Decision d;
  if (t == 0) {
    enter_phase(phase_of(0));
    kept_.push_back(0);
    d.store = true;
    return d;
  }
  if (t > phase_end_) enter_phase(phase_of(t));
  const std::int64_t r = phase_;
  const auto count = static_cast<std::int64_t>(kept_.size());
  if (r <= 1) {
    if (count < slots_) {
      kept_.push_back(t);
      d.store = true;
    }
    return d;
  }
  const Step tail = t - kept_.back();
  if (!(is_anchor(t) || tail >= std::max<Step>(r + 1, beta(2, r - 2)))) return d;
  if (count < slots_) {
    kept_.push_back(t);
    d.store = true;
    return d;
  }
  // Appending t makes count + 1 positions; drop one of kept_[1 .. count-1] (not an anchor).
  // Gaps after a drop at i: j < i-1 keep sigma = s - j; the merged gap at i-1 has s - (i-1);
  // gaps from kept_[i+1] on move one place left (sigma + 1). Prefix and suffix sums make each
  // candidate O(1).
  std::vector<Step> pos(kept_);
  pos.push_back(t);
  const auto m = pos.size();  // count + 1 positions, m - 1 gaps
  std::vector<std::int64_t> before(m, 0), after(m + 1, 0);
  for (std::size_t j = 0; j + 1 < m; ++j) {
    before[j + 1] =
        before[j] + deviation(pos[j + 1] - pos[j], slots_ - static_cast<std::int64_t>(j), r);
  }
  for (std::size_t j = m - 1; j-- > 0;) {
    after[j] =
        after[j + 1] + deviation(pos[j + 1] - pos[j], slots_ - static_cast<std::int64_t>(j) + 1, r);
  }
  std::optional<std::size_t> best;
  std::int64_t best_dev = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 1; i + 1 < m; ++i) {
    if (is_anchor(pos[i])) continue;
    // gaps 0..i-2 unchanged, merged gap (i-1) = pos[i+1]-pos[i-1], gaps from i+1 shifted.
    const std::int64_t dev =
        before[i - 1] +
        deviation(pos[i + 1] - pos[i - 1], slots_ - static_cast<std::int64_t>(i) + 1, r) +
        after[i + 1];
    if (dev <= best_dev) {  // ties: the rightmost
      best_dev = dev;
      best = i;
    }
  }
  if (!best) return d;  // nothing may go: keep going without storing
  d.drop = pos[*best];
  pos.erase(pos.begin() + static_cast<std::ptrdiff_t>(*best));
  kept_ = std::move(pos);
  d.store = true;
  return d;
}

Step OnlinePlacement::next_event(Step t) const {
  if (phase_ <= 1) {
    if (static_cast<std::int64_t>(kept_.size()) < slots_) return t + 1;
    return std::max(t + 1, phase_end_ + 1);
  }
  Step next = phase_end_ + 1;
  next = std::min(next, kept_.back() + std::max<Step>(phase_ + 1, beta(2, phase_ - 2)));
  const auto it = std::upper_bound(anchors_.begin(), anchors_.end(), t);
  if (it != anchors_.end()) next = std::min(next, *it);
  return std::max(next, t + 1);
}

double reverse_from_kept(const std::vector<Step>& kept, Step n, std::int64_t slots,
                         std::vector<Step>* use) {
  // Usable starts: positions below n - 1 (x_{n-1} is not needed: step n-1 is recorded).
  std::vector<Step> c;
  for (Step p : kept) {
    if (p < n - 1) c.push_back(p);
  }
  if (c.empty() || c.front() != 0) {
    if (n == 1) {
      if (use) use->clear();
      return 1.0;
    }
    throw Error(ErrorCode::Internal, "online: x_0 is not kept");
  }
  const std::size_t k = c.size();
  // g[j][h]: reverse [c_j, n-1) with c_j held and h used checkpoints before it.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> g(k, std::vector<double>(k + 1, inf));
  std::vector<std::vector<std::size_t>> next(k, std::vector<std::size_t>(k + 1, k));
  for (std::size_t j = k; j-- > 0;) {
    for (std::size_t h = 0; h <= j; ++h) {
      const std::int64_t avail = slots - static_cast<std::int64_t>(h);
      double best = revolve_cost(n - 1 - c[j], avail);
      std::size_t arg = k;
      for (std::size_t j2 = j + 1; j2 < k; ++j2) {
        const double v = revolve_cost(c[j2] - c[j], avail) + g[j2][h + 1];
        if (v < best) {
          best = v;
          arg = j2;
        }
      }
      g[j][h] = best;
      next[j][h] = arg;
    }
  }
  if (use) {
    use->clear();
    std::size_t j = 0, h = 0;
    while (j < k) {
      use->push_back(c[j]);
      const std::size_t nj = next[j][h];
      j = nj;
      ++h;
    }
  }
  return static_cast<double>(n) + g[0][0];
}

}  // namespace rwd::schedule::detail
