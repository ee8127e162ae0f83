// twolevel: optimal RAM + disk checkpointing (H-Revolve for two levels).
//
// Sub-problems: K_d(L) is the least cost of reversing L steps whose start state is on disk (and
// in work), with every RAM slot free and d more disk slots. Either copy the start into RAM and
// run Revolve with all S RAM slots, R(L), or advance m steps, reverse the right part, read the
// start back (rd) and reverse the left part the same way:
//   K_d(L) = min( R(L), min_m  m + rd + K_d(m) + Rt_d(L-m) ),
//   Rt_d(1) = 1,  Rt_d(j) = min( R(j), wd + K_{d-1}(j) )  (right part's start in RAM or on disk),
// and the whole run costs min( R(n), wd + K_{D-1}(n) ): x_0 in a RAM slot or on disk. Unlimited
// disk is the layer that refers to itself (K_inf on both sides). Placing disk checkpoints inside
// RAM segments, or moving a start between levels later, never helps (tests/unit/twolevel_test
// checks this against a more general dynamic programme), so this is the optimum of the model.
//
// A layer costs O(n^2) split evaluations when searched exhaustively. For large n the Windowed
// method evaluates only splits near those of the neighbouring entries (L-1 in the same layer, L
// in the layer below, the argmin of the relaxation below, and the extreme splits), O(n) per
// layer; the plan is then still a valid schedule and its cost is what the simulator counts. Its
// distance to the optimum is bounded by a relaxation of the same recursion in which K_d and
// Rt_d of shorter segments are replaced by their lower convex envelopes: the relaxation is a
// lower bound by induction, and for each L its split function is convex, so a local descent
// finds its minimum exactly.
#include "rewind/schedule/twolevel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "builtin.hpp"
#include "convex_envelope.hpp"
#include "rewind/error.hpp"
#include "segments.hpp"
#include "twolevel_table.hpp"

namespace rwd::schedule {

namespace {

using detail::DiskChoice;
using detail::SegmentStream;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kExactBudget = 6e7;            // split evaluations for Auto to stay exhaustive
constexpr std::int64_t kMaxCells = 30'000'000;  // choice table entries (4 bytes each)
constexpr Step kWindow = 6;
constexpr Step kMaxSteps = Step{1} << 30;  // splits are stored in 31 bits

// Choice encoding: 0 = copy the start into RAM (or a single step); else (m << 1) | right_disk.
std::uint32_t encode(Step m, bool disk) {
  return (static_cast<std::uint32_t>(m) << 1) | static_cast<std::uint32_t>(disk);
}
Step split_of(std::uint32_t code) {
  return static_cast<Step>(code >> 1);
}

}  // namespace

namespace detail {

class TableImpl final : public DiskPolicy {
 public:
  TableImpl(const ScheduleParams& p, TwoLevelMethod method, bool shortcut)
      : n_(p.steps),
        S_(p.ram),
        D_(p.disk),
        wd_(p.write_cost),
        rd_(p.read_cost),
        method_(method),
        shortcut_(shortcut) {
    detail::check_offline_params("twolevel", p, 0);
    require(n_ <= kMaxSteps, "twolevel: at most " + std::to_string(kMaxSteps) +
                                 " steps can be planned, got " + std::to_string(n_));
    require(n_ == 1 || S_ >= 1 || D_ != 0,
            "twolevel: " + std::to_string(n_) +
                " steps need at least one RAM or disk slot (both counts include x_0's slot)");
    ram_ = detail::revolve_costs(n_, S_);
    plan_.exact = true;
    if (n_ == 1) {
      plan_.cost = plan_.lower_bound = 1.0;
      return;
    }
    if (D_ == 0) {  // RAM only: Revolve
      plan_.cost = plan_.lower_bound = at(ram_, n_);
      return;
    }
    build();
  }

  const TwoLevelPlan& plan() const { return plan_; }

  // Free disk slots to give the top disk segment (x_0's slot excluded).
  std::int64_t top_free_disk() const { return infinite_ ? kUnlimited : counts_.back(); }

  DiskChoice choose(Step length, std::int64_t free_disk) const override {
    const std::uint32_t code = choices_[layer(free_disk)][static_cast<std::size_t>(length)];
    if (code == 0) return {DiskChoice::Kind::ToRam, 0, false};
    return {DiskChoice::Kind::Split, split_of(code), (code & 1U) != 0};
  }

  // A layer's right parts were planned with the layer below it.
  std::int64_t right_free_disk(std::int64_t free_disk) const override {
    if (infinite_) return kUnlimited;
    const std::size_t k = layer(free_disk);
    return k == 0 ? 0 : counts_[k - 1];
  }

 private:
  static double at(const std::vector<double>& v, Step i) { return v[static_cast<std::size_t>(i)]; }

  // The tabulated layer for `free_disk` slots: the largest count not above it.
  std::size_t layer(std::int64_t free_disk) const {
    if (infinite_) return 0;
    if (free_disk < 0) {
      throw Error(ErrorCode::Internal, "twolevel: unlimited disk asked of a finite table");
    }
    const auto it = std::upper_bound(counts_.begin(), counts_.end(), free_disk);
    return static_cast<std::size_t>(it - counts_.begin()) - 1;
  }

  bool exhaustive_layer() {
    if (method_ == TwoLevelMethod::Exact) return true;
    if (method_ == TwoLevelMethod::Windowed) return false;
    const double work = 0.5 * static_cast<double>(n_) * static_cast<double>(n_);
    if (spent_ + work > kExactBudget) return false;
    spent_ += work;
    return true;
  }

  // Fills one layer. `below`: values of layer d-1 (null for d = 0); `self`: the unlimited layer,
  // whose right parts refer to itself. `below_choice` and `relaxed_arg` seed the windows.
  void fill(std::vector<double>& value, std::vector<std::uint32_t>& choice,
            const std::vector<double>* below, const std::vector<std::uint32_t>* below_choice,
            const std::vector<Step>* relaxed_arg, bool self, bool exhaustive) {
    const auto N = static_cast<std::size_t>(n_);
    value.assign(N + 1, kInf);
    choice.assign(N + 1, 0);
    std::vector<double> rt(N + 1, kInf);  // right part cost
    std::vector<std::uint8_t> rt_disk(N + 1, 0);
    const auto set_rt = [&](std::size_t j) {
      rt[j] = ram_[j];
      const std::vector<double>* src = self ? &value : below;
      if (j >= 2 && src != nullptr && wd_ + (*src)[j] < rt[j]) {
        rt[j] = wd_ + (*src)[j];
        rt_disk[j] = 1;
      }
    };
    if (!self) {
      for (std::size_t j = 1; j <= N; ++j) set_rt(j);
    }
    value[1] = 1.0;
    if (self) set_rt(1);
    for (std::size_t L = 2; L <= N; ++L) {
      double best = ram_[L];
      Step arg = 0;
      const auto scan = [&](Step a, Step b) {
        const double bar = best - rd_;
        double low = bar;
        for (Step m = a; m <= b; ++m) {
          const auto mi = static_cast<std::size_t>(m);
          const double c = static_cast<double>(m) + value[mi] + rt[L - mi];
          if (c < low) {
            low = c;
            arg = m;
          }
        }
        if (low < bar) best = low + rd_;
      };
      const auto Ls = static_cast<Step>(L);
      if (exhaustive) {
        scan(1, Ls - 1);
      } else {
        // Up to five windows, merged so that no split is evaluated twice.
        std::array<std::pair<Step, Step>, 5> win{};
        std::size_t k = 0;
        const auto add = [&](Step centre) {
          if (centre > 0) win[k++] = {centre - kWindow, centre + kWindow + 1};
        };
        win[k++] = {1, kWindow};
        win[k++] = {Ls - 1 - kWindow, Ls - 1};
        add(split_of(choice[L - 1]));
        if (below_choice != nullptr) add(split_of((*below_choice)[L]));
        if (relaxed_arg != nullptr) add((*relaxed_arg)[L]);
        for (std::size_t i = 0; i < k; ++i) {
          win[i].first = std::max<Step>(win[i].first, 1);
          win[i].second = std::min<Step>(win[i].second, Ls - 1);
        }
        std::sort(win.begin(), win.begin() + static_cast<std::ptrdiff_t>(k));
        Step done = 0;  // splits up to here are evaluated
        for (std::size_t i = 0; i < k; ++i) {
          const Step a = std::max(win[i].first, done + 1);
          if (a <= win[i].second) {
            scan(a, win[i].second);
            done = win[i].second;
          }
        }
      }
      value[L] = best;
      if (arg > 0) choice[L] = encode(arg, rt_disk[L - static_cast<std::size_t>(arg)] != 0);
      if (self) set_rt(L);
    }
  }

  // One layer of the convex relaxation (a lower bound on the same layer of fill()).
  void relax(std::vector<double>& value, std::vector<Step>& arg, const std::vector<double>* below,
             bool self) {
    const auto N = static_cast<std::size_t>(n_);
    value.assign(N + 1, kInf);
    arg.assign(N + 1, 0);
    ConvexEnvelope hk, hr;
    value[1] = 1.0;
    hk.add(1.0, 1.0);
    hr.add(1.0, 1.0);
    Step pm = 1;
    for (std::size_t L = 2; L <= N; ++L) {
      const auto Ls = static_cast<Step>(L);
      const auto f = [&](Step m) {
        return static_cast<double>(m) + rd_ + hk.at(static_cast<double>(m)) +
               hr.at(static_cast<double>(Ls - m));
      };
      // f is convex on the splits where both envelopes are finite, an interval [lo, hi].
      const double hk_end = hk.domain_end(), hr_end = hr.domain_end();
      const Step lo =
          std::max<Step>(1, hr_end >= static_cast<double>(Ls) ? 1 : Ls - static_cast<Step>(hr_end));
      const Step hi = std::min<Step>(
          Ls - 1, hk_end >= static_cast<double>(Ls) ? Ls - 1 : static_cast<Step>(hk_end));
      Step m = std::clamp<Step>(pm, lo, std::max(lo, hi));
      double fm = lo <= hi ? f(m) : kInf;
      while (m > lo && lo <= hi) {
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
      pm = m;
      double best = ram_[L];
      if (fm < best) {
        best = fm;
        arg[L] = m;
      }
      value[L] = best;
      hk.add(static_cast<double>(L), best);
      double r = ram_[L];
      const std::vector<double>* src = self ? &value : below;
      if (src != nullptr) r = std::min(r, wd_ + (*src)[L]);
      hr.add(static_cast<double>(L), r);
    }
  }

  // Most disk checkpoints live at once under the (self-referring) unlimited layer's choices,
  // counting the segment's own start.
  std::int64_t peak_disk(const std::vector<std::uint32_t>& choice) const {
    const auto N = static_cast<std::size_t>(n_);
    std::vector<std::int64_t> peak(N + 1, 1);
    for (std::size_t L = 2; L <= N; ++L) {
      const std::uint32_t code = choice[L];
      if (code == 0) continue;
      const auto m = static_cast<std::size_t>(split_of(code));
      const std::int64_t right = (code & 1U) != 0 ? 1 + peak[L - m] : 1;
      peak[L] = std::max(right, peak[m]);
    }
    return peak[N];
  }

  void finish(double top_disk, double top_lower) {
    const double ram = at(ram_, n_);
    plan_.x0_on_disk = wd_ + top_disk < ram;
    plan_.cost = plan_.x0_on_disk ? wd_ + top_disk : ram;
    if (plan_.exact) {
      plan_.lower_bound = plan_.cost;
    } else {
      // Round-off in the envelope is far below this margin.
      const double lb = std::min(ram, wd_ + top_lower);
      plan_.lower_bound = std::min(plan_.cost, lb - 1e-9 * std::abs(lb));
    }
    plan_.layers = static_cast<std::int64_t>(choices_.size());
  }

  void build() {
    const auto N = static_cast<std::size_t>(n_);
    std::vector<double> value, relaxed;
    std::vector<Step> relaxed_arg;
    // The unlimited layer: the answer for unlimited disk, and for a finite budget whenever its
    // plan never holds more disk checkpoints than the budget.
    const bool ex = exhaustive_layer();
    choices_.emplace_back();
    if (!ex) relax(relaxed, relaxed_arg, nullptr, true);
    fill(value, choices_[0], nullptr, nullptr, ex ? nullptr : &relaxed_arg, true, ex);
    plan_.exact = ex;
    if (D_ == kUnlimited || (shortcut_ && peak_disk(choices_[0]) <= D_)) {
      infinite_ = true;
      finish(value[N], ex ? value[N] : relaxed[N]);
      return;
    }
    const double inf_lower = ex ? value[N] : relaxed[N];
    // Finite layers for d = 0 .. D-1 free disk slots, stopping once a layer equals the one below
    // (then every layer above does too). When D layers do not fit in the table, a thinned set of
    // counts is tabulated: each layer's right parts use the layer below it, so the plan holds at
    // most that layer's count on disk and costs exactly what its table says.
    choices_.clear();
    counts_ = layer_counts(std::max<std::int64_t>(1, kMaxCells / static_cast<std::int64_t>(N + 1)));
    // below_lower: a lower bound of the layer below (its relaxation, or its exact values).
    std::vector<double> below, below_lower, lower;
    bool dense = true;  // every layer so far has count == index
    bool saturated_exactly = false;
    std::size_t i = 0;
    for (; i < counts_.size(); ++i) {
      dense = dense && counts_[i] == static_cast<std::int64_t>(i);
      const bool exd = exhaustive_layer();
      plan_.exact = plan_.exact && exd && dense;
      relaxed_arg.clear();
      if (!exd) relax(lower, relaxed_arg, i == 0 ? nullptr : &below_lower, false);
      choices_.emplace_back();
      fill(value, choices_.back(), i == 0 ? nullptr : &below,
           i == 0 ? nullptr : &choices_[choices_.size() - 2], exd ? nullptr : &relaxed_arg, false,
           exd);
      if (exd) lower = value;
      const bool same = i > 0 && value == below;
      below.swap(value);
      below_lower.swap(lower);
      if (same) {
        choices_.pop_back();
        saturated_exactly = exd && dense;
        ++i;
        break;
      }
    }
    counts_.resize(choices_.size());
    if (!dense) plan_.exact = false;
    double top_lower = below[N];
    if (!plan_.exact) {
      if (dense) {
        // Carry the relaxation up to layer D-1 (or until it stops changing).
        for (auto d = static_cast<std::int64_t>(i); d < D_ && !saturated_exactly; ++d) {
          relax(lower, relaxed_arg, &below_lower, false);
          const bool same = lower == below_lower;
          below_lower.swap(lower);
          if (same) break;
        }
      } else {
        // The relaxation of every count 0 .. D-1 (O(n) memory).
        for (std::int64_t d = 0; d < D_; ++d) {
          relax(lower, relaxed_arg, d == 0 ? nullptr : &below_lower, false);
          const bool same = d > 0 && lower == below_lower;
          below_lower.swap(lower);
          if (same) break;
        }
      }
      top_lower = std::max(inf_lower, below_lower[N]);
    }
    finish(below[N], top_lower);
  }

  // Disk-slot counts to tabulate, at most `max_layers` of them, ending at D-1: all of them if
  // they fit, else every count up to half the table and geometrically spaced counts above.
  std::vector<std::int64_t> layer_counts(std::int64_t max_layers) const {
    std::vector<std::int64_t> counts;
    if (D_ <= max_layers) {
      for (std::int64_t d = 0; d < D_; ++d) counts.push_back(d);
      return counts;
    }
    const std::int64_t dense = std::max<std::int64_t>(1, max_layers / 2);
    for (std::int64_t d = 0; d < dense; ++d) counts.push_back(d);
    const std::int64_t rest = max_layers - dense;
    const double ratio =
        std::pow(static_cast<double>(D_ - 1) / static_cast<double>(dense - 1 > 0 ? dense - 1 : 1),
                 1.0 / static_cast<double>(rest));
    double c = static_cast<double>(std::max<std::int64_t>(dense - 1, 1));
    for (std::int64_t j = 0; j < rest; ++j) {
      c *= ratio;
      const auto next = std::min<std::int64_t>(D_ - 1, std::llround(c));
      if (next > counts.back()) counts.push_back(next);
    }
    if (counts.back() != D_ - 1) counts.push_back(D_ - 1);
    return counts;
  }

  Step n_;
  std::int64_t S_;
  std::int64_t D_;
  double wd_;
  double rd_;
  TwoLevelMethod method_;
  bool shortcut_;
  double spent_ = 0.0;
  bool infinite_ = false;
  std::vector<std::int64_t> counts_;  // free disk slots of each finite layer, increasing
  std::vector<double> ram_;
  std::vector<std::vector<std::uint32_t>> choices_;
  TwoLevelPlan plan_;
};

}  // namespace detail

namespace detail {

TwoLevelTable::TwoLevelTable(const ScheduleParams& params, TwoLevelMethod method,
                             bool shortcut_unlimited)
    : impl_(std::make_unique<TableImpl>(params, method, shortcut_unlimited)) {}
TwoLevelTable::~TwoLevelTable() = default;
const TwoLevelPlan& TwoLevelTable::plan() const {
  return impl_->plan();
}
std::int64_t TwoLevelTable::top_free_disk() const {
  return impl_->top_free_disk();
}
DiskChoice TwoLevelTable::choose(Step length, std::int64_t free_disk) const {
  return impl_->choose(length, free_disk);
}
std::int64_t TwoLevelTable::right_free_disk(std::int64_t free_disk) const {
  return impl_->right_free_disk(free_disk);
}

}  // namespace detail

namespace {

class TwoLevelSchedule final : public Schedule {
 public:
  TwoLevelSchedule(const ScheduleParams& p, TwoLevelMethod method)
      : Schedule(p), table_(p, method), stream_(p.ram, &table_) {
    const Step n = p.steps;
    if (n == 1) {
      stream_.push_step(0);
    } else if (table_.plan().x0_on_disk) {
      stream_.push_disk(0, n, table_.top_free_disk(), SegmentStream::Start::WriteFirst);
    } else {
      stream_.push_ram(0, n, p.ram, false);
    }
  }

  std::string name() const override { return "twolevel"; }

  std::optional<Action> next() override {
    if (auto a = stream_.next()) return a;
    if (ended_) return std::nullopt;
    ended_ = true;
    return EndReverse{};
  }

  std::optional<double> lower_bound() const override { return table_.plan().lower_bound; }

 private:
  detail::TwoLevelTable table_;
  SegmentStream stream_;
  bool ended_ = false;
};

}  // namespace

TwoLevelPlan plan_twolevel(const ScheduleParams& params, TwoLevelMethod method) {
  return detail::TwoLevelTable(params, method).plan();
}

std::unique_ptr<Schedule> make_twolevel(const ScheduleParams& params, TwoLevelMethod method) {
  return std::make_unique<TwoLevelSchedule>(params, method);
}

namespace detail {

void register_twolevel(ScheduleRegistry& registry) {
  registry.add({"twolevel",
                "optimal RAM + disk checkpointing (H-Revolve, two levels): least forward steps "
                "plus weighted disk writes and reads",
                false, true,
                [](const ScheduleParams& p) { return make_twolevel(p, TwoLevelMethod::Auto); },
                true});
}

}  // namespace detail

}  // namespace rwd::schedule
