// Long schedule checks (ctest label `soak`, not in the default run): dense sweeps that replay
// hundreds of runs of up to 10^5 steps.
#include <gtest/gtest.h>

#include "rewind/schedule/binomial.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "rewind/schedule/twolevel.hpp"

namespace rwd::schedule {
namespace {

// Every 97th run length up to 10^5 (and the last one), RAM only and with disk: valid, within
// the budget, and never more than one extra forward step per step over the offline optimum.
TEST(Soak, OnlineStaysValidUpTo100000Steps) {
  for (std::int64_t s : {4, 10}) {
    for (std::int64_t disk : {std::int64_t{0}, std::int64_t{8}}) {
      ScheduleParams p;
      p.ram = s;
      p.disk = disk;
      p.write_cost = p.read_cost = 1;
      for (Step n = 1; n <= 100000; n = n == 99994 ? 100000 : n + 97) {
        auto schedule = make_schedule("online", p);
        ScheduleParams limits = p;
        limits.steps = n;
        const SimulationResult r = simulate(*schedule, limits);
        ASSERT_LE(r.ram.peak, s) << n;
        ASSERT_LE(r.disk.peak, disk) << n;
        if (disk == 0) {
          ASSERT_LE(r.fwd_total, revolve_fwd_total(n, std::min<std::int64_t>(s, n)) + n) << n;
        }
      }
    }
  }
}

// A table too large for every disk-slot layer (the extreme case): the chain of disk
// checkpoints above the tabulated layers is valid, within budget, and within 1 % of the proven
// lower bound, which stays below the replayed cost.
TEST(Soak, TwoLevelChainAboveTheTable) {
  ScheduleParams p;
  p.steps = 100000;
  p.ram = 3;
  p.disk = 1000;
  p.write_cost = p.read_cost = 1;
  auto s = make_schedule("twolevel", p);
  const SimulationResult r = simulate(*s, p);
  EXPECT_LE(r.disk.peak, 1000);
  EXPECT_LE(*s->lower_bound(), r.cost);
  EXPECT_LT(r.cost - *s->lower_bound(), 0.01 * *s->lower_bound());
}

}  // namespace
}  // namespace rwd::schedule
