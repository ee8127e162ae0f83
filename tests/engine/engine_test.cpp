// Engine tests under MPI (1, 2, 4 ranks): for every registered schedule that accepts a budget,
// the gradient is bitwise identical to store-all, on RAM and on disk; gradients pass a Taylor
// test; the tape stores exactly what a restart needs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>

#include <sys/resource.h>

#include <csignal>
#include <fstream>

#include "rewind/engine/engine.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "steppers.hpp"

namespace rwd::testing {
namespace {

using engine::Engine;
using engine::EngineConfig;
using engine::RunStats;
using schedule::kUnlimited;

constexpr Step kSteps = 30;

struct Case {
  const char* name;
  std::function<std::unique_ptr<TestStepper>(const Ring&)> make;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

const Case kCases[] = {
    {"lorenz96_rk4", [](const Ring& r) { return std::make_unique<Lorenz96Rk4>(r, 0.01); }},
    {"diffusion_decay", [](const Ring& r) { return std::make_unique<DiffusionDecay>(r, 0.05); }},
    {"lorenz96_leapfrog",
     [](const Ring& r) { return std::make_unique<Lorenz96Leapfrog>(r, 0.005); }},
};

std::string scratch_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "rewind-engine-test";
  std::filesystem::create_directories(dir);
  return dir.string();
}

EngineConfig config(const std::string& schedule, std::int64_t ram, std::int64_t disk) {
  EngineConfig c;
  c.schedule = schedule;
  c.params.steps = kSteps;
  c.params.ram = ram;
  c.params.disk = disk;
  c.params.write_cost = 0.5;
  c.params.read_cost = 0.5;
  c.store.comm = MPI_COMM_WORLD;
  c.store.directory = scratch_dir();
  c.store.label = "engine-test";
  return c;
}

std::pair<std::vector<double>, RunStats> adjoint(TestStepper& s, const EngineConfig& c) {
  s.reset(0.0);
  Engine engine(s, c);
  RunStats stats = engine.run();
  return {s.gradient(), stats};
}

bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// All ranks must agree a check passed.
bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

class EngineGradients : public ::testing::TestWithParam<Case> {};

TEST_P(EngineGradients, EveryScheduleIsBitwiseStoreAll) {
  const Ring ring(MPI_COMM_WORLD, 40);
  auto stepper = GetParam().make(ring);
  const auto [reference, ref_stats] = adjoint(*stepper, config("storeall", kSteps, 0));
  ASSERT_EQ(ref_stats.recomputed(), 0);
  ASSERT_EQ(ref_stats.adjoint_steps, kSteps);

  struct Budget {
    std::int64_t ram, disk;
  };
  int tried = 0;
  for (const auto& info : schedule::ScheduleRegistry::instance().list()) {
    for (const Budget b :
         {Budget{3, 0}, Budget{8, 0}, Budget{14, 0}, Budget{2, 6}, Budget{1, kUnlimited}}) {
      const EngineConfig c = config(info.name, b.ram, b.disk);
      try {
        schedule::make_schedule(info.name, c.params);
      } catch (const Error&) {
        continue;  // this schedule does not accept this budget
      }
      ++tried;
      const auto [g, stats] = adjoint(*stepper, c);
      const std::string what = GetParam().name + std::string(" ") + info.name +
                               " ram=" + std::to_string(b.ram) + " disk=" + std::to_string(b.disk);
      EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << what;
      EXPECT_EQ(stats.adjoint_steps, kSteps) << what;
      EXPECT_LE(stats.ram.peak, b.ram) << what;
      if (b.disk != kUnlimited) {
        EXPECT_LE(stats.disk.peak, b.disk) << what;
      }
      if (info.name == "revolve" && b.ram < kSteps) {
        EXPECT_GT(stats.recomputed(), 0) << what;
      }
    }
  }
  EXPECT_GE(tried, 6);
}

TEST_P(EngineGradients, TaylorRemainderIsSecondOrder) {
  const Ring ring(MPI_COMM_WORLD, 40);
  auto stepper = GetParam().make(ring);
  adjoint(*stepper, config("revolve", 4, 0));
  const double dj = stepper->directional_derivative();
  stepper->reset(0.0);
  stepper->run_forward(kSteps);
  const double j0 = stepper->objective();
  // Remainders for the adjoint gradient and, to show the test can tell, for one 10% off.
  std::vector<double> right, wrong;
  for (double h = 1e-2; h > 1e-3; h /= 2) {
    stepper->reset(h);
    stepper->run_forward(kSteps);
    const double j1 = stepper->objective();
    right.push_back(std::abs(j1 - j0 - h * dj));
    wrong.push_back(std::abs(j1 - j0 - h * dj * 1.1));
  }
  for (std::size_t k = 1; k < right.size(); ++k) {
    const double order = std::log2(right[k - 1] / right[k]);
    EXPECT_NEAR(order, 2.0, 0.1) << GetParam().name << " remainders " << right[k - 1] << " "
                                 << right[k];
  }
  EXPECT_LT(std::log2(wrong[wrong.size() - 2] / wrong.back()), 1.5) << GetParam().name;
}

// Online schedules when the step count is learnt only at the end: every registered online
// schedule, RAM-only and spilling to disk, bitwise equal to store-all.
TEST_P(EngineGradients, OnlineSchedulesWithUnknownStepCountAreBitwiseStoreAll) {
  const Ring ring(MPI_COMM_WORLD, 40);
  auto stepper = GetParam().make(ring);
  const auto [reference, ref_stats] = adjoint(*stepper, config("storeall", kSteps, 0));
  int tried = 0;
  for (const auto& info : schedule::ScheduleRegistry::instance().list()) {
    if (!info.online) continue;
    for (const auto& [ram, disk] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {3, 0}, {6, 0}, {2, 4}, {1, 3}, {2, kUnlimited}}) {
      EngineConfig c = config(info.name, ram, disk);
      c.params.steps = 0;
      try {
        schedule::make_schedule(info.name, c.params);
      } catch (const Error&) {
        continue;  // this schedule does not accept this budget
      }
      stepper->stop_at = kSteps;
      std::pair<std::vector<double>, RunStats> result;
      try {
        result = adjoint(*stepper, c);
      } catch (const Error& e) {
        ADD_FAILURE() << info.name << " ram=" << ram << " disk=" << disk << ": " << e.what();
        continue;
      }
      stepper->stop_at = 0;
      ++tried;
      const std::string what = GetParam().name + std::string(" ") + info.name +
                               " ram=" + std::to_string(ram) + " disk=" + std::to_string(disk);
      EXPECT_TRUE(all_ranks(bitwise_equal(result.first, reference))) << what;
      EXPECT_EQ(result.second.steps, kSteps) << what;
      EXPECT_LE(result.second.ram.peak, ram) << what;
    }
  }
  EXPECT_GE(tried, 1);
}

INSTANTIATE_TEST_SUITE_P(Steppers, EngineGradients, ::testing::ValuesIn(kCases),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(Tape, RestartSetsFollowDeclaredAccesses) {
  const Ring ring(MPI_COMM_WORLD, 40);
  DiffusionDecay diffusion(ring, 0.05);
  tape::Tape t1(
      2, [&](Step i) { return diffusion.access(i); }, kSteps);
  EXPECT_EQ(t1.restart_set(0), std::vector<std::size_t>{0});  // p is never overwritten
  EXPECT_EQ(t1.restart_set(17), std::vector<std::size_t>{0});
  Lorenz96Leapfrog leapfrog(ring, 0.005);
  tape::Tape t2(
      2, [&](Step i) { return leapfrog.access(i); }, kSteps);
  EXPECT_EQ(t2.restart_set(0), std::vector<std::size_t>{1});  // u_prev is not read by step 0
  EXPECT_EQ(t2.restart_set(1), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(t2.restart_set(29), (std::vector<std::size_t>{0, 1}));
  tape::Tape online(
      2, [&](Step i) { return leapfrog.access(i); }, 0);
  EXPECT_EQ(online.restart_set(5), (std::vector<std::size_t>{0, 1}));
}

TEST(Engine, StoresOnlyTheRestartSet) {
  const Ring ring(MPI_COMM_WORLD, 40);
  DiffusionDecay diffusion(ring, 0.05);
  const auto [g, stats] = adjoint(diffusion, config("revolve", 5, 0));
  // Restart checkpoints hold x only (p is a parameter); pullback data is in WORK.
  EXPECT_EQ(stats.ram.bytes_written, stats.ram.writes * ring.local() * 8);
}

TEST(Engine, StatisticsMatchTheSimulator) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const EngineConfig c = config("revolve", 4, 0);
  auto sched = schedule::make_schedule("revolve", c.params);
  const auto sim = schedule::simulate(*sched, c.params);
  const auto [g, stats] = adjoint(l96, c);
  EXPECT_EQ(stats.forward_steps, sim.fwd_total);
  EXPECT_EQ(stats.ram.writes, sim.ram.writes);
  EXPECT_EQ(stats.ram.reads, sim.ram.reads);
  EXPECT_EQ(stats.ram.peak, sim.ram.peak);
  EXPECT_NE(stats.json().find("\"recomputed\": " + std::to_string(sim.recomputed())),
            std::string::npos);
  EXPECT_NE(stats.summary().find("schedule revolve: 30 steps"), std::string::npos);
}

TEST(Engine, BadInputIsAClearErrorOnEveryRank) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  auto expect_error = [&](EngineConfig c, const std::string& needle) {
    std::string what;
    try {
      Engine engine(l96, c);
      engine.run();
    } catch (const Error& e) {
      what = e.what();
    }
    EXPECT_TRUE(all_ranks(what.find(needle) != std::string::npos))
        << "expected '" << needle << "', got '" << what << "'";
  };
  expect_error(config("revolve", 0, 0), "RAM slots must be >= 1");
  expect_error(config("nosuch", 3, 0), "unknown schedule 'nosuch'");
  EngineConfig online = config("revolve", 3, 0);
  online.params.steps = 0;
  expect_error(online, "step count");
  EngineConfig missing_dir = config("storeall", 1, kUnlimited);
  missing_dir.store.directory = "/nonexistent/rewind-dir";
  expect_error(missing_dir, "/nonexistent/rewind-dir");
}

// Runs `c` expecting an rwd::Error on every rank whose message contains `needle`; afterwards no
// checkpoint file may be left in the store's directory.
void expect_failed_run(TestStepper& s, const EngineConfig& c, const std::string& needle) {
  std::string what;
  try {
    s.reset(0.0);
    Engine engine(s, c);
    engine.run();
  } catch (const Error& e) {
    what = e.what();
  }
  EXPECT_TRUE(all_ranks(!what.empty() && what.find(needle) != std::string::npos))
      << "expected an error containing '" << needle << "', got '" << what << "'";
  MPI_Barrier(MPI_COMM_WORLD);
  int left = 0;
  for (const auto& entry : std::filesystem::directory_iterator(c.store.directory)) {
    left += entry.path().filename().string().find("rewind-") == 0 ? 1 : 0;
  }
  EXPECT_EQ(left, 0) << "a failed run left checkpoint files in " << c.store.directory;
}

EngineConfig disk_config(const std::string& dir) {
  EngineConfig c = config("storeall", 1, kUnlimited);
  c.store.directory = dir;
  c.async_io = false;
  if (MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS) std::filesystem::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  return c;
}

TEST(EngineFailures, DiskFullDuringTheRunIsAnErrorOnEveryRank) {
  const Ring ring(MPI_COMM_WORLD, 4000);
  Lorenz96Rk4 l96(ring, 0.01);
  const EngineConfig c = disk_config(scratch_dir() + "/full");
  // A file size limit makes writes fail with EFBIG part-way through the run, like a full disk.
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 256 * 1024;
  setrlimit(RLIMIT_FSIZE, &small);
  expect_failed_run(l96, c, "File too large");
  setrlimit(RLIMIT_FSIZE, &old);
  // The error names the file or directory it could not write.
  std::string what;
  setrlimit(RLIMIT_FSIZE, &small);
  try {
    Engine engine(l96, c);
    engine.run();
  } catch (const Error& e) {
    what = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_TRUE(all_ranks(what.find(c.store.directory) != std::string::npos)) << what;
}

// A TestStepper that forwards everything to another, for wrappers that watch or interfere.
class ForwardingStepper : public TestStepper {
 public:
  explicit ForwardingStepper(TestStepper& inner) : inner_(inner) {}
  std::vector<Field> state() override { return inner_.state(); }
  std::vector<Field> pullback() override { return inner_.pullback(); }
  StepAccess access(Step i) override { return inner_.access(i); }
  void forward(Step i, bool record) override { inner_.forward(i, record); }
  void adjoint(Step i) override { inner_.adjoint(i); }
  void reset(double h) override { inner_.reset(h); }
  double objective() override { return inner_.objective(); }
  double directional_derivative() override { return inner_.directional_derivative(); }
  std::vector<double> gradient() override { return inner_.gradient(); }
  void begin_adjoint() override { inner_.begin_adjoint(); }

 protected:
  TestStepper& inner_;
};

// A stepper that overwrites the middle of the checkpoint file when the reverse sweep starts.
class CorruptingStepper final : public ForwardingStepper {
 public:
  CorruptingStepper(TestStepper& inner, std::string dir)
      : ForwardingStepper(inner), dir_(std::move(dir)) {}
  void begin_adjoint() override {
    inner_.begin_adjoint();
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
      for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
        const auto size = std::filesystem::file_size(entry.path());
        std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(size * 2 / 3));
        const std::string junk(4096, '\x5a');
        f.write(junk.data(),
                static_cast<std::streamsize>(std::min<std::uintmax_t>(junk.size(), size / 4)));
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }

 private:
  std::string dir_;
};

// loaded() tells a stepper its buffers changed (PETSc then restarts multistep/FSAL history), so
// it must come only with real restores: never in the first sweep, even when the schedule moves
// checkpoints between RAM and disk there.
class LoadWatcher final : public ForwardingStepper {
 public:
  explicit LoadWatcher(TestStepper& inner) : ForwardingStepper(inner) {}
  void begin_adjoint() override {
    in_reverse = true;
    inner_.begin_adjoint();
  }
  void loaded(bool) override { (in_reverse ? loads_in_reverse : loads_in_first_sweep) += 1; }
  bool in_reverse = false;
  int loads_in_first_sweep = 0, loads_in_reverse = 0;
};

TEST(Engine, LoadedIsReportedOnlyForRealRestores) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  LoadWatcher watcher(l96);
  for (const auto& [ram, disk] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 3}, {2, 4}}) {
    EngineConfig c = config("online", ram, disk);
    c.params.steps = 0;
    watcher.stop_at = kSteps;
    watcher.in_reverse = false;
    watcher.loads_in_first_sweep = watcher.loads_in_reverse = 0;
    l96.reset(0.0);
    Engine engine(watcher, c);
    const RunStats stats = engine.run();
    EXPECT_GT(stats.disk.writes, 0) << "the case must move checkpoints to disk";
    EXPECT_EQ(watcher.loads_in_first_sweep, 0);
    EXPECT_GT(watcher.loads_in_reverse, 0);
  }
}

TEST(EngineFailures, CorruptedCheckpointIsAnErrorOnEveryRankNotAWrongGradient) {
  const Ring ring(MPI_COMM_WORLD, 4000);
  Lorenz96Rk4 l96(ring, 0.01);
  const EngineConfig c = disk_config(scratch_dir() + "/corrupt");
  CorruptingStepper corrupting(l96, c.store.directory);
  expect_failed_run(corrupting, c, "checksum");
}

}  // namespace
}  // namespace rwd::testing
