// No rewind call leaves the calling thread slower (tests/support/caller_state.hpp): a plain SSE2
// loop timed before and after each entry point that hashes, copies or moves checkpoint bytes on
// the caller's thread (store put, prefetch, get, erase and flush for the RAM store and the HDF5
// store synchronous, inline and asynchronous; the sealed-block checksum and read; the manifest's
// text both ways), and inside the user's stepper, where the engine hands control back after its
// replay check and its stores (first sweep, recomputations, adjoint steps, a resumable run and
// its resume). The loop after must not be more than 1.5x slower (fastest of nine runs against
// fastest of nine on a clean unit; in the stepper, of five against five, judged over every
// call), and where the CPU reports it, the upper vector state must not go from clean to in use.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "../support/caller_state.hpp"
#include "engine_test_util.hpp"
#include "rewind/engine/manifest.hpp"
#include "rewind/storage/sealed_blocks.hpp"

namespace rwd::testing {
namespace {

namespace fs = std::filesystem;
using storage::CheckpointSpan;
using storage::CheckpointView;
using storage::FieldSpan;
using storage::FieldView;
using storage::Key;
using storage::Scalar;

constexpr double kLimit = 1.5;

// Every rank's verdict on `cost`, with the call named.
void expect_not_slowed(const CallerCost& cost, const std::string& call) {
  EXPECT_FALSE(cost.slowed(kLimit)) << call << " left the calling thread slower on rank "
                                    << world_rank() << ": " << cost.describe();
}

// The check itself: a call that leaves the upper vector state in use, as an AVX kernel without
// VZEROUPPER does, is caught, also after the pauses that let a busy machine settle (the state
// survives them, as it survives the context switches a sleep brings).
TEST(CallerState, TheCheckSeesADirtyUpperState) {
  bool dirtied = false;
  const CallerCost cost = measure_caller_cost([&] { dirtied = dirty_upper_state(); });
  if (!dirtied || !cost.in_use_after) GTEST_SKIP() << "this CPU has no AVX or does not report it";
  EXPECT_TRUE(cost.dirtied()) << cost.describe();
  EXPECT_TRUE(cost.slowed(kLimit)) << cost.describe();
  std::cout << "a dirtied upper state: " << cost.describe() << "\n";

  dirty_upper_state();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto still = upper_state_in_use();
  clear_upper_state();
  EXPECT_TRUE(still && *still) << "a pause cleared the upper state: the pauses would hide it";

  // The watch inside a stepper's calls: a dirtied state at every look fails it.
  CallbackWatch watch;
  for (int i = 0; i < 10; ++i) {
    dirty_upper_state();
    watch.look("a dirtying call");
  }
  EXPECT_FALSE(watch.passed()) << watch.describe();
  EXPECT_EQ(watch.in_use, 10) << watch.describe();
}

// A checkpoint of `doubles` values a rank in one field, with a scalar.
struct Checkpoint {
  explicit Checkpoint(std::int64_t doubles) : values(static_cast<std::size_t>(doubles)) {
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25 * static_cast<double>(i) + 1;
    std::int64_t n = doubles, offset = 0, total = 0;
    MPI_Exscan(&n, &offset, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank() == 0) offset = 0;
    MPI_Allreduce(&n, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    view = {"u", values, offset, total};
    back.assign(values.size(), 0.0);
    span = {"u", back, offset, total};
  }
  CheckpointView write() const { return {{&view, 1}, {&time, 1}}; }
  CheckpointSpan read() { return {{&span, 1}, {&read_time, 1}}; }

  std::vector<double> values, back;
  FieldView view;
  FieldSpan span;
  Scalar time{"time", 0.5};
  Scalar read_time{"time", 0.0};
};

struct StoreCase {
  std::string name;  // for messages
  std::string store;
  bool async = true;
  std::int64_t doubles = 0;  // per rank
};

// put, prefetch, get, erase and flush, each judged on its own.
void check_store(const StoreCase& sc) {
  storage::StoreConfig cfg;
  cfg.comm = MPI_COMM_WORLD;
  cfg.directory = scratch_dir("caller-state");
  cfg.label = "caller-state";
  cfg.async_io = sc.async;
  auto store = storage::make_store(sc.store, cfg);
  Checkpoint cp(sc.doubles);
  const std::string what = sc.name + " (" + std::to_string(sc.doubles * 8) + " bytes a rank)";
  for (int round = 0; round < 2; ++round) {  // the second put reuses what the first allocated
    const Key key{round, storage::Kind::Restart, 1};
    expect_not_slowed(measure_caller_cost([&] { store->put(key, cp.write()); }), what + " put");
    expect_not_slowed(measure_caller_cost([&] { store->flush(); }), what + " flush");
    expect_not_slowed(measure_caller_cost([&] { store->prefetch(key); }), what + " prefetch");
    expect_not_slowed(measure_caller_cost([&] { store->get(key, cp.read()); }), what + " get");
    EXPECT_EQ(cp.back, cp.values);
    expect_not_slowed(measure_caller_cost([&] { store->erase(key); }), what + " erase");
  }
  store->close();
}

TEST(CallerState, StoresLeaveTheCallerAsFast) {
  for (const StoreCase& sc : {
           StoreCase{"RAM store", "ram", true, 1 << 14},
           StoreCase{"HDF5 store, synchronous", "hdf5", false, 1 << 14},
           StoreCase{"HDF5 store, inline (small checkpoint)", "hdf5", true, 512},
           StoreCase{"HDF5 store, write-behind and prefetch", "hdf5", true, 1 << 15},
       }) {
    check_store(sc);
  }
}

TEST(CallerState, SealedBlocksAndManifestLeaveTheCallerAsFast) {
  std::vector<double> values(1 << 14);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 1.0 / static_cast<double>(i + 1);
  std::uint64_t sum = 0;
  expect_not_slowed(measure_caller_cost([&] { sum = storage::block_checksum(values); }),
                    "block_checksum");

  // A file of one sealed block, read back and verified.
  const std::string path =
      (fs::path(scratch_dir("caller-state")) / ("sealed-" + std::to_string(world_rank()) + ".bin"))
          .string();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(double)));
  }
  const storage::SealedBlock block{"u", 0, static_cast<std::int64_t>(values.size()), sum};
  std::vector<double> back(values.size());
  const FieldSpan into{"u", back, 0, static_cast<std::int64_t>(back.size())};
  expect_not_slowed(measure_caller_cost([&] {
                      storage::read_sealed_blocks(path, {&block, 1}, {&into, 1});
                    }),
                    "read_sealed_blocks");
  EXPECT_EQ(back, values);
  fs::remove(path);

  engine::Manifest m;
  m.identity = "caller-state";
  m.label = "caller-state";
  m.ranks = 1;
  m.steps = 40;
  m.interval = 10;
  m.generation = 1;
  m.state.push_back({"u", 100, {0}, {100}});
  for (int s = 0; s < 40; s += 10) {
    engine::ManifestEntry e;
    e.step = s;
    e.file = "file-" + std::to_string(s);
    e.blocks = {{storage::SealedBlock{"u", 8 * s, 100, sum + static_cast<std::uint64_t>(s)}}};
    m.states.push_back(e);
  }
  std::string text;
  expect_not_slowed(measure_caller_cost([&] { text = engine::to_text(m); }), "manifest to_text");
  engine::Manifest parsed;
  expect_not_slowed(measure_caller_cost([&] { parsed = engine::parse_manifest(text, "test"); }),
                    "parse_manifest");
  EXPECT_EQ(parsed.states.size(), m.states.size());
}

// Times the SSE2 loop when the engine hands control to the stepper: at the start of each
// forward and adjoint call (what the engine ran just before is then on the caller's thread).
class WatchingStepper final : public ForwardingStepper {
 public:
  using ForwardingStepper::ForwardingStepper;
  void forward(Step i, const StepContext& c) override {
    watch.look(c.recompute ? "a recomputed forward step" : "a first-sweep forward step");
    inner_.forward(i, c);
  }
  void adjoint(Step i) override {
    watch.look("an adjoint step");
    inner_.adjoint(i);
  }
  void begin_adjoint(std::span<const double> seed) override {
    watch.look("begin_adjoint");
    inner_.begin_adjoint(seed);
  }

  CallbackWatch watch;
};

void check_engine_run(const std::string& what, EngineConfig c) {
  // States of a few thousand values a rank: XXH3 hashes inputs under 240 bytes without vector
  // code.
  Ring ring(MPI_COMM_WORLD, 4096 * world_size());
  Lorenz96Rk4 inner(ring, 0.01);
  WatchingStepper s(inner);
  s.reset(0.0);
  RunStats stats;
  CallerCost after_run = measure_caller_cost([&] {
    Engine engine(s, c);
    stats = engine.run();
  });
  EXPECT_GT(stats.recomputed(), 0) << what << ": the budget should make it recompute";
  EXPECT_TRUE(s.watch.passed()) << what << ": the stepper's SSE2 loop, at the start of its calls "
                                << "on rank " << world_rank() << ": " << s.watch.describe();
  expect_not_slowed(after_run, what + ": Engine construction and run()");
}

// A RAM budget: the replay check hashes every state the first sweep reaches and every state a
// recomputation reaches again, on the caller's thread, between two of the stepper's calls.
TEST(CallerState, ReplayCheckLeavesTheStepperAsFast) {
  EngineConfig c = config("revolve", 4, 0);
  c.verify = true;
  check_engine_run("revolve, 4 RAM slots, replay check on", c);
}

// Two levels: disk checkpoints written behind and prefetched, some of them small enough to move
// on the caller's thread.
TEST(CallerState, DiskCheckpointsLeaveTheStepperAsFast) {
  EngineConfig c = config("auto", 3, 6);
  c.store.directory = scratch_dir("caller-state-disk");
  c.store.inline_io_bytes = 1 << 12;  // the smaller fields move on the caller's thread
  check_engine_run("3 RAM + 6 disk slots", c);
}

// A resumable run (durable states, manifests, their checksums), then the same run resumed from
// its end: the manifest is read back and the states checked against their checksums.
TEST(CallerState, ResumableRunAndResumeLeaveTheStepperAsFast) {
  EngineConfig c = config("auto", 4, kUnlimited);
  c.store.directory = scratch_dir("caller-state-resume");
  c.store.label = "caller-state";
  c.resume.enabled = true;
  c.resume.interval = 10;
  c.resume.identity = "caller_state_test";
  if (world_rank() == 0) {
    for (const auto& e : fs::directory_iterator(c.store.directory)) fs::remove_all(e.path());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  check_engine_run("a resumable run", c);
  c.resume.resume = true;
  check_engine_run("a resumed run", c);
}

}  // namespace
}  // namespace rwd::testing
