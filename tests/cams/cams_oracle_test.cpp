// rewind's `mixed` with checkpoint sizes against CAMS (Zhang & Constantinescu, arXiv:1806.07366),
// PETSc's optimal multistage scheduler, on CAMS's own model: one unit is one solution vector; a
// solution checkpoint takes 1 unit, a step's stage values `stages` units; for a stiffly accurate
// method the last stage is the step's end state. CAMS's count, numfwdstep_cams(), is the
// recomputations after the first sweep; rewind counts every forward step, so CAMS's total is
// m + that. Over the grid rewind never needs more, and needs fewer somewhere: after restoring
// x_l it may give x_l's unit to step l's stages, which CAMS's recursion does not do.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <map>
#include <vector>

#include "mixed_table.hpp"
#include "offline_schedule.h"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rwd::schedule {
namespace {

constexpr int kSteps[] = {2, 3, 4, 5, 7, 10, 20, 50, 100, 200, 300, 500, 1000};
constexpr int kMaxUnits = 60;
constexpr Step kMaxSteps = 1000;

// CAMS's total forward steps for m steps and `units` units, the table built as PETSc builds it
// (offline_cams_create(m, units, stages, stiffly accurate), one cell at a time).
std::map<int, std::int64_t> cams_totals(int m, int stages, bool stiffly_accurate) {
  std::map<int, std::int64_t> out;
  offline_cams_create(m, kMaxUnits, stages, stiffly_accurate ? 1 : 0);
  for (int units = 2; units <= kMaxUnits; ++units) {
    out[units] = m + numfwdstep_cams(m, units, stages);
  }
  offline_cams_destroy();
  return out;
}

ScheduleParams sized(Step n, std::int64_t units, int stages, bool stiffly_accurate) {
  ScheduleParams p;
  p.steps = n;
  p.ram = 1;
  p.ram_units = units;
  p.restart_units = 1;
  p.pullback_units = stages;
  p.pullback_holds_next = stiffly_accurate;
  return p;
}

TEST(CamsOracle, NeverMoreForwardStepsThanCams) {
  int equal = 0, fewer = 0, replayed = 0;
  for (int stages = 1; stages <= 6; ++stages) {
    for (const bool sa : {false, true}) {
      // One table holds every budget's row: M(L, c) for L <= 1000, c <= 60.
      std::vector<std::vector<double>> rows(kMaxUnits + 1);
      const detail::MixedTable table(kMaxSteps, kMaxUnits, {1, stages, sa},
                                     [&](std::int64_t c, const std::vector<double>& row) {
                                       rows[static_cast<std::size_t>(c)] = row;
                                     });
      for (const int m : kSteps) {
        const auto cams = cams_totals(m, stages, sa);
        for (int units = 2; units <= kMaxUnits; ++units) {
          const std::int64_t theirs = cams.at(units);
          if (theirs < m) continue;  // CAMS's "impossible" (INT_MIN and the like)
          const double ours = rows[static_cast<std::size_t>(units)][static_cast<std::size_t>(m)];
          ASSERT_LE(ours, static_cast<double>(theirs))
              << "m=" << m << " stages=" << stages << " units=" << units << " sa=" << sa;
          (ours < static_cast<double>(theirs) ? fewer : equal)++;
          // The cost is counted by replaying: every cell up to 100 steps, a few beyond.
          const bool replay = m <= 100 ? units % 3 == 2 : units == 5 || units == kMaxUnits;
          if (replay) {
            const auto p = sized(m, units, stages, sa);
            const auto r = simulate(*make_schedule("mixed", p), p);
            ASSERT_EQ(static_cast<double>(r.fwd_total), ours) << describe(p);
            ASSERT_LE(r.ram.peak_units, units) << describe(p);
            ++replayed;
          }
        }
      }
    }
  }
  std::cout << "CAMS oracle: " << equal << " cells equal, " << fewer
            << " with fewer forward steps, 0 with more; " << replayed << " replayed\n";
  EXPECT_GT(fewer, 0);
  EXPECT_GT(equal, fewer);
  EXPECT_GT(replayed, 1000);
}

// A cell worked by hand: 3 steps, one stage, one unit. CAMS: store x_0, run to x_2, reverse
// step 2, restore x_0, run 2 steps, reverse step 1, run 1 step, reverse step 0: 6 steps. rewind:
// the same first sweep and restore, then x_0's unit holds step 0's stage: 5 steps.
TEST(CamsOracle, GivingARestoredStatesUnitToItsStepsStages) {
  offline_cams_create(3, 1, 1, 0);
  EXPECT_EQ(3 + numfwdstep_cams(3, 1, 1), 6);
  offline_cams_destroy();
  const auto p = sized(3, 1, 1, false);
  EXPECT_EQ(simulate(*make_schedule("mixed", p), p).fwd_total, 5);
}

}  // namespace
}  // namespace rwd::schedule
