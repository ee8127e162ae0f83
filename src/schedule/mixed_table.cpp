// Maddison's mixed checkpointing, in the simulator's units: M(n, s) is the least number of
// forward steps to reverse n steps from a state in work that is not stored, with s free slots:
//   M(1, s) = 1
//   M(n, s) = min( 1 + M(n-1, s-1),                       record step 0's data in a slot
//                  min_{2<=i<n} i + M(n-i, s-1) + M(i, s) )  store x_0, advance i, split
// (the left part may keep x_0 stored, which is the same as storing it again: RAM copies are free).
#include "mixed_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "convex_envelope.hpp"
#include "rewind/error.hpp"

namespace rwd::schedule::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kExactBudget = 6e7;
constexpr Step kWindow = 8;
constexpr std::int64_t kMaxCells = 40'000'000;

}  // namespace

MixedTable::MixedTable(Step n, std::int64_t slots)
    : n_(n), s_(std::min<std::int64_t>(slots, n)), choices_(0, 0) {
  require(n >= 1, "mixed: the step count must be >= 1");
  require(n == 1 || slots >= 1, "mixed: " + std::to_string(n) + " steps need at least one slot");
  require((s_ + 1) * (n_ + 1) <= kMaxCells, "mixed: the table for " + std::to_string(n) +
                                                " steps and " + std::to_string(slots) +
                                                " slots is too large; use revolve or twolevel");
  build();
}

std::shared_ptr<const MixedTable> shared_mixed_table(Step n, std::int64_t slots) {
  // Tables up to this many choice entries (4 MiB) stay built after their last holder goes.
  constexpr std::int64_t kKeepCells = std::int64_t{1} << 20;
  static std::mutex mutex;
  static std::map<std::pair<Step, std::int64_t>, std::weak_ptr<const MixedTable>> built;
  static std::shared_ptr<const MixedTable> last;
  const std::pair<Step, std::int64_t> key{n, std::max<std::int64_t>(std::min(slots, n), 0)};
  const std::lock_guard<std::mutex> lock(mutex);
  auto table = built[key].lock();
  if (!table) {
    table = std::make_shared<const MixedTable>(n, slots);
    built[key] = table;
  }
  for (auto it = built.begin(); it != built.end();) {
    it = it->second.expired() ? built.erase(it) : std::next(it);
  }
  last = (key.second + 1) * (n + 1) <= kKeepCells ? table : nullptr;
  return table;
}

void MixedTable::build() {
  const auto N = static_cast<std::size_t>(n_);
  choices_ = ChoiceTable(s_ + 1, n_ + 1);  // row 0 (no slot): every length a single step
  // The choices of the row being built and of the one below, in full while building.
  std::vector<std::uint32_t> row(N + 1, 1), row_below(N + 1, 1);
  std::vector<double> below(N + 1, kInf), cur(N + 1, kInf);
  std::vector<double> lower_below(N + 1, kInf), lower_cur(N + 1, kInf);
  below[1] = 1.0;  // s = 0: only a single step
  lower_below[1] = 1.0;
  std::vector<std::uint32_t> relaxed_arg;  // choices of the relaxation (rows not exhaustive)
  double spent = 0.0;
  exact_ = true;
  for (std::int64_t s = 1; s <= s_; ++s) {
    const double work = 0.5 * static_cast<double>(n_) * static_cast<double>(n_);
    const bool exhaustive = spent + work <= kExactBudget;
    if (exhaustive) spent += work;
    exact_ = exact_ && exhaustive;
    if (!exhaustive) relax(lower_cur, relaxed_arg, lower_below, s);
    cur.assign(N + 1, kInf);
    cur[1] = 1.0;
    for (std::size_t L = 2; L <= N; ++L) {
      const auto Ls = static_cast<Step>(L);
      double best = 1.0 + below[L - 1];
      std::uint32_t arg = 0;
      if (static_cast<std::int64_t>(L) <= s + 1) {
        best = static_cast<double>(L);  // record every step's data
      }
      const auto scan = [&](Step a, Step b) {
        a = std::max<Step>(a, 2);
        b = std::min<Step>(b, Ls - 1);
        for (Step i = a; i <= b; ++i) {
          const auto ii = static_cast<std::size_t>(i);
          const double c = static_cast<double>(i) + cur[ii] + below[L - ii];
          if (c < best) {
            best = c;
            arg = static_cast<std::uint32_t>(i);
          }
        }
      };
      if (static_cast<std::int64_t>(L) > s + 1) {
        if (exhaustive) {
          scan(2, Ls - 1);
        } else {
          std::array<std::pair<Step, Step>, 4> win{};
          std::size_t k = 0;
          const auto add = [&](Step c) {
            if (c >= 2) win[k++] = {c - kWindow, c + kWindow};
          };
          add(row[L - 1]);
          add(row_below[L]);
          add(relaxed_arg[L]);
          win[k++] = {2, 2 + kWindow};
          for (std::size_t a = 1; a < k; ++a) {  // insertion sort of at most 4 windows
            for (std::size_t b = a; b > 0 && win[b] < win[b - 1]; --b)
              std::swap(win[b], win[b - 1]);
          }
          Step done = 1;
          for (std::size_t j = 0; j < k; ++j) {
            const Step a = std::max(win[j].first, done + 1);
            if (a <= win[j].second) {
              scan(a, win[j].second);
              done = win[j].second;
            }
          }
        }
      }
      cur[L] = best;
      row[L] = arg;
    }
    choices_.set_row(s, row);
    row_below.swap(row);
    if (exhaustive) lower_cur = cur;
    below.swap(cur);
    lower_below.swap(lower_cur);
  }
  cost_ = below[N];
  lower_ = exact_ ? cost_ : std::min(cost_, lower_below[N] - 1e-9 * std::abs(lower_below[N]));
  costs_ = std::move(below);  // not a copy: at 10^5 steps the build's rows are its peak memory
}

// Relaxation of layer s: the same recursion with the layer's own and the layer below's values
// of shorter lengths replaced by their lower convex envelopes (a lower bound by induction; the
// split function is convex, so a local descent finds its minimum).
void MixedTable::relax(std::vector<double>& value, std::vector<std::uint32_t>& arg,
                       const std::vector<double>& below, std::int64_t s) const {
  const auto N = static_cast<std::size_t>(n_);
  value.assign(N + 1, kInf);
  arg.assign(N + 1, 0);
  value[1] = 1.0;
  ConvexEnvelope own, low;
  own.add(1.0, 1.0);
  low.add(1.0, below[1]);
  Step pm = 2;
  for (std::size_t L = 2; L <= N; ++L) {
    const auto Ls = static_cast<Step>(L);
    double best = 1.0 + below[L - 1];
    if (static_cast<std::int64_t>(L) <= s + 1) best = std::min(best, static_cast<double>(L));
    if (Ls >= 3) {
      const auto f = [&](Step i) {
        return static_cast<double>(i) + own.at(static_cast<double>(i)) +
               low.at(static_cast<double>(Ls - i));
      };
      const double low_end = low.domain_end();
      const Step lo = std::max<Step>(
          2, low_end >= static_cast<double>(Ls) ? 2 : Ls - static_cast<Step>(low_end));
      const Step hi = Ls - 1;
      if (lo <= hi) {
        const auto [i, fi] = descend(f, pm, lo, hi);
        pm = i;
        if (fi < best) {
          best = fi;
          arg[L] = static_cast<std::uint32_t>(i);  // i < L <= n, and n < 2^32 (ChoiceTable)
        }
      }
    }
    value[L] = best;
    own.add(static_cast<double>(L), best);
    low.add(static_cast<double>(L), below[L]);
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
  switch (f.kind) {
    case Kind::ReverseStep:
      reverse(f.h, f.l);
      return;
    case Kind::RestoreLeft: {
      const bool keep = length >= 2 && table_.choice(length, f.slots) >= 2;
      pending_.push_back(keep ? Action{Copy{f.l, Level::Ram, Level::Work}}
                              : Action{Move{f.l, Level::Ram, Level::Work}});
      frames_.push_back({Kind::Segment, f.l, f.h, f.slots, keep});
      return;
    }
    case Kind::FromDisk:
      pending_.push_back(Move{f.l, Level::Disk, Level::Work});
      frames_.push_back({Kind::Segment, f.l, f.h, f.slots, false});
      return;
    case Kind::Segment:
      break;
  }
  const Step c = length == 1 ? 1 : table_.choice(length, f.slots);
  if (c == 1) {
    if (f.stored) pending_.push_back(Move{f.l, Level::Ram, Level::None});
    pending_.push_back(Forward{f.l, f.h, false, true, Level::Work});
    reverse(f.h, f.l);
    return;
  }
  if (c == 0) {
    // Record the data of as many leading steps as the table says in a row, in one Forward.
    if (f.stored) pending_.push_back(Move{f.l, Level::Ram, Level::None});
    Step k = 0;
    std::int64_t slots = f.slots;
    while (f.h - (f.l + k) >= 2 && table_.choice(f.h - (f.l + k), slots) == 0) {
      ++k;
      --slots;
    }
    pending_.push_back(Forward{f.l, f.l + k, false, true, Level::Ram});
    frames_.push_back({Kind::ReverseStep, f.l, f.l + k, 0, false});
    frames_.push_back({Kind::Segment, f.l + k, f.h, slots, false});
    return;
  }
  pending_.push_back(Forward{f.l, f.l + c, !f.stored, false, f.stored ? Level::None : Level::Ram});
  frames_.push_back({Kind::RestoreLeft, f.l, f.l + c, f.slots, true});
  frames_.push_back({Kind::Segment, f.l + c, f.h, f.slots - 1, false});
}

}  // namespace rwd::schedule::detail
