#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "schedule_test_util.hpp"
#include "stream_checks.hpp"

namespace rwd::schedule {
namespace {

using testing::ListSchedule;
using testing::PassedCheckpointsFreed;

// Steps of unequal cost (log-normal) and size (0.5 .. 2 bytes).
ScheduleParams uneven(Step n, double budget, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> cost(0.0, 1.0);
  std::uniform_real_distribution<double> size(0.5, 2.0);
  ScheduleParams p;
  p.steps = 0;  // dynamic is online
  p.ram_bytes = budget;
  for (Step i = 0; i < n; ++i) p.step_cost.push_back(cost(rng));
  for (Step i = 0; i <= n; ++i) p.state_bytes.push_back(size(rng));
  return p;
}

SimulationResult replay(const ScheduleParams& p, Step n) {
  auto s = make_schedule("dynamic", p);
  ScheduleParams limits = p;
  limits.steps = n;
  PassedCheckpointsFreed freed(describe(limits));
  return simulate(*s, limits, [&freed](const Action& a) { freed(a); });
}

TEST(Dynamic, StaysWithinTheByteBudgetOnUnevenSteps) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    for (double budget : {4.0, 9.5, 30.0}) {
      for (Step n : {1, 2, 7, 60, 333}) {
        const ScheduleParams p = uneven(n, budget, seed);
        const SimulationResult r = replay(p, n);
        ASSERT_EQ(r.adjoint_steps, n);
        ASSERT_LE(r.ram.peak_bytes, budget * (1 + 1e-12)) << "seed=" << seed << " n=" << n;
        double first_sweep = 0;
        for (double c : p.step_cost) first_sweep += c;
        ASSERT_GE(r.fwd_cost, first_sweep - 1e-9);
        ASSERT_DOUBLE_EQ(r.cost, r.fwd_cost);
      }
    }
  }
}

// With equal steps it is a slot schedule; the heuristic stays near the online placement.
TEST(Dynamic, EqualStepsStayNearOnline) {
  for (std::int64_t s : {3, 10, 30}) {
    for (Step n : {50, 400, 3000}) {
      ScheduleParams p;
      p.ram = s;
      ScheduleParams limits = p;
      limits.steps = n;
      auto dyn = make_schedule("dynamic", p);
      auto onl = make_schedule("online", p);
      const SimulationResult d = simulate(*dyn, limits);
      const SimulationResult o = simulate(*onl, limits);
      EXPECT_LE(d.ram.peak, s);
      EXPECT_LE(d.cost, 1.5 * o.cost) << "s=" << s << " n=" << n;
    }
  }
}

TEST(Dynamic, RejectsBadBudgetsAndOutOfOrderReports) {
  ScheduleParams none;
  EXPECT_THROW(make_schedule("dynamic", none), Error);
  ScheduleParams p;
  p.ram_bytes = 1.0;
  auto s = make_schedule("dynamic", p);
  s->observe_step(-1, 0, 1);
  s->observe_step(0, 1, 1);
  EXPECT_THROW(s->observe_step(2, 1, 1), Error);
  ScheduleParams tiny;
  tiny.ram_bytes = 0.5;  // x_0 alone takes 1 byte
  ScheduleParams limits = tiny;
  limits.steps = 3;
  auto t = make_schedule("dynamic", tiny);
  EXPECT_THROW(simulate(*t, limits), Error);
}

// The simulator's extensions for unequal steps: weighted forward cost, byte budget, and the
// driver's observe_step reports.
class Spy final : public Schedule {
 public:
  Spy(const ScheduleParams& p, std::vector<Action> a) : Schedule(p), list_(p, std::move(a)) {}
  std::optional<Action> next() override { return list_.next(); }
  std::string name() const override { return "spy"; }
  void observe_step(Step i, double cost, double bytes) override {
    seen.push_back({static_cast<double>(i), cost, bytes});
  }
  std::vector<std::array<double, 3>> seen;

 private:
  ListSchedule list_;
};

TEST(Simulator, WeighsStepCostsAndReportsThemOnce) {
  ScheduleParams p;
  p.steps = 3;
  p.ram = 3;
  p.step_cost = {1.0, 4.0, 0.5};
  p.state_bytes = {10, 20, 30, 40};
  Spy s(p, {Forward{0, 2, true, false, Level::Ram}, Forward{2, 3, false, true, Level::Work},
            EndForward{}, Reverse{3, 2, true}, Move{0, Level::Ram, Level::Work},
            Forward{0, 1, false, false, Level::None}, Forward{1, 2, false, true, Level::Work},
            Reverse{2, 1, true}, Forward{0, 0 + 1, false, true, Level::Work}});
  // (the last Forward is invalid: the working state is gone; only the counts before matter)
  try {
    simulate(s, p);
  } catch (const Error&) {
  }
  ASSERT_EQ(s.seen.size(), 4U);
  EXPECT_EQ(s.seen[0], (std::array<double, 3>{-1, 0, 10}));
  EXPECT_EQ(s.seen[1], (std::array<double, 3>{0, 1.0, 20}));
  EXPECT_EQ(s.seen[2], (std::array<double, 3>{1, 4.0, 30}));
  EXPECT_EQ(s.seen[3], (std::array<double, 3>{2, 0.5, 40}));

  ListSchedule ok(p, {Forward{0, 2, true, false, Level::Ram},
                      Forward{2, 3, false, true, Level::Work}, EndForward{}, Reverse{3, 2, true},
                      Move{0, Level::Ram, Level::Work}, Forward{0, 1, false, true, Level::Ram},
                      Forward{1, 2, false, true, Level::Work}, Reverse{2, 0, true}, EndReverse{}});
  const SimulationResult r = simulate(ok, p);
  EXPECT_EQ(r.fwd_total, 5);
  EXPECT_DOUBLE_EQ(r.fwd_cost, 1.0 + 4.0 + 0.5 + 1.0 + 4.0);
  EXPECT_DOUBLE_EQ(r.cost, r.fwd_cost);
  EXPECT_DOUBLE_EQ(r.ram.peak_bytes, 10);  // x_0, then step 0's pullback data (10 bytes)
}

TEST(Simulator, EnforcesAByteBudgetInsteadOfSlots) {
  ScheduleParams p;
  p.steps = 2;
  p.ram = 0;
  p.ram_bytes = 25;
  p.state_bytes = {10, 20, 5};
  ListSchedule over(
      p, {Forward{0, 1, true, false, Level::Ram}, Forward{1, 2, true, true, Level::Ram}});
  try {
    simulate(over, p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RAM bytes live, budget 25"), std::string::npos)
        << e.what();
  }
  ListSchedule fits(
      p, {Copy{0, Level::Work, Level::Ram}, Forward{0, 2, false, true, Level::Work}, EndForward{},
          Reverse{2, 1, true}, Move{0, Level::Ram, Level::Work},
          Forward{0, 1, false, true, Level::Work}, Reverse{1, 0, true}, EndReverse{}});
  EXPECT_DOUBLE_EQ(simulate(fits, p).ram.peak_bytes, 10);
}

}  // namespace
}  // namespace rwd::schedule
