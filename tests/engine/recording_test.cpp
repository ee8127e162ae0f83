// Recording tests under MPI (1, 2, 4 ranks): recordings parked while the stepper runs other work
// and reversed later, several recordings sharing one set of stores (one budget, one file),
// spilling a parked recording to disk, what a stepper is told, and the recording's life-cycle
// errors. Every gradient is compared bit for bit with a run of the same task on its own.
#include <gtest/gtest.h>
#include <mpi.h>
#include <algorithm>

#include <filesystem>
#include <functional>
#include <memory>
#include <tuple>

#include "engine_test_util.hpp"
#include "rewind/engine/recording.hpp"
#include "rewind/engine/room.hpp"
#include "rewind/error.hpp"

namespace rwd::testing {
namespace {

using engine::Phase;
using engine::Recording;
using engine::Stores;
using engine::StoresConfig;

StoresConfig stores_config(const std::string& sub, bool async = true) {
  StoresConfig c;
  c.store.comm = MPI_COMM_WORLD;
  c.store.directory = scratch_dir(sub);
  c.store.label = "recording-test";
  c.store.async_io = async;
  return c;
}

// The gradient of one task run on its own: the initial state and parameter perturbed by h.
std::vector<double> alone(TestStepper& s, double h, const EngineConfig& c) {
  s.reset(h);
  Engine engine(s, c);
  engine.run();
  return s.gradient();
}

struct Stepper3 {
  const char* name;
  std::function<std::unique_ptr<TestStepper>(const Ring&)> make;
};

const Stepper3 kSteppers[] = {
    {"lorenz96_rk4", [](const Ring& r) { return std::make_unique<Lorenz96Rk4>(r, 0.01); }},
    {"diffusion_decay", [](const Ring& r) { return std::make_unique<DiffusionDecay>(r, 0.05); }},
    {"lorenz96_leapfrog",
     [](const Ring& r) { return std::make_unique<Lorenz96Leapfrog>(r, 0.005); }},
};

struct ParkCase {
  Stepper3 stepper;
  std::int64_t ram, disk;
};

void PrintTo(const ParkCase& c, std::ostream* os) {
  *os << c.stepper.name << " ram=" << c.ram << " disk=" << c.disk;
}

class Parking : public ::testing::TestWithParam<ParkCase> {};

// Two tasks on one stepper: A is recorded and parked, B (other initial state and, for the
// diffusion stepper, another parameter field no restart set holds) is recorded and parked on
// the same buffers, then A and B are reversed. Each gradient is the one of its task alone.
TEST_P(Parking, ParkedRecordingIsReversedAfterAnotherTaskRanOnTheSameStepper) {
  const Ring ring(MPI_COMM_WORLD, 40);
  auto stepper = GetParam().stepper.make(ring);
  EngineConfig c = config("auto", GetParam().ram, GetParam().disk);
  c.store.directory = scratch_dir("parking");
  const std::vector<double> ga = alone(*stepper, 0.0, c);
  const std::vector<double> gb = alone(*stepper, 0.01, c);
  ASSERT_FALSE(bitwise_equal(ga, gb));

  auto stores = std::make_shared<Stores>(stores_config("parking"));
  stepper->reset(0.0);
  Recording a(*stepper, stores, c);
  a.record();
  EXPECT_EQ(a.phase(), Phase::Recorded);
  a.park();
  EXPECT_EQ(a.phase(), Phase::Parked);
  stepper->reset(0.01);
  Recording b(*stepper, stores, c);
  EXPECT_NE(a.id(), b.id());
  b.record();
  b.park();
  EXPECT_GE(stores->ram().stats().live, 2) << "both parked recordings hold their final states";

  const engine::RunStats sa = a.reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(stepper->gradient(), ga)));
  EXPECT_EQ(sa.parks, 1);
  EXPECT_EQ(a.phase(), Phase::Done);
  b.reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(stepper->gradient(), gb)));
  EXPECT_EQ(stores->ram().stats().live, 0);
  stores->close();
}

// The same, with A's RAM checkpoints moved to the disk store while it is parked.
TEST_P(Parking, SpilledRecordingIsReversedFromDisk) {
  const Ring ring(MPI_COMM_WORLD, 40);
  auto stepper = GetParam().stepper.make(ring);
  EngineConfig c = config("auto", GetParam().ram, GetParam().disk);  // spills need no disk slots
  c.store.directory = scratch_dir("spill");
  const std::vector<double> ga = alone(*stepper, 0.0, c);
  const std::vector<double> gb = alone(*stepper, 0.01, c);

  auto stores = std::make_shared<Stores>(stores_config("spill"));
  stepper->reset(0.0);
  Recording a(*stepper, stores, c);
  a.record();
  a.park();
  const std::int64_t ram_before = stores->ram().stats().live;
  a.spill();
  EXPECT_EQ(stores->ram().stats().live, 0);
  EXPECT_EQ(stores->claimed().ram, 0);
  EXPECT_GT(stores->disk().stats().live, 0);
  EXPECT_GE(ram_before, 1);
  stepper->reset(0.01);
  Recording b(*stepper, stores, c);
  b.record();
  b.park();
  a.reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(stepper->gradient(), ga)));
  b.reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(stepper->gradient(), gb)));
  stores->close();
}

// A parked recording is reversed by a new stepper object for the same task (the first one is
// gone): everything the reverse needs was in the stores.
TEST_P(Parking, ParkedRecordingIsReversedByANewStepperObject) {
  const Ring ring(MPI_COMM_WORLD, 40);
  auto stepper = GetParam().stepper.make(ring);
  EngineConfig c = config("auto", GetParam().ram, GetParam().disk);
  c.store.directory = scratch_dir("attach");
  const std::vector<double> ga = alone(*stepper, 0.0, c);
  auto stores = std::make_shared<Stores>(stores_config("attach"));
  stepper->reset(0.0);
  Recording a(*stepper, stores, c);
  a.record();
  a.park();
  stepper.reset();
  auto other = GetParam().stepper.make(ring);
  other->reset(0.37);  // different buffers, different contents
  a.attach(*other);
  a.reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(other->gradient(), ga)));
  stores->close();
}

// A parked recording is spilled after its stepper object is gone (an ensemble task's tape: the
// task is destroyed once its forward ends), then reversed by a new stepper object. The spill
// must not touch the old stepper (it once sized its copies from the stepper's buffers: a use
// after free that crashed ensembles whose groups spilled).
TEST_P(Parking, ParkedRecordingIsSpilledAfterItsStepperIsGone) {
  const Ring ring(MPI_COMM_WORLD, 40);
  auto stepper = GetParam().stepper.make(ring);
  EngineConfig c = config("auto", GetParam().ram, GetParam().disk);
  c.store.directory = scratch_dir("spill-gone");
  const std::vector<double> ga = alone(*stepper, 0.0, c);
  auto stores = std::make_shared<Stores>(stores_config("spill-gone"));
  stepper->reset(0.0);
  Recording a(*stepper, stores, c);
  a.record();
  a.park();
  // Poison the buffers before they are freed, so that a read through a dangling view would at
  // least see wrong sizes or values even without a sanitizer.
  for (auto& f : stepper->state()) std::fill(f.data.begin(), f.data.end(), -1.0);
  for (auto& f : stepper->pullback()) std::fill(f.data.begin(), f.data.end(), -1.0);
  stepper.reset();
  a.spill();
  EXPECT_EQ(stores->ram().stats().live, 0);
  auto other = GetParam().stepper.make(ring);
  other->reset(0.37);
  a.attach(*other);
  a.reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(other->gradient(), ga)));
  stores->close();
}

// Thinned recordings (every checkpoint but the first restart checkpoint, the pullback data
// before it and the last step's data given back) share stores whose RAM capacity is one plan's
// budget plus three: A is recorded, parked and thinned, which leaves B the whole budget; B is
// thinned before it is parked (its park then holds a few checkpoints, not its budget plus two);
// then each is reversed, planning its remaining steps again over what the stores grant then.
// Both gradients are their tasks' alone. "mixed" may keep step 0's pullback data instead of x_0.
void thinned_pair(const char* schedule, const ParkCase& param) {
  const Ring ring(MPI_COMM_WORLD, 40);
  auto stepper = param.stepper.make(ring);
  const bool mixed = std::string(schedule) == "mixed";
  EngineConfig c = config(schedule, mixed ? 5 : param.ram, param.disk);
  if (mixed) {  // 12 steps in 5 slots: it keeps step 0's pullback data, and x_1, not x_0
    c.slot_size = engine::SlotSize::Any;
    c.params.steps = 12;
  }
  c.store.directory = scratch_dir("thin");
  const std::vector<double> ga = alone(*stepper, 0.0, c);
  const std::vector<double> gb = alone(*stepper, 0.01, c);
  StoresConfig sc = stores_config("thin");
  stepper->reset(0.0);
  const engine::Plan planned = engine::plan_for(*stepper, MPI_COMM_WORLD, c);
  // Room for one full plan and a thinned one (which holds at most 4 checkpoints when planned in
  // slots; with checkpoint sizes, the data of the steps before the first restart checkpoint).
  const bool sized = planned.params.ram_units > 0;
  sc.ram = engine::claim_of(planned).ram + (sized ? 2 * planned.params.ram : 4);
  auto stores = std::make_shared<Stores>(sc);
  std::vector<std::unique_ptr<Recording>> runs;
  for (double h : {0.0, 0.01}) {
    stepper->reset(h);
    runs.push_back(std::make_unique<Recording>(*stepper, stores, c));
    Recording& r = *runs.back();
    r.record();
    if (r.plan().schedule == "storeall" || r.whole()) {  // no restart checkpoint to keep
      EXPECT_THROW(r.thin(), Error);
      return;
    }
    engine::Claim held;
    if (h == 0.0) {
      r.park();
      held = r.thin();
    } else {
      r.thin();
      if (!sized) {
        EXPECT_LE(r.park_claim().ram, 4);
      }
      r.park();
      held = r.claim();
    }
    EXPECT_TRUE(r.thinned());
    // The first restart checkpoint, at most one step's data before it, the last step's data and
    // the final state (these steppers keep fields no restart checkpoint holds, which only the
    // final state brings back).
    if (r.plan().params.ram_units > 0) {
      // Planned with checkpoint sizes, `mixed` records the data of several steps before its
      // first restart checkpoint (smaller checkpoints fit more): thinning keeps them, within
      // the plan's bytes, with the final state and the last step's data beside them.
      EXPECT_LE(held.ram_bytes,
                r.plan().ram_bytes_bound +
                    static_cast<double>(r.plan().sizes.state + r.plan().sizes.pullback));
    } else {
      EXPECT_LE(held.ram + held.disk, 4);
      EXPECT_LE(stores->claimed().ram, 4 * static_cast<std::int64_t>(runs.size()));
    }
  }
  const engine::RunStats sa = runs[0]->reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(stepper->gradient(), ga)));
  if (!sized) {
    EXPECT_GE(sa.rerecorded_steps, c.params.steps - 2);
  }
  EXPECT_LE(sa.rerecorded_steps, sa.recomputed());
  EXPECT_FALSE(runs[0]->thinned());
  runs[1]->reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(stepper->gradient(), gb)));
  EXPECT_EQ(stores->ram().stats().live, 0);
  EXPECT_EQ(stores->claimed().ram, 0);
  stores->close();
}

TEST_P(Parking, ThinnedRecordingsArePlannedAgainAndStayBitwise) {
  for (const char* schedule : {"auto", "mixed"}) {
    if (std::string(schedule) == "mixed" && GetParam().disk != 0) continue;  // RAM only
    SCOPED_TRACE(schedule);
    thinned_pair(schedule, GetParam());
  }
}

// Online recordings of 1 to 4 steps (the step count learnt at the end, as with events or
// adaptive steps), each thinned with its last step's data kept, then parked and reversed. The
// reverse of a 1-step one is its kept step alone: until 2026-11-27 it then followed the online
// plan it was thinned from, which frees x_1, and stopped with "reads restart 1 ... from ram
// where it is not held" (PETSc 3.22's ex3sa: an event segment of one step).
TEST_P(Parking, ThinnedOnlineRecordingsOfFewStepsAreReversed) {
  for (Step n = 1; n <= 4; ++n) {
    SCOPED_TRACE("steps " + std::to_string(n));
    const Ring ring(MPI_COMM_WORLD, 40);
    auto stepper = GetParam().stepper.make(ring);
    EngineConfig c = config("auto", GetParam().ram, GetParam().disk);
    c.params.steps = 0;  // online: the stepper says when the run ends
    c.store.directory = scratch_dir("thin-online");
    stepper->stop_at = n;
    const std::vector<double> g = alone(*stepper, 0.0, c);
    auto stores = std::make_shared<Stores>(stores_config("thin-online"));
    stepper->reset(0.0);
    Recording r(*stepper, stores, c);
    r.record();
    ASSERT_EQ(r.steps(), n);
    r.thin();
    r.park();
    r.reverse();
    EXPECT_TRUE(all_ranks(bitwise_equal(stepper->gradient(), g)));
    EXPECT_EQ(stores->ram().stats().live, 0);
    EXPECT_EQ(stores->claimed().ram, 0);
    stores->close();
  }
}

std::vector<ParkCase> park_cases() {
  std::vector<ParkCase> out;
  for (const auto& s : kSteppers) {
    out.push_back({s, 3, 0});
    out.push_back({s, 2, 5});
    out.push_back({s, 1, kUnlimited});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Steppers, Parking, ::testing::ValuesIn(park_cases()), [](const auto& p) {
  return std::string(p.param.stepper.name) + "_ram" + std::to_string(p.param.ram) + "_disk" +
         (p.param.disk < 0 ? std::string("inf") : std::to_string(p.param.disk));
});

// Three runs on three steppers share one RAM store, one HDF5 file and one RAM capacity of 10
// checkpoints: a third run that would exceed it is refused on every rank until another run
// gives RAM back.
TEST(SharedStores, SeveralRecordingsShareOneBudgetAndOneFile) {
  const Ring ring(MPI_COMM_WORLD, 40);
  const std::string dir = scratch_dir("shared");
  const EngineConfig c = [&] {
    EngineConfig e = config("auto", 4, 6);
    e.store.directory = dir;
    return e;
  }();
  std::vector<std::unique_ptr<TestStepper>> steppers;
  std::vector<std::vector<double>> reference;
  for (int k = 0; k < 3; ++k) {
    steppers.push_back(std::make_unique<Lorenz96Rk4>(ring, 0.01));
    reference.push_back(alone(*steppers.back(), 0.01 * k, c));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ASSERT_EQ(rewind_files(dir), 0);

  StoresConfig sc = stores_config("shared");
  sc.ram = 10;
  auto stores = std::make_shared<Stores>(sc);
  std::vector<std::unique_ptr<Recording>> runs;
  for (int k = 0; k < 2; ++k) {
    steppers[k]->reset(0.01 * k);
    runs.push_back(std::make_unique<Recording>(*steppers[k], stores, c));
    runs.back()->record();
  }
  EXPECT_EQ(stores->claimed().ram, 8);
  steppers[2]->reset(0.02);
  std::string refused;
  try {
    Recording third(*steppers[2], stores, c);
  } catch (const Error& e) {
    refused = e.what();
  }
  EXPECT_TRUE(all_ranks(refused.find("needs 4 RAM checkpoints, but the other recordings hold 8 of "
                                     "the capacity of 10") != std::string::npos))
      << refused;
  runs[0]->park();
  runs[0]->spill();  // its RAM is given back; it keeps running from the shared file
  EXPECT_EQ(stores->claimed().ram, 4);
  steppers[2]->reset(0.02);
  runs.push_back(std::make_unique<Recording>(*steppers[2], stores, c));
  runs.back()->record();
  EXPECT_LE(stores->claimed().ram, 10);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(rewind_files(dir), 1) << "the runs share one checkpoint file";

  for (int k = 2; k >= 0; --k) {
    runs[k]->reverse();
    EXPECT_TRUE(all_ranks(bitwise_equal(steppers[k]->gradient(), reference[k]))) << "run " << k;
  }
  EXPECT_EQ(stores->claimed().ram, 0);
  EXPECT_EQ(stores->ram().stats().live, 0);
  EXPECT_EQ(stores->disk().stats().live, 0);
  stores->close();
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(rewind_files(dir), 0);
}

// A recording destroyed before its reverse frees its RAM checkpoints at once and its disk ones
// at the stores' next collective call: the destructor itself never waits for other ranks.
TEST(SharedStores, DestroyedRecordingFreesItsCheckpoints) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  auto stores = std::make_shared<Stores>(stores_config("destroyed"));
  EngineConfig c = config("twolevel", 2, 6);
  {
    l96.reset(0.0);
    Recording r(l96, stores, c);
    r.record();
    r.park();
    EXPECT_GT(stores->ram().stats().live, 0);
    EXPECT_GT(stores->disk().stats().live, 0);
  }
  EXPECT_EQ(stores->ram().stats().live, 0);
  EXPECT_EQ(stores->claimed().ram, 0);
  EXPECT_GT(stores->disk().stats().live, 0);
  stores->collect();
  EXPECT_EQ(stores->disk().stats().live, 0);
  stores->close();
}

// What the stepper is told: which forward steps are first-sweep steps and which are
// recomputations, and the seed the caller passed.
class Watcher final : public ForwardingStepper {
 public:
  explicit Watcher(TestStepper& inner) : ForwardingStepper(inner) {}
  void forward(Step i, const StepContext& c) override {
    (c.recompute ? recomputed : first_sweep) += 1;
    if (!c.recompute) {
      EXPECT_EQ(i, first_sweep - 1) << "first-sweep steps come in order";
    }
    inner_.forward(i, c);
  }
  void begin_adjoint(std::span<const double> s) override {
    seed.assign(s.begin(), s.end());
    inner_.begin_adjoint(s);
  }
  Step first_sweep = 0, recomputed = 0;
  std::vector<double> seed;
};

TEST(Recording, StepperIsToldRecomputationsAndGetsTheSeed) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  Watcher w(l96);
  auto stores = std::make_shared<Stores>(stores_config("watch"));
  w.reset(0.0);
  Recording r(w, stores, config("revolve", 3, 0));
  r.record();
  const std::vector<double> seed = {1.5, -2.0, 0.25};
  const engine::RunStats stats = r.reverse(seed);
  EXPECT_EQ(w.first_sweep, kSteps);
  EXPECT_EQ(w.recomputed, stats.recomputed());
  EXPECT_GT(w.recomputed, 0);
  EXPECT_EQ(w.seed, seed);
}

TEST(Recording, LifeCycleErrorsSayWhatIsWrong) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  auto stores = std::make_shared<Stores>(stores_config("life"));
  const auto error_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  l96.reset(0.0);
  Recording r(l96, stores, config("revolve", 3, 0));
  EXPECT_NE(error_of([&] { r.reverse(); }).find("needs a finished first sweep"), std::string::npos);
  EXPECT_NE(error_of([&] { r.park(); }).find("park() needs phase 'recorded'"), std::string::npos);
  EXPECT_NE(error_of([&] { r.spill(); }).find("spill() needs phase 'parked'"), std::string::npos);
  EXPECT_NE(error_of([&] { r.attach(l96); }).find("attach() needs phase 'parked'"),
            std::string::npos);
  r.record();
  EXPECT_NE(error_of([&] { r.record(); }).find("record() needs phase 'recording'"),
            std::string::npos);
  r.reverse();
  EXPECT_NE(error_of([&] { r.reverse(); }).find("the recording is 'done'"), std::string::npos);
  EXPECT_EQ(stores->claimed().ram, 0);
}

}  // namespace
}  // namespace rwd::testing

namespace rwd::testing {
namespace {

// A stepper whose forward step depends on something outside its state: a forcing the test
// changes after the first sweep (a model changed between solves, an event nobody replayed), or a
// step that is not deterministic.
class Drifting final : public ForwardingStepper {
 public:
  explicit Drifting(TestStepper& inner) : ForwardingStepper(inner) {}
  void forward(Step i, const StepContext& c) override {
    inner_.forward(i, c);
    if (c.recompute && drift != 0.0 && i == 7) {
      auto x = inner_.state().front().data;
      if (!x.empty()) x[0] += drift;  // the model the replay sees is not the first sweep's
    }
  }
  double drift = 0.0;
};

// The error of an Engine run of `s` from x_0, or "" if it ran through.
std::string run_error(TestStepper& s, const EngineConfig& c) {
  try {
    s.reset(0.0);
    Engine engine(s, c);
    engine.run();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// A recomputation that does not reproduce the first sweep is an error on every rank naming the
// state and the field, not a wrong gradient; with the check off the same run silently gives a
// different gradient (so the check is what stands between the user and a wrong answer).
TEST(ReplayCheck, ARecomputationThatDriftsIsAnErrorNotAWrongGradient) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  Drifting d(l96);
  const EngineConfig c = config("revolve", 3, 0);
  const std::vector<double> right = alone(l96, 0.0, c);
  d.drift = world_rank() == 0 ? 1e-12 : 0.0;  // on one rank only
  const std::string what = run_error(d, c);
  EXPECT_TRUE(all_ranks(what.find("the recomputed state x_8 differs from the one the first sweep "
                                  "reached (field 'x', rank 0)") != std::string::npos))
      << what;
  EngineConfig unchecked = c;
  unchecked.verify = false;
  d.reset(0.0);
  Engine engine(d, unchecked);
  engine.run();
  const bool differs = !bitwise_equal(d.gradient(), right);
  EXPECT_TRUE(all_ranks(world_rank() != 0 || differs)) << "the drift must change the gradient";
}

// The size of the difference "by about <x> relative" in a replay check's message, or -1.
double difference_in(const std::string& what) {
  const std::size_t at = what.find(") by about ");
  if (at == std::string::npos) return -1.0;
  return std::stod(what.substr(at + 11));
}

// The error says how large the difference is, relative to the field's norm on the rank, and
// tells round-off (a last-bit drift) from a changed model (a drift of the state's size).
TEST(ReplayCheck, TheErrorSaysHowLargeTheDifferenceIs) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  Drifting d(l96);
  const EngineConfig c = config("revolve", 3, 0);
  for (const double drift : {1e-12, 0.5}) {
    d.drift = world_rank() == 0 ? drift : 0.0;
    const std::string what = run_error(d, c);
    // x_8 = x_7's step from the drifted x_7[0]: its own size, give or take the step's growth
    // and the norm of the rank's block (about 10 per entry: relative 1e-15 .. 1e-11).
    const double size = difference_in(what);
    EXPECT_TRUE(all_ranks(size > drift * 1e-3 && size < drift)) << drift << ": " << what;
    const bool roundoff =
        what.find(": round-off, but the gradient would differ") != std::string::npos;
    EXPECT_TRUE(all_ranks(roundoff == (drift < 1e-6))) << what;
    EXPECT_TRUE(
        all_ranks((what.find(" units in the last place)") != std::string::npos) == (drift < 1e-6)))
        << what;
    EXPECT_TRUE(all_ranks(
        (what.find("give RecordingConfig::verify_tolerance") != std::string::npos) == roundoff))
        << what;
  }
}

// With a tolerance, round-off is accepted and counted (the gradient then differs from the
// forward run's in the last bits, as the user accepted); a changed model still stops the run.
TEST(ReplayCheck, ATolerancePassesRoundOffAndStopsAChangedModel) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  Drifting d(l96);
  EngineConfig c = config("revolve", 3, 0);
  c.verify_tolerance = 1e-9;
  d.drift = world_rank() == 0 ? 1e-12 : 0.0;
  d.reset(0.0);
  RunStats stats;
  {
    Engine engine(d, c);
    stats = engine.run();
  }
  EXPECT_TRUE(world_rank() != 0 || stats.verify_tolerated > 0);
  EXPECT_TRUE(all_ranks(world_rank() != 0 || (stats.verify_largest_tolerated > 0 &&
                                              stats.verify_largest_tolerated <= 1e-9)))
      << stats.verify_largest_tolerated;
  d.drift = world_rank() == 0 ? 0.5 : 0.0;
  const std::string what = run_error(d, c);
  EXPECT_TRUE(all_ranks(what.find("more than the tolerance 1.000000e-09 "
                                  "(RecordingConfig::verify_tolerance)") != std::string::npos))
      << what;
  // Out of range, or given with the check off: refused by name.
  const auto refused = [&](EngineConfig bad, const std::string& text) {
    try {
      Engine engine(d, bad);
    } catch (const Error& e) {
      return std::string(e.what()).find(text) != std::string::npos;
    }
    return false;
  };
  for (const double bad : {-1.0, 1.0, 2.0}) {
    EngineConfig b = c;
    b.verify_tolerance = bad;
    EXPECT_TRUE(all_ranks(refused(b, "RecordingConfig::verify_tolerance must be at least 0")))
        << bad;
  }
  EngineConfig off = c;
  off.verify = false;
  EXPECT_TRUE(all_ranks(refused(off,
                                "RecordingConfig::verify_tolerance is given with the "
                                "replay check off (RecordingConfig::verify)")));
}

// The host lost x_n and the last step's pullback data after the first sweep (it ran other work
// on the same buffers without parking): the reverse rebuilds them from the last checkpoint.
TEST(ReplayCheck, LostWorkingStateIsRebuiltBitwise) {
  const Ring ring(MPI_COMM_WORLD, 40);
  for (const auto& [schedule, ram, disk] :
       std::vector<std::tuple<const char*, std::int64_t, std::int64_t>>{
           {"revolve", 4, 0}, {"online", 3, 0}, {"twolevel", 2, 5}}) {
    Lorenz96Rk4 l96(ring, 0.01);
    EngineConfig c = config(schedule, ram, disk);
    if (std::string(schedule) == "online") c.params.steps = 0;
    l96.stop_at = kSteps;
    const std::vector<double> right = alone(l96, 0.0, c);
    auto stores = std::make_shared<Stores>(stores_config("lost"));
    l96.reset(0.0);
    Recording r(l96, stores, c);
    r.record();
    l96.reset(0.0);  // other work on the same buffers (the forcing, a state field, is kept)
    l96.run_forward(3);
    r.lose_work();
    const engine::RunStats stats = r.reverse();
    EXPECT_TRUE(all_ranks(bitwise_equal(l96.gradient(), right))) << schedule;
    EXPECT_GT(stats.rebuilt_steps, 0) << schedule;
    stores->close();
  }
}

// The same, but the model changed too (the forcing, a state field every step reads, was left
// at the other work's value): the rebuild cannot give the first sweep's bits, and says so.
TEST(ReplayCheck, RebuildUnderAChangedModelIsAnError) {
  const Ring ring(MPI_COMM_WORLD, 40);
  DiffusionDecay dd(ring, 0.05);
  const EngineConfig c = config("revolve", 4, 0);
  auto stores = std::make_shared<Stores>(stores_config("changed"));
  dd.reset(0.0);
  Recording r(dd, stores, c);
  r.record();
  dd.reset(0.0, 0.3);  // a different decay field: the model, not just the state
  r.lose_work();
  std::string what;
  try {
    r.reverse();
  } catch (const Error& e) {
    what = e.what();
  }
  EXPECT_TRUE(
      all_ranks(what.find("differs from the one the first sweep reached") != std::string::npos))
      << what;
  stores->close();
}

}  // namespace
}  // namespace rwd::testing

namespace rwd::testing {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// An online run told it cannot pass max_steps (its restart sets were computed for that bound)
// that does is an error, not a gradient from restart sets that miss a variable.
TEST(Recording, RunPastMaxStepsIsAnError) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Leapfrog lf(ring, 0.005);
  EngineConfig c = config("online", 3, 0);
  c.params.steps = 0;
  c.max_steps = 10;
  lf.stop_at = 15;
  auto stores = std::make_shared<Stores>(stores_config("max-steps"));
  lf.reset(0.0);
  Recording r(lf, stores, c);
  const std::string what = error_of([&] { r.record(); });
  EXPECT_TRUE(
      all_ranks(what.find("max_steps says the run cannot pass 10 steps") != std::string::npos))
      << what;
}

// An online run whose stepper says it finished on one rank and not on another stops with an
// error on every rank instead of leaving ranks in different collectives.
TEST(Recording, FinishedThatDiffersBetweenRanksIsAnError) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  EngineConfig c = config("online", 3, 0);
  c.params.steps = 0;
  l96.stop_at = rank == 0 ? 10 : 12;
  auto stores = std::make_shared<Stores>(stores_config("finished"));
  l96.reset(0.0);
  Recording r(l96, stores, c);
  const std::string what = error_of([&] { r.record(); });
  EXPECT_TRUE(
      all_ranks(what.find("Stepper::finished(10) answered differently") != std::string::npos))
      << what;
}

// An online run whose stepper is finished at step 0 has no steps: refused, and given none (it
// used to take one step it did not ask for, and reverse it into a wrong gradient).
TEST(Recording, ARunOfNoStepsIsRefusedAndTakesNone) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  class Empty final : public ForwardingStepper {
   public:
    using ForwardingStepper::ForwardingStepper;
    bool finished(Step) override { return true; }
    void forward(Step i, const StepContext& c) override {
      ++steps;
      inner_.forward(i, c);
    }
    int steps = 0;
  } empty(l96);
  EngineConfig c = config("online", 3, 0);
  c.params.steps = 0;
  auto stores = std::make_shared<Stores>(stores_config("empty"));
  l96.reset(0.0);
  Recording r(empty, stores, c);
  const std::string what = error_of([&] { r.record(); });
  EXPECT_TRUE(
      all_ranks(what.find("Stepper::finished(0) says the run has no steps") != std::string::npos))
      << what;
  EXPECT_EQ(empty.steps, 0);
}

// Stores whose capacity or directory differ between ranks are refused by name on every rank
// when the first recording is made (they would hang or split the file otherwise).
TEST(SharedStores, SettingsThatDifferBetweenRanksAreRefusedByName) {
  const Ring ring(MPI_COMM_WORLD, 40);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  Lorenz96Rk4 l96(ring, 0.01);
  for (const auto& [field, change] :
       std::vector<std::pair<std::string, std::function<void(StoresConfig&)>>>{
           {"StoresConfig::ram", [&](StoresConfig& s) { s.ram = 10 + rank; }},
           {"StoresConfig::disk", [&](StoresConfig& s) { s.disk = rank == 0 ? 4 : 5; }},
           {"StoreConfig::directory",
            [&](StoresConfig& s) { s.store.directory += rank == 0 ? "/a" : "/b"; }},
           {"StoreConfig::async_io", [&](StoresConfig& s) { s.store.async_io = rank == 0; }}}) {
    StoresConfig sc = stores_config("differ");
    change(sc);
    auto stores = std::make_shared<Stores>(sc);
    l96.reset(0.0);
    const std::string what = error_of([&] { Recording r(l96, stores, config("revolve", 3, 0)); });
    EXPECT_TRUE(all_ranks(what.find(field + " differs between ranks") != std::string::npos))
        << field << ": " << what;
  }
}

// A recorded (not parked) recording whose stepper another recording takes over rebuilds its
// final state from its checkpoints when it is reversed (checked against its first sweep), and
// its gradient is its task's alone (had the other run changed a field no checkpoint holds, the
// replay check would stop it: ReplayCheck.RebuildUnderAChangedModelIsAnError); one whose
// schedule kept nothing to rebuild from refuses to reverse and says to park first.
TEST(Recording, AnotherRunOnTheSameStepperNeverLeavesAWrongGradient) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 dd(ring, 0.01);
  const EngineConfig c = config("revolve", 4, 0);
  const std::vector<double> ga = alone(dd, 0.0, c);
  // B starts where A's fifth step ended (same forcing, another state).
  const auto start_b = [&] {
    dd.reset(0.0);
    dd.run_forward(5);
  };
  start_b();
  Engine alone_b(dd, c);
  alone_b.run();
  const std::vector<double> gb = dd.gradient();
  auto stores = std::make_shared<Stores>(stores_config("evict"));
  dd.reset(0.0);
  Recording a(dd, stores, c);
  a.record();  // not parked
  start_b();
  Recording b(dd, stores, c);  // takes the stepper over
  b.record();
  b.reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(dd.gradient(), gb)));
  const engine::RunStats sa = a.reverse();
  EXPECT_TRUE(all_ranks(bitwise_equal(dd.gradient(), ga)));
  EXPECT_GT(sa.rebuilt_steps, 0);

  EngineConfig all = config("storeall", kSteps, 0);  // no restart checkpoint to rebuild from
  all.slot_size = engine::SlotSize::Any;
  dd.reset(0.0);
  Recording s(dd, stores, all);
  s.record();
  dd.reset(0.01);
  Recording t(dd, stores, all);
  const std::string what = error_of([&] { s.reverse(); });
  EXPECT_TRUE(all_ranks(what.find("park() a recording before making or reversing another") !=
                        std::string::npos))
      << what;
  stores->close();
}

// StoresConfig::make_directory: the disk store's directory made when the store is first needed
// (the PETSc front end removes a directory it made when a run ends, while another run in it may
// not have written yet); without it a missing directory is the store's error, on every rank.
TEST(StoresDirectory, IsMadeWhenAskedAndOtherwiseRefused) {
  const std::string dir = scratch_dir("make-directory") + "/gone/deeper";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
  MPI_Barrier(MPI_COMM_WORLD);
  StoresConfig c = stores_config("make-directory");
  c.store.directory = dir;
  {
    Stores stores(c);
    const std::string what = error_of([&] { stores.disk(); });
    EXPECT_TRUE(all_ranks(what.find("does not exist") != std::string::npos)) << what;
  }
  c.make_directory = true;
  Stores stores(c);
  stores.disk();
  EXPECT_TRUE(all_ranks(std::filesystem::is_directory(dir)));
  stores.close();
}

// The one room policy (engine/room.hpp) over three parked recordings of 6, 4 and 5 steps in
// shared stores: a disk capacity that takes only part of the oldest one's RAM checkpoints gets
// that part (a partial spill), the next step in the policy's order is tried when spilling is
// no longer possible (cutting the shortest), nothing is touched once there is enough room, and
// the reverse order puts RAM ones first, then spilled, then cut ones. Every gradient that is
// reversed stays bitwise its task's alone.
TEST(SharedStores, OneRoomPolicySpillsPartlyThenCutsTheShortest) {
  const Ring ring(MPI_COMM_WORLD, 40);
  const std::int64_t steps[3] = {6, 4, 5};
  std::vector<std::unique_ptr<TestStepper>> steppers;
  std::vector<std::vector<double>> reference;
  for (int k = 0; k < 3; ++k) {
    EngineConfig alone_config = config("revolve", 3, 0);
    alone_config.params.steps = steps[k];
    steppers.push_back(std::make_unique<Lorenz96Rk4>(ring, 0.01));
    reference.push_back(alone(*steppers.back(), 0.01 * k, alone_config));
  }
  StoresConfig sc = stores_config("room");
  sc.ram = 20;
  sc.disk = 2;
  auto stores = std::make_shared<Stores>(sc);
  std::vector<std::unique_ptr<Recording>> runs;
  std::vector<engine::HeldRecording> held;
  for (int k = 0; k < 3; ++k) {
    EngineConfig c = config("revolve", 3, 0);
    c.params.steps = steps[k];
    steppers[k]->reset(0.01 * k);
    runs.push_back(std::make_unique<Recording>(*steppers[k], stores, c));
    runs.back()->record();
    runs.back()->park();
    held.push_back({k, runs.back().get(), k, steps[k], false});
  }
  const engine::Claim before = stores->claimed();
  const std::int64_t held1 = runs[1]->claim().ram;
  ASSERT_GE(runs[0]->claim().ram, 3);  // more than the 2 disk slots take
  ASSERT_GT(held1, 0);
  std::vector<std::int64_t> spilled, cut;
  engine::RoomHooks hooks;
  hooks.spilled = [&](std::int64_t k) { spilled.push_back(k); };
  hooks.cut = [&](std::int64_t k) {
    cut.push_back(k);
    runs[static_cast<std::size_t>(k)].reset();
  };
  const engine::RoomStep spill_then_cut[] = {engine::RoomStep::Spill, engine::RoomStep::Cut};
  // Enough already: nothing moves.
  EXPECT_TRUE(engine::make_room(
      *stores, held, spill_then_cut, [] { return true; }, hooks));
  EXPECT_TRUE(spilled.empty() && cut.empty());
  // Room for what spilling 2 checkpoints and cutting recording 1 give back: the oldest (0)
  // spills 2 of its RAM checkpoints (all the disk takes), then the shortest (1, 4 steps) is cut.
  const std::int64_t target = before.ram - 2 - held1;
  EXPECT_TRUE(engine::make_room(
      *stores, held, spill_then_cut, [&] { return stores->claimed().ram <= target; }, hooks));
  EXPECT_EQ(spilled, std::vector<std::int64_t>{0});
  EXPECT_EQ(cut, std::vector<std::int64_t>{1});
  EXPECT_EQ(stores->claimed().ram, target);
  EXPECT_EQ(stores->claimed().disk, 2);
  EXPECT_GT(runs[0]->claim().ram, 0) << "a partial spill keeps the rest in RAM";
  EXPECT_TRUE(held[0].spilled);
  EXPECT_EQ(held[1].recording, nullptr);
  EXPECT_EQ(engine::reverse_order(held), (std::vector<std::int64_t>{2, 0, 1}));
  // The disk is full and the policy may only spill: not enough, and nothing moves.
  const engine::RoomStep spill_only[] = {engine::RoomStep::Spill};
  EXPECT_FALSE(engine::make_room(
      *stores, held, spill_only, [] { return false; }, hooks));
  EXPECT_EQ(spilled.size(), 1u);
  EXPECT_EQ(stores->claimed().ram, target);
  for (int k : {2, 0}) {
    runs[static_cast<std::size_t>(k)]->reverse();
    EXPECT_TRUE(all_ranks(bitwise_equal(steppers[static_cast<std::size_t>(k)]->gradient(),
                                        reference[static_cast<std::size_t>(k)])))
        << "recording " << k;
  }
  stores->close();
}

}  // namespace
}  // namespace rwd::testing
