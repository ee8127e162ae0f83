// Resumable runs (EngineConfig::resume) in one process: bitwise against store-all, the files
// they leave, what they refuse, the replay check across intervals, and a run that failed and is
// resumed. The kills (SIGKILL to mpirun) are in kill_resume.sh.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "engine_test_util.hpp"
#include "rewind/engine/manifest.hpp"

namespace rwd::testing {
namespace {

namespace fs = std::filesystem;

EngineConfig resumable(const std::string& sub, std::int64_t ram, Step interval,
                       std::int64_t disk = kUnlimited) {
  EngineConfig c = config("auto", ram, disk);
  c.store.directory = scratch_dir("resume-" + sub);
  c.store.label = "resume-test";
  c.resume.enabled = true;
  c.resume.interval = interval;
  c.resume.identity = "resume_test";
  return c;
}

// A resumable configuration in an empty directory (a failed test may have left files).
EngineConfig fresh_resumable(const std::string& sub, std::int64_t ram, Step interval) {
  EngineConfig c = resumable(sub, ram, interval);
  if (world_rank() == 0) {
    for (const auto& e : fs::directory_iterator(c.store.directory)) fs::remove(e.path());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return c;
}

std::string manifest_of(const EngineConfig& c) {
  return (fs::path(c.store.directory) / "rewind-resume_test.resume").string();  // label sanitised
}

// The manifest's text as it is on disk ("" if there is none).
std::string manifest_text(const EngineConfig& c) {
  std::ifstream in(manifest_of(c));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What a run from x_0 throws (an rwd::Error, or the stepper's own exception), or "".
std::string error_of(TestStepper& s, const EngineConfig& c) {
  try {
    s.reset(0.0);
    Engine engine(s, c);
    engine.run();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// Runs `c` (resuming if it says so) and expects store-all's bits, the step it went on from (-1:
// from x_0) and no rewind file left in its directory. Returns the run's statistics.
RunStats expect_bitwise_and_clean(TestStepper& s, const EngineConfig& c,
                                  const std::vector<double>& reference, Step resumed_at) {
  const auto [gradient, stats] = adjoint(s, c);
  EXPECT_TRUE(all_ranks(bitwise_equal(gradient, reference)));
  EXPECT_EQ(stats.resumed_at, resumed_at);
  EXPECT_EQ(rewind_files(c.store.directory), 0);
  return stats;
}

// Throws at adjoint step `at` on every rank, once.
class FailsOnce final : public ForwardingStepper {
 public:
  FailsOnce(TestStepper& inner, Step at) : ForwardingStepper(inner), at_(at) {}
  void adjoint(Step i) override {
    if (i == at_) {
      at_ = -1;
      throw std::runtime_error("the adjoint solver diverged");
    }
    inner_.adjoint(i);
  }

 private:
  Step at_;
};

// Throws at first-sweep step `at` on every rank, once (a run killed in its first sweep).
class FailsForwardOnce final : public ForwardingStepper {
 public:
  FailsForwardOnce(TestStepper& inner, Step at) : ForwardingStepper(inner), at_(at) {}
  void forward(Step i, const StepContext& c) override {
    if (i == at_ && !c.recompute) {
      at_ = -1;
      throw std::runtime_error("the solver diverged");
    }
    inner_.forward(i, c);
  }

 private:
  Step at_;
};

// Takes a different step the second time it takes step `at` (a model changed behind rewind), on
// every rank, or on rank `rank` only.
class ChangesOnReplay final : public ForwardingStepper {
 public:
  ChangesOnReplay(TestStepper& inner, Step at, int rank = -1)
      : ForwardingStepper(inner), at_(at), rank_(rank) {}
  void forward(Step i, const StepContext& c) override {
    inner_.forward(i, c);
    if (i == at_ && c.recompute && (rank_ < 0 || rank_ == world_rank())) {
      inner_.state()[0].data[0] += 1e-12;
    }
  }

 private:
  Step at_;
  int rank_;
};

TEST(Resume, ResumableRunsAreBitwiseStoreAllAndLeaveNothing) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  DiffusionDecay diffusion(ring, 0.2);
  for (TestStepper* s : {static_cast<TestStepper*>(&l96), static_cast<TestStepper*>(&diffusion)}) {
    const auto [reference, ref_stats] = adjoint(*s, storeall_config());
    // Intervals of one step, uneven (30 = 4 * 7 + 2), half the run and the whole run; RAM from 1.
    for (const auto& [interval, ram] : std::vector<std::pair<Step, std::int64_t>>{
             {1, 1}, {7, 1}, {7, 3}, {15, 2}, {30, 4}, {30, 30}}) {
      for (bool async : {true, false}) {
        EngineConfig c = fresh_resumable("fresh", ram, interval);
        c.store.async_io = async;
        const auto [gradient, stats] = adjoint(*s, c);
        EXPECT_TRUE(all_ranks(bitwise_equal(gradient, reference)))
            << "interval " << interval << ", RAM " << ram << ", async " << async;
        EXPECT_EQ(stats.steps, kSteps);
        EXPECT_EQ(stats.adjoint_steps, kSteps);
        EXPECT_EQ(stats.resumed_at, -1);
        EXPECT_GE(stats.forward_steps, kSteps);
        EXPECT_EQ(rewind_files(c.store.directory), 0) << "interval " << interval;
      }
    }
  }
}

TEST(Resume, AFailedRunIsResumedFromItsLastDurableAdjointState) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const auto [reference, ref_stats] = adjoint(l96, storeall_config());
  EngineConfig c = fresh_resumable("failed", 2, 5);
  FailsOnce failing(l96, 12);
  const std::string what = error_of(failing, c);  // the stepper's own exception comes through
  EXPECT_NE(what.find("the adjoint solver diverged"), std::string::npos) << what;
  // What it made durable stays, listed in its manifest: x_0, x_5, x_10 and the adjoint at 15.
  ASSERT_TRUE(all_ranks(fs::exists(manifest_of(c))));
  const std::string text = manifest_text(c);
  const engine::Manifest m = engine::parse_manifest(text, manifest_of(c));
  ASSERT_EQ(m.states.size(), 3u);
  EXPECT_EQ(m.states.back().step, 10);
  ASSERT_TRUE(m.reverse.has_value());
  EXPECT_EQ(m.reverse->step, 15);

  // Without resume it is refused and left alone; with it, the run goes on from the adjoint at 15.
  l96.reset(0.0);
  const std::string refused = error_of(l96, c);
  EXPECT_TRUE(all_ranks(refused.find("not told to resume it") != std::string::npos)) << refused;
  EXPECT_TRUE(all_ranks(fs::exists(manifest_of(c))));
  c.resume.resume = true;
  const RunStats stats = expect_bitwise_and_clean(l96, c, reference, 15);
  EXPECT_TRUE(stats.resumed_in_reverse);
  EXPECT_EQ(stats.adjoint_steps, 15);
  EXPECT_NE(stats.summary().find("resumed at step 15 of the reverse sweep"), std::string::npos);
  EXPECT_NE(stats.json().find("\"resumed_at\": 15"), std::string::npos);
  // With nothing left to resume, resume starts at x_0.
  const auto [again, again_stats] = adjoint(l96, c);
  EXPECT_TRUE(all_ranks(bitwise_equal(again, reference)));
  EXPECT_EQ(again_stats.resumed_at, -1);
}

// A resumed run whose model differs only where the interval it checked first does not show it:
// it fails at a later replay check, after it made an adjoint state durable. What it made durable
// goes; the killed run's manifest is put back as it was, and the right program resumes it.
TEST(Resume, AResumeThatFailsLaterPutsTheKilledRunsManifestBack) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const auto [reference, ref_stats] = adjoint(l96, storeall_config());
  EngineConfig c = fresh_resumable("putback", 2, 5);
  FailsOnce failing(l96, 12);
  error_of(failing, c);  // leaves x_0, x_5, x_10 and the adjoint at 15
  const std::string killed = manifest_text(c);
  ASSERT_FALSE(killed.empty());
  c.resume.resume = true;
  // [10, 15) is the same, [5, 10) is not, and on the last rank only: every rank must stop.
  ChangesOnReplay changing(l96, 7, world_size() - 1);
  l96.reset(0.0);
  const std::string what = error_of(changing, c);
  EXPECT_TRUE(
      all_ranks(what.find("the state recomputed at step 10 differs") != std::string::npos &&
                what.find("the killed run's manifest is put back as it was") != std::string::npos))
      << what;
  EXPECT_EQ(manifest_text(c), killed);
  expect_bitwise_and_clean(l96, c, reference, 15);
}

// Killed in its first sweep and resumed by a program whose model differs on one rank only: the
// interval before the durable state it would go on from, taken again first, does not reach it
// there, and every rank is refused before anything is made durable; the right program resumes.
TEST(Resume, AResumedFirstSweepChecksTheProgramFirstOnEveryRank) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const auto [reference, ref_stats] = adjoint(l96, storeall_config());
  EngineConfig c = fresh_resumable("check", 2, 5);
  FailsForwardOnce killed(l96, 12);
  const std::string why = error_of(killed, c);  // leaves x_0, x_5 and x_10
  ASSERT_NE(why.find("the solver diverged"), std::string::npos) << why;
  const std::string text = manifest_text(c);
  ASSERT_EQ(engine::parse_manifest(text, manifest_of(c)).states.back().step, 10);
  c.resume.resume = true;
  ChangesOnReplay other(l96, 7, world_size() - 1);
  const std::string what = error_of(other, c);
  EXPECT_TRUE(all_ranks(what.find("this run took the killed run's steps 5 to 10 again from its "
                                  "durable state and reached another state") != std::string::npos))
      << what;
  EXPECT_EQ(manifest_text(c), text);
  expect_bitwise_and_clean(l96, c, reference, 10);
}

// The usual shape of a program that reports an error and goes on: the Engine outlives the
// exception, so its stores close normally instead of while unwinding. The durable states must
// survive that close (the store's file has a second name, which closing must not empty).
TEST(Resume, AFailedRunWhoseEngineOutlivesTheErrorStaysResumable) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const auto [reference, ref_stats] = adjoint(l96, storeall_config());
  EngineConfig c = fresh_resumable("outlives", 2, 5);
  FailsOnce failing(l96, 12);
  l96.reset(0.0);
  {
    Engine engine(failing, c);
    std::string what;
    try {
      engine.run();
    } catch (const std::exception& e) {
      what = e.what();
    }
    EXPECT_NE(what.find("the adjoint solver diverged"), std::string::npos) << what;
  }  // destroyed here, not while unwinding
  c.resume.resume = true;
  expect_bitwise_and_clean(l96, c, reference, 15);
}

TEST(Resume, AStepperThatChangesOnReplayIsStoppedNamingTheStep) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const EngineConfig c = fresh_resumable("replay", 2, 5);
  ChangesOnReplay changing(l96, 13);
  const std::string what = error_of(changing, c);
  EXPECT_TRUE(all_ranks(what.find("the state recomputed at step 15 differs from the first "
                                  "sweep's in field 'x'") != std::string::npos))
      << what;
  // What it made durable cannot be trusted: nothing is left for a later run to resume, which
  // starts at x_0.
  EXPECT_TRUE(all_ranks(what.find("the manifest and the durable checkpoints are removed") !=
                        std::string::npos))
      << what;
  EXPECT_EQ(rewind_files(c.store.directory), 0);
  EngineConfig again = c;
  again.resume.resume = true;
  const auto [reference, ref_stats] = adjoint(l96, storeall_config());
  expect_bitwise_and_clean(l96, again, reference, -1);
}

TEST(Resume, BadSettingsAreRefusedSayingWhatToSet) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const auto expect = [&](const EngineConfig& c, const std::string& text) {
    const std::string what = error_of(l96, c);
    EXPECT_TRUE(all_ranks(what.find(text) != std::string::npos)) << what << "\nwanted: " << text;
  };
  EngineConfig online = resumable("bad", 3, 5);
  online.params.steps = 0;
  expect(online, "needs the step count (params.steps)");
  EngineConfig no_dir = resumable("bad", 3, 5);
  no_dir.store.directory.clear();
  expect(no_dir, "set StoreConfig::directory");
  expect(resumable("bad", 3, 0), "params.disk is unlimited: set the interval or a disk budget");
  expect(resumable("bad", 3, -2), "ResumeConfig::interval must be >= 0");
  expect(resumable("bad", 3, 2, 10), "raise the interval (or 0 for the smallest that fits)");
  expect(resumable("bad", 3, 0, 1), "params.disk must be >= 2");
  EngineConfig not_enabled = resumable("bad", 3, 5);
  not_enabled.resume.enabled = false;
  not_enabled.resume.resume = true;
  expect(not_enabled, "ResumeConfig::resume is set and ResumeConfig::enabled is not");
  EngineConfig bogus = resumable("bad", 3, 5);
  bogus.schedule = "bogus";
  expect(bogus, "a resumable run plans each interval with the RAM budget alone");
  EngineConfig ram_store = resumable("bad", 3, 5);
  ram_store.disk_store = "ram";
  expect(ram_store, "in the \"hdf5\" disk store");
  EngineConfig differs = resumable("bad", 3, 5);
  differs.resume.identity = world_rank() == 0 ? "a" : "b";
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) {
    expect(differs, "ResumeConfig::identity differs between ranks");
  }
  EngineConfig steps_differ = resumable("bad", 3, 5);
  steps_differ.params.steps = world_rank() == 0 ? kSteps : kSteps - 5;
  if (size > 1) expect(steps_differ, "params.steps differs between ranks");
  // No adjoint state on the last rank only: an error on every rank, not a rank left waiting.
  class NoAdjointStateOnOneRank final : public ForwardingStepper {
   public:
    using ForwardingStepper::ForwardingStepper;
    std::vector<Field> adjoint_state() override {
      int rank = 0, size = 1;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Comm_size(MPI_COMM_WORLD, &size);
      return rank == size - 1 ? std::vector<Field>{} : inner_.adjoint_state();
    }
  } one_rank(l96);
  {
    const std::string what = error_of(one_rank, resumable("bad", 3, 5));
    EXPECT_TRUE(all_ranks(what.find("has no Stepper::adjoint_state()") != std::string::npos))
        << what;
  }
  // A stepper without adjoint_state(): DiffusionDecay's fields wrapped without it.
  class NoAdjointState final : public engine::Stepper {
   public:
    explicit NoAdjointState(TestStepper& s) : s_(s) {}
    std::vector<Field> state() override { return s_.state(); }
    std::vector<Field> pullback() override { return s_.pullback(); }
    void forward(Step i, const StepContext& c) override { s_.forward(i, c); }
    void adjoint(Step i) override { s_.adjoint(i); }

   private:
    TestStepper& s_;
  } bare(l96);
  std::string what;
  try {
    Engine engine(bare, resumable("bad", 3, 5));
  } catch (const Error& e) {
    what = e.what();
  }
  EXPECT_TRUE(all_ranks(what.find("has no Stepper::adjoint_state()") != std::string::npos)) << what;
  EXPECT_EQ(rewind_files(resumable("bad", 3, 5).store.directory), 0);
}

}  // namespace
}  // namespace rwd::testing
