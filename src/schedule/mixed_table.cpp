// Mixed checkpointing with checkpoints of different sizes, in the simulator's units: M(L, c) is
// the least number of forward steps to reverse L steps from a state in work that is not stored,
// with c free units; a restart checkpoint takes r units and one step's pullback data p (slots:
// r = p = 1, Maddison's recursion):
//   M(1, c) = 1
//   M(L, c) = min( 1 + M(L-1, c-p),                         record step 0's data
//                  min_{1<=i<L} i + M(L-i, c-r) + M(i, c) )  store x_0, advance i, split
// (the left part may keep x_0 stored, which is the same as storing it again: RAM copies are free;
// with r >= p a split after one step never beats recording it). When step i's pullback data
// holds x_{i+1}, recording step 0 leaves x_1 held by it: H(L, c), the same from a held start,
// splits without storing anything, and the record option goes on in H (mixed_table.hpp).
#include "mixed_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "convex_envelope.hpp"
#include "rewind/error.hpp"

namespace rwd::schedule::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kExactBudget = 6e7;
constexpr Step kWindow = 8;
constexpr std::int64_t kMaxCells = 40'000'000;

// Rows c - k for k < depth, by c mod depth.
class Ring {
 public:
  Ring(std::int64_t depth, std::size_t width, double fill)
      : depth_(depth), rows_(static_cast<std::size_t>(depth), std::vector<double>(width, fill)) {}
  std::vector<double>& operator[](std::int64_t c) {
    return rows_[static_cast<std::size_t>(c % depth_)];
  }

 private:
  std::int64_t depth_;
  std::vector<std::vector<double>> rows_;
};

// Units beyond what holds every step's pullback data but the last's are of no use: with them
// every step is recorded once, and nothing costs less than n.
std::int64_t useful_units(Step n, const MixedUnits& units) {
  return std::max<std::int64_t>((n - 1) * units.pullback, 1);
}

// What one row of M or H is searched with: the record option's row (empty when the budget holds
// no pullback data), the budget c and pullback size p, and for windowed rows the choices of the
// row below and of the relaxation.
struct RowSearch {
  const std::vector<double>& rec;
  std::int64_t c, p;
  bool exhaustive;
  const std::vector<std::uint32_t>& row_below;
  const std::vector<std::uint32_t>& relaxed_arg;
};

// Fills own[L] and args[L] for L = 2..n: `right` is the right parts' row (empty when no split
// fits), splits start after `first_split` steps.
void fill_row(const RowSearch& in, std::vector<double>& own, const std::vector<double>& right,
              std::vector<std::uint32_t>& args, Step first_split) {
  const std::size_t N = own.size() - 1;
  for (std::size_t L = 2; L <= N; ++L) {
    const auto Ls = static_cast<Step>(L);
    double best = in.rec.empty() ? kInf : 1.0 + in.rec[L - 1];
    std::uint32_t arg = 0;
    if ((Ls - 1) * in.p <= in.c) best = static_cast<double>(L);  // record every step's data
    const auto scan = [&](Step a, Step b) {
      a = std::max<Step>(a, first_split);
      b = std::min<Step>(b, Ls - 1);
      for (Step i = a; i <= b; ++i) {
        const auto ii = static_cast<std::size_t>(i);
        const double v = static_cast<double>(i) + own[ii] + right[L - ii];
        if (v < best) {
          best = v;
          arg = static_cast<std::uint32_t>(i);
        }
      }
    };
    if (!right.empty() && (Ls - 1) * in.p > in.c) {
      if (in.exhaustive) {
        scan(first_split, Ls - 1);
      } else {
        std::array<std::pair<Step, Step>, 4> win{};
        std::size_t k = 0;
        const auto add = [&](Step at) {
          if (at >= first_split) win[k++] = {at - kWindow, at + kWindow};
        };
        add(args[L - 1]);
        add(in.row_below[L]);
        if (!in.relaxed_arg.empty()) add(in.relaxed_arg[L]);
        win[k++] = {first_split, first_split + kWindow};
        for (std::size_t a = 1; a < k; ++a) {  // insertion sort of at most 4 windows
          for (std::size_t b = a; b > 0 && win[b] < win[b - 1]; --b) std::swap(win[b], win[b - 1]);
        }
        Step done = first_split - 1;
        for (std::size_t j = 0; j < k; ++j) {
          const Step a = std::max(win[j].first, done + 1);
          if (a <= win[j].second) {
            scan(a, win[j].second);
            done = win[j].second;
          }
        }
      }
    }
    own[L] = best;
    args[L] = arg;
  }
}

}  // namespace

MixedTable::MixedTable(Step n, std::int64_t budget, MixedUnits units, const RowObserver& observer)
    : n_(n), units_(units), choices_(0, 0), held_choices_(0, 0) {
  require(n >= 1, "mixed: the step count must be >= 1");
  require(units.restart >= 1 && units.pullback >= 1,
          "mixed: checkpoint sizes must be at least one unit, got restart " +
              std::to_string(units.restart) + " and pullback " + std::to_string(units.pullback));
  const std::int64_t smallest = std::min(units.restart, units.pullback);
  require(n == 1 || budget >= smallest,
          "mixed: " + std::to_string(n) + " steps need at least " + std::to_string(smallest) +
              (units.restart == 1 && units.pullback == 1 ? " slot" : " units") + ", got " +
              std::to_string(budget));
  s_ = std::min<std::int64_t>(budget, useful_units(n, units));
  require((s_ + 1) * (n_ + 1) * (units.holds_next ? 2 : 1) <= kMaxCells,
          "mixed: the table for " + std::to_string(n) + " steps and " + std::to_string(budget) +
              " units is too large; use revolve or twolevel");
  build(observer);
  require(std::isfinite(cost_), "mixed: " + std::to_string(budget) +
                                    " units hold no schedule for " + std::to_string(n) +
                                    " steps with restart checkpoints of " +
                                    std::to_string(units.restart) + " units and pullback data of " +
                                    std::to_string(units.pullback) + "; raise the budget");
}

std::shared_ptr<const MixedTable> shared_mixed_table(Step n, std::int64_t budget,
                                                     MixedUnits units) {
  // Tables up to this many choice entries (4 MiB) stay built after their last holder goes.
  constexpr std::int64_t kKeepCells = std::int64_t{1} << 20;
  using Key = std::tuple<Step, std::int64_t, MixedUnits>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<const MixedTable>> built;
  static std::shared_ptr<const MixedTable> last;
  const Key key{n, std::max<std::int64_t>(std::min(budget, useful_units(n, units)), 0), units};
  const std::lock_guard<std::mutex> lock(mutex);
  auto table = built[key].lock();
  if (!table) {
    table = std::make_shared<const MixedTable>(n, budget, units);
    built[key] = table;
  }
  for (auto it = built.begin(); it != built.end();) {
    it = it->second.expired() ? built.erase(it) : std::next(it);
  }
  last = (std::get<1>(key) + 1) * (n + 1) <= kKeepCells ? table : nullptr;
  return table;
}

void MixedTable::build(const RowObserver& observer) {
  const auto N = static_cast<std::size_t>(n_);
  const std::int64_t r = units_.restart, p = units_.pullback;
  const bool held = units_.holds_next;
  // Splits after one step can beat recording only when a restart is smaller than pullback data
  // (for slots the search starts at 2, as Maddison's does), or when nothing is stored (H).
  const Step m_first = r < p ? 1 : 2;
  const std::int64_t depth = std::max(r, p) + 1;
  choices_ = ChoiceTable(s_ + 1, n_ + 1);  // row 0 (no unit): every length a single step
  if (held) held_choices_ = ChoiceTable(s_ + 1, n_ + 1);
  // M and H of the last `depth` budgets, their lower bounds, and the choices of the row below.
  Ring m(depth, N + 1, kInf), h(depth, N + 1, kInf), low(depth, N + 1, kInf);
  std::vector<std::uint32_t> row(N + 1, 1), row_below(N + 1, 1), held_row(N + 1, 1);
  std::vector<std::uint32_t> relaxed_arg;  // choices of the relaxation (rows not exhaustive)
  double spent = 0.0;
  exact_ = true;
  for (std::int64_t c = 0; c <= s_; ++c) {
    const double work = 0.5 * static_cast<double>(n_) * static_cast<double>(n_) * (held ? 2 : 1);
    // No unit: M has single steps only; H splits after every step but the last, which a window
    // around the previous length's split finds (exhaustive for short runs).
    const bool exhaustive = c == 0 ? !held || n_ <= 4096 : spent + work <= kExactBudget;
    if (exhaustive && c > 0) spent += work;
    exact_ = exact_ && exhaustive;
    static const std::vector<double> kNone;
    const std::vector<double>& rec = c >= p ? (held ? h[c - p] : m[c - p]) : kNone;
    const std::vector<double>& split = c >= r ? m[c - r] : kNone;
    if (!exhaustive && !held) {
      relax(low[c], relaxed_arg, c >= p ? low[c - p] : kNone, c >= r ? low[c - r] : kNone, c);
    }
    std::vector<double>& cur = m[c];
    cur.assign(N + 1, kInf);
    cur[1] = 1.0;
    const RowSearch search{rec, c, p, exhaustive, row_below, relaxed_arg};
    fill_row(search, cur, split, row, m_first);
    choices_.set_row(c, row);
    if (held) {
      std::vector<double>& hc = h[c];
      hc.assign(N + 1, kInf);
      hc[1] = 1.0;
      fill_row(search, hc, cur, held_row, 1);
      held_choices_.set_row(c, held_row);
    }
    if (observer) observer(c, cur);
    row_below.swap(row);
    if (exhaustive) low[c] = cur;
  }
  costs_ = m[s_];
  cost_ = costs_[N];
  if (exact_) {
    lower_ = cost_;
  } else if (held) {
    lower_ = static_cast<double>(n_);  // every step once
  } else {
    const double lb = low[s_][N];
    lower_ = std::min(cost_, lb - 1e-9 * std::abs(lb));
  }
}

// Relaxation of row c: the same recursion with the row's own and the split row's values of
// shorter lengths replaced by their lower convex envelopes (a lower bound by induction; the
// split function is convex, so a local descent finds its minimum). `record` and `split` are the
// lower-bound rows c - p and c - r (empty when the budget holds no such checkpoint).
void MixedTable::relax(std::vector<double>& value, std::vector<std::uint32_t>& arg,
                       const std::vector<double>& record, const std::vector<double>& split,
                       std::int64_t c) const {
  const auto N = static_cast<std::size_t>(n_);
  const Step first_split = units_.restart < units_.pullback ? 1 : 2;
  value.assign(N + 1, kInf);
  arg.assign(N + 1, 0);
  value[1] = 1.0;
  ConvexEnvelope own, low;
  own.add(1.0, 1.0);
  if (!split.empty()) low.add(1.0, split[1]);
  Step pm = 2;
  for (std::size_t L = 2; L <= N; ++L) {
    const auto Ls = static_cast<Step>(L);
    double best = record.empty() ? kInf : 1.0 + record[L - 1];
    if ((Ls - 1) * units_.pullback <= c) best = std::min(best, static_cast<double>(L));
    if (!split.empty() && Ls >= first_split + 1) {
      const auto f = [&](Step i) {
        return static_cast<double>(i) + own.at(static_cast<double>(i)) +
               low.at(static_cast<double>(Ls - i));
      };
      const double low_end = low.domain_end();
      const Step lo = std::max<Step>(first_split, low_end >= static_cast<double>(Ls)
                                                      ? first_split
                                                      : Ls - static_cast<Step>(low_end));
      const Step hi = Ls - 1;
      if (lo <= hi) {
        const auto [i, fi] = descend(f, std::clamp(pm, lo, hi), lo, hi);
        pm = i;
        if (fi < best) {
          best = fi;
          arg[L] = static_cast<std::uint32_t>(i);  // i < L <= n, and n < 2^32 (ChoiceTable)
        }
      }
    }
    value[L] = best;
    own.add(static_cast<double>(L), best);
    if (!split.empty()) low.add(static_cast<double>(L), split[L]);
  }
}

std::optional<Action> MixedStream::next() {
  while (pending_.empty() && !frames_.empty()) {
    const Frame f = frames_.back();
    frames_.pop_back();
    expand(f);
  }
  if (pending_.empty()) return std::nullopt;
  Action a = pending_.front();
  pending_.pop_front();
  return a;
}

void MixedStream::reverse(Step from, Step to) {
  if (!forward_done_) {
    pending_.push_back(EndForward{});
    forward_done_ = true;
  }
  pending_.push_back(Reverse{from, to, true});
}

void MixedStream::expand(const Frame& f) {
  const Step length = f.h - f.l;
  const MixedUnits& u = table_.units();
  switch (f.kind) {
    case Kind::ReverseStep:
      reverse(f.h, f.l);
      return;
    case Kind::RestoreLeft: {
      if (f.start == Start::Held) {  // x_l stays in step l-1's pullback data
        pending_.push_back(Copy{f.l, Level::Ram, Level::Work});
        frames_.push_back({Kind::Segment, f.l, f.h, f.units, Start::Held});
        return;
      }
      const bool keep = length >= 2 && table_.choice(length, f.units) >= 1;
      pending_.push_back(keep ? Action{Copy{f.l, Level::Ram, Level::Work}}
                              : Action{Move{f.l, Level::Ram, Level::Work}});
      frames_.push_back({Kind::Segment, f.l, f.h, f.units, keep ? Start::Stored : Start::Plain});
      return;
    }
    case Kind::FromDisk:
      pending_.push_back(Move{f.l, Level::Disk, Level::Work});
      frames_.push_back({Kind::Segment, f.l, f.h, f.units, Start::Plain});
      return;
    case Kind::Segment:
      break;
  }
  const Step c = length == 1 ? 0 : choice(length, f.units, f.start);
  if (c == 0) {
    // Record the data of the leading steps the table says in a row (the last step of a segment
    // with its data in work), in one Forward.
    if (f.start == Start::Stored) pending_.push_back(Move{f.l, Level::Ram, Level::None});
    if (length == 1) {
      pending_.push_back(Forward{f.l, f.h, false, true, Level::Work});
      reverse(f.h, f.l);
      return;
    }
    Step k = 0;
    std::int64_t units = f.units;
    Start start = f.start == Start::Held ? Start::Held : Start::Plain;
    while (f.h - (f.l + k) >= 2 && choice(f.h - (f.l + k), units, start) == 0) {
      ++k;
      units -= u.pullback;
      start = u.holds_next ? Start::Held : Start::Plain;
    }
    pending_.push_back(Forward{f.l, f.l + k, false, true, Level::Ram});
    frames_.push_back({Kind::ReverseStep, f.l, f.l + k, 0, Start::Plain});
    frames_.push_back({Kind::Segment, f.l + k, f.h, units, start});
    return;
  }
  if (f.start == Start::Held) {  // split: nothing to store, the right part gets every unit
    pending_.push_back(Forward{f.l, f.l + c, false, false, Level::None});
    frames_.push_back({Kind::RestoreLeft, f.l, f.l + c, f.units, Start::Held});
    frames_.push_back({Kind::Segment, f.l + c, f.h, f.units, Start::Plain});
    return;
  }
  const bool stored = f.start == Start::Stored;
  pending_.push_back(Forward{f.l, f.l + c, !stored, false, stored ? Level::None : Level::Ram});
  frames_.push_back({Kind::RestoreLeft, f.l, f.l + c, f.units, Start::Stored});
  frames_.push_back({Kind::Segment, f.l + c, f.h, f.units - u.restart, Start::Plain});
}

}  // namespace rwd::schedule::detail
