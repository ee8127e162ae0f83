// dynamic: steps of unequal cost and size, a RAM budget in bytes, the step count unknown.
//
// The engine reports each first-sweep step's cost and the size of the state it produced
// (Schedule::observe_step). At every step the current state is kept if it fits; to make room the
// schedule evicts the checkpoint with the smallest
//     h(p) = (cost of the steps from the previous kept checkpoint to the next one) /
//            (bytes of x_p * staleness),   staleness = steps since x_p was stored,
// the Dynamic Tensor Rematerialization heuristic (Kirisame et al., ICLR 2021) on a chain: the
// numerator is what recomputing x_p would cost once it is gone, its evicted neighbours included
// (they are inside the interval between the surviving checkpoints). x_0 is never evicted. After
// finalize(n) each interval between kept checkpoints is reversed, last first, by Revolve with as
// many slots as the free bytes hold states of that interval's largest size.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "builtin.hpp"
#include "online_base.hpp"
#include "rewind/error.hpp"

namespace rwd::schedule {

namespace {

using detail::SegmentStream;

constexpr std::size_t kMaxScored = 256;

class DynamicSchedule final : public detail::OnlineBase {
 public:
  explicit DynamicSchedule(const ScheduleParams& p) : OnlineBase(p) {
    require(p.ram_bytes > 0.0 || p.ram >= 1,
            "dynamic: give a RAM byte budget (ram_bytes) or RAM slots (each state then counts "
            "one byte)");
    require(p.ram_bytes >= 0.0, "dynamic: the RAM byte budget must be >= 0");
    budget_ = p.ram_bytes > 0.0 ? p.ram_bytes : static_cast<double>(p.ram);
    unit_sizes_ = p.ram_bytes <= 0.0;  // a slot budget: every state counts as one
    if (p.steps > 0) planned_ = p.steps;
  }

  std::string name() const override { return "dynamic"; }

  void observe_step(Step i, double cost, double bytes) override {
    if (unit_sizes_) bytes = 1.0;
    if (i < 0) {
      bytes_.assign(1, bytes);
      return;
    }
    require(i == static_cast<Step>(cost_.size()),
            "dynamic: steps must be reported in order: expected step " +
                std::to_string(cost_.size()) + ", got " + std::to_string(i));
    require(cost >= 0.0 && bytes >= 0.0, "dynamic: step costs and sizes must be >= 0");
    cost_.push_back(cost);
    prefix_.push_back(prefix_.back() + cost);
    bytes_.push_back(bytes);
  }

  void finalize(Step n) override {
    require(!finalized_, "dynamic: finalize called twice");
    // n == position_ - 1: the driver fetched the next step's Forward (and ran the evictions and
    // the store before it) but the run ended before it.
    require(n >= 1 && (n == position_ || n == position_ - 1),
            "dynamic: the run must end where the sweep is (x_" + std::to_string(position_) +
                "), got " + std::to_string(n));
    position_ = n;
    finalized_ = true;
  }

 private:
  double size(Step i) const {
    const auto k = static_cast<std::size_t>(i);
    if (k < bytes_.size()) return bytes_[k];
    return bytes_.empty() ? 1.0 : bytes_.back();  // not reported: assume like the last one
  }
  double cost_between(Step a, Step b) const {  // steps a .. b-1
    const auto k = std::min(static_cast<std::size_t>(b), prefix_.size() - 1);
    return prefix_[k] - prefix_[std::min(static_cast<std::size_t>(a), k)];
  }

  void sweep() override {
    const Step t = position_;
    if (planned_ && t >= *planned_) {
      throw Error(ErrorCode::Internal,
                  "dynamic: the driver did not stop the sweep at x_" + std::to_string(t));
    }
    // Keep x_t if it fits, evicting by the heuristic; x_0 always.
    const double need = size(t);
    while (t > 0 && live_ + need > budget_ && kept_.size() > 1) {
      std::size_t victim = 0;
      double least = std::numeric_limits<double>::infinity();
      // With many checkpoints, score an evenly spread subset (as DTR samples candidates).
      const std::size_t stride = std::max<std::size_t>(1, kept_.size() / kMaxScored);
      for (std::size_t j = 1 + (t % stride); j < kept_.size(); j += stride) {
        const Step prev = kept_[j - 1];
        const Step next = j + 1 < kept_.size() ? kept_[j + 1] : t;
        const Step p = kept_[j];
        const double staleness = static_cast<double>(t - p);
        const double h = cost_between(prev, next) / (std::max(size(p), 1e-300) * staleness);
        if (h < least) {
          least = h;
          victim = j;
        }
      }
      pending_.push_back(Move{kept_[victim], Level::Ram, Level::None});
      live_ -= size(kept_[victim]);
      kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(victim));
    }
    if (t == 0 || live_ + need <= budget_) {
      require(t > 0 || need <= budget_, "dynamic: x_0 (" + std::to_string(need) +
                                            " bytes) does not fit the RAM budget (" +
                                            std::to_string(budget_) + ")");
      pending_.push_back(Copy{t, Level::Work, Level::Ram});
      kept_.push_back(t);
      live_ += need;
    }
    pending_.push_back(Forward{t, t + 1, false, true, Level::Work});
    position_ = t + 1;
  }

  void reverse() override {
    const Step n = position_;
    pending_.push_back(EndForward{});
    std::vector<Step> use;
    for (Step p : kept_) {
      if (p < n - 1) {
        use.push_back(p);
      } else {
        pending_.push_back(Move{p, Level::Ram, Level::None});
      }
    }
    pending_.push_back(Reverse{n, n - 1, true});
    stream_ = std::make_unique<SegmentStream>(0, nullptr, true);
    double held = 0.0;  // bytes of the kept checkpoints before interval j
    for (std::size_t j = 0; j < use.size(); ++j) {
      const Step a = use[j];
      const Step b = j + 1 < use.size() ? use[j + 1] : n - 1;
      double largest = 0.0;
      for (Step i = a; i < b; ++i) largest = std::max(largest, size(i));
      const auto slots = static_cast<std::int64_t>(
          std::max(1.0, std::floor((budget_ - held) / std::max(largest, 1e-300))));
      stream_->push_restore_ram(a, b, std::min<std::int64_t>(slots, b - a));
      held += size(a);
    }
  }

  double budget_ = 0.0;
  bool unit_sizes_ = false;
  std::optional<Step> planned_;
  std::vector<double> cost_;
  std::vector<double> prefix_{0.0};
  std::vector<double> bytes_;
  std::vector<Step> kept_;
  double live_ = 0.0;
  Step position_ = 0;
};

}  // namespace

namespace detail {

void register_dynamic(ScheduleRegistry& registry) {
  registry.add(
      {.name = "dynamic",
       .summary = "unequal step costs and sizes under a RAM byte budget, step count "
                  "unknown: evicts by the DTR heuristic (cost / (bytes x staleness))",
       .online = true,
       .uses_disk = false,
       .factory = [](const ScheduleParams& p) { return std::make_unique<DynamicSchedule>(p); },
       .restart_only = true});
}

}  // namespace detail

}  // namespace rwd::schedule
