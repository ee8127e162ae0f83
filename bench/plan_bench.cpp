// Planning time: build a schedule and walk its whole action stream through the simulator, for
// n = 10^4, 10^5, 10^6. Baseline in the same run: `storeall` (a four-action stream) and the
// closed-form evaluation, so the figures show the cost of generating and validating actions.
#include <benchmark/benchmark.h>

#include "rewind/schedule/binomial.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rs = rwd::schedule;

namespace {

void plan(benchmark::State& state, const char* name, std::int64_t ram) {
  rs::ScheduleParams p;
  p.steps = state.range(0);
  p.ram = name == std::string("storeall") ? p.steps : ram;
  rs::SimulationResult r;
  for (auto _ : state) {
    auto s = rs::make_schedule(name, p);
    r = rs::simulate(*s, p);
    benchmark::DoNotOptimize(r);
  }
  state.counters["actions"] = static_cast<double>(r.actions);
  state.counters["fwd_total"] = static_cast<double>(r.fwd_total);
  state.counters["actions_per_s"] = benchmark::Counter(
      static_cast<double>(r.actions), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Revolve_s100(benchmark::State& state) {
  plan(state, "revolve", 100);
}
void BM_Revolve_s10(benchmark::State& state) {
  plan(state, "revolve", 10);
}
void BM_Periodic_s2000(benchmark::State& state) {
  plan(state, "periodic", 2000);
}
void BM_StoreAll(benchmark::State& state) {
  plan(state, "storeall", 0);
}

void BM_RevolveClosedForm(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(rs::revolve_fwd_total(state.range(0), 100));
}

}  // namespace

BENCHMARK(BM_Revolve_s100)
    ->RangeMultiplier(10)
    ->Range(10000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Revolve_s10)
    ->RangeMultiplier(10)
    ->Range(10000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Periodic_s2000)
    ->RangeMultiplier(10)
    ->Range(10000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreAll)->RangeMultiplier(10)->Range(10000, 1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RevolveClosedForm)->Arg(1000000);
BENCHMARK_MAIN();
