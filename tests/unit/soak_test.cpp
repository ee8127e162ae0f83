// Long schedule checks (ctest label `soak`, not in the default run): dense sweeps that replay
// hundreds of runs of up to 10^5 steps.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "../support/process_figures.hpp"
#include "rewind/schedule/binomial.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "rewind/schedule/twolevel.hpp"
#include "twolevel_plan.hpp"

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

// Bytes the heap hands out now (glibc): what a plan keeps, unlike VmRSS, which freed pages the
// allocator keeps mapped still count in.
double heap_mib() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1024.0 * 1024.0);
}

using rwd::soak::reset_peak;
using rwd::soak::status_mib;

// What planning the two-level and mixed schedules takes and what a schedule keeps afterwards
// (rewind-plan --ram 5 --disk 30 --schedule twolevel peaks at 4.2 MB resident at 2 000 steps and
// 34 MB at 150 000). Planning twolevel needs O(n) tables, but the plan it keeps (alive in the
// schedule and the process-wide cache) holds only the decisions its stream visits: under 1 MiB
// at any n. mixed keeps O(n): bounded at 48 bytes a step. Printed: the figures of each.
TEST(Soak, PlanMemoryOfTwoLevelAndMixed) {
  for (const char* name : {"twolevel", "mixed"}) {
    for (Step n : {Step{2000}, Step{20000}, Step{150000}}) {
      ScheduleParams p;
      p.steps = n;
      p.ram = 5;
      p.disk = 30;
      p.write_cost = p.read_cost = 1;
      const double heap0 = heap_mib(), rss0 = status_mib("VmRSS");
      reset_peak();
      auto schedule = make_schedule(name, p);
      const double planned_peak = status_mib("VmHWM") - rss0;
      const double kept = heap_mib() - heap0;
      const SimulationResult r = simulate(*schedule, p);
      const double replayed = heap_mib() - heap0;
      const double cached = static_cast<double>(detail::two_level_cache_stats().bytes) / 1048576.0;
      std::printf(
          "[soak] %-8s n = %6lld: planning peak +%6.2f MiB resident, kept %6.3f MiB of "
          "heap (%6.3f MiB after replaying %lld forward steps); two-level cache %.3f "
          "MiB\n",
          name, static_cast<long long>(n), planned_peak, kept, replayed,
          static_cast<long long>(r.fwd_total), cached);
      EXPECT_LE(r.ram.peak, 5);
      EXPECT_LE(r.disk.peak, 30);
      if (std::string(name) == "twolevel") {
        EXPECT_LT(kept, 1.0) << "twolevel keeps O(n) memory after planning " << n << " steps";
      } else {  // mixed keeps a table of O(n) (measured: 24 bytes a step)
        EXPECT_LT(kept, 48.0 * static_cast<double>(n) / 1048576.0) << "mixed, " << n << " steps";
      }
    }
  }
}

}  // namespace
}  // namespace rwd::schedule
