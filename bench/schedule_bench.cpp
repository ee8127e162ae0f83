// Schedule planning times and schedule quality (ctest label `bench`):
//   * planning time of twolevel, disk-revolve, online, mixed and revolve for n = 10^3 .. 10^5
//     (build the schedule and replay its whole action stream through the simulator), with the
//     cost, the proven lower bound where the schedule has one, and their gap;
//   * twolevel over a grid of extreme budgets (TwoLevelGrid: n = 2*10^4 .. 10^5, 2 .. 10 RAM
//     slots, 10 .. 5000 and unlimited disk slots, four cost pairs): cost by replay, proven lower
//     bound, gap and time of each, then the largest gap and time;
//   * dynamic against online on runs of 20 000 steps with unequal step costs (and sizes) under
//     the same RAM byte budget: weighted forward cost of each, and their ratio;
//   * twolevel created twice for the same budget (TwoLevelPlanCache): the first creation plans,
//     the second reuses the shared plan.
// Planning times are measured with the twolevel plan cache emptied before each creation.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "rewind/schedule/twolevel.hpp"

namespace rs = rwd::schedule;

namespace {

void plan(benchmark::State& state, const char* name, std::int64_t ram, std::int64_t disk,
          double cost, bool online) {
  rs::ScheduleParams p;
  p.steps = online ? 0 : state.range(0);
  p.ram = ram;
  p.disk = disk;
  p.write_cost = p.read_cost = cost;
  rs::ScheduleParams limits = p;
  limits.steps = state.range(0);
  rs::SimulationResult r;
  double lower = 0;
  for (auto _ : state) {
    rs::clear_twolevel_plans();
    auto s = rs::make_schedule(name, p);
    r = rs::simulate(*s, limits);
    lower = s->lower_bound().value_or(0.0);
    benchmark::DoNotOptimize(r);
  }
  state.counters["cost"] = r.cost;
  state.counters["lower_bound"] = lower;
  state.counters["gap_pct"] = lower > 0 ? 100.0 * (r.cost - lower) / r.cost : 0.0;
  state.counters["actions"] = static_cast<double>(r.actions);
}

void BM_TwoLevel_ram10_disk100(benchmark::State& state) {
  plan(state, "twolevel", 10, 100, 2.0, false);
}
void BM_DiskRevolve_ram10_diskinf(benchmark::State& state) {
  plan(state, "disk-revolve", 10, rs::kUnlimited, 2.0, false);
}
void BM_Online_ram10(benchmark::State& state) {
  plan(state, "online", 10, 0, 0.0, true);
}
void BM_Online_ram10_disk100(benchmark::State& state) {
  plan(state, "online", 10, 100, 2.0, true);
}
void BM_Mixed_ram10(benchmark::State& state) {
  plan(state, "mixed", 10, 0, 0.0, false);
}
void BM_Revolve_ram10(benchmark::State& state) {
  plan(state, "revolve", 10, 0, 0.0, false);
}

// twolevel over the grid of extreme budgets. Arguments: n, RAM slots, disk slots (-1: unlimited),
// cost pair index into kGridCosts.
constexpr std::array<std::pair<double, double>, 4> kGridCosts = {
    {{1.0, 1.0}, {2.0, 2.0}, {0.5, 3.0}, {5.0, 1.0}}};

// Every grid case's line, printed again as one table after the run.
std::vector<std::string> grid_rows;
double grid_max_gap = 0.0, grid_max_seconds = 0.0;

void BM_TwoLevelGrid(benchmark::State& state) {
  rs::ScheduleParams p;
  p.steps = state.range(0);
  p.ram = state.range(1);
  p.disk = state.range(2) < 0 ? rs::kUnlimited : state.range(2);
  const auto& [wd, rd] = kGridCosts[static_cast<std::size_t>(state.range(3))];
  p.write_cost = wd;
  p.read_cost = rd;
  rs::SimulationResult r;
  double lower = 0.0, seconds = 0.0;
  for (auto _ : state) {
    rs::clear_twolevel_plans();
    const auto start = std::chrono::steady_clock::now();
    auto s = rs::make_schedule("twolevel", p);
    r = rs::simulate(*s, p);
    lower = s->lower_bound().value_or(0.0);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(r);
  }
  const double gap = 100.0 * (r.cost - lower) / lower;
  state.counters["cost"] = r.cost;
  state.counters["lower_bound"] = lower;
  state.counters["gap_pct"] = gap;
  state.counters["seconds"] = seconds;
  char row[160];
  const std::string disk = state.range(2) < 0 ? "inf" : std::to_string(p.disk);
  std::snprintf(row, sizeof row, "| %lld | %lld | %s | %g, %g | %.1f | %.2f | %.4f %% | %.2f s |",
                static_cast<long long>(p.steps), static_cast<long long>(p.ram), disk.c_str(), wd,
                rd, r.cost, lower, gap, seconds);
  grid_rows.emplace_back(row);
  grid_max_gap = std::max(grid_max_gap, gap);
  grid_max_seconds = std::max(grid_max_seconds, seconds);
}

// The same twolevel schedule created twice, as the engine does for each run and `auto` does for
// the schedule it picks: wall time of the first creation (it plans) and of the second (it reuses
// the plan). Arguments: n, RAM slots, disk slots, wd = rd.
void BM_TwoLevelPlanCache(benchmark::State& state) {
  rs::ScheduleParams p;
  p.steps = state.range(0);
  p.ram = state.range(1);
  p.disk = state.range(2);
  p.write_cost = p.read_cost = static_cast<double>(state.range(3));
  const auto seconds_to_create = [&p] {
    const auto start = std::chrono::steady_clock::now();
    auto s = rs::make_schedule("twolevel", p);
    benchmark::DoNotOptimize(s);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double first = 0.0, cached = 0.0;
  for (auto _ : state) {
    rs::clear_twolevel_plans();
    first = seconds_to_create();
    cached = seconds_to_create();
  }
  state.counters["first_s"] = first;
  state.counters["cached_s"] = cached;
}

// Unequal steps: 0 uniform, 1 log-normal (sigma 1), 2 bursty (5 % of steps cost 50),
// 3 slowly varying (cost 1 + sin^2), each with equal sizes (range(1) == 0) or sizes in 0.5 .. 2.
rs::ScheduleParams uneven(int pattern, bool sizes, rs::Step n, double budget) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> lognormal(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  rs::ScheduleParams p;
  p.ram_bytes = budget;
  for (rs::Step i = 0; i < n; ++i) {
    double c = 1.0;
    if (pattern == 1) c = lognormal(rng);
    if (pattern == 2) c = u(rng) < 0.05 ? 50.0 : 1.0;
    if (pattern == 3) c = 1.0 + std::pow(std::sin(static_cast<double>(i) / 500.0), 2.0);
    p.step_cost.push_back(c);
  }
  for (rs::Step i = 0; i <= n; ++i) p.state_bytes.push_back(sizes ? 0.5 + 1.5 * u(rng) : 1.0);
  return p;
}

void BM_DynamicVsOnline(benchmark::State& state) {
  const rs::Step n = 20000;
  const double budget = 20.0;
  rs::ScheduleParams p = uneven(static_cast<int>(state.range(0)), state.range(1) != 0, n, budget);
  rs::ScheduleParams limits = p;
  limits.steps = n;
  const double largest = *std::max_element(p.state_bytes.begin(), p.state_bytes.end());
  rs::ScheduleParams slots;  // online knows slots only: as many as surely fit the bytes
  slots.ram = static_cast<std::int64_t>(budget / largest);
  double dyn = 0, onl = 0;
  for (auto _ : state) {
    auto d = rs::make_schedule("dynamic", p);
    dyn = rs::simulate(*d, limits).cost;
    auto o = rs::make_schedule("online", slots);
    onl = rs::simulate(*o, limits).cost;
  }
  state.counters["dynamic_cost"] = dyn;
  state.counters["online_cost"] = onl;
  state.counters["dynamic_over_online"] = dyn / onl;
  state.counters["online_slots"] = static_cast<double>(slots.ram);
}

}  // namespace

#define REWIND_PLAN_RANGE ->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_TwoLevel_ram10_disk100) REWIND_PLAN_RANGE;
BENCHMARK(BM_DiskRevolve_ram10_diskinf) REWIND_PLAN_RANGE;
BENCHMARK(BM_Online_ram10) REWIND_PLAN_RANGE;
BENCHMARK(BM_Online_ram10_disk100) REWIND_PLAN_RANGE;
BENCHMARK(BM_Mixed_ram10) REWIND_PLAN_RANGE;
BENCHMARK(BM_Revolve_ram10) REWIND_PLAN_RANGE;
BENCHMARK(BM_DynamicVsOnline)
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1}})
    ->ArgNames({"pattern", "sizes"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_TwoLevelPlanCache)
    ->Args({100000, 3, 1000, 1})
    ->Args({10000, 10, 100, 1})
    ->Args({10000, 10, 100, 2})
    ->ArgNames({"n", "ram", "disk", "wd_rd"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_TwoLevelGrid)
    ->ArgsProduct({{20000, 50000, 100000}, {2, 3, 5, 10}, {10, 100, 1000, 5000, -1}, {0, 1, 2, 3}})
    ->ArgNames({"n", "ram", "disk", "costs"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!grid_rows.empty()) {
    std::printf("\ntwolevel grid (cost by replay):\n\n");
    std::printf(
        "| n | s_ram | s_disk | wd, rd | cost | lower bound | gap | planned and replayed |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    for (const std::string& row : grid_rows) std::printf("%s\n", row.c_str());
    std::printf("\n%zu cases: largest gap %.4f %%, longest %.2f s\n", grid_rows.size(),
                grid_max_gap, grid_max_seconds);
  }
  return 0;
}
