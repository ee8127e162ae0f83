// The pieces of the two-level planner on their own (private headers of src/schedule): the
// recursion's layers, the chain above them and its lower bound, the plan that keeps only the
// decisions its stream asks for, and the cache that shares plans between schedules and threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "rewind/schedule/twolevel.hpp"
#include "twolevel_chain.hpp"
#include "twolevel_layers.hpp"
#include "twolevel_plan.hpp"

namespace rwd::schedule::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TwoLevelCosts costs_of(Step n, std::int64_t ram, std::int64_t disk, double wd, double rd) {
  return {
      .steps = n, .disk = disk, .write_cost = wd, .read_cost = rd, .ram = revolve_costs(n, ram)};
}

// K_d(L) straight from the recursion in docs/schedules.md, for d = 0..layers-1 and the
// unlimited layer (returned last).
std::vector<std::vector<double>> recursion(const TwoLevelCosts& c, std::int64_t layers) {
  const auto N = static_cast<std::size_t>(c.steps);
  std::vector<std::vector<double>> K;
  const auto layer = [&](const std::vector<double>* below, bool unlimited) {
    std::vector<double> k(N + 1, kInf);
    k[1] = 1.0;
    const auto right = [&](std::size_t j) {
      if (j == 1) return 1.0;
      const std::vector<double>* disk = unlimited ? &k : below;
      return disk == nullptr ? c.ram[j] : std::min(c.ram[j], c.write_cost + (*disk)[j]);
    };
    for (std::size_t L = 2; L <= N; ++L) {
      double best = c.ram[L];
      for (std::size_t m = 1; m < L; ++m) {
        best = std::min(best, static_cast<double>(m) + c.read_cost + k[m] + right(L - m));
      }
      k[L] = best;
    }
    return k;
  };
  for (std::int64_t d = 0; d < layers; ++d) {
    K.push_back(layer(d == 0 ? nullptr : &K.back(), false));
  }
  K.push_back(layer(nullptr, true));
  return K;
}

const std::vector<std::pair<double, double>> kCosts = {{0.5, 0.5}, {2, 2}, {1, 3}, {0, 0}};

TEST(TwoLevelLayers, ExhaustiveLayersAreTheRecursion) {
  for (const auto& [wd, rd] : kCosts) {
    for (std::int64_t S : {0, 1, 3}) {
      for (Step n : {2, 9, 40}) {
        const TwoLevelCosts c = costs_of(n, S, 4, wd, rd);
        const auto K = recursion(c, 4);
        SearchBudget exact(TwoLevelMethod::Exact);
        const UnlimitedLayer unlimited = unlimited_layer(c, exact);
        ASSERT_TRUE(unlimited.exact);
        for (Step L = 1; L <= n; ++L) {
          ASSERT_NEAR(unlimited.value[static_cast<std::size_t>(L)],
                      K.back()[static_cast<std::size_t>(L)], 1e-9)
              << "unlimited layer, L = " << L;
        }
        for (std::int64_t layers = 1; layers <= 4; ++layers) {
          const LayerStack stack = finite_layers(
              c, unlimited, exact,
              {.layers = layers, .stop_when_equal = false, .unlimited_where_it_fits = false});
          ASSERT_EQ(stack.computed, layers);
          ASSERT_EQ(stack.choices.size(), static_cast<std::size_t>(layers));
          ASSERT_TRUE(stack.exact);
          for (Step L = 1; L <= n; ++L) {
            const auto l = static_cast<std::size_t>(L);
            ASSERT_NEAR(stack.value[l], K[static_cast<std::size_t>(layers - 1)][l], 1e-9)
                << "layer " << layers - 1 << ", L = " << L << ", S = " << S;
            ASSERT_EQ(stack.lower[l], stack.value[l]);
          }
        }
      }
    }
  }
}

// The windowed search is never below the optimum; the relaxation is never above it.
TEST(TwoLevelLayers, RelaxationBoundsTheWindowedSearch) {
  for (const auto& [wd, rd] : kCosts) {
    const TwoLevelCosts c = costs_of(300, 2, 6, wd, rd);
    const auto K = recursion(c, 6);
    SearchBudget windowed(TwoLevelMethod::Windowed);
    const UnlimitedLayer unlimited = unlimited_layer(c, windowed);
    ASSERT_FALSE(unlimited.exact);
    const LayerStack stack =
        finite_layers(c, unlimited, windowed,
                      {.layers = 6, .stop_when_equal = false, .unlimited_where_it_fits = false});
    ASSERT_FALSE(stack.exact);
    for (std::size_t L = 1; L <= 300; ++L) {
      ASSERT_LE(unlimited.lower()[L], K.back()[L] + 1e-9) << L;
      ASSERT_GE(unlimited.value[L], K.back()[L] - 1e-9) << L;
      ASSERT_LE(stack.lower[L], K[5][L] + 1e-9) << L;
      ASSERT_GE(stack.value[L], K[5][L] - 1e-9) << L;
    }
  }
}

// The chain bound on its own: from layer c's exact values it never exceeds the optimum of the
// top layer D-1, for every c, and at c = D-1 it is that layer's value.
TEST(TwoLevelChain, LowerBoundIsSoundForEveryTabulatedLayer) {
  int checked = 0;
  for (const auto& [wd, rd] : kCosts) {
    for (std::int64_t S : {1, 2, 4}) {
      for (std::int64_t D : {2, 3, 6}) {
        for (Step n : {3, 17, 48}) {
          const TwoLevelCosts c = costs_of(n, S, D, wd, rd);
          const auto K = recursion(c, D);
          const auto N = static_cast<std::size_t>(n);
          const double top = K[static_cast<std::size_t>(D - 1)][N];
          for (std::int64_t layer = 0; layer < D; ++layer) {
            const double bound =
                chain_lower_bound(c, K[static_cast<std::size_t>(layer)], layer, K.back());
            if (layer == D - 1) {
              EXPECT_EQ(bound, top);
            } else {
              EXPECT_LE(bound, top + 1e-9) << "n " << n << " S " << S << " D " << D << " c "
                                           << layer << " wd " << wd << " rd " << rd;
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 3 * (2 + 3 + 6) * 3);
}

// The chain above one or two tabulated layers: its nodes split the top segment from the top, the
// cost it reports is what replay_cost() counts, and it is never below the optimum.
TEST(TwoLevelChain, ChainCostsWhatItsReplayCounts) {
  int chained = 0;
  for (const auto& [wd, rd] : kCosts) {
    for (std::int64_t S : {1, 2}) {
      const Step n = 200;
      const std::int64_t D = 12;
      const TwoLevelCosts c = costs_of(n, S, D, wd, rd);
      const auto K = recursion(c, D);
      SearchBudget exact(TwoLevelMethod::Exact);
      const auto unlimited = std::make_shared<const UnlimitedLayer>(unlimited_layer(c, exact));
      for (std::int64_t layers : {1, 2}) {
        LayerStack stack = finite_layers(
            c, *unlimited, exact,
            {.layers = layers, .stop_when_equal = false, .unlimited_where_it_fits = true});
        TwoLevelTables tables;
        tables.disk = D;
        tables.top = TopSegment::Chain;
        tables.unlimited_where_it_fits = true;
        tables.unlimited = unlimited;
        tables.layers = std::move(stack.choices);
        const ChainedTables chain = plan_chain(c, std::move(tables), stack.value);
        if (chain.tables.chain.empty()) continue;
        ++chained;
        EXPECT_EQ(chain.tables.chain.size(), static_cast<std::size_t>(D - layers));
        Step length = n;
        for (const ChainNode& node : chain.tables.chain) {
          EXPECT_EQ(node.length, length);
          EXPECT_GE(node.m, 1);
          length -= node.m;
        }
        EXPECT_GE(length, 2);
        EXPECT_EQ(chain.cost, replay_cost(chain.tables, c, n, D - 1));
        EXPECT_GE(chain.cost, K[static_cast<std::size_t>(D - 1)][200] - 1e-9);
      }
    }
  }
  EXPECT_GT(chained, 0);
}

// The plan keeps the decisions its stream asks for, not the tables: at n = 20 000 with 30 disk
// slots the tables hold 30 x 20 001 decisions, the plan a few hundred.
TEST(TwoLevelPlan, KeepsOnlyTheDecisionsItsStreamAsksFor) {
  ScheduleParams p;
  p.steps = 20000;
  p.ram = 5;
  p.disk = 30;
  const TwoLevelDiskPlan plan =
      plan_two_level(two_level_request(p, TwoLevelMethod::Auto, kTwoLevelTableEntries));
  EXPECT_TRUE(plan.summary().x0_on_disk);
  EXPECT_EQ(plan.summary().layers, 30);
  EXPECT_GT(plan.decisions(), 0U);
  EXPECT_LT(plan.decisions(), 1000U);
  EXPECT_LT(plan.bytes(), 16U * 1024U);
  // Asked for a segment its stream never starts, it says so instead of guessing.
  EXPECT_THROW(plan.choose(p.steps, 1000), Error);
  // Its stream replays at the cost the plan claims, and every decision kept is a disk segment of
  // it: the root, or a part of a split, which reads its start back once.
  auto schedule = make_twolevel(p, TwoLevelMethod::Auto);
  const SimulationResult r = simulate(*schedule, p);
  EXPECT_EQ(r.cost, plan.summary().cost);
  EXPECT_LE(static_cast<std::int64_t>(plan.decisions()), 1 + 2 * r.disk.reads);

  // With unlimited disk and free I/O nearly every length is a disk segment of its own: the plan
  // then keeps a decision per length, no larger than the unlimited layer's table.
  p.disk = kUnlimited;
  const TwoLevelDiskPlan every =
      plan_two_level(two_level_request(p, TwoLevelMethod::Auto, kTwoLevelTableEntries));
  EXPECT_GT(every.decisions(), static_cast<std::size_t>(p.steps) / 2);
  EXPECT_LE(every.bytes(), 4U * static_cast<std::size_t>(p.steps + 1) + 1024U);
  EXPECT_THROW(every.choose(p.steps + 1, kUnlimited), Error);
  auto unlimited = make_twolevel(p, TwoLevelMethod::Auto);
  EXPECT_EQ(simulate(*unlimited, p).cost, every.summary().cost);
}

TwoLevelRequest request(Step n, std::int64_t ram, std::int64_t disk, double wd, double rd) {
  return {.steps = n,
          .ram = ram,
          .disk = disk,
          .write_cost = wd,
          .read_cost = rd,
          .method = TwoLevelMethod::Auto,
          .table_entries = kTwoLevelTableEntries,
          .unlimited_shortcut = true};
}

TEST(TwoLevelCache, EqualRequestsShareOnePlan) {
  clear_twolevel_plans();
  const TwoLevelCacheStats before = two_level_cache_stats();
  const auto a = shared_two_level_plan(request(3000, 3, 20, 1, 1));
  const auto b = shared_two_level_plan(request(3000, 3, 20, 1, 1));
  EXPECT_EQ(a.get(), b.get());
  const auto other = shared_two_level_plan(request(3000, 3, 20, 1, 2));
  EXPECT_NE(a.get(), other.get());
  const TwoLevelCacheStats after = two_level_cache_stats();
  EXPECT_EQ(after.planned - before.planned, 2);
  EXPECT_EQ(after.reused - before.reused, 1);
  EXPECT_EQ(after.plans, 2U);
  EXPECT_EQ(after.bytes, a->bytes() + other->bytes());

  // Schedules share it too; the period and the step costs play no part in the plan.
  ScheduleParams p;
  p.steps = 3000;
  p.ram = 3;
  p.disk = 20;
  p.write_cost = p.read_cost = 1;
  p.period = 7;
  p.step_cost = {2.0, 3.0};
  auto s = make_schedule("twolevel", p);
  EXPECT_EQ(two_level_cache_stats().planned, after.planned);
  EXPECT_EQ(*s->lower_bound(), a->summary().lower_bound);

  // Cleared, the next request plans again; the plans already handed out stay valid.
  clear_twolevel_plans();
  EXPECT_EQ(two_level_cache_stats().plans, 0U);
  const auto again = shared_two_level_plan(request(3000, 3, 20, 1, 1));
  EXPECT_EQ(two_level_cache_stats().planned, after.planned + 1);
  EXPECT_EQ(again->summary().cost, a->summary().cost);
  EXPECT_EQ(again->decisions(), a->decisions());
}

TEST(TwoLevelCache, HoldsAtMostSixteenPlansAndNoFailures) {
  clear_twolevel_plans();
  for (Step n = 100; n < 130; ++n) shared_two_level_plan(request(n, 2, 4, 1, 1));
  EXPECT_EQ(two_level_cache_stats().plans, 16U);
  // The most recently used stay.
  const std::int64_t planned = two_level_cache_stats().planned;
  shared_two_level_plan(request(129, 2, 4, 1, 1));
  EXPECT_EQ(two_level_cache_stats().planned, planned);
  // A request that cannot be planned is rejected every time and never kept.
  for (int i = 0; i < 2; ++i) {
    EXPECT_THROW(shared_two_level_plan(request(50, 0, 0, 1, 1)), Error);
  }
  EXPECT_EQ(two_level_cache_stats().planned, planned + 2);
  EXPECT_EQ(two_level_cache_stats().plans, 16U);
}

// Two threads create the same schedule at once: it is planned once, both get the same plan,
// and both streams (replayed concurrently from the shared plan) are the same.
TEST(TwoLevelCache, ConcurrentCreationPlansOnce) {
  clear_twolevel_plans();
  ScheduleParams p;
  p.steps = 20000;
  p.ram = 3;
  p.disk = 300;
  p.write_cost = p.read_cost = 1;
  const TwoLevelCacheStats before = two_level_cache_stats();
  std::barrier start(2);
  std::shared_ptr<const TwoLevelDiskPlan> plans[2];
  std::vector<std::string> streams[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      plans[t] =
          shared_two_level_plan(two_level_request(p, TwoLevelMethod::Auto, kTwoLevelTableEntries));
      auto schedule = make_twolevel(p, TwoLevelMethod::Auto);
      while (auto a = schedule->next()) streams[t].push_back(to_string(*a));
    });
  }
  for (std::thread& t : threads) t.join();
  const TwoLevelCacheStats after = two_level_cache_stats();
  ASSERT_NE(plans[0], nullptr);
  EXPECT_EQ(plans[0].get(), plans[1].get());
  EXPECT_EQ(after.planned - before.planned, 1);
  EXPECT_EQ(after.reused - before.reused, 3);
  EXPECT_EQ(streams[0], streams[1]);
  EXPECT_EQ(static_cast<std::int64_t>(streams[0].size()),
            simulate(*make_twolevel(p, TwoLevelMethod::Auto), p).actions);
}

}  // namespace
}  // namespace rwd::schedule::detail
