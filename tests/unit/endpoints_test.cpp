// `endpoints`: pullback data made of the states a step starts and ends in. Its cost is checked
// three ways: against an exhaustive search of the machine written here (not the schedule's
// recursion), against the simulator's replay of its actions, and against the numbers
// docs/schedules.md quotes. The simulator's rules for a Reverse from states are checked on
// hand-written streams.

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <map>
#include <tuple>

#include "rewind/error.hpp"
#include "rewind/schedule/endpoints.hpp"
#include "rewind/schedule/mixed.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "schedule_test_util.hpp"

namespace rwd::schedule {
namespace {

using testing::ListSchedule;

// The machine: a working state, at most `units` stored states (x_0 among them, never freed),
// steps of cost 1, stores, restores and frees of cost 0; the adjoint of step a-1 runs when
// x_{a-1} and x_a are both held (working or stored), leaving the working state as it was, or
// right after step a-1 was taken from x_{a-1} in work (recorded: its stages hold both).
// 0-1 breadth-first search over (working, stored set, next adjoint).
std::int64_t exhaustive(int n, int units) {
  using State = std::tuple<int, unsigned, int>;
  std::map<State, std::int64_t> dist;
  std::deque<std::pair<State, std::int64_t>> queue;
  const State start{0, 1u, n};
  dist[start] = 0;
  queue.emplace_back(start, 0);
  const auto held = [](unsigned set, int x, int work) { return x == work || ((set >> x) & 1u); };
  while (!queue.empty()) {
    const auto [state, d] = queue.front();
    queue.pop_front();
    if (dist[state] < d) continue;
    const auto [work, set, a] = state;
    if (a == 0) return d;
    const auto go = [&](State next, std::int64_t cost) {
      auto it = dist.find(next);
      if (it != dist.end() && it->second <= d + cost) return;
      dist[next] = d + cost;
      if (cost == 0) {
        queue.emplace_front(next, d);
      } else {
        queue.emplace_back(next, d + cost);
      }
    };
    if (work < a) go({work + 1, set, a}, 1);
    if (work == a - 1) go({a, set & ((1u << a) - 1u), a - 1}, 1);
    if (!((set >> work) & 1u) && __builtin_popcount(set) < units)
      go({work, set | (1u << work), a}, 0);
    for (int x = 0; x <= n; ++x) {
      if (!((set >> x) & 1u)) continue;
      go({x, set, a}, 0);
      if (x != 0) go({work, set & ~(1u << x), a}, 0);
    }
    if (held(set, a - 1, work) && held(set, a, work)) go({work, set & ((1u << a) - 1u), a - 1}, 0);
  }
  return -1;
}

ScheduleParams endpoint_params(Step n, std::int64_t units, bool with_units) {
  ScheduleParams p;
  p.steps = n;
  p.pullback_from_states = true;
  if (with_units) {  // PETSc's CN: a restart state is one vector, a step's stages two
    p.ram_units = units;
    p.restart_units = 1;
    p.pullback_units = 2;
    p.pullback_holds_next = true;
  } else {
    p.ram = units;
  }
  return p;
}

SimulationResult replay(const ScheduleParams& p) {
  auto s = make_schedule("endpoints", p);
  return simulate(*s, p);
}

TEST(Endpoints, EqualsAnExhaustiveSearchOfTheMachine) {
  for (int n = 1; n <= 10; ++n) {
    for (int units = 1; units <= 5; ++units) {
      SCOPED_TRACE("n=" + std::to_string(n) + " units=" + std::to_string(units));
      const std::int64_t best = exhaustive(n, units);
      EXPECT_EQ(endpoints_forward_steps(n, units), best);
      for (bool with_units : {false, true}) {
        const auto p = endpoint_params(n, units, with_units);
        const SimulationResult r = replay(p);
        EXPECT_EQ(r.fwd_total, best);
        EXPECT_EQ(r.adjoint_steps, n);
        EXPECT_LE(with_units ? r.ram.peak_units : r.ram.peak, units);
      }
    }
  }
}

TEST(Endpoints, ReplayEqualsThePlanAndNeverCostsMoreThanMixedInTheSameUnits) {
  for (Step n = 1; n <= 70; n += (n < 20 ? 1 : 7)) {
    for (std::int64_t units = 1; units <= 14; ++units) {
      SCOPED_TRACE("n=" + std::to_string(n) + " units=" + std::to_string(units));
      const auto p = endpoint_params(n, units, true);
      const SimulationResult r = replay(p);
      EXPECT_EQ(r.fwd_total, endpoints_forward_steps(n, units));
      EXPECT_LE(r.ram.peak_units, units);
      EXPECT_EQ(r.disk.writes, 0);
      auto m = make_schedule("mixed", p);
      EXPECT_LE(static_cast<double>(r.fwd_total), simulate(*m, p).cost);
    }
  }
}

TEST(Endpoints, GivesTheNumbersTheDocsQuote) {
  // docs/schedules.md ("pullback data made of states"): ex5adj's 300 CN steps.
  EXPECT_EQ(endpoints_forward_steps(300, 10), 912);
  EXPECT_EQ(endpoints_forward_steps(300, 20), 669);
  EXPECT_EQ(endpoints_forward_steps(300, 40), 560);
  EXPECT_EQ(endpoints_forward_steps(300, 269), 331);
  EXPECT_EQ(replay(endpoint_params(300, 20, true)).fwd_total, 669);
  // Enough states for every one: the first sweep and nothing else.
  EXPECT_EQ(endpoints_forward_steps(300, 301), 300);
}

TEST(Endpoints, RefusesWhatItCannotPlan) {
  auto p = endpoint_params(10, 4, false);
  p.pullback_from_states = false;
  try {
    make_schedule("endpoints", p);
    FAIL() << "planned without pullback data made of states";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("not made of the states"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_schedule("endpoints", endpoint_params(10, 0, false)), Error);
  EXPECT_THROW(endpoints_forward_steps(100000, 40), Error);  // over the table's work limit
}

TEST(Endpoints, AutoChoosesItWhereItIsCheapest) {
  auto p = endpoint_params(300, 20, true);
  p.ram = 10;  // what the units stand for: PETSc's -ts_trajectory_max_cps_ram 10 for CN
  const PricedSchedule c = ScheduleRegistry::instance().choose_priced(p, p.ram);
  EXPECT_EQ(c.name, "endpoints");
  EXPECT_EQ(c.forward_steps, 669);
  auto q = p;
  q.pullback_from_states = false;
  EXPECT_NE(ScheduleRegistry::instance().choose_priced(q, q.ram).name, "endpoints");
}

// Hand-written streams: what a Reverse from states may and may not do.
SimulationResult play(const ScheduleParams& p, std::vector<Action> actions) {
  ListSchedule s(p, std::move(actions));
  return simulate(s, p);
}

TEST(Endpoints, SimulatorChecksReversesFromStates) {
  const auto p = endpoint_params(2, 3, false);
  const Action end0{EndForward{}};
  // x_0, x_1 stored; x_2 recorded in work for step 1; step 0 from the two stored states.
  const std::vector<Action> good{Forward{0, 1, true, false, Level::Ram},
                                 Copy{1, Level::Work, Level::Ram},
                                 Forward{1, 2, false, true, Level::Work},
                                 end0,
                                 Reverse{2, 1, true},
                                 Reverse{1, 0, true, true},
                                 Move{1, Level::Ram, Level::None},
                                 Move{0, Level::Ram, Level::None},
                                 EndReverse{}};
  EXPECT_EQ(play(p, good).fwd_total, 2);
  auto without = p;
  without.pullback_from_states = false;
  EXPECT_THROW(play(without, good), Error);
  // x_1 not stored: nothing to compose step 0 from.
  EXPECT_THROW(
      play(p, {Forward{0, 1, true, false, Level::Ram}, Forward{1, 2, false, true, Level::Work},
               end0, Reverse{2, 1, true}, Reverse{1, 0, true, true}}),
      Error);
  // Over two steps at once.
  EXPECT_THROW(play(p, {Forward{0, 1, true, false, Level::Ram}, Copy{1, Level::Work, Level::Ram},
                        Forward{1, 2, false, false, Level::None}, end0, Reverse{2, 0, true, true}}),
               Error);
  // keep_start: x_1 in work moves into x_2's unit; x_1 must then be in work.
  const auto q = endpoint_params(2, 2, false);
  const std::vector<Action> keep{Forward{0, 2, true, false, Level::Ram},
                                 Copy{2, Level::Work, Level::Ram},
                                 end0,
                                 Copy{0, Level::Ram, Level::Work},
                                 Forward{0, 1, false, false, Level::None},
                                 Reverse{2, 1, true, true, true},
                                 Reverse{1, 0, true, true},
                                 Move{1, Level::Ram, Level::None},
                                 Move{0, Level::Ram, Level::None},
                                 EndReverse{}};
  const SimulationResult r = play(q, keep);
  EXPECT_EQ(r.fwd_total, 3);
  EXPECT_EQ(r.ram.peak, 2);
  auto lost = keep;
  lost[4] = Forward{0, 2, false, false, Level::None};  // then the work is x_2, not x_1
  EXPECT_THROW(play(q, lost), Error);
}

}  // namespace
}  // namespace rwd::schedule
