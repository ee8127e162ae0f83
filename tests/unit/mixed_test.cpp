#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "disk_tree.hpp"
#include "mixed_table.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/binomial.hpp"
#include "rewind/schedule/mixed.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "rewind/schedule/twolevel.hpp"
#include "schedule_test_util.hpp"
#include "stream_checks.hpp"

namespace rwd::schedule {
namespace {

using testing::PassedCheckpointsFreed;
using testing::ram_budget;
using testing::two_level_budget;

// Maddison's recursion, written independently: T[s][n] = least forward steps to reverse n steps
// from an unstored state with s slots that hold a restart state or one step's pullback data.
class MixedDp {
 public:
  MixedDp(int max_n, int max_s)
      : t_(static_cast<std::size_t>(max_s) + 1,
           std::vector<std::int64_t>(static_cast<std::size_t>(max_n) + 1, kNever)) {
    for (int s = 0; s <= max_s; ++s) at(s, 1) = 1;
    for (int s = 1; s <= max_s; ++s) {
      for (int n = 2; n <= max_n; ++n) {
        std::int64_t best = add(1, at(s - 1, n - 1));  // keep step 0's pullback data
        for (int i = 1; i < n; ++i) {                  // keep x_0, advance i, split
          best = std::min(best, add(i, add(at(s - 1, n - i), at(s, i))));
        }
        at(s, n) = best;
      }
    }
  }
  std::int64_t operator()(int n, int s) const {
    return t_[static_cast<std::size_t>(s)][static_cast<std::size_t>(n)];
  }

 private:
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max() / 4;
  static std::int64_t add(std::int64_t a, std::int64_t b) { return std::min(kNever, a + b); }
  std::int64_t& at(int s, int n) {
    return t_[static_cast<std::size_t>(s)][static_cast<std::size_t>(n)];
  }
  std::vector<std::vector<std::int64_t>> t_;
};

SimulationResult replay(Step n, std::int64_t s, bool check_freed = false) {
  const auto p = ram_budget(n, s);
  auto schedule = make_schedule("mixed", p);
  if (!check_freed) return simulate(*schedule, p);
  PassedCheckpointsFreed freed(describe(p));
  return simulate(*schedule, p, [&freed](const Action& a) { freed(a); });
}

TEST(Mixed, ReferencePoints) {
  EXPECT_EQ(replay(1000, 5).fwd_total, 6828);
  EXPECT_EQ(replay(1000, 10).fwd_total, 3921);
  EXPECT_EQ(revolve_fwd_total(1000, 5), 7284);
  EXPECT_EQ(revolve_fwd_total(1000, 10), 4636);
  EXPECT_DOUBLE_EQ(plan_mixed(1000, 5).cost, 6828);
  EXPECT_TRUE(plan_mixed(1000, 10).exact);
}

TEST(Mixed, EqualsTheDynamicProgrammeAndNeverLosesToRevolve) {
  const MixedDp dp(200, 10);
  for (int s = 1; s <= 10; ++s) {
    for (int n = 1; n <= 200; ++n) {
      const SimulationResult r = replay(n, s, n % 13 == 0);
      ASSERT_EQ(r.fwd_total, dp(n, s)) << "n=" << n << " s=" << s;
      ASSERT_LE(r.fwd_total, revolve_fwd_total(n, std::min(s, n))) << "n=" << n << " s=" << s;
      ASSERT_LE(r.ram.peak, s);
      ASSERT_EQ(r.disk.writes, 0);
    }
  }
}

// Large runs use the windowed table with a proven lower bound.
TEST(Mixed, WindowedTableStaysCloseToItsLowerBound) {
  const MixedDp dp(2500, 40);
  for (const auto& [n, s] : std::vector<std::pair<int, int>>{{2500, 40}, {2500, 12}, {1800, 30}}) {
    const MixedPlan plan = plan_mixed(n, s);
    const SimulationResult r = replay(n, s);
    EXPECT_DOUBLE_EQ(static_cast<double>(r.fwd_total), plan.cost);
    EXPECT_GE(plan.cost, static_cast<double>(dp(n, s)));
    EXPECT_LE(plan.lower_bound, static_cast<double>(dp(n, s)));
    EXPECT_LT(plan.cost - plan.lower_bound, 0.01 * plan.cost) << n << " " << s;
  }
  const MixedPlan big = plan_mixed(100000, 10);
  EXPECT_LT(big.cost - big.lower_bound, 0.01 * big.cost);
}

// Stages instead of states: the stream stores pullback data in RAM where that wins.
TEST(Mixed, StoresAdjointDataInRam) {
  const auto p = ram_budget(20, 4);
  auto s = make_schedule("mixed", p);
  int data_forwards = 0;
  simulate(*s, p, [&](const Action& a) {
    if (const auto* f = std::get_if<Forward>(&a);
        f && f->write_pullback && f->level == Level::Ram) {
      ++data_forwards;
    }
  });
  EXPECT_GT(data_forwards, 0);
  EXPECT_THROW(make_schedule("mixed", ram_budget(5, 0)), Error);
  EXPECT_NO_THROW(make_schedule("mixed", ram_budget(1, 0)));
}

// disk-mixed ---------------------------------------------------------------------------------

// The replayed cost is the independent two-level recursion's with Maddison's recursion as its RAM
// level, never above the best periodic placement nor mixed alone, disk-revolve or twolevel (whose
// RAM levels are Revolve, a special case of mixed); a given period is honoured at its formula.
TEST(DiskMixed, ReplayIsTheIndependentRecursionAndBeatsItsParts) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const MixedDp dp(130, 9);
  const std::vector<std::pair<double, double>> costs = {{0.5, 0.5}, {2, 2}, {1, 3}, {0, 0}};
  int cheaper_than_periodic = 0, checked = 0;
  for (const auto& [wd, rd] : costs) {
    for (int S : {0, 1, 2, 4, 9}) {
      testing::TwoLevelOracle oracle(
          [&dp, S](Step L) {
            return S == 0 && L > 1 ? kInf : static_cast<double>(dp(static_cast<int>(L), S));
          },
          wd, rd);
      for (std::int64_t D : {std::int64_t{0}, std::int64_t{2}, std::int64_t{6}, kUnlimited}) {
        for (Step n = 1; n <= 130; n += (n < 30 ? 1 : 9)) {
          auto p = two_level_budget(n, S, D, wd, rd);
          const double expected = oracle.recursive(n, D);
          const double periodic = oracle.periodic(n, D);
          std::unique_ptr<Schedule> s;
          try {
            s = make_schedule("disk-mixed", p);
          } catch (const Error& e) {
            ASSERT_EQ(e.code(), ErrorCode::InvalidArgument);
            ASSERT_EQ(expected, kInf) << describe(p);
            continue;  // nothing fits
          }
          PassedCheckpointsFreed freed(describe(p));
          const SimulationResult r = simulate(*s, p, [&freed](const Action& a) { freed(a); });
          ASSERT_NEAR(r.cost, expected, 1e-9) << describe(p);
          ASSERT_NEAR(r.cost, disk_mixed_planned_cost(p), 1e-9) << describe(p);
          ASSERT_LE(r.cost, periodic + 1e-9) << describe(p);
          cheaper_than_periodic += r.cost < periodic - 1e-9;
          ++checked;
          ASSERT_LE(r.ram.peak, S) << describe(p);
          if (D != kUnlimited) {
            ASSERT_LE(r.disk.peak, D) << describe(p);
          }
          ASSERT_EQ(r.adjoint_steps, n);
          if (S >= 1) {
            ASSERT_LE(r.cost, static_cast<double>(dp(static_cast<int>(n), S)) + 1e-9);
          }
          for (const char* other : {"disk-revolve", "twolevel"}) {
            try {
              ASSERT_LE(r.cost, simulate(*make_schedule(other, p), p).cost + 1e-9)
                  << other << " " << describe(p);
            } catch (const Error& e) {
              ASSERT_EQ(e.code(), ErrorCode::InvalidArgument);
            }
          }
          if (periodic < kInf && n % 3 == 0) {  // a given period runs periodically
            p.period = disk_mixed_period(p);
            const SimulationResult rp = simulate(*make_schedule("disk-mixed", p), p);
            ASSERT_NEAR(rp.cost, periodic, 1e-9) << describe(p);
            ASSERT_NEAR(rp.cost, disk_mixed_cost(p, p.period), 1e-9) << describe(p);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(cheaper_than_periodic, 200);
}

// Hand-checked, periodic: 10 RAM slots hold every step's stages of a 10-step interval, so each of
// the 29 intervals before the last costs its first-sweep step, a write, a read and one recording
// run. The recursion does better by writing fewer disk checkpoints (22) and taking a few more
// steps (596): it pays for every step and every transfer, and so does the simulator's cost.
TEST(DiskMixed, ReferencePointAndPeriod) {
  auto p = two_level_budget(300, 10, 30, 1, 1);
  EXPECT_EQ(disk_mixed_period(p), 10);
  const SimulationResult tree = simulate(*make_schedule("disk-mixed", p), p);
  EXPECT_DOUBLE_EQ(tree.cost, 640);
  EXPECT_EQ(tree.fwd_total, 596);
  EXPECT_EQ(tree.disk.writes, 22);
  EXPECT_EQ(make_schedule("auto", p)->name(), "disk-mixed");
  p.period = 10;
  const SimulationResult r = simulate(*make_schedule("disk-mixed", p), p);
  EXPECT_EQ(r.fwd_total, 590);
  EXPECT_DOUBLE_EQ(r.cost, 29 * (10 + 1 + 1 + 10) + 10);
  EXPECT_EQ(r.disk.writes, 29);
  EXPECT_EQ(r.disk.reads, 29);
  p.period = 20;  // honoured: 14 intervals on disk
  const SimulationResult r20 = simulate(*make_schedule("disk-mixed", p), p);
  EXPECT_EQ(r20.disk.writes, 14);
  p.period = 5;  // needs 59 disk slots
  EXPECT_THROW(make_schedule("disk-mixed", p), Error);
  // Without RAM the recursion is Revolve on disk; periodically it needs a slot per step.
  EXPECT_NO_THROW(make_schedule("disk-mixed", two_level_budget(10, 0, 3, 1, 1)));
  auto periodic_no_ram = two_level_budget(10, 0, 3, 1, 1);
  periodic_no_ram.period = 1;
  EXPECT_THROW(make_schedule("disk-mixed", periodic_no_ram), Error);
  EXPECT_THROW(make_schedule("disk-mixed", two_level_budget(10, 0, 0, 1, 1)), Error);
  EXPECT_THROW(make_schedule("disk-mixed", two_level_budget(0, 2, 3, 1, 1)), Error);
}

// A run too long for the recursion's whole table plans the disk columns that fit its work limit
// (fewer disk slots) and keeps the periodic placement where that is cheaper: never dearer than
// periodic, within the disk slots, its replayed cost the one it planned.
TEST(DiskMixed, LongRunsPlanWithinTheWorkLimit) {
  for (const std::int64_t D : {std::int64_t{40}, std::int64_t{400}}) {
    const auto p = two_level_budget(6000, 8, D, 1, 1);
    const SimulationResult r = simulate(*make_schedule("disk-mixed", p), p);
    EXPECT_DOUBLE_EQ(r.cost, disk_mixed_planned_cost(p));
    EXPECT_LE(r.cost, disk_mixed_cost(p, disk_mixed_period(p)));
    EXPECT_LE(r.disk.peak, D);
    EXPECT_EQ(r.adjoint_steps, 6000);
  }
  // The table's truncation itself: two columns of a run that needs more are a schedule with
  // fewer disk slots, never cheaper than the whole table, and not claimed exact.
  const MixedDp dp(200, 3);
  std::vector<double> m(201);
  for (int L = 1; L <= 200; ++L) m[static_cast<std::size_t>(L)] = static_cast<double>(dp(L, 3));
  const detail::DiskTree whole(m, 30, 1, 1, 1e9);
  const detail::DiskTree cut(m, 30, 1, 1, 2.5 * 0.5 * 200 * 200);
  EXPECT_TRUE(whole.exact());
  EXPECT_FALSE(cut.exact());
  EXPECT_TRUE(cut.built());
  EXPECT_LT(whole.cost(), cut.cost());
  EXPECT_EQ(cut.root_free_disk(), 1);
  EXPECT_FALSE(detail::DiskTree(m, 30, 1, 1, 100).built());
  // Cut short where no periodic placement fits (no RAM: a disk slot a step): the table's
  // schedule, not an error (a review found it refused, with more disk slots than a run it took).
  EXPECT_NO_THROW(make_schedule("disk-mixed", two_level_budget(8000, 0, 1, 1, 1)));
  const auto cut_no_period = two_level_budget(8000, 0, 2, 1, 1);
  EXPECT_THROW(disk_mixed_period(cut_no_period), Error);
  double planned = 0;
  EXPECT_NO_THROW(planned = disk_mixed_planned_cost(cut_no_period));
  EXPECT_LT(planned, std::numeric_limits<double>::infinity());
}

// Pricing, creating and replaying a schedule ask for the same table; it is built once and
// shared, and a large one is not kept once nothing holds it.
TEST(MixedTable, SharedWhileHeldAndReleasedWhenLarge) {
  const auto a = detail::shared_mixed_table(300, 10);
  EXPECT_EQ(a, detail::shared_mixed_table(300, 10));
  EXPECT_EQ(detail::shared_mixed_table(7, 7), detail::shared_mixed_table(7, 20));  // s = min(s, n)
  const auto b = detail::shared_mixed_table(300, 9);
  EXPECT_NE(a, b);
  EXPECT_NE(a->cost(), b->cost());

  // The last small table asked for stays built for the next asker, and only that one.
  std::weak_ptr<const detail::MixedTable> older = detail::shared_mixed_table(301, 9);
  EXPECT_FALSE(older.expired());
  const std::weak_ptr<const detail::MixedTable> held = a;
  EXPECT_EQ(detail::shared_mixed_table(300, 9), b);  // b is still held here
  EXPECT_TRUE(older.expired());                      // nothing holds it and it is not last
  EXPECT_FALSE(held.expired());

  // A table above 2^20 entries is gone with its last holder.
  std::weak_ptr<const detail::MixedTable> large = detail::shared_mixed_table(200'000, 6);
  EXPECT_TRUE(large.expired());

  // Threads asking at once get one table, equal to one built alone.
  std::shared_ptr<const detail::MixedTable> t1, t2;
  std::thread x([&] { t1 = detail::shared_mixed_table(500, 4); });
  std::thread y([&] { t2 = detail::shared_mixed_table(500, 4); });
  x.join();
  y.join();
  EXPECT_EQ(t1, t2);
  EXPECT_EQ(t1->cost(), detail::MixedTable(500, 4).cost());

  // Choices take two bytes up to 65 535 steps and four beyond: both streams replay to the cost.
  for (const Step n : {Step{65'535}, Step{70'000}}) {
    const auto p = ram_budget(n, 8);
    EXPECT_EQ(static_cast<double>(simulate(*make_schedule("mixed", p), p).fwd_total),
              detail::shared_mixed_table(n, 8)->cost())
        << n;
  }

  // Schedules made from one shared table stream the same actions and cost.
  const auto params = ram_budget(300, 10);
  const auto first = simulate(*make_schedule("mixed", params), params);
  EXPECT_EQ(first.fwd_total, simulate(*make_schedule("mixed", params), params).fwd_total);
  EXPECT_EQ(static_cast<double>(first.fwd_total), a->cost());
}

}  // namespace
}  // namespace rwd::schedule
