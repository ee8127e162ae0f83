// Engine tests under MPI (1, 2, 4 ranks): for every registered schedule and budget the planner
// accepts, the gradient is bitwise identical to store-all and the statistics are the
// simulator's; gradients pass a Taylor test; restart sets hold exactly what a restart needs;
// failures are errors on every rank.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <type_traits>
#include <utility>
#include <variant>

#include "engine_test_util.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "theta_stepper.hpp"

namespace rwd::testing {
namespace {

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
    {"implicit_cubic", [](const Ring& r) { return std::make_unique<ImplicitCubic>(r, 0.02); }},
};

// This rank's bytes of the restart data of every boundary after x_0 and of one step's pullback.
std::int64_t local_bytes(const std::vector<Field>& fields) {
  std::int64_t n = 0;
  for (const auto& f : fields) n += static_cast<std::int64_t>(f.data.size_bytes());
  return n;
}

// The run matches the simulator's replay of the plan it followed, count for count.
void expect_simulator_counts(const engine::Plan& plan, const RunStats& stats,
                             const std::string& what) {
  auto sched = schedule::make_schedule(plan.schedule, plan.params);
  schedule::ScheduleParams limits = plan.params;
  limits.steps = stats.steps;
  std::int64_t composed = 0;
  const auto sim = schedule::simulate(*sched, limits, [&](const schedule::Action& a) {
    const auto* r = std::get_if<schedule::Reverse>(&a);
    if (r && r->from_states) ++composed;
  });
  EXPECT_EQ(stats.composed, composed) << what;
  EXPECT_EQ(stats.forward_steps, sim.fwd_total) << what;
  EXPECT_EQ(stats.adjoint_steps, sim.adjoint_steps) << what;
  EXPECT_EQ(stats.ram.writes, sim.ram.writes) << what;
  EXPECT_EQ(stats.ram.reads, sim.ram.reads) << what;
  EXPECT_EQ(stats.ram.peak, sim.ram.peak) << what;
  EXPECT_EQ(stats.disk.writes, sim.disk.writes) << what;
  EXPECT_EQ(stats.disk.reads, sim.disk.reads) << what;
  EXPECT_EQ(stats.disk.peak, sim.disk.peak) << what;
}

struct Budget {
  std::int64_t ram, disk;
};
const Budget kBudgets[] = {{3, 0}, {8, 0}, {14, 0}, {2, 6}, {1, kUnlimited}};

class EngineGradients : public ::testing::TestWithParam<Case> {};

TEST_P(EngineGradients, EveryScheduleIsBitwiseStoreAll) {
  const Ring ring(MPI_COMM_WORLD, 40);
  auto stepper = GetParam().make(ring);
  const auto [reference, ref_stats] = adjoint(*stepper, storeall_config());
  ASSERT_EQ(ref_stats.recomputed(), 0);
  ASSERT_EQ(ref_stats.adjoint_steps, kSteps);
  // A RAM slot is one restart checkpoint's worth of memory (this rank's share).
  record::RestartSets sets(
      stepper->state().size(), [&](Step i) { return stepper->access(i); }, record::Horizon{kSteps});
  std::int64_t restart_bytes = 0;
  for (std::size_t v : sets.written()) restart_bytes += local_bytes({stepper->state()[v]});

  // Which (schedule, budget) the planner accepts, and why it refuses the others.
  std::map<std::string, std::string> refused;
  int tried = 0;
  for (const auto& info : schedule::ScheduleRegistry::instance().list()) {
    for (const Budget b : kBudgets) {
      const EngineConfig c = config(info.name, b.ram, b.disk);
      const std::string what = GetParam().name + std::string(" ") + info.name +
                               " ram=" + std::to_string(b.ram) + " disk=" + std::to_string(b.disk);
      stepper->reset(0.0);
      engine::Plan plan;
      try {
        plan = engine::plan_for(*stepper, MPI_COMM_WORLD, c);
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), ErrorCode::InvalidArgument) << what << ": " << e.what();
        refused[info.name + " " + std::to_string(b.ram) + "/" + std::to_string(b.disk)] = e.what();
        continue;
      }
      ++tried;
      const auto [g, stats] = adjoint(*stepper, c);
      EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << what;
      EXPECT_EQ(stats.adjoint_steps, kSteps) << what;
      // Planned in units (checkpoints of different sizes), more of the smaller kind fit: the
      // bytes below are the bound.
      if (plan.params.ram_units == 0) {
        EXPECT_LE(stats.ram.peak, b.ram) << what;
      }
      if (b.disk != kUnlimited) {
        EXPECT_LE(stats.disk.peak, b.disk) << what;
      }
      EXPECT_LE(stats.ram.peak_bytes, b.ram * restart_bytes) << what;
      expect_simulator_counts(plan, stats, what);
      if (info.name == "revolve" && b.ram < kSteps) {
        EXPECT_GT(stats.recomputed(), 0) << what;
      }
    }
  }
  // Every stepper runs at least these.
  for (const char* must : {"revolve 3/0", "revolve 8/0", "twolevel 2/6", "storeall 1/-1",
                           "online 3/0", "disk-revolve 2/6"}) {
    EXPECT_EQ(refused.count(must), 0u) << must << " was refused: " << refused[must];
  }
  // endpoints runs exactly where the pullback data is made of states.
  const bool made_of_states = !stepper->pullback_from_states().empty();
  for (const char* budget : {"endpoints 3/0", "endpoints 8/0", "endpoints 14/0"}) {
    EXPECT_EQ(refused.count(budget) == 0, made_of_states) << budget << ": " << refused[budget];
  }
  EXPECT_GE(tried, 20);
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
  const auto [reference, ref_stats] = adjoint(*stepper, storeall_config());
  std::map<std::string, std::string> refused;
  int tried = 0;
  for (const auto& info : schedule::ScheduleRegistry::instance().list()) {
    if (!info.online) continue;
    for (const Budget b :
         {Budget{3, 0}, Budget{6, 0}, Budget{2, 4}, Budget{1, 3}, Budget{2, kUnlimited}}) {
      EngineConfig c = config(info.name, b.ram, b.disk);
      c.params.steps = 0;
      const std::string what = GetParam().name + std::string(" ") + info.name +
                               " ram=" + std::to_string(b.ram) + " disk=" + std::to_string(b.disk);
      stepper->reset(0.0);
      try {
        engine::plan_for(*stepper, MPI_COMM_WORLD, c);
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), ErrorCode::InvalidArgument) << what << ": " << e.what();
        refused[info.name + " " + std::to_string(b.ram) + "/" + std::to_string(b.disk)] = e.what();
        continue;
      }
      stepper->stop_at = kSteps;
      const auto [g, stats] = adjoint(*stepper, c);
      stepper->stop_at = 0;
      ++tried;
      EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << what;
      EXPECT_EQ(stats.steps, kSteps) << what;
      EXPECT_LE(stats.ram.peak, b.ram) << what;
    }
  }
  for (const char* must : {"online 3/0", "online 6/0", "online 2/4", "online 1/3"}) {
    EXPECT_EQ(refused.count(must), 0u) << must << " was refused: " << refused[must];
  }
  EXPECT_GE(tried, 4);
}

INSTANTIATE_TEST_SUITE_P(Steppers, EngineGradients, ::testing::ValuesIn(kCases),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(RestartSets, FollowDeclaredAccesses) {
  const Ring ring(MPI_COMM_WORLD, 40);
  DiffusionDecay diffusion(ring, 0.05);
  record::RestartSets t1(
      2, [&](Step i) { return diffusion.access(i); }, record::Horizon{kSteps});
  EXPECT_EQ(t1.at(0), std::vector<std::size_t>{0});  // p is never overwritten
  EXPECT_EQ(t1.at(17), std::vector<std::size_t>{0});
  EXPECT_EQ(t1.written(), std::vector<std::size_t>{0});
  Lorenz96Leapfrog leapfrog(ring, 0.005);
  record::RestartSets t2(
      2, [&](Step i) { return leapfrog.access(i); }, record::Horizon{kSteps});
  EXPECT_EQ(t2.at(0), std::vector<std::size_t>{1});  // u_prev is not read by step 0
  EXPECT_EQ(t2.at(1), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(t2.at(29), (std::vector<std::size_t>{0, 1}));
  record::RestartSets online(
      2, [&](Step i) { return leapfrog.access(i); }, record::Horizon{0});
  EXPECT_EQ(online.at(5), (std::vector<std::size_t>{0, 1}));
  // Online, a parameter nobody writes is still stored without a bound on the step count ...
  record::RestartSets unbounded(
      2, [&](Step i) { return diffusion.access(i); }, record::Horizon{0});
  EXPECT_EQ(unbounded.at(3), (std::vector<std::size_t>{0, 1}));
  // ... and left out, as offline, with one.
  record::RestartSets bounded(
      2, [&](Step i) { return diffusion.access(i); }, record::Horizon{0, 1000});
  EXPECT_EQ(bounded.at(3), std::vector<std::size_t>{0});
  bounded.set_steps(kSteps);
  EXPECT_EQ(bounded.at(3), std::vector<std::size_t>{0});
}

TEST(RestartSets, KeepEachDistinctSetOnceAndTheirReferencesValid) {
  // A run recomputes through every boundary: a set per boundary grew with the step count. Each
  // distinct set is kept once, and a reference at() returned stays valid however many
  // boundaries come after it (past the bounded cache of recent boundaries).
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Leapfrog leapfrog(ring, 0.005);
  constexpr Step n = 20000;
  record::RestartSets sets(
      2, [&](Step i) { return leapfrog.access(i); }, record::Horizon{n});
  const std::vector<std::size_t>& first = sets.at(0);
  const std::vector<std::size_t>& second = sets.at(1);
  for (Step b = 2; b < n; ++b) {
    ASSERT_EQ(&sets.at(b), &second) << "boundary " << b << " has a set of its own";
  }
  EXPECT_EQ(first, std::vector<std::size_t>{1});
  EXPECT_EQ(second, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(&sets.at(0), &first);  // computed again after the cache dropped it: the same set
  EXPECT_EQ(&sets.at(n - 1), &second);
  // A moved object keeps them; nothing can copy it (a copy's cache would point into this one).
  static_assert(!std::is_copy_constructible_v<record::RestartSets>);
  static_assert(!std::is_copy_assignable_v<record::RestartSets>);
  record::RestartSets moved = std::move(sets);
  EXPECT_EQ(&moved.at(1), &second);
}

TEST(Engine, StoresOnlyTheRestartSet) {
  const Ring ring(MPI_COMM_WORLD, 40);
  DiffusionDecay diffusion(ring, 0.05);
  const auto [g, stats] = adjoint(diffusion, config("revolve", 5, 0));
  // Restart checkpoints hold x only (p is a parameter); pullback data is in WORK.
  EXPECT_EQ(stats.ram.bytes_written, stats.ram.writes * ring.local() * 8);
}

TEST(Engine, StatisticsAreReportedInTextAndJson) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const EngineConfig c = config("revolve", 4, 0);
  auto sched = schedule::make_schedule("revolve", c.params);
  const auto sim = schedule::simulate(*sched, c.params);
  const auto [g, stats] = adjoint(l96, c);
  EXPECT_EQ(stats.ram.peak_bytes, stats.ram.peak * ring.local() * 8);
  EXPECT_NE(stats.json().find("\"recomputed\": " + std::to_string(sim.recomputed())),
            std::string::npos);
  EXPECT_NE(stats.json().find("\"peak_bytes\": " + std::to_string(stats.ram.peak_bytes)),
            std::string::npos);
  EXPECT_NE(stats.summary().find("schedule revolve: 30 steps"), std::string::npos);
}

// The reverse sweep starts every disk read ahead, and the statistics say how many it started,
// how many were still running when needed, and how many the staging pool had no room for.
TEST(Engine, DiskReadsAreStartedAheadAndCounted) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  for (const auto& [schedule, ram] : {std::pair{"storeall", 1}, std::pair{"twolevel", 2}}) {
    EngineConfig c = config(schedule, ram, kUnlimited);
    c.store.inline_io_bytes = 0;  // through the I/O thread, however small
    const auto [g, stats] = adjoint(l96, c);
    ASSERT_GT(stats.disk.reads, 0) << schedule;
    EXPECT_EQ(stats.prefetch.hits, stats.disk.reads) << schedule << ": a read was not prefetched";
    EXPECT_LE(stats.prefetch.late, stats.prefetch.hits) << schedule;
    EXPECT_EQ(stats.prefetch.skipped, 0) << schedule;
    EXPECT_NE(stats.json().find("\"prefetch\": {\"hits\": " + std::to_string(stats.prefetch.hits)),
              std::string::npos)
        << stats.json();
    c.store.async_io = false;  // nothing to start ahead
    EXPECT_EQ(adjoint(l96, c).second.prefetch.hits, 0) << schedule;
  }
}

// Settings that differ between ranks would plan different schedules and hang; they are refused
// by name on every rank instead.
TEST(Engine, SettingsThatDifferBetweenRanksAreRefusedByName) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  const auto expect_refused = [&](EngineConfig c, const std::string& name) {
    std::string what;
    try {
      Engine engine(l96, c);
    } catch (const Error& e) {
      what = e.what();
    }
    EXPECT_TRUE(all_ranks(what.find(name + " differs between ranks") != std::string::npos)) << what;
  };
  EngineConfig c = config("revolve", rank == 1 ? 4 : 3, 0);
  expect_refused(c, "RecordingConfig::params.ram");
  c = config(rank == 1 ? "twolevel" : "revolve", 3, 0);
  expect_refused(c, "RecordingConfig::schedule");
  c = config("auto", 10, 0);
  c.ram_bytes = rank == 1 ? 1e6 : 2e6;
  expect_refused(c, "RecordingConfig::ram_bytes");
  c = config("auto", 3, 5);
  c.params.steps = rank == 1 ? 0 : kSteps;
  expect_refused(c, "RecordingConfig::params.steps");
}

TEST(Engine, BadInputIsAClearErrorWhenTheEngineIsMade) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  auto expect_error = [&](EngineConfig c, const std::string& needle) {
    std::string what;
    try {
      Engine engine(l96, c);  // no run(): the constructor checks
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
  EngineConfig bytes = config("revolve", 3, 0);
  bytes.ram_bytes = 7;
  expect_error(bytes, "RecordingConfig::ram_bytes 7 holds no checkpoint");
}

// A stepper that does not say when an online run ends gets an error, not an endless run.
TEST(Engine, OnlineRunWithoutFinishedIsAnError) {
  const Ring ring(MPI_COMM_WORLD, 40);
  struct NoFinish final : engine::Stepper {
    std::vector<double> x = std::vector<double>(4, 1.0);
    std::vector<Field> state() override { return {{"x", x, 0, 4}}; }
    std::vector<Field> pullback() override { return {}; }
    void forward(Step, const StepContext&) override {}
    void adjoint(Step) override {}
  } stepper;
  EngineConfig c = config("online", 3, 0);
  c.params.steps = 0;
  c.store.comm = MPI_COMM_SELF;
  std::string what;
  try {
    Engine engine(stepper, c);
    engine.run();
  } catch (const Error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("override finished()"), std::string::npos) << what;
}

// Nothing that decides where data goes has a silent default: a forgotten communicator (once
// MPI_COMM_SELF, which failed at 2 ranks with a message about block offsets) and a forgotten
// directory for a plan with disk slots (once the working directory) are refused, saying what to
// set; a RAM-only plan needs no directory; disk costs default to PETSc's (1 a checkpoint).
TEST(EngineDefaults, ForgottenCommunicatorOrDirectoryIsRefusedSayingWhatToSet) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const auto error_of = [&](const EngineConfig& c) {
    std::string what;
    try {
      Engine engine(l96, c);
    } catch (const Error& e) {
      what = e.what();
    }
    return what;
  };
  EngineConfig no_comm = config("revolve", 3, 0);
  no_comm.store.comm = EngineConfig{}.store.comm;
  const std::string comm_error = error_of(no_comm);
  EXPECT_TRUE(all_ranks(comm_error.find("StoreConfig::comm is not set") != std::string::npos))
      << comm_error;
  EXPECT_NE(comm_error.find("MPI_COMM_SELF for a stepper on one rank"), std::string::npos);

  EngineConfig no_dir = config("twolevel", 2, 4);
  no_dir.store.directory = EngineConfig{}.store.directory;
  const std::string dir_error = error_of(no_dir);
  EXPECT_TRUE(all_ranks(dir_error.find("no directory is set") != std::string::npos)) << dir_error;
  EXPECT_NE(dir_error.find("StoreConfig::directory"), std::string::npos) << dir_error;

  // RAM only: no directory needed, and the gradient is store-all's.
  EngineConfig ram_only = config("revolve", 3, 0);
  ram_only.store.directory.clear();
  const auto reference = adjoint(l96, storeall_config());
  const auto ram_run = adjoint(l96, ram_only);
  EXPECT_TRUE(all_ranks(bitwise_equal(reference.first, ram_run.first)));

  const EngineConfig defaults;
  EXPECT_EQ(defaults.params.write_cost, 1.0);
  EXPECT_EQ(defaults.params.read_cost, 1.0);
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
  EXPECT_EQ(rewind_files(c.store.directory), 0)
      << "a failed run left checkpoint files in " << c.store.directory;
}

EngineConfig disk_config(const std::string& dir, bool async) {
  EngineConfig c = config("storeall", 1, kUnlimited);
  c.store.directory = dir;
  c.store.async_io = async;
  if (MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS) std::filesystem::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  return c;
}

class EngineFailures : public ::testing::TestWithParam<bool> {};  // async I/O off, on

TEST_P(EngineFailures, DiskFullDuringTheRunIsAnErrorOnEveryRank) {
  const Ring ring(MPI_COMM_WORLD, 4000);
  Lorenz96Rk4 l96(ring, 0.01);
  const EngineConfig c = disk_config(scratch_dir() + "/full", GetParam());
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

// Overwrites the middle of every file in `dir` (rank 0), between barriers.
void corrupt_files(const std::string& dir) {
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
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

// loaded() tells a stepper its buffers changed (PETSc then restarts multistep/FSAL history), so
// it must come only with real restores: never in the first sweep, even when the schedule moves
// checkpoints between RAM and disk there.
class LoadWatcher final : public ForwardingStepper {
 public:
  explicit LoadWatcher(TestStepper& inner) : ForwardingStepper(inner) {}
  void begin_adjoint(std::span<const double> seed) override {
    in_reverse = true;
    inner_.begin_adjoint(seed);
  }
  void loaded(engine::Kind) override {
    (in_reverse ? loads_in_reverse : loads_in_first_sweep) += 1;
  }
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

// The first sweep's checkpoints are flushed (so no write still in flight repairs the damage),
// the file is damaged, and the reverse sweep must fail on every rank instead of using it.
TEST_P(EngineFailures, CorruptedCheckpointIsAnErrorOnEveryRankNotAWrongGradient) {
  const Ring ring(MPI_COMM_WORLD, 4000);
  Lorenz96Rk4 l96(ring, 0.01);
  const EngineConfig c = disk_config(scratch_dir() + "/corrupt", GetParam());
  engine::StoresConfig sc;
  sc.store = c.store;
  auto stores = std::make_shared<engine::Stores>(sc);
  std::string what;
  {
    l96.reset(0.0);
    engine::Recording recording(l96, stores, c);
    recording.record();
    stores->disk().flush();
    corrupt_files(c.store.directory);
    try {
      recording.reverse();
    } catch (const Error& e) {
      what = e.what();
      stores->abandon();
    }
  }
  stores.reset();
  EXPECT_TRUE(all_ranks(what.find("checksum") != std::string::npos)) << what;
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(rewind_files(c.store.directory), 0);
}

INSTANTIATE_TEST_SUITE_P(AsyncIo, EngineFailures, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "async" : "sync"; });

}  // namespace
}  // namespace rwd::testing
