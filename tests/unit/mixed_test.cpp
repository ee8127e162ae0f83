#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "rewind/error.hpp"
#include "rewind/schedule/binomial.hpp"
#include "rewind/schedule/mixed.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "schedule_test_util.hpp"
#include "stream_checks.hpp"

namespace rwd::schedule {
namespace {

using testing::PassedCheckpointsFreed;
using testing::ram_budget;

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

}  // namespace
}  // namespace rwd::schedule
