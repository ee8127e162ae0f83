// `mixed` with checkpoints of different sizes (ScheduleParams::ram_units): a restart checkpoint
// takes r units, one step's pullback data p, and with pullback_holds_next step i's pullback data
// also gives x_{i+1}. Checked against an exhaustive search over machine states and against an
// independent recursion in another formulation, always by replaying the schedule.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mixed_table.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/mixed.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "schedule_test_util.hpp"

namespace rwd::schedule {
namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max() / 4;

ScheduleParams sized(Step n, std::int64_t units, std::int64_t r, std::int64_t p, bool held) {
  ScheduleParams q = testing::ram_budget(n, 1);
  q.ram_units = units;
  q.restart_units = r;
  q.pullback_units = p;
  q.pullback_holds_next = held;
  return q;
}

SimulationResult replay(const ScheduleParams& q) {
  auto s = make_schedule("mixed", q);
  return simulate(*s, q);
}

// The least forward steps of any play of the machine, by a shortest-path search over its states
// (0-1 weights): the working state w (or none), the stored restart states and pullback data (bit
// sets), the adjoint position a, and the step whose pullback data is in work (or none). Moves: a
// forward step from w < a (cost 1), keeping its pullback data in work or storing it; storing w;
// dropping anything; restoring a stored state (with `held`, also x_{k+1} from step k's data);
// the adjoint of step a-1 once its data is stored or in work. Independent of the recursion.
std::int64_t exhaustive(int n, std::int64_t units, std::int64_t r, std::int64_t p, bool held) {
  struct State {
    int w, a, pw;
    unsigned restarts, pullbacks;
  };
  const auto key = [](const State& s) {
    return static_cast<std::uint64_t>(s.w + 1) | static_cast<std::uint64_t>(s.a) << 5 |
           static_cast<std::uint64_t>(s.pw + 1) << 10 |
           static_cast<std::uint64_t>(s.restarts) << 16 |
           static_cast<std::uint64_t>(s.pullbacks) << 32;
  };
  const auto used = [&](unsigned restarts, unsigned pullbacks) {
    return r * __builtin_popcount(restarts) + p * __builtin_popcount(pullbacks);
  };
  std::unordered_map<std::uint64_t, std::int64_t> dist;
  std::deque<std::pair<State, std::int64_t>> queue;
  const State start{0, n, -1, 0, 0};
  dist[key(start)] = 0;
  queue.push_back({start, 0});
  while (!queue.empty()) {
    const auto [s, d] = queue.front();
    queue.pop_front();
    if (dist[key(s)] < d) continue;
    if (s.a == 0) return d;
    const auto go = [&](const State& t, std::int64_t cost) {
      const auto k = key(t);
      const auto it = dist.find(k);
      if (it != dist.end() && it->second <= d + cost) return;
      dist[k] = d + cost;
      if (cost == 0) {
        queue.push_front({t, d});
      } else {
        queue.push_back({t, d + cost});
      }
    };
    const unsigned wbit = s.w >= 0 ? 1u << s.w : 0u;
    if (s.w >= 0 && s.w < s.a) {
      go({s.w + 1, s.a, -1, s.restarts, s.pullbacks}, 1);
      go({s.w + 1, s.a, s.w, s.restarts, s.pullbacks}, 1);
      if (!(s.pullbacks & wbit) && used(s.restarts, s.pullbacks | wbit) <= units)
        go({s.w + 1, s.a, -1, s.restarts, s.pullbacks | wbit}, 1);
    }
    if (s.w >= 0 && !(s.restarts & wbit) && used(s.restarts | wbit, s.pullbacks) <= units)
      go({s.w, s.a, s.pw, s.restarts | wbit, s.pullbacks}, 0);
    for (int k = 0; k <= n; ++k) {
      const unsigned b = 1u << k;
      if (s.restarts & b) {
        go({s.w, s.a, s.pw, s.restarts & ~b, s.pullbacks}, 0);
        go({k, s.a, -1, s.restarts, s.pullbacks}, 0);
      }
      if (s.pullbacks & b) {
        go({s.w, s.a, s.pw, s.restarts, s.pullbacks & ~b}, 0);
        if (held) go({k + 1, s.a, -1, s.restarts, s.pullbacks}, 0);
      }
    }
    const unsigned last = 1u << (s.a - 1);
    if (s.pullbacks & last) {
      go({s.w, s.a - 1, s.pw, s.restarts, s.pullbacks & ~last}, 0);
    } else if (s.pw == s.a - 1) {
      go({s.w, s.a - 1, -1, s.restarts, s.pullbacks}, 0);
    }
  }
  return kNever;
}

// The recursion in another formulation: A(L, c) from a start that is not stored, B(L, c) from a
// stored start whose units the caller paid (it may release them to record step 0), C(L, c)
// from a start held by the previous step's pullback data.
class SizedDp {
 public:
  SizedDp(int n, std::int64_t c, std::int64_t r, std::int64_t p, bool held)
      : c_(c), a_(table(n)), b_(table(n)), h_(table(n)) {
    for (std::int64_t u = 0; u <= c; ++u) a_[1][u] = b_[1][u] = h_[1][u] = 1;
    const auto after = [&](int L, std::int64_t u) {
      if (u < 0) return kNever;
      return held ? h_[L][u] : a_[L][u];
    };
    for (int L = 2; L <= n; ++L) {
      for (std::int64_t u = 0; u <= c; ++u) {
        std::int64_t best = 1 + after(L - 1, std::min(c, u + r) - p);
        for (int i = 1; i < L; ++i) best = std::min(best, i + a_[L - i][u] + b_[i][u]);
        b_[L][u] = std::min(best, kNever);
      }
      for (std::int64_t u = 0; u <= c; ++u) {
        std::int64_t best = u >= p ? 1 + after(L - 1, u - p) : kNever;
        if (u >= r) best = std::min(best, b_[L][u - r]);
        a_[L][u] = std::min(best, kNever);
        best = u >= p ? 1 + after(L - 1, u - p) : kNever;
        for (int i = 1; i < L; ++i) best = std::min(best, i + a_[L - i][u] + h_[i][u]);
        h_[L][u] = std::min(best, kNever);
      }
    }
  }
  std::int64_t operator()(int n, std::int64_t c) const { return a_[n][c]; }

 private:
  std::vector<std::vector<std::int64_t>> table(int n) const {
    return std::vector<std::vector<std::int64_t>>(static_cast<std::size_t>(n) + 1,
                                                  std::vector<std::int64_t>(c_ + 1, kNever));
  }
  std::int64_t c_;
  std::vector<std::vector<std::int64_t>> a_, b_, h_;
};

// `schedule` built from `a` and from `b` gives the same actions, one for one.
void expect_same_actions(const std::string& schedule, const ScheduleParams& a,
                         const ScheduleParams& b) {
  auto x = make_schedule(schedule, a);
  auto y = make_schedule(schedule, b);
  for (std::size_t i = 0;; ++i) {
    const auto action = x->next();
    ASSERT_EQ(action, y->next()) << schedule << ", action " << i << ": " << describe(b);
    if (!action) break;
  }
}

struct Sizes {
  std::int64_t r, p;
};
constexpr Sizes kSizes[] = {{1, 1}, {1, 2}, {1, 3}, {2, 1}, {2, 3}, {3, 2}};

TEST(MixedSized, ReplayEqualsTheExhaustiveSearch) {
  int checked = 0, infeasible = 0;
  for (const Sizes z : kSizes) {
    for (const bool held : {false, true}) {
      for (int n = 1; n <= 6; ++n) {
        for (std::int64_t units = std::min(z.r, z.p); units <= 7; ++units) {
          const std::int64_t best = exhaustive(n, units, z.r, z.p, held);
          const auto q = sized(n, units, z.r, z.p, held);
          if (best == kNever) {  // no play of the machine fits: refused by name
            EXPECT_THROW(make_schedule("mixed", q), Error) << describe(q);
            ++infeasible;
            continue;
          }
          const SimulationResult got = replay(q);
          ASSERT_EQ(got.fwd_total, best) << describe(q);
          ASSERT_LE(got.ram.peak_units, units) << describe(q);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 400);
  EXPECT_GT(infeasible, 0);
}

TEST(MixedSized, ReplayEqualsAnIndependentRecursionAndThePlan) {
  for (const Sizes z : kSizes) {
    for (const bool held : {false, true}) {
      const SizedDp dp(40, 24, z.r, z.p, held);
      for (int n = 2; n <= 40; n += 3) {
        for (std::int64_t units = std::min(z.r, z.p); units <= 24; units += 2) {
          const auto q = sized(n, units, z.r, z.p, held);
          if (dp(n, units) >= kNever) {
            EXPECT_THROW(plan_mixed(q), Error) << describe(q);
            continue;
          }
          const SimulationResult got = replay(q);
          ASSERT_EQ(got.fwd_total, dp(n, units)) << describe(q);
          const MixedPlan plan = plan_mixed(q);
          ASSERT_EQ(plan.cost, static_cast<double>(got.fwd_total)) << describe(q);
          ASSERT_TRUE(plan.exact);
        }
      }
    }
  }
}

// Units of 1 and 1 are slots: the same stream as a slot budget, action for action.
TEST(MixedSized, UnitSizesOfOneAreSlots) {
  for (const Step n : {Step{1}, Step{2}, Step{17}, Step{300}}) {
    for (const std::int64_t s : {1, 3, 10}) {
      const auto slots = testing::ram_budget(n, s);
      auto q = sized(n, s, 1, 1, false);
      q.ram = s;
      expect_same_actions("mixed", slots, q);
    }
  }
}

// A start held by the previous step's data is copied from it, never moved, and such a copy is
// refused without pullback_holds_next.
TEST(MixedSized, HeldStatesAreCopiedNeverMoved) {
  const auto q = sized(30, 7, 1, 2, true);
  bool copied_held = false;
  simulate(*make_schedule("mixed", q), q, [&](const Action& a) {
    if (const auto* c = std::get_if<Copy>(&a); c && c->to == Level::Work) copied_held = true;
  });
  EXPECT_TRUE(copied_held);
  auto p = q;
  p.pullback_holds_next = false;
  auto s = make_schedule("mixed", q);  // planned with held states, replayed without
  EXPECT_THROW(simulate(*s, p), Error);
  using testing::ListSchedule;
  auto r = sized(2, 4, 1, 2, true);
  ListSchedule moved(r, {Forward{0, 1, false, true, Level::Ram}, Move{1, Level::Ram, Level::Work},
                         Forward{1, 2, false, true, Level::Work}, EndForward{}});
  try {
    simulate(moved, r);
    FAIL() << "a move of a held state was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("can only be copied"), std::string::npos) << e.what();
  }
}

// Sizes pay: a restart smaller than a step's data is never worse than slots of the larger size,
// and strictly better somewhere; holding x_{i+1} in step i's data never hurts.
TEST(MixedSized, SmallerRestartsAndHeldStatesNeverCostMore) {
  int better = 0;
  for (Step n = 3; n <= 120; n += 9) {
    for (std::int64_t slots = 1; slots <= 8; ++slots) {
      for (const std::int64_t p : {2, 3, 4}) {
        const auto as_slots = replay(sized(n, slots, 1, 1, false)).fwd_total;
        const auto by_units = replay(sized(n, slots * p, 1, p, false)).fwd_total;
        const auto held = replay(sized(n, slots * p, 1, p, true)).fwd_total;
        ASSERT_LE(by_units, as_slots) << n << " " << slots << " " << p;
        ASSERT_LE(held, by_units) << n << " " << slots << " " << p;
        better += by_units < as_slots;
      }
    }
  }
  EXPECT_GT(better, 100);
}

TEST(MixedSized, BadSizesAreRefused) {
  EXPECT_THROW(make_schedule("mixed", sized(10, 5, 0, 2, false)), Error);
  EXPECT_THROW(make_schedule("mixed", sized(10, 1, 2, 3, false)), Error);  // holds nothing
  auto q = sized(10, 5, 1, 2, false);
  q.ram_units = -1;
  EXPECT_THROW(make_schedule("mixed", q), Error);
}

// disk-mixed with sizes: restart states on disk, the RAM level planned in units. The replayed
// cost is the independent two-level recursion's with the independent sized recursion as its RAM
// level, never above the best periodic placement; RAM units and disk slots stay within the budget.
TEST(DiskMixedSized, ReplayEqualsTheTwoLevelRecursionWithTheSizedRecursion) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  int checked = 0, refused = 0, cheaper_than_periodic = 0, periodic_refused = 0;
  for (const Sizes z : kSizes) {
    for (const bool held : {false, true}) {
      const SizedDp dp(40, 18, z.r, z.p, held);
      for (const auto& [wd, rd] : {std::pair{1.0, 1.0}, std::pair{2.0, 3.0}, std::pair{0.0, 0.0}}) {
        for (const std::int64_t disk : {std::int64_t{2}, std::int64_t{6}, kUnlimited}) {
          for (Step n = 2; n <= 40; n += 5) {
            for (std::int64_t units = 1; units <= 18; units += 3) {  // 0: no units given
              testing::TwoLevelOracle oracle(
                  [&dp, units](Step L) {
                    const std::int64_t v = dp(static_cast<int>(L), units);
                    return v >= kNever ? kInf : static_cast<double>(v);
                  },
                  wd, rd);
              const double expected = oracle.recursive(n, disk);
              const double periodic = oracle.periodic(n, disk);
              periodic_refused += periodic == kInf;
              auto q = sized(n, units, z.r, z.p, held);
              q.disk = disk;
              q.write_cost = wd;
              q.read_cost = rd;
              std::unique_ptr<Schedule> s;
              try {
                s = make_schedule("disk-mixed", q);
              } catch (const Error& e) {
                ASSERT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
                ASSERT_EQ(expected, kInf) << describe(q);
                ++refused;
                continue;
              }
              const SimulationResult r = simulate(*s, q);
              ASSERT_EQ(r.cost, expected) << describe(q);
              ASSERT_LE(r.cost, periodic) << describe(q);
              cheaper_than_periodic += r.cost < periodic;
              ASSERT_LE(r.ram.peak_units, units) << describe(q);
              if (disk != kUnlimited) {
                ASSERT_LE(r.disk.peak, disk) << describe(q);
              }
              ASSERT_EQ(r.adjoint_steps, n);
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1500);
  // Two disk slots reuse their places in the recursion: it reverses every run of the grid, where
  // periodic placements need a slot per interval.
  EXPECT_EQ(refused, 0);
  EXPECT_GT(periodic_refused, 50);
  EXPECT_GT(cheaper_than_periodic, 100);
}

// Units of 1 and 1 are disk-mixed's slots, action for action; and a restart smaller than a step's
// data never makes the two-level plan dearer than slots of the larger size, and cheaper somewhere.
TEST(DiskMixedSized, UnitsOfOneAreSlotsAndSmallerRestartsPay) {
  for (const Step n : {Step{7}, Step{120}}) {
    for (const std::int64_t slots : {1, 4}) {
      auto plain = testing::two_level_budget(n, slots, 5, 2, 2);
      auto q = sized(n, slots, 1, 1, false);
      q.ram = slots;
      q.disk = 5;
      q.write_cost = q.read_cost = 2;
      expect_same_actions("disk-mixed", plain, q);
    }
  }
  int better = 0;
  for (Step n = 10; n <= 300; n += 29) {
    for (const std::int64_t slots : {1, 3, 6}) {
      const auto plain = testing::two_level_budget(n, slots, 8, 1, 1);
      const double as_slots = simulate(*make_schedule("disk-mixed", plain), plain).cost;
      auto q = sized(n, 3 * slots, 1, 3, false);
      q.disk = 8;
      q.write_cost = q.read_cost = 1;
      const double by_units = simulate(*make_schedule("disk-mixed", q), q).cost;
      ASSERT_LE(by_units, as_slots) << describe(q);
      better += by_units < as_slots;
    }
  }
  EXPECT_GT(better, 10);
}

// The windowed search for long runs stays within its proven bound (without held states).
TEST(MixedSized, WindowedTableStaysCloseToItsLowerBound) {
  const detail::MixedTable t(20'000, 60, {1, 3, false});
  EXPECT_FALSE(t.exact());
  EXPECT_LE(t.lower_bound(), t.cost());
  EXPECT_LE(t.cost(), t.lower_bound() * 1.01);
  const auto q = sized(20'000, 60, 1, 3, false);
  EXPECT_EQ(static_cast<double>(replay(q).fwd_total), t.cost());
}

}  // namespace
}  // namespace rwd::schedule
