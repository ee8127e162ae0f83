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
//
// The table holds n+1 choices per layer. When the D layers of a budget do not all fit, layers
// 0..c do, and the top segment is planned as a chain above them: the first sweep writes D-1-c
// disk checkpoints, one per layer from D-1 down to c+1, and the rest after the last one is a
// segment of layer c. When the reverse sweep comes back to the interval of the t-th checkpoint
// from the top, everything after it is freed, so the interval has D-1-t free slots: it is
// reversed by the unlimited layer's plan, among lengths whose unlimited plan fits in those slots
// (the rule "a segment whose unlimited plan fits its free slots takes it" is applied everywhere,
// and layers 0..c are filled with it). The lengths are chosen along the Lagrangian path of the
// intervals' convex envelopes. Where that leaves more than 1 % to the bound, half the table is
// given to short layers c'+1..D-1 over lengths up to M, and an interval of at most M steps may
// also take the plan of its node's layer. Its lower bound (chain_lower) unrolls the top segment's
// disk right parts in the same way and does not depend on the plan; the plan's cost is counted by
// walking choose() over the tree of disk segments, as SegmentStream replays it.
#include "rewind/schedule/twolevel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
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
constexpr double kExactBudget = 6e7;  // split evaluations for Auto to stay exhaustive
constexpr Step kWindow = 6;
constexpr double kTargetGap = 0.01;        // a looser bound is worth more relaxed layers
constexpr Step kMaxSteps = Step{1} << 30;  // splits are stored in 31 bits

// Choice encoding: 0 = copy the start into RAM (or a single step); else (m << 1) | right_disk.
std::uint32_t encode(Step m, bool disk) {
  return (static_cast<std::uint32_t>(m) << 1) | static_cast<std::uint32_t>(disk);
}
Step split_of(std::uint32_t code) {
  return static_cast<Step>(code >> 1);
}

// The least of f over [lo, hi] (lo <= hi), f convex there: a descent from `start`, which is
// where the previous length's minimum was, so a sweep over lengths moves it O(1) on average.
template <class F>
std::pair<Step, double> descend(const F& f, Step start, Step lo, Step hi) {
  Step m = std::clamp(start, lo, hi);
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

}  // namespace

namespace detail {

class TableImpl final : public DiskPolicy {
 public:
  TableImpl(const ScheduleParams& p, TwoLevelMethod method, bool shortcut,
            std::int64_t table_entries)
      : n_(p.steps),
        S_(p.ram),
        D_(p.disk),
        wd_(p.write_cost),
        rd_(p.read_cost),
        method_(method),
        shortcut_(shortcut),
        table_entries_(std::clamp<std::int64_t>(table_entries, 1, std::int64_t{1} << 40)) {
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
  std::int64_t top_free_disk() const {
    if (infinite_) return kUnlimited;
    return chained_ ? D_ - 1 : top_layer();
  }

  DiskChoice choose(Step length, std::int64_t free_disk) const override {
    const auto L = static_cast<std::size_t>(length);
    if (infinite_) return decode(inf_choice_[L]);
    if (free_disk < 0) {
      throw Error(ErrorCode::Internal, "twolevel: unlimited disk asked of a finite table");
    }
    if (fit_rule_ && fits(L, free_disk)) return decode(inf_choice_[L]);
    const std::int64_t top = top_layer();
    if (free_disk > top && free_disk < D_ && !chain_.empty()) {
      const ChainNode& node = chain_[static_cast<std::size_t>(D_ - 1 - free_disk)];
      if (node.length == length) return {DiskChoice::Kind::Split, node.m, true};
    }
    if (free_disk > top && length <= short_len_ && !short_.empty()) {
      const std::int64_t d = std::min(free_disk, D_ - 1);
      return decode(short_[static_cast<std::size_t>(d - top - 1)][L]);
    }
    return decode(choices_[static_cast<std::size_t>(std::min(free_disk, top))][L]);
  }

  // Layer d's right parts were planned with layer d-1, a chain node's with the node below it;
  // without a chain, counts above the top layer are planned as the top layer.
  std::int64_t right_free_disk(std::int64_t free_disk) const override {
    if (infinite_) return kUnlimited;
    const std::int64_t d = chained_ ? free_disk : std::min(free_disk, top_layer());
    return std::max<std::int64_t>(0, d - 1);
  }

 private:
  struct ChainNode {
    Step length = 0;  // the segment this node splits (0: none)
    Step m = 0;       // steps to its next disk checkpoint
  };

  static double at(const std::vector<double>& v, Step i) { return v[static_cast<std::size_t>(i)]; }

  static DiskChoice decode(std::uint32_t code) {
    if (code == 0) return {DiskChoice::Kind::ToRam, 0, false};
    return {DiskChoice::Kind::Split, split_of(code), (code & 1U) != 0};
  }

  std::int64_t top_layer() const { return static_cast<std::int64_t>(choices_.size()) - 1; }

  // The unlimited layer's plan for `length` steps never holds more than `free_disk` checkpoints
  // besides the segment's start.
  bool fits(std::size_t length, std::int64_t free_disk) const {
    return inf_peak_[length] <= free_disk + 1;
  }

  // Whether a layer over lengths up to `len` (default n) is searched exhaustively.
  bool exhaustive_layer(Step len = 0) {
    if (method_ == TwoLevelMethod::Exact) return true;
    if (method_ == TwoLevelMethod::Windowed) return false;
    const double l = static_cast<double>(len > 0 ? len : n_);
    const double work = 0.5 * l * l;
    if (spent_ + work > kExactBudget) return false;
    spent_ += work;
    return true;
  }

  // Fills one layer. `below`: values of layer d-1 (null for d = 0); `self`: the unlimited layer,
  // whose right parts refer to itself. `below_choice` and `relaxed_arg` seed the windows.
  // `fit_count` >= 0: lengths whose unlimited plan fits in that many free slots take it (the
  // rule choose() applies), so they need no search.
  void fill(std::vector<double>& value, std::vector<std::uint32_t>& choice,
            const std::vector<double>* below, const std::vector<std::uint32_t>* below_choice,
            const std::vector<Step>* relaxed_arg, bool self, bool exhaustive,
            std::int64_t fit_count, std::size_t N) {
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
      if (fit_count >= 0 && fits(L, fit_count)) {
        value[L] = inf_value_[L];
        choice[L] = inf_choice_[L];
        continue;
      }
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
             bool self, std::size_t N) {
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
      const auto [m, fm] = lo <= hi ? descend(f, pm, lo, hi) : std::pair<Step, double>{lo, kInf};
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

  // Most disk checkpoints live at once under the unlimited layer's plan of each length, counting
  // the segment's own start.
  std::vector<std::int32_t> peaks(const std::vector<std::uint32_t>& choice) const {
    const auto N = static_cast<std::size_t>(n_);
    std::vector<std::int32_t> peak(N + 1, 1);
    for (std::size_t L = 2; L <= N; ++L) {
      const std::uint32_t code = choice[L];
      if (code == 0) continue;
      const auto m = static_cast<std::size_t>(split_of(code));
      const std::int32_t right = (code & 1U) != 0 ? 1 + peak[L - m] : 1;
      peak[L] = std::max(right, peak[m]);
    }
    return peak;
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
    plan_.layers = infinite_ ? 1 : static_cast<std::int64_t>(choices_.size());
  }

  // The vertices of a lower convex envelope of interval costs, in increasing length.
  struct Envelope {
    std::vector<Step> m;
    std::vector<double> cost;
  };

  static Envelope envelope_of(const ConvexEnvelope& e) {
    Envelope out;
    out.m.reserve(e.xs().size());
    for (const double x : e.xs()) out.m.push_back(static_cast<Step>(x));
    out.cost = e.ys();
    return out;
  }

  // An interval of the chain: m steps, its right part written to disk, its start read back, and
  // k to reverse it.
  double part(Step m, double k) const { return static_cast<double>(m) + rd_ + wd_ + k; }

  // Envelopes of the intervals reversed by the unlimited plan, over lengths in [from, n) whose
  // plan holds at most p disk checkpoints, for p = p_lo .. p_max (p_max: D, or the highest peak
  // among those lengths). Built incrementally: level p's envelope is that of level p-1's vertices
  // and the lengths of peak exactly p.
  std::vector<Envelope> level_envelopes(std::int64_t p_lo, std::int64_t& p_max, Step from) const {
    const auto N = static_cast<std::size_t>(n_);
    const auto first = static_cast<std::size_t>(std::max<Step>(from, 1));
    p_max = p_lo;
    for (std::size_t m = first; m < N; ++m) p_max = std::max<std::int64_t>(p_max, inf_peak_[m]);
    p_max = std::min(p_max, D_);
    const auto levels = static_cast<std::size_t>(p_max - p_lo + 1);
    std::vector<std::vector<Step>> bucket(levels);
    for (std::size_t m = first; m < N; ++m) {
      const std::int64_t p = std::max<std::int64_t>(inf_peak_[m], p_lo);
      if (p <= p_max) bucket[static_cast<std::size_t>(p - p_lo)].push_back(static_cast<Step>(m));
    }
    std::vector<Envelope> env(levels);
    for (std::size_t i = 0; i < levels; ++i) {
      ConvexEnvelope e;
      const std::vector<Step> none;
      const std::vector<Step>& prev = i > 0 ? env[i - 1].m : none;
      std::size_t a = 0, b = 0;
      while (a < prev.size() || b < bucket[i].size()) {
        const bool take_prev = b == bucket[i].size() || (a < prev.size() && prev[a] < bucket[i][b]);
        const Step m = take_prev ? prev[a++] : bucket[i][b++];
        e.add(static_cast<double>(m), part(m, inf_value_[static_cast<std::size_t>(m)]));
      }
      std::vector<Step>().swap(bucket[i]);
      env[i] = envelope_of(e);
    }
    return env;
  }

  // The chain's intervals m_t (t = 0 at the top), each a vertex of its node's envelope `env[t]`,
  // minimising their cost plus top_value of the rest: advancing the nodes along their envelopes
  // in increasing order of slope visits, for each total it reaches, the least sum of envelope
  // values for that total (a Lagrangian path); the best visited total is taken. Updates `best`
  // and `ms` if it improves on `best`.
  void chain_path(const std::vector<const Envelope*>& env, const std::vector<double>& top_value,
                  double& best, std::vector<Step>& ms) const {
    struct Advance {
      double slope;
      std::size_t t;
    };
    const std::size_t k = env.size();
    std::vector<Advance> moves;
    Step X = 0;
    double sum = 0.0;
    for (std::size_t t = 0; t < k; ++t) {
      const Envelope& e = *env[t];
      if (e.m.empty()) return;
      X += e.m.front();
      sum += e.cost.front();
      for (std::size_t i = 0; i + 1 < e.m.size(); ++i) {
        moves.push_back(
            {(e.cost[i + 1] - e.cost[i]) / static_cast<double>(e.m[i + 1] - e.m[i]), t});
      }
    }
    // Stable: a node's own moves keep their (increasing) order among equal slopes.
    std::stable_sort(moves.begin(), moves.end(),
                     [](const Advance& a, const Advance& b) { return a.slope < b.slope; });
    std::vector<std::size_t> at(k, 0);
    double local = kInf;
    std::size_t best_s = 0;
    for (std::size_t s = 0; X <= n_ - 2; ++s) {  // a one-step right part never goes to disk
      const double c = sum + top_value[static_cast<std::size_t>(n_ - X)];
      if (c < local) {
        local = c;
        best_s = s;
      }
      if (s == moves.size()) break;
      const Envelope& e = *env[moves[s].t];
      std::size_t& i = at[moves[s].t];
      X += e.m[i + 1] - e.m[i];
      sum += e.cost[i + 1] - e.cost[i];
      ++i;
    }
    if (!(local < best)) return;
    best = local;
    at.assign(k, 0);
    for (std::size_t s = 0; s < best_s; ++s) ++at[moves[s].t];
    ms.resize(k);
    for (std::size_t t = 0; t < k; ++t) ms[t] = env[t]->m[at[t]];
  }

  void set_chain(const std::vector<Step>& ms) {
    plan_.chain = static_cast<std::int64_t>(ms.size());
    chain_.assign(ms.size(), ChainNode{});
    Step L = n_;
    for (std::size_t t = 0; t < ms.size(); ++t) {
      chain_[t] = {L, ms[t]};
      L -= ms[t];
    }
  }

  // The cost of reversing `length` steps from disk with `free_disk` free slots as choose() and
  // right_free_disk() direct it (what SegmentStream does), over the tree of disk segments.
  double walk(Step length, std::int64_t free_disk) const {
    double total = 0.0;
    std::vector<std::pair<Step, std::int64_t>> stack{{length, free_disk}};
    while (!stack.empty()) {
      const auto [L, f] = stack.back();
      stack.pop_back();
      if (L == 1) {
        total += 1.0;
        continue;
      }
      const DiskChoice c = choose(L, f);
      if (c.kind == DiskChoice::Kind::ToRam) {
        total += at(ram_, L);
        continue;
      }
      total += static_cast<double>(c.m) + rd_;
      stack.emplace_back(c.m, f);
      const Step r = L - c.m;
      if (r == 1) {
        total += 1.0;
      } else if (c.right_disk) {
        // Written first only if it splits: a right part that goes to RAM after all (with more
        // free slots than the layer it was planned in) is never written (SegmentStream).
        const std::int64_t rf = right_free_disk(f);
        if (choose(r, rf).kind != DiskChoice::Kind::ToRam) total += wd_;
        stack.emplace_back(r, rf);
      } else {
        total += at(ram_, r);
      }
    }
    return total;
  }

  // The chain above the table: with layers 0..top tabulated and D-1 > top free slots, the top
  // segment is split k = D-1-top times. Node t (t = 0 at the top) splits a segment with D-1-t
  // free slots into a left part of m_t steps and a right part written to disk, the next node
  // with one slot fewer; the k-th right part is a segment of layer `top`. When the sweep comes
  // back to node t's left part, every checkpoint of the right part is freed, so the left part has
  // D-1-t free slots as well: it takes the unlimited plan if that plan holds at most D-t disk
  // checkpoints (so the admitted lengths grow towards the top), at the same cost in every node.
  // chain_path() picks the lengths; the path with every node held to `top` slots (parts of two
  // adjacent vertices of one envelope) is a second candidate. Returns the cost of reversing n
  // steps from disk with D-1 free slots under choose().
  double build_chain(const std::vector<double>& top_value, std::int64_t top) {
    const Step k = D_ - 1 - top;
    if (fits(static_cast<std::size_t>(n_), D_ - 1)) {
      return inf_value_[static_cast<std::size_t>(n_)];
    }
    const std::int64_t p_lo = top + 1;
    std::int64_t p_max = p_lo;
    const std::vector<Envelope> levels = level_envelopes(p_lo, p_max, 1);
    double best = kInf;
    std::vector<Step> ms;
    std::vector<const Envelope*> env(static_cast<std::size_t>(k));
    for (const std::int64_t cap : {p_lo, p_max}) {
      if (cap == p_max && p_max == p_lo) break;
      for (Step t = 0; t < k; ++t) {
        const std::int64_t p = std::clamp<std::int64_t>(std::min(D_ - t, cap), p_lo, p_max);
        env[static_cast<std::size_t>(t)] = &levels[static_cast<std::size_t>(p - p_lo)];
      }
      chain_path(env, top_value, best, ms);
    }
    if (ms.empty()) return kInf;
    set_chain(ms);
    return walk(n_, D_ - 1);
  }

  // When the chain above the full table leaves more than the target gap, the intervals usually
  // need more disk slots than their unlimited plan may take, refined by a few dozen disk
  // checkpoints each: then half the table holds full layers 0..c and the other half the layers
  // c+1..D-1 for lengths up to M (short layers), and node t's left part may also take layer
  // D-1-t's plan when m <= M (choose() gives it, as it gives that layer's own right parts the
  // layer below). Each node has its own envelope then. Returns the cost of that plan under
  // choose() and keeps it if it is below `current`; else restores the chain above the full table
  // and returns infinity.
  double build_short(double current) {
    const auto N = static_cast<std::size_t>(n_);
    const std::int64_t max_layers =
        std::max<std::int64_t>(1, table_entries_ / static_cast<std::int64_t>(N + 1));
    const std::int64_t c = std::max<std::int64_t>(1, max_layers / 2) - 1;
    if (c >= D_ - 1) return kInf;
    const std::int64_t k = D_ - 1 - c;
    const std::int64_t room = table_entries_ - (c + 1) * static_cast<std::int64_t>(N + 1);
    const Step M = std::min<Step>(n_ - 1, room / k - 1);
    if (M < 2) return kInf;
    std::vector<std::vector<std::uint32_t>> saved_choices;
    saved_choices.swap(choices_);
    std::vector<ChainNode> saved_chain;
    saved_chain.swap(chain_);
    const std::int64_t saved_k = plan_.chain;
    // Full layers 0..c, as build() fills them.
    std::vector<double> value, below, lower, below_lower;
    std::vector<Step> arg;
    for (std::int64_t d = 0; d <= c; ++d) {
      const bool exd = exhaustive_layer();
      arg.clear();
      if (!exd) relax(lower, arg, d == 0 ? nullptr : &below_lower, false, N);
      choices_.emplace_back();
      fill(value, choices_.back(), d == 0 ? nullptr : &below,
           d == 0 ? nullptr : &choices_[choices_.size() - 2], exd ? nullptr : &arg, false, exd, d,
           N);
      if (exd) lower = value;
      below.swap(value);
      below_lower.swap(lower);
    }
    // Short layers c+1..D-1 over lengths up to M; node t = D-1-d's envelope over m <= M.
    const auto Ms = static_cast<std::size_t>(M);
    std::vector<double> sval, slower;
    std::vector<double> sbelow(below.begin(), below.begin() + static_cast<std::ptrdiff_t>(Ms) + 1);
    std::vector<double> sbelow_lower(below_lower.begin(),
                                     below_lower.begin() + static_cast<std::ptrdiff_t>(Ms) + 1);
    std::vector<Envelope> node_env(static_cast<std::size_t>(k));
    short_.clear();
    short_len_ = M;
    for (std::int64_t d = c + 1; d < D_; ++d) {
      const bool exd = exhaustive_layer(M);
      arg.clear();
      if (!exd) relax(slower, arg, &sbelow_lower, false, Ms);
      short_.emplace_back();
      const std::vector<std::uint32_t>& below_choice =
          short_.size() >= 2 ? short_[short_.size() - 2] : choices_.back();
      fill(sval, short_.back(), &sbelow, &below_choice, exd ? nullptr : &arg, false, exd, d, Ms);
      if (exd) slower = sval;
      ConvexEnvelope e;
      for (std::size_t m = 1; m <= Ms && m < N; ++m) {
        e.add(static_cast<double>(m), part(static_cast<Step>(m), sval[m]));
      }
      node_env[static_cast<std::size_t>(D_ - 1 - d)] = envelope_of(e);
      sbelow.swap(sval);
      sbelow_lower.swap(slower);
    }
    // Longer left parts take the unlimited plan where it fits, as in build_chain().
    const std::int64_t p_lo = c + 1;
    std::int64_t p_max = p_lo;
    const std::vector<Envelope> levels = level_envelopes(p_lo, p_max, M + 1);
    std::vector<const Envelope*> env(static_cast<std::size_t>(k));
    for (std::int64_t t = 0; t < k; ++t) {
      Envelope& mine = node_env[static_cast<std::size_t>(t)];
      const std::int64_t p = std::clamp<std::int64_t>(D_ - t, p_lo, p_max);
      const Envelope& longer = levels[static_cast<std::size_t>(p - p_lo)];
      if (!longer.m.empty()) {
        ConvexEnvelope e;
        for (std::size_t i = 0; i < mine.m.size(); ++i) {
          e.add(static_cast<double>(mine.m[i]), mine.cost[i]);
        }
        for (std::size_t i = 0; i < longer.m.size(); ++i) {
          e.add(static_cast<double>(longer.m[i]), longer.cost[i]);
        }
        mine = envelope_of(e);
      }
      env[static_cast<std::size_t>(t)] = &mine;
    }
    double best = kInf;
    std::vector<Step> ms;
    chain_path(env, below, best, ms);
    double cost = kInf;
    if (!ms.empty()) {
      set_chain(ms);
      cost = walk(n_, D_ - 1);
    }
    if (cost < current) return cost;
    choices_.swap(saved_choices);
    chain_.swap(saved_chain);
    plan_.chain = saved_k;
    short_.clear();
    short_len_ = 0;
    return kInf;
  }

  // A lower bound on K_{D-1}(n) from lower bounds of layer c < D-1 (`layer_lower`) and of the
  // unlimited layer (`inf_lower`). Unroll the right parts on disk from the top segment: a plan
  // splits off j left parts m_1..m_j, each costing m_i + rd + wd + K_d(m_i) with K_d >= K_inf,
  // and then either (j >= k = D-1-c) the k-th right part is a segment of layer c, or (j < k) the
  // last segment writes nothing more to disk: it goes to RAM, R(L), or splits off a left part
  // and keeps its right part in RAM, m + rd + K_d(m) + R(L-m). With h the lower convex envelope
  // of m + rd + wd + K_inf(m), j left parts of total X cost at least j h(X/j) (Jensen), and for
  // j < k the least of j h(X/j) over real j is at the clamped j where X/j minimises h(x)/x.
  double chain_lower(const std::vector<double>& layer_lower, std::int64_t c,
                     const std::vector<double>& inf_lower) const {
    const auto N = static_cast<std::size_t>(n_);
    if (c >= D_ - 1) return layer_lower[N];
    const double k = static_cast<double>(D_ - 1 - c);
    ConvexEnvelope h, hk, hr;
    for (std::size_t m = 1; m < N; ++m) {
      const double md = static_cast<double>(m);
      h.add(md, md + rd_ + wd_ + inf_lower[m]);
      hk.add(md, inf_lower[m]);
    }
    for (std::size_t m = 1; m <= N; ++m) hr.add(static_cast<double>(m), ram_[m]);
    double bound = kInf;
    for (Step X = static_cast<Step>(k); X <= n_ - 1; ++X) {
      const double x = static_cast<double>(X);
      bound = std::min(bound, k * h.at(x / k) + layer_lower[N - static_cast<std::size_t>(X)]);
    }
    // A last segment of L steps costs at least terminal[L] = min(R(L), min_m m + rd + K_inf(m) +
    // R(L-m)) with envelopes in place of K_inf and R: a convex split function where R is finite.
    std::vector<double> terminal(N + 1, kInf);
    terminal[1] = 1.0;
    Step pm = 1;
    for (std::size_t L = 2; L <= N; ++L) {
      const auto Ls = static_cast<Step>(L);
      const auto f = [&](Step m) {
        return static_cast<double>(m) + rd_ + hk.at(static_cast<double>(m)) +
               hr.at(static_cast<double>(Ls - m));
      };
      const double hr_end = hr.domain_end();
      const Step lo =
          std::max<Step>(1, hr_end >= static_cast<double>(Ls) ? 1 : Ls - static_cast<Step>(hr_end));
      const Step hi = Ls - 1;
      const auto [m, fm] = descend(f, pm, lo, hi);
      pm = m;
      terminal[L] = std::min(ram_[L], fm);
    }
    double shorter = terminal[N];
    if (k >= 2) {
      double x0 = 1.0, ratio = kInf;
      for (std::size_t i = 0; i < h.xs().size(); ++i) {
        if (h.ys()[i] / h.xs()[i] < ratio) {
          ratio = h.ys()[i] / h.xs()[i];
          x0 = h.xs()[i];
        }
      }
      for (Step X = 1; X <= n_ - 1; ++X) {
        const double x = static_cast<double>(X);
        const double j = std::clamp(x / x0, 1.0, std::min(k - 1.0, x));
        shorter = std::min(shorter, j * h.at(x / j) + terminal[N - static_cast<std::size_t>(X)]);
      }
    }
    return std::min(bound, shorter);
  }

  void build() {
    const auto N = static_cast<std::size_t>(n_);
    std::vector<double> relaxed;
    std::vector<Step> relaxed_arg;
    // The unlimited layer: the answer for unlimited disk, and for a finite budget whenever its
    // plan never holds more disk checkpoints than the budget.
    const bool ex = exhaustive_layer();
    if (!ex) relax(relaxed, relaxed_arg, nullptr, true, N);
    fill(inf_value_, inf_choice_, nullptr, nullptr, ex ? nullptr : &relaxed_arg, true, ex, -1, N);
    plan_.exact = ex;
    const std::vector<double> inf_lower = ex ? inf_value_ : relaxed;
    inf_peak_ = peaks(inf_choice_);
    if (D_ == kUnlimited || (shortcut_ && inf_peak_[N] <= D_)) {
      infinite_ = true;
      finish(inf_value_[N], inf_lower[N]);
      return;
    }
    // Finite layers for d = 0 .. D-1 free disk slots, stopping once a layer equals the one below
    // (then every layer above does too). When D layers do not fit in the table, the layers that
    // fit are tabulated and a chain of disk checkpoints above them covers the rest.
    const std::int64_t max_layers =
        std::max<std::int64_t>(1, table_entries_ / static_cast<std::int64_t>(N + 1));
    fit_rule_ = D_ > max_layers;
    const std::int64_t layers = std::min(D_, max_layers);
    // below_lower: a lower bound of the layer below (its relaxation, or its exact values).
    std::vector<double> value, below, lower, below_lower;
    bool saturated = false, saturated_exactly = false;
    std::int64_t d = 0;
    for (; d < layers; ++d) {
      const bool exd = exhaustive_layer();
      plan_.exact = plan_.exact && exd;
      relaxed_arg.clear();
      if (!exd) relax(lower, relaxed_arg, d == 0 ? nullptr : &below_lower, false, N);
      choices_.emplace_back();
      fill(value, choices_.back(), d == 0 ? nullptr : &below,
           d == 0 ? nullptr : &choices_[choices_.size() - 2], exd ? nullptr : &relaxed_arg, false,
           exd, fit_rule_ ? d : -1, N);
      if (exd) lower = value;
      const bool same = d > 0 && value == below;
      below.swap(value);
      below_lower.swap(lower);
      if (same) {
        choices_.pop_back();
        saturated = true;
        saturated_exactly = exd;
        ++d;
        break;
      }
    }
    // d layers computed; `below` holds the last (count d-1).
    double top_value = below[N];
    if (!saturated && d < D_) {
      plan_.exact = false;
      chained_ = true;
      top_value = build_chain(below, top_layer());
    }
    double top_lower = below[N];
    if (!plan_.exact) {
      if (fit_rule_) {
        // below_lower bounds layer c; the chain bound covers the layers above it. Where that
        // leaves more than the target gap, carry the relaxation up (O(n) memory, a fraction of
        // the time of a filled layer) for up to four times the table's entries.
        std::int64_t c = d - 1;
        top_lower = chain_lower(below_lower, c, inf_lower);
        const double cost = std::min(at(ram_, n_), wd_ + top_value);
        if (cost > (1.0 + kTargetGap) * std::min(at(ram_, n_), wd_ + top_lower)) {
          const std::int64_t more = 4 * table_entries_ / static_cast<std::int64_t>(N + 1);
          for (std::int64_t j = 0; j < more && c < D_ - 1; ++j) {
            relax(lower, relaxed_arg, &below_lower, false, N);
            const bool same = lower == below_lower;
            below_lower.swap(lower);
            c = same ? D_ - 1 : c + 1;
          }
          top_lower = std::max(top_lower, chain_lower(below_lower, c, inf_lower));
        }
      } else {
        // Carry the relaxation up to layer D-1 (or until it stops changing).
        for (; d < D_ && !saturated_exactly; ++d) {
          relax(lower, relaxed_arg, &below_lower, false, N);
          const bool same = lower == below_lower;
          below_lower.swap(lower);
          if (same) break;
        }
        top_lower = below_lower[N];
      }
      top_lower = std::max(inf_lower[N], top_lower);
    }
    if (chained_) {
      const double ram = at(ram_, n_);
      if (std::min(ram, wd_ + top_value) > (1.0 + kTargetGap) * std::min(ram, wd_ + top_lower)) {
        top_value = std::min(top_value, build_short(top_value));
      }
    }
    finish(top_value, top_lower);
  }

  Step n_;
  std::int64_t S_;
  std::int64_t D_;
  double wd_;
  double rd_;
  TwoLevelMethod method_;
  bool shortcut_;
  std::int64_t table_entries_;
  double spent_ = 0.0;
  bool infinite_ = false;  // every segment uses the unlimited layer
  bool fit_rule_ = false;  // a segment whose unlimited plan fits its free slots takes it
  bool chained_ = false;   // the top segment is the chain above the tabulated layers
  std::vector<double> ram_;
  std::vector<double> inf_value_;
  std::vector<std::uint32_t> inf_choice_;
  std::vector<std::int32_t> inf_peak_;
  std::vector<std::vector<std::uint32_t>> choices_;  // finite layers, free slots 0, 1, ...
  std::vector<ChainNode> chain_;                     // chain_[t]: the node with D-1-t free slots
  std::vector<std::vector<std::uint32_t>> short_;  // layers top+1 .. D-1 for lengths <= short_len_
  Step short_len_ = 0;
  TwoLevelPlan plan_;
};

}  // namespace detail

namespace detail {

TwoLevelTable::TwoLevelTable(const ScheduleParams& params, TwoLevelMethod method,
                             bool shortcut_unlimited, std::int64_t table_entries)
    : impl_(std::make_unique<TableImpl>(params, method, shortcut_unlimited, table_entries)) {}
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
  TwoLevelSchedule(const ScheduleParams& p, TwoLevelMethod method, std::int64_t table_entries)
      : Schedule(p), table_(p, method, true, table_entries), stream_(p.ram, &table_) {
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

TwoLevelPlan plan_twolevel(const ScheduleParams& params, TwoLevelMethod method,
                           std::int64_t table_entries) {
  return detail::TwoLevelTable(params, method, true, table_entries).plan();
}

std::unique_ptr<Schedule> make_twolevel(const ScheduleParams& params, TwoLevelMethod method,
                                        std::int64_t table_entries) {
  return std::make_unique<TwoLevelSchedule>(params, method, table_entries);
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
