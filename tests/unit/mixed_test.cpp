#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

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

// The least cost of periodic disk checkpoints with mixed in RAM, from the independent
// recursion: every period that fits the disk slots is tried.
double least_periodic_mixed(const MixedDp& dp, Step n, int S, std::int64_t D, double wd,
                            double rd) {
  double best = std::numeric_limits<double>::infinity();
  for (Step P = 1; P <= n; ++P) {
    const Step q = (n + P - 1) / P;
    if (D != kUnlimited && q - 1 > D) continue;
    const Step last = n - (q - 1) * P;
    const auto m = [&](Step L) { return static_cast<double>(dp(static_cast<int>(L), S)); };
    if (S == 0 && P > 1) continue;
    best = std::min(best,
                    static_cast<double>(q - 1) * (static_cast<double>(P) + wd + rd + m(P)) +
                        (S == 0 && last > 1 ? std::numeric_limits<double>::infinity() : m(last)));
  }
  return best;
}

TEST(DiskMixed, ReplayIsTheBestPeriodOfTheIndependentRecursionAndBeatsItsParts) {
  const MixedDp dp(130, 9);
  const std::vector<std::pair<double, double>> costs = {{0.5, 0.5}, {2, 2}, {1, 3}, {0, 0}};
  for (const auto& [wd, rd] : costs) {
    for (int S : {0, 1, 2, 4, 9}) {
      for (std::int64_t D : {std::int64_t{0}, std::int64_t{2}, std::int64_t{6}, kUnlimited}) {
        for (Step n = 1; n <= 130; n += (n < 30 ? 1 : 9)) {
          const auto p = two_level_budget(n, S, D, wd, rd);
          const double expected = least_periodic_mixed(dp, n, S, D, wd, rd);
          std::unique_ptr<Schedule> s;
          try {
            s = make_schedule("disk-mixed", p);
          } catch (const Error& e) {
            ASSERT_EQ(e.code(), ErrorCode::InvalidArgument);
            ASSERT_EQ(expected, std::numeric_limits<double>::infinity()) << describe(p);
            continue;  // no period fits
          }
          PassedCheckpointsFreed freed(describe(p));
          const SimulationResult r = simulate(*s, p, [&freed](const Action& a) { freed(a); });
          ASSERT_NEAR(r.cost, expected, 1e-9) << describe(p);
          ASSERT_NEAR(r.cost, disk_mixed_cost(p, disk_mixed_period(p)), 1e-9) << describe(p);
          ASSERT_LE(r.ram.peak, S) << describe(p);
          if (D != kUnlimited) {
            ASSERT_LE(r.disk.peak, D) << describe(p);
          }
          ASSERT_EQ(r.adjoint_steps, n);
          // One period is the whole run: never dearer than mixed alone, nor than disk-revolve
          // (whose intervals are Revolve, a special case of mixed).
          if (S >= 1) {
            ASSERT_LE(r.cost, static_cast<double>(dp(static_cast<int>(n), S)) + 1e-9);
          }
          try {
            const double revolve_inside = disk_revolve_cost(p, disk_revolve_period(p));
            ASSERT_LE(r.cost, revolve_inside + 1e-9) << describe(p);
          } catch (const Error&) {
          }
        }
      }
    }
  }
}

// Hand-checked: 10 RAM slots hold every step's stages of a 10-step interval, so each of the 29
// intervals before the last costs its first-sweep step, a write, a read and one recording run.
TEST(DiskMixed, ReferencePointAndPeriod) {
  auto p = two_level_budget(300, 10, 30, 1, 1);
  EXPECT_EQ(disk_mixed_period(p), 10);
  const SimulationResult r = simulate(*make_schedule("disk-mixed", p), p);
  EXPECT_EQ(r.fwd_total, 590);
  EXPECT_DOUBLE_EQ(r.cost, 29 * (10 + 1 + 1 + 10) + 10);
  EXPECT_EQ(r.disk.writes, 29);
  EXPECT_EQ(r.disk.reads, 29);
  EXPECT_EQ(make_schedule("auto", p)->name(), "disk-mixed");
  p.period = 20;  // honoured: 14 intervals on disk
  const SimulationResult r20 = simulate(*make_schedule("disk-mixed", p), p);
  EXPECT_EQ(r20.disk.writes, 14);
  p.period = 5;  // needs 59 disk slots
  EXPECT_THROW(make_schedule("disk-mixed", p), Error);
  EXPECT_THROW(make_schedule("disk-mixed", two_level_budget(10, 0, 3, 1, 1)), Error);
  EXPECT_NO_THROW(make_schedule("disk-mixed", two_level_budget(10, 0, 9, 1, 1)));
  EXPECT_THROW(make_schedule("disk-mixed", two_level_budget(0, 2, 3, 1, 1)), Error);
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
