// Soak tests of the engine (ctest label `soak`, not in the default run; registered at 4 ranks):
//  - a run of 10^5 steps under a two-level budget (5 RAM + 30 disk checkpoints), gradient bitwise
//    equal to a hand-written store-all loop, with the memory the plan takes;
//  - an optimisation loop of 200 adjoint solves in one process, through Engine (stores and a
//    disk file of its own each solve) and through one Stores shared by a new Recording each
//    solve, whose resident memory (VmRSS) and open file descriptors must stay flat after a
//    warm-up. The figures are printed (rank 0: the largest over the ranks).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../support/process_figures.hpp"
#include "engine_test_util.hpp"
#include "rewind/engine/recording.hpp"
#include "rewind/engine/stores.hpp"

namespace rwd::testing {
namespace {

using engine::Recording;
using engine::Stores;
using engine::StoresConfig;

// ---- what the process holds -----------------------------------------------------------------

using soak::process_figures;
using soak::ProcessFigures;

// The largest of each figure over the ranks, for printing.
ProcessFigures max_over_ranks(const ProcessFigures& mine) {
  double in[3] = {mine.rss_mib, mine.peak_mib, static_cast<double>(mine.fds)}, out[3] = {};
  MPI_Allreduce(in, out, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return {out[0], out[1], static_cast<int>(out[2])};
}

void print(const char* what, const ProcessFigures& f) {
  if (world_rank() == 0) {
    std::printf("[soak] %-44s VmRSS %7.1f MiB, VmHWM %7.1f MiB, %3d open fds (max over ranks)\n",
                what, f.rss_mib, f.peak_mib, f.fds);
    std::fflush(stdout);
  }
}

// ---- a cheap stepper --------------------------------------------------------------------------

// x_{i+1} = x_i + dt (f(i) - p x_i) per entry, no communication: the engine's own work (the
// schedule, the stores, the collective disk file) dominates a step. J = 1/2 |x_n|^2.
struct LocalDecayMath {
  double dt = 1e-4;
  static double forcing(Step i) { return 0.01 * std::sin(1e-3 * static_cast<double>(i)); }
  void step(std::vector<double>& x, const std::vector<double>& p, Step i) const {
    const double f = forcing(i);
    for (std::size_t j = 0; j < x.size(); ++j) x[j] += dt * (f - p[j] * x[j]);
  }
  // lambda_i from lambda_{i+1}; gp += dJ/dp of step i, with x_in = x_i.
  void adjoint(std::vector<double>& lambda, std::vector<double>& gp, const std::vector<double>& p,
               const std::vector<double>& x_in) const {
    for (std::size_t j = 0; j < lambda.size(); ++j) {
      gp[j] -= dt * x_in[j] * lambda[j];
      lambda[j] *= 1.0 - dt * p[j];
    }
  }
};

class LocalDecay final : public engine::Stepper {
 public:
  explicit LocalDecay(const Ring& ring) : ring_(ring) {
    const auto m = static_cast<std::size_t>(ring.local());
    x_.resize(m);
    p_.resize(m);
    x_in_.resize(m);
    lambda_.resize(m);
    gp_.resize(m);
    reset();
  }
  void reset() {
    for (int j = 0; j < ring_.local(); ++j) {
      const int g = ring_.offset() + j;
      x_[j] = 1.0 + 0.1 * std::sin(0.3 * g);
      p_[j] = 0.5 + 0.01 * g;
    }
  }
  std::vector<engine::Field> state() override {
    return {ring_.field("x", x_), ring_.field("p", p_)};
  }
  std::vector<engine::Field> pullback() override { return {ring_.field("x_in", x_in_)}; }
  StepAccess access(Step) override { return {{0, 1}, {0}}; }
  void forward(Step i, const StepContext& c) override {
    if (c.record) x_in_ = x_;
    math_.step(x_, p_, i);
  }
  void begin_adjoint(std::span<const double>) override {
    lambda_ = x_;
    std::fill(gp_.begin(), gp_.end(), 0.0);
  }
  void adjoint(Step) override { math_.adjoint(lambda_, gp_, p_, x_in_); }
  std::vector<double> gradient() const {
    std::vector<double> g = lambda_;
    g.insert(g.end(), gp_.begin(), gp_.end());
    return g;
  }
  const std::vector<double>& x() const { return x_; }
  const std::vector<double>& p() const { return p_; }

 private:
  const Ring& ring_;
  LocalDecayMath math_;
  std::vector<double> x_, p_, x_in_, lambda_, gp_;
};

// The gradient by a plain loop that keeps every state: the reference every schedule matches.
std::vector<double> storeall_gradient(LocalDecay& s, Step n) {
  LocalDecayMath math;
  std::vector<double> x = s.x();
  const std::vector<double>& p = s.p();
  std::vector<std::vector<double>> xs;
  xs.reserve(static_cast<std::size_t>(n));
  for (Step i = 0; i < n; ++i) {
    xs.push_back(x);
    math.step(x, p, i);
  }
  std::vector<double> lambda = x, gp(x.size(), 0.0);
  for (Step i = n - 1; i >= 0; --i) math.adjoint(lambda, gp, p, xs[static_cast<std::size_t>(i)]);
  lambda.insert(lambda.end(), gp.begin(), gp.end());
  return lambda;
}

TEST(EngineSoak, HundredThousandStepsUnderATwoLevelBudget) {
  constexpr Step n = 100000;
  Ring ring(MPI_COMM_WORLD, 16 * 4);
  LocalDecay stepper(ring);
  const std::vector<double> reference = storeall_gradient(stepper, n);
  const ProcessFigures before = process_figures();
  print("before planning 10^5 steps", max_over_ranks(before));

  EngineConfig c = config("twolevel", 5, 30);
  c.params.steps = n;
  c.params.write_cost = 2;
  c.params.read_cost = 2;
  c.store.directory = scratch_dir("soak-long");
  std::vector<double> gradient;
  RunStats stats;
  {
    Engine engine(stepper, c);
    const ProcessFigures planned = process_figures();
    print("planned (twolevel, 5 RAM + 30 disk)", max_over_ranks(planned));
    if (world_rank() == 0) {
      std::printf("[soak] the plan took %.1f MiB of VmRSS on rank 0 (peak %.1f MiB)\n",
                  planned.rss_mib - before.rss_mib, planned.peak_mib - before.rss_mib);
    }
    stats = engine.run();
    gradient = stepper.gradient();
  }
  print("after the run", max_over_ranks(process_figures()));
  if (world_rank() == 0) std::printf("%s\n", stats.summary().c_str());
  EXPECT_TRUE(all_ranks(bitwise_equal(gradient, reference)))
      << "the gradient differs from the store-all loop's";
  EXPECT_EQ(stats.steps, n);
  EXPECT_EQ(stats.adjoint_steps, n);
  EXPECT_GT(stats.disk.writes, 0);
  EXPECT_LE(stats.ram.peak, 5);
  EXPECT_LE(stats.disk.peak, 30);
  EXPECT_EQ(stats.disk.live, 0);
  EXPECT_EQ(rewind_files(c.store.directory), 0) << "a checkpoint file was left behind";
}

// ---- an optimisation loop -----------------------------------------------------------------------

constexpr int kSolves = 200;
constexpr int kWarmUp = 20;
// Generous: a leak of one checkpoint's worth (a few KiB) a solve would pass unnoticed, but one of
// a plan, a store, a file's buffers or an HDF5 object a solve would not (200 solves).
constexpr double kRssGrowthMiB = 8.0;
constexpr int kFdGrowth = 0;

// Gradient descent on the scalar h that scales the parameter perturbation: J(h) after each
// adjoint solve, dJ/dh = <dJ/dp, dp/dh>. Returns h after `solves` steps; `solve` runs one
// adjoint of `s` and returns its statistics.
template <class Solve>
void optimise(DiffusionDecay& s, const char* what, Solve&& solve) {
  double h = 0.0;
  ProcessFigures warm;
  for (int k = 0; k < kSolves; ++k) {
    s.reset(0.0, h);
    const RunStats stats = solve();
    ASSERT_EQ(stats.adjoint_steps, kSteps);
    double local = 0.0;
    const std::vector<double> dp = s.parameter_direction();
    for (std::size_t j = 0; j < dp.size(); ++j) local += s.parameter_gradient()[j] * dp[j];
    double dh = 0.0;
    MPI_Allreduce(&local, &dh, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ASSERT_TRUE(std::isfinite(dh));
    h -= 0.5 * dh;
    if (k + 1 == kWarmUp) {
      warm = process_figures();
      print((std::string(what) + ": after the warm-up (20 solves)").c_str(), max_over_ranks(warm));
    }
  }
  const ProcessFigures end = process_figures();
  print((std::string(what) + ": after 200 solves").c_str(), max_over_ranks(end));
  const double growth = end.rss_mib - warm.rss_mib;
  double worst = 0.0;
  MPI_Allreduce(&growth, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (world_rank() == 0) {
    std::printf("[soak] %s: VmRSS grew by %.2f MiB over the last %d solves (most on a rank)\n",
                what, worst, kSolves - kWarmUp);
  }
  EXPECT_LT(growth, kRssGrowthMiB) << what << ": resident memory grows with the solves";
  EXPECT_LE(end.fds - warm.fds, kFdGrowth) << what << ": file descriptors leak";
}

// A budget that needs both levels, so every solve creates, fills and deletes a disk file.
EngineConfig optimisation_config(const std::string& sub) {
  EngineConfig c = config("auto", 3, 4);
  c.store.directory = scratch_dir(sub);
  return c;
}

TEST(EngineSoak, TwoHundredSolvesThroughEngineKeepMemoryAndFilesFlat) {
  Ring ring(MPI_COMM_WORLD, 96);
  DiffusionDecay stepper(ring, 0.05);
  const EngineConfig c = optimisation_config("soak-engine");
  std::int64_t disk_writes = 0;
  optimise(stepper, "Engine", [&] {
    Engine engine(stepper, c);
    RunStats stats = engine.run();
    disk_writes += stats.disk.writes;
    return stats;
  });
  EXPECT_GT(disk_writes, 0);
  EXPECT_EQ(rewind_files(c.store.directory), 0);
}

TEST(EngineSoak, TwoHundredRecordingsOnSharedStoresKeepMemoryAndFilesFlat) {
  Ring ring(MPI_COMM_WORLD, 96);
  DiffusionDecay stepper(ring, 0.05);
  const EngineConfig c = optimisation_config("soak-recordings");
  StoresConfig sc;
  sc.store = c.store;
  sc.ram = 3;
  sc.disk = 4;
  std::int64_t disk_writes = 0;
  {
    auto stores = std::make_shared<Stores>(sc);
    optimise(stepper, "Recording on shared Stores", [&] {
      Recording r(stepper, stores, c);
      r.record();
      RunStats stats = r.reverse();
      disk_writes += stats.disk.writes;
      return stats;
    });
  }
  EXPECT_GT(disk_writes, 0);
  EXPECT_EQ(rewind_files(c.store.directory), 0);
}

}  // namespace
}  // namespace rwd::testing
