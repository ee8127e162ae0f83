// Cost of the ensemble's reproducible gradient reduction (rwd::ensemble::ReproducibleSum)
// against plain double summation of the same data, measured in the same run (ctest label
// `bench`):
//   * Add/M: add() of M doubles to a sum, against y[j] += x[j]; ns per entry of each and ratio
//     (thread CPU time);
//   * Result/M: result(), the rounding of M entries to doubles; ns per entry (thread CPU time);
//   * Allreduce/M: allreduce() of M entries per rank, against an in-place
//     MPI_Allreduce(MPI_SUM) of the same M doubles; time of the slowest rank of each (us) and
//     ratio. Every rank runs the same fixed number of iterations, so the collectives match. On
//     one rank both are nearly free (allreduce() is left with its agreement collective).
// Add and Result run on one rank only (with more ranks only Allreduce is registered).
//
//   build/bin/rewind-bench-reprosum --benchmark_counters_tabular=true
//   mpiexec -n 2 build/bin/rewind-bench-reprosum --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <random>
#include <vector>

#include "rewind/ensemble/reproducible_sum.hpp"

namespace {

using rwd::ensemble::ReproducibleSum;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of this thread: add() and result() are timed by it, so that on a shared machine the
// time other processes hold the core is not counted against either side.
double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Gradient-like data: magnitudes over six decades, both signs.
std::vector<double> gradient(std::size_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> decade(-3, 3);
  std::vector<double> x(m);
  for (auto& v : x) v = mantissa(rng) * std::pow(10.0, decade(rng));
  return x;
}

// Each timed region repeats its work `reps` times so that it lasts well above the clock's
// resolution at small M.
int reps_for(std::size_t m) {
  return static_cast<int>(std::max<std::size_t>(1, 100000 / m));
}

void add(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0));
  const int reps = reps_for(m);
  const std::vector<double> x = gradient(m, 1);
  std::vector<double> y(m, 0.0);
  ReproducibleSum sum(m);
  double plain = 0.0;
  double repro = 0.0;
  for (auto _ : state) {
    double t0 = thread_seconds();
    for (int r = 0; r < reps; ++r) {
      for (std::size_t j = 0; j < m; ++j) y[j] += x[j];
      benchmark::ClobberMemory();
    }
    plain += thread_seconds() - t0;
    t0 = thread_seconds();
    for (int r = 0; r < reps; ++r) sum.add(x);
    const double t = thread_seconds() - t0;
    repro += t;
    state.SetIterationTime(t);
    if (sum.terms() > ReproducibleSum::max_terms / 2) sum = ReproducibleSum(m);
  }
  benchmark::DoNotOptimize(y.data());
  const double entries = static_cast<double>(state.iterations()) * reps * static_cast<double>(m);
  state.counters["ns_per_entry"] = 1e9 * repro / entries;
  state.counters["plain_ns_per_entry"] = 1e9 * plain / entries;
  state.counters["ratio"] = repro / plain;
}

void result(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0));
  ReproducibleSum sum(m);
  for (std::uint64_t k = 0; k < 10; ++k) sum.add(gradient(m, k));
  double seconds = 0.0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    benchmark::DoNotOptimize(sum.result());
    const double t = thread_seconds() - t0;
    seconds += t;
    state.SetIterationTime(t);
  }
  state.counters["ns_per_entry"] =
      1e9 * seconds / (static_cast<double>(state.iterations()) * static_cast<double>(m));
}

double slowest(double mine) {
  double all = 0.0;
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all;
}

void allreduce(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0));
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<double> x = gradient(m, 100 + static_cast<std::uint64_t>(rank));
  std::vector<double> y(m);
  ReproducibleSum local(m);
  local.add(x);
  double plain = 0.0;
  double repro = 0.0;
  for (auto _ : state) {
    ReproducibleSum sum = local;
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = Clock::now();
    sum.allreduce(MPI_COMM_WORLD);
    const double t = slowest(seconds_since(t0));
    std::copy(x.begin(), x.end(), y.begin());
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = Clock::now();
    MPI_Allreduce(MPI_IN_PLACE, y.data(), static_cast<int>(m), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    plain += slowest(seconds_since(t0));
    repro += t;
    state.SetIterationTime(t);
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["repro_us"] = 1e6 * repro / n;
  state.counters["plain_us"] = 1e6 * plain / n;
  state.counters["ratio"] = repro / plain;
}

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  benchmark::Initialize(&argc, argv);
  const std::int64_t sizes[] = {1000, 100000, 1000000};
  const std::int64_t iterations[] = {2000, 200, 20};
  for (int i = 0; i < 3; ++i) {
    benchmark::RegisterBenchmark("Allreduce", allreduce)
        ->Arg(sizes[i])
        ->Iterations(iterations[i])
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  if (size == 1) {
    for (const std::int64_t m : sizes) {
      benchmark::RegisterBenchmark("Add", add)->Arg(m)->UseManualTime();
      benchmark::RegisterBenchmark("Result", result)->Arg(m)->UseManualTime();
    }
  }
  NullReporter quiet;
  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
