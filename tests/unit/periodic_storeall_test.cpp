#include <gtest/gtest.h>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "schedule_test_util.hpp"

namespace rwd::schedule {
namespace {

using testing::ram_budget;

TEST(StoreAll, RamWhenItFitsWithoutRecomputation) {
  for (Step n : {1, 2, 17, 500}) {
    const auto p = ram_budget(n, n);
    auto s = make_schedule("storeall", p);
    const auto r = simulate(*s, p);
    EXPECT_EQ(r.fwd_total, n);
    EXPECT_EQ(r.ram.peak, n);
    EXPECT_EQ(r.disk.writes, 0);
  }
}

TEST(StoreAll, DiskWhenRamIsTooSmall) {
  ScheduleParams p = ram_budget(40, 3);
  p.disk = kUnlimited;
  p.write_cost = 2;
  p.read_cost = 1;
  auto s = make_schedule("storeall", p);
  const auto r = simulate(*s, p);
  EXPECT_EQ(r.fwd_total, 40);
  EXPECT_EQ(r.disk.writes, 40);
  EXPECT_EQ(r.disk.reads, 40);
  EXPECT_EQ(r.ram.peak, 0);
  EXPECT_DOUBLE_EQ(r.cost, 40 + 2 * 40 + 40);
}

TEST(StoreAll, ErrorWhenNothingFits) {
  ScheduleParams p = ram_budget(40, 3);
  p.disk = 10;
  try {
    make_schedule("storeall", p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("storeall needs one slot per step"), std::string::npos);
  }
}

TEST(Periodic, ValidAndAsCountedForEveryBudget) {
  for (Step n = 1; n <= 120; ++n) {
    for (std::int64_t ram = 1; ram <= n; ++ram) {
      const auto p = ram_budget(n, ram);
      std::unique_ptr<Schedule> s;
      try {
        s = make_schedule("periodic", p);
      } catch (const Error& e) {
        // Only budgets below 2*sqrt(n)-ish are refused; the message says what is needed.
        ASSERT_NE(std::string(e.what()).find("RAM slots with any period"), std::string::npos);
        ASSERT_LT(ram * ram, 4 * n + 4 * ram) << "n=" << n << " ram=" << ram;
        continue;
      }
      const auto r = simulate(*s, p);
      ASSERT_LE(r.ram.peak, ram);
      ASSERT_LE(r.fwd_total, 2 * n - 1);
      ASSERT_GE(r.fwd_total, n);
      ASSERT_EQ(r.adjoint_steps, n);
    }
  }
}

TEST(Periodic, ExplicitPeriodCountsEveryStepOutsideTheLastIntervalTwice) {
  ScheduleParams p = ram_budget(100, 30);
  p.period = 10;
  auto s = make_schedule("periodic", p);
  const auto r = simulate(*s, p);
  EXPECT_EQ(r.fwd_total, 100 + 90);
  EXPECT_EQ(r.ram.peak, 9 + 10);  // 9 checkpoints + the recorded last interval
  p.period = 5;                   // 19 checkpoints + 5 > 20 slots
  p.ram = 20;
  EXPECT_THROW(make_schedule("periodic", p), Error);
  p.period = 101;
  EXPECT_THROW(make_schedule("periodic", p), Error);
}

}  // namespace
}  // namespace rwd::schedule
