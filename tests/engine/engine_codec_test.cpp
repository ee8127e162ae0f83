// Engine tests under MPI (1, 2, 4 ranks) of compressed RAM checkpoints (StoreConfig::codec):
// with a lossless codec every registered schedule the planner accepts gives store-all's gradient
// bit for bit, RAM-only and two-level (disk checkpoints compressed too, unless compress_disk is
// off), and the statistics are those of the same run without compression: compression changes
// where the bytes are, not what the schedule does.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../support/cpus.hpp"
#include "checkpoint_io.hpp"
#include "engine_test_util.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"

namespace rwd::testing {
namespace {

// Whether the planner accepts `c` for `stepper` (a refusal must be InvalidArgument); the
// stepper is left reset.
bool planner_accepts(TestStepper& stepper, const EngineConfig& c) {
  stepper.reset(0.0);
  try {
    engine::plan_for(stepper, MPI_COMM_WORLD, c);
    return true;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    return false;
  }
}

TEST(EngineCodec, LosslessRamCompressionIsBitwiseForEverySchedule) {
  const Ring ring(MPI_COMM_WORLD, 40);
  std::vector<std::unique_ptr<TestStepper>> steppers;
  steppers.push_back(std::make_unique<Lorenz96Rk4>(ring, 0.01));
  steppers.push_back(std::make_unique<DiffusionDecay>(ring, 0.05));
  int tried = 0;
  for (auto& stepper : steppers) {
    const auto [reference, ref_stats] = adjoint(*stepper, storeall_config());
    for (const auto& info : schedule::ScheduleRegistry::instance().list()) {
      for (const auto& [ram, disk] : {std::pair<std::int64_t, std::int64_t>{3, 0}, {2, 6}}) {
        EngineConfig plain = config(info.name, ram, disk);
        if (!planner_accepts(*stepper, plain)) continue;
        const auto [g0, s0] = adjoint(*stepper, plain);
        for (const char* codec : {"zstd", "blosc"}) {
          EngineConfig c = plain;
          c.store.codec.name = codec;
          // Planned as uncompressed (the default): the plan of the run without.
          const std::string what =
              info.name + " " + std::to_string(ram) + "/" + std::to_string(disk) + " " + codec;
          const auto [g, s] = adjoint(*stepper, c);
          EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << what;
          EXPECT_EQ(s.forward_steps, s0.forward_steps) << what;
          EXPECT_EQ(s.ram.writes, s0.ram.writes) << what;
          EXPECT_EQ(s.ram.peak, s0.ram.peak) << what;
          EXPECT_EQ(s.disk.writes, s0.disk.writes) << what;
          // The summaries say what the codec did: the bytes given to the store are the RAM
          // traffic's, and what it stored is counted beside them.
          EXPECT_EQ(s.ram_codec.codec, codec) << what;
          EXPECT_EQ(s0.ram_codec.codec, "none") << what;
          EXPECT_EQ(s.ram_codec.uncompressed_bytes, s.ram.bytes_written) << what;
          EXPECT_EQ(s.ram_codec.stored_bytes > 0, s.ram.writes > 0) << what;
          EXPECT_NE(s.json().find("\"ram_codec\": {\"codec\": \"" + std::string(codec)),
                    std::string::npos)
              << s.json();
          // Disk checkpoints went through the same codec, on the I/O thread where written
          // behind (the disk store's default).
          EXPECT_EQ(s.disk_codec.codec, codec) << what;
          EXPECT_EQ(s.disk_codec.uncompressed_bytes, s.disk.bytes_written) << what;
          EXPECT_EQ(s.disk_codec.stored_bytes > 0, s.disk.writes > 0) << what;
          EXPECT_LE(s.disk_codec.stored_bytes, s.disk_codec.uncompressed_bytes) << what;
          EXPECT_LE(s.disk_codec.io_thread_seconds,
                    s.disk_codec.compress_seconds + s.disk_codec.decompress_seconds + 1e-12)
              << what;
          EXPECT_NE(s.json().find("\"disk_codec\": {\"codec\": \"" + std::string(codec)),
                    std::string::npos)
              << s.json();
          if (disk > 0 && std::string(codec) == "zstd") {
            EngineConfig ram_only = c;  // compress_disk off: the disk store stores values
            ram_only.compress_disk = false;
            const auto [g2, s2] = adjoint(*stepper, ram_only);
            EXPECT_TRUE(all_ranks(bitwise_equal(g2, reference))) << what;
            EXPECT_EQ(s2.disk_codec.codec, "none") << what;
            EXPECT_EQ(s2.disk_codec.uncompressed_bytes, 0) << what;
            EXPECT_EQ(s2.ram_codec.codec, codec) << what;
          }
          ++tried;
        }
      }
    }
  }
  EXPECT_GE(tried, 20);
}

// DiffusionDecay on a ring of `cells` whose x_0 is zero but on the cells `nonzero` says: zeros
// stay zeros until the diffusion reaches them (one cell a step), so its states compress.
std::unique_ptr<DiffusionDecay> sparse_decay(const Ring& ring, std::function<bool(int)> nonzero) {
  auto d = std::make_unique<DiffusionDecay>(ring, 0.05);
  d->set_initial([nonzero](int g) { return nonzero(g) ? 1.0 + 0.01 * std::sin(0.7 * g) : 0.0; });
  return d;
}

// The budget's bytes, as the compressed checkpoints took them: within the budget on every rank,
// and what the summaries say matches the plan.
void expect_within_budget(const RunStats& s, const std::string& what) {
  EXPECT_GT(s.ram_codec.budget_bytes, 0.0) << what;
  EXPECT_GT(s.ram_codec.peak_stored_bytes, 0) << what;
  EXPECT_LE(static_cast<double>(s.ram_codec.peak_stored_bytes), s.ram_codec.budget_bytes) << what;
  EXPECT_NE(s.json().find("\"moved_to_disk\": " + std::to_string(s.ram_codec.moved_to_disk) +
                          ", \"restart_slots\": " + std::to_string(s.ram_codec.restart_slots)),
            std::string::npos)
      << s.json();
}

// States that compress: the ratio measured on x_0 buys RAM checkpoints (the same budget in
// bytes holds more of them), the plan recomputes less, and the gradient keeps store-all's bits.
TEST(EngineCodec, MeasuredRatioBuysCheckpoints) {
  const Ring ring(MPI_COMM_WORLD, 40000);
  auto stepper = sparse_decay(ring, [](int g) { return g % 2000 < 800; });
  const auto [reference, ref_stats] = adjoint(*stepper, storeall_config());
  int fewer = 0, tried = 0;
  for (const char* schedule : {"auto", "revolve", "mixed", "twolevel"}) {
    for (const auto& [ram, disk] : {std::pair<std::int64_t, std::int64_t>{3, 0}, {2, 6}}) {
      EngineConfig plain = config(schedule, ram, disk);
      if (disk == 0 && std::string(schedule) == "twolevel") continue;
      const auto [g0, s0] = adjoint(*stepper, plain);
      for (const char* codec : {"zstd", "blosc"}) {
        EngineConfig c = plain;
        c.store.codec.name = codec;
        c.compress_ratio = 0.0;  // measured on x_0
        const std::string what = std::string(schedule) + " " + std::to_string(ram) + "/" +
                                 std::to_string(disk) + " " + codec;
        const auto [g, s] = adjoint(*stepper, c);
        EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << what;
        EXPECT_GT(s.ram_codec.planned_ratio, 1.3) << what << " " << s.ram_codec.ratio_source;
        EXPECT_NE(s.ram_codec.ratio_source.find("measured on x_0"), std::string::npos) << what;
        EXPECT_GE(s.ram_codec.restart_slots, s.ram_codec.uncompressed_restart_slots + (ram == 3))
            << what;
        EXPECT_EQ(s.ram_codec.uncompressed_forward_steps, s0.forward_steps) << what;
        EXPECT_EQ(s.ram_codec.forward_steps, s.forward_steps) << what;
        // The cost the schedules minimise (a disk write and read cost 0.5 steps here).
        const auto cost = [](const RunStats& r) {
          return static_cast<double>(r.forward_steps) +
                 0.5 * static_cast<double>(r.disk.writes + r.disk.reads);
        };
        EXPECT_LE(cost(s), cost(s0)) << what;
        EXPECT_EQ(s.ram_codec.moved_to_disk, 0) << what << " " << s.ram_codec.ratio_source;
        expect_within_budget(s, what);
        fewer += s.forward_steps < s0.forward_steps ? 1 : 0;
        ++tried;
      }
    }
  }
  EXPECT_EQ(tried, 14);
  EXPECT_GE(fewer, 6) << fewer;
}

// Disk checkpoints of states that compress (a ring mostly at zero): fewer bytes moved, the
// gradient store-all's bits, write-behind and read-ahead compressing and decompressing on the
// I/O thread, synchronous I/O on the caller's.
TEST(EngineCodec, LosslessDiskCompressionMovesFewerBytesBitwise) {
  const Ring ring(MPI_COMM_WORLD, 4000);
  auto stepper = sparse_decay(ring, [](int g) { return g % 1000 < 40; });
  const auto [reference, ref_stats] = adjoint(*stepper, storeall_config());
  for (const bool async : {true, false}) {
    for (const char* schedule : {"disk-revolve", "twolevel"}) {
      EngineConfig c = config(schedule, 1, 8);
      c.store.async_io = async;
      c.store.inline_io_bytes = 0;  // these states are small: through the I/O thread anyway
      c.store.codec = {"zstd", 0.0, 0};
      const std::string what = std::string(schedule) + (async ? " async" : " sync");
      const auto [g, s] = adjoint(*stepper, c);
      EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << what;
      ASSERT_GT(s.disk.writes, 0) << what;
      EXPECT_EQ(s.disk_codec.codec, "zstd") << what;
      EXPECT_EQ(s.disk_codec.uncompressed_bytes, s.disk.bytes_written) << what;
      EXPECT_LT(s.disk_codec.stored_bytes, s.disk_codec.uncompressed_bytes / 2) << what;
      EXPECT_GT(s.disk_codec.compress_seconds, 0.0) << what;
      EXPECT_GT(s.disk_codec.decompress_seconds, 0.0) << what;
      if (async) {
        EXPECT_GT(s.disk_codec.io_thread_seconds, 0.0) << what;
      } else {
        EXPECT_EQ(s.disk_codec.io_thread_seconds, 0.0) << what;
      }
    }
  }
}

// A ratio given too high for the states (half the ring compresses, half does not: at 2 ranks
// the second rank's block is the one over budget): a checkpoint that does not fit is moved to
// disk on every rank where there is disk room, bit for bit, and the RAM never holds more than
// the budget; with a disk budget that has no room left every rank stops with an error that says
// what to change (a plan without disk drops and recomputes instead: the next test).
TEST(EngineCodec, WorseThanPlannedMovesToDiskOrStops) {
  const Ring ring(MPI_COMM_WORLD, 4000);
  auto stepper = sparse_decay(ring, [](int g) { return g >= 1700; });
  const auto [reference, ref_stats] = adjoint(*stepper, storeall_config());
  for (const char* schedule : {"revolve", "twolevel"}) {
    EngineConfig c = config(schedule, 3, kUnlimited);
    c.store.codec.name = "zstd";
    c.compress_ratio = 8.0;
    const auto [g, s] = adjoint(*stepper, c);
    EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << schedule;
    EXPECT_EQ(s.ram_codec.ratio_source, "given") << schedule;
    EXPECT_GT(s.ram_codec.moved_to_disk, 0) << schedule;
    EXPECT_GT(s.disk.writes, 0) << schedule;
    expect_within_budget(s, schedule);
  }
  // A disk budget the schedule fills itself leaves no room: every rank stops, naming the rank.
  EngineConfig c = config("twolevel", 3, 2);
  c.store.codec.name = "zstd";
  c.compress_ratio = 8.0;
  try {
    const auto [g, s] = adjoint(*stepper, c);
    ADD_FAILURE() << "RAM checkpoints over their compressed budget were kept: " << s.json();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << m;
    EXPECT_NE(m.find("compressed RAM checkpoints take more than their budget: on rank " +
                     std::to_string(world_size() - 1)),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("planned with a compression ratio of 8"), std::string::npos) << m;
    EXPECT_NE(m.find("the disk budget has no room left"), std::string::npos) << m;
    EXPECT_NE(m.find("Plan with a lower ratio (RecordingConfig::compress_ratio"), std::string::npos)
        << m;
  }
  // On a communicator that numbers the ranks the other way (an ensemble group's numbers its
  // own), the message names the world's rank too.
  if (world_size() > 1) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm reversed = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &reversed);
    {
      const Ring backwards(reversed, 4000);
      auto on_it = sparse_decay(backwards, [](int g) { return g >= 1700; });
      EngineConfig r = c;
      r.store.comm = reversed;
      try {
        adjoint(*on_it, r);
        ADD_FAILURE() << "RAM checkpoints over their compressed budget were kept";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "budget: on rank " + std::to_string(world_size() - 1) +
                      " of its communicator (rank 0 of MPI_COMM_WORLD) they would take"),
                  std::string::npos)
            << e.what();
      }
    }
    MPI_Comm_free(&reversed);
  }
  c = config("revolve", 3, 0);
  c.store.codec.name = "zstd";
  c.compress_ratio = 8.0;
  // A ratio with nothing compressed is refused, naming both settings.
  c.store.codec.name = "none";
  try {
    adjoint(*stepper, c);
    ADD_FAILURE() << "a ratio without a codec was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RecordingConfig::compress_ratio plans with compressed "
                                         "checkpoints, but they are not compressed; choose a "
                                         "codec (StoreConfig::codec)"),
              std::string::npos)
        << e.what();
  }
  c.store.codec.name = "zstd";
  // A ratio that is not one is refused by name before anything runs.
  for (double bad : {0.5, -1.0, 1e300, std::nan("")}) {
    c.compress_ratio = bad;
    try {
      adjoint(*stepper, c);
      ADD_FAILURE() << "compress_ratio " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("RecordingConfig::compress_ratio must be 0"),
                std::string::npos)
          << e.what();
    }
  }
}

// Without a disk in the plan, what does not fit is dropped and recomputed where the schedule
// needs it, from the last restart checkpoint before it: every schedule the planner accepts
// keeps store-all's bits within the budget's bytes, and the steps it adds are counted.
TEST(EngineCodec, WorseThanPlannedWithoutDiskDropsAndRecomputes) {
  const Ring ring(MPI_COMM_WORLD, 4000);
  auto stepper = sparse_decay(ring, [](int g) { return g >= 1700; });
  const auto [reference, ref_stats] = adjoint(*stepper, storeall_config());
  int dropped_runs = 0;
  for (const auto& info : schedule::ScheduleRegistry::instance().list()) {
    for (const double ratio : {3.0, 8.0}) {
      EngineConfig c = config(info.name, 3, 0);
      c.store.codec.name = "zstd";
      c.compress_ratio = ratio;
      if (!planner_accepts(*stepper, c)) continue;
      const std::string what = info.name + " ratio " + std::to_string(ratio);
      const auto [g, s] = adjoint(*stepper, c);
      EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << what;
      expect_within_budget(s, what);
      EXPECT_EQ(s.ram_codec.moved_to_disk, 0) << what;
      EXPECT_EQ(s.disk.writes, 0) << what;
      if (s.ram_codec.replanned_ratio == 0.0) {
        // Dropped in the reverse only: each recomputed where the schedule needs it.
        EXPECT_EQ(s.ram_codec.dropped > 0, s.ram_codec.dropped_steps > 0) << what;
        if (s.ram_codec.forward_steps >= 0) {  // the planned count, and what the drops added
          EXPECT_EQ(s.forward_steps, s.ram_codec.forward_steps + s.ram_codec.dropped_steps)
              << what << " " << s.json();
        }
      } else {
        // Dropped in the first sweep: the reverse was planned again from x_0 with the ratio the
        // checkpoints reached (here about 1: planned as uncompressed).
        EXPECT_GT(s.ram_codec.dropped, 0) << what;
        EXPECT_GE(s.ram_codec.replanned_ratio, 1.0) << what;
        EXPECT_LT(s.ram_codec.reached_ratio, ratio) << what;
        EXPECT_EQ(s.ram_codec.replanned_ratio > 1.0,
                  s.ram_codec.reached_ratio * engine::kCompressMargin >= engine::kCompressMinRatio)
            << what;
        EXPECT_FALSE(s.ram_codec.replanned_schedule.empty()) << what;
        EXPECT_EQ(s.forward_steps,
                  kSteps + s.ram_codec.replanned_forward_steps + s.ram_codec.dropped_steps)
            << what << " " << s.json();
      }
      EXPECT_NE(s.json().find("\"dropped\": " + std::to_string(s.ram_codec.dropped) +
                              ", \"dropped_steps\": " + std::to_string(s.ram_codec.dropped_steps)),
                std::string::npos)
          << s.json();
      if (world_rank() == 0) {
        std::printf("%s: %lld dropped, %lld forward steps (%lld planned, %lld to recompute them)\n",
                    what.c_str(), (long long)s.ram_codec.dropped, (long long)s.forward_steps,
                    (long long)s.ram_codec.forward_steps, (long long)s.ram_codec.dropped_steps);
      }
      dropped_runs += s.ram_codec.dropped > 0 ? 1 : 0;
    }
  }
  // At 2 ranks and more, half the ring does not compress: the plans at ratio 8 cannot fit.
  if (world_size() > 1) {
    EXPECT_GE(dropped_runs, 3);
  }
}

// The RAM store's codec on the I/O thread (compressed behind the steps, decoded ahead of the
// adjoint) against the same runs with it on the caller's thread: every schedule the planner
// accepts, at ratios the states reach and do not (drops, a replanned reverse), with every third
// RAM put of the reverse counted as over the budget (drops in the reverse): the same gradient
// bits (store-all's), the same forward steps and the same drops. A put is measured against the
// budget when the next call needs it (CheckpointIo::settle()), not inside put(), and that must
// change no decision.
TEST(EngineCodec, BehindTheCallerTheSameDecisionsAndBits) {
  if (!test_support::on_every_cpu()) GTEST_SKIP() << "one CPU: the codec never runs behind";
  const Ring ring(MPI_COMM_WORLD, 4000);
  auto stepper = sparse_decay(ring, [](int g) { return g >= 1700; });
  const auto [reference, ref_stats] = adjoint(*stepper, storeall_config());
  int behind_runs = 0, dropped_runs = 0;
  for (const auto& info : schedule::ScheduleRegistry::instance().list()) {
    for (const double ratio : {1.5, 8.0}) {
      for (const bool reverse_drops : {false, true}) {
        RunStats s[2];
        std::vector<double> g[2];
        bool accepted = true;
        for (const bool behind : {true, false}) {
          EngineConfig c = config(info.name, 3, 0);
          c.store.codec.name = "zstd";
          c.compress_ratio = ratio;
          c.store.async_io = behind;
          c.store.inline_io_bytes = 0;  // every checkpoint behind when async
          if (!planner_accepts(*stepper, c)) {
            accepted = false;
            break;
          }
          engine::StoresConfig sc;
          sc.store = c.store;
          auto stores = std::make_shared<engine::Stores>(sc);
          stepper->reset(0.0);
          engine::Recording recording(*stepper, stores, c);
          recording.record();
          if (reverse_drops) engine::detail::CheckpointIo::count_as_over_budget_every(3);
          try {
            s[behind ? 0 : 1] = recording.reverse();
          } catch (...) {
            engine::detail::CheckpointIo::count_as_over_budget_every(0);
            throw;
          }
          engine::detail::CheckpointIo::count_as_over_budget_every(0);
          g[behind ? 0 : 1] = stepper->gradient();
        }
        if (!accepted) continue;
        const std::string what = info.name + " ratio " + std::to_string(ratio) +
                                 (reverse_drops ? ", drops in the reverse" : "");
        EXPECT_TRUE(all_ranks(bitwise_equal(g[0], reference))) << what;
        EXPECT_TRUE(all_ranks(bitwise_equal(g[1], reference))) << what;
        EXPECT_EQ(s[0].forward_steps, s[1].forward_steps) << what;
        EXPECT_EQ(s[0].ram_codec.dropped, s[1].ram_codec.dropped) << what;
        EXPECT_EQ(s[0].ram_codec.dropped_steps, s[1].ram_codec.dropped_steps) << what;
        EXPECT_EQ(s[0].ram_codec.replanned_ratio, s[1].ram_codec.replanned_ratio) << what;
        EXPECT_EQ(s[0].ram_codec.peak_stored_bytes, s[1].ram_codec.peak_stored_bytes) << what;
        EXPECT_EQ(s[0].ram_codec.stored_bytes, s[1].ram_codec.stored_bytes) << what;
        expect_within_budget(s[0], what);
        EXPECT_EQ(s[1].ram_codec.io_thread_seconds, 0.0) << what;
        behind_runs += s[0].ram_codec.io_thread_seconds > 0.0 ? 1 : 0;
        dropped_runs += s[0].ram_codec.dropped > 0 ? 1 : 0;
      }
    }
  }
  EXPECT_GE(behind_runs, 10) << "the codec ran on the I/O thread";
  EXPECT_GE(dropped_runs, 5);
}

// A state so small that every compressed block is larger than its values (a block's header is 48
// bytes): planned at ratio 3, the first sweep drops, the reverse is planned again as
// uncompressed, and every put is still measured against the budget's bytes, so what the codec
// makes larger is dropped too. The gradient keeps its bits; the RAM never holds more than the
// budget after a put was measured.
TEST(EngineCodec, ACodecThatExpandsIsKeptToTheBudget) {
  // A few values a rank (the ring gives rank r a share of r + 1, and each at least 2).
  const Ring ring(MPI_COMM_WORLD, 3 * world_size() * (world_size() + 1));
  DiffusionDecay stepper(ring, 0.05);
  const auto [reference, ref_stats] = adjoint(stepper, storeall_config());
  for (const char* schedule : {"revolve", "mixed", "online"}) {
    EngineConfig c = config(schedule, 3, 0);
    c.store.codec.name = "zstd";
    c.compress_ratio = 3.0;
    const auto [g, s] = adjoint(stepper, c);
    EXPECT_TRUE(all_ranks(bitwise_equal(g, reference))) << schedule;
    expect_within_budget(s, schedule);
    EXPECT_LT(s.ram_codec.reached_ratio, 1.0) << schedule << " " << s.json();
    EXPECT_EQ(s.ram_codec.replanned_ratio, 1.0) << schedule;
    EXPECT_GT(s.ram_codec.dropped, 0) << schedule;
    EXPECT_EQ(s.forward_steps,
              kSteps + s.ram_codec.replanned_forward_steps + s.ram_codec.dropped_steps)
        << schedule << " " << s.json();
  }
}

// Checkpoints dropped in the reverse sweep (the test hook counts every third RAM put of the
// reverse as over the budget, as states stored again that compress worse than the first
// sweep's would): each is recomputed where the schedule needs it, from the latest state held
// before it (restart data, or pullback data that hold the next state), with store-all's bits,
// and the steps that adds are counted.
TEST(EngineCodec, DroppedInTheReverseAreRecomputedWhereNeeded) {
  const Ring ring(MPI_COMM_WORLD, 400);
  auto stepper = sparse_decay(ring, [](int g) { return g % 4 == 0; });
  const auto [reference, ref_stats] = adjoint(*stepper, storeall_config());
  int tried = 0;
  for (const auto& info : schedule::ScheduleRegistry::instance().list()) {
    EngineConfig c = config(info.name, 3, 0);
    c.store.codec.name = "zstd";
    c.compress_ratio = 1.25;
    if (!planner_accepts(*stepper, c)) continue;
    const std::string what = info.name;
    engine::StoresConfig sc;
    sc.store = c.store;
    auto stores = std::make_shared<engine::Stores>(sc);
    stepper->reset(0.0);
    RunStats s;
    {
      engine::Recording recording(*stepper, stores, c);
      recording.record();
      ASSERT_EQ(recording.stats().ram_codec.dropped, 0) << what;
      engine::detail::CheckpointIo::count_as_over_budget_every(3);
      try {
        s = recording.reverse();
      } catch (...) {
        engine::detail::CheckpointIo::count_as_over_budget_every(0);
        throw;
      }
      engine::detail::CheckpointIo::count_as_over_budget_every(0);
    }
    EXPECT_TRUE(all_ranks(bitwise_equal(stepper->gradient(), reference))) << what;
    expect_within_budget(s, what);
    EXPECT_EQ(s.ram_codec.replanned_ratio, 0.0) << what;
    EXPECT_EQ(s.ram_codec.dropped > 0, s.ram_codec.dropped_steps > 0) << what << " " << s.json();
    EXPECT_EQ(s.forward_steps, s.ram_codec.forward_steps + s.ram_codec.dropped_steps)
        << what << " " << s.json();
    if (world_rank() == 0) {
      std::printf("%s: %lld dropped in the reverse, %lld forward steps (%lld planned)\n",
                  what.c_str(), (long long)s.ram_codec.dropped, (long long)s.forward_steps,
                  (long long)s.ram_codec.forward_steps);
    }
    tried += s.ram_codec.dropped > 0 ? 1 : 0;
  }
  EXPECT_GE(tried, 5);
}

// The largest difference between a gradient and the reference, relative to the reference's
// largest entry, over every rank.
double relative_error(const std::vector<double>& g, const std::vector<double>& reference) {
  double local[2] = {0.0, 0.0}, global[2] = {0.0, 0.0};
  for (std::size_t i = 0; i < g.size() && i < reference.size(); ++i) {
    local[0] = std::max(local[0], std::fabs(g[i] - reference[i]));
    local[1] = std::max(local[1], std::fabs(reference[i]));
  }
  MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return global[1] > 0.0 ? global[0] / global[1] : global[0];
}

// A lossy codec (zfp): restart states within its tolerance, pullback data and final states
// exact unless lossy_pullbacks. Store-all keeps pullback data only and stays bitwise; revolve's
// gradient error grows with the tolerance and stays within a small multiple of it; the replay
// check measures how far recomputed states drifted instead of stopping the run; lossy pullbacks
// take fewer bytes.
TEST(EngineCodec, LossyRestartsGiveAGradientWithinTheirTolerance) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  const auto [reference, ref_stats] = adjoint(l96, storeall_config());
  EngineConfig all = storeall_config();
  all.store.codec = {"zfp", 1e-6};
  const auto [g_all, s_all] = adjoint(l96, all);
  EXPECT_TRUE(all_ranks(bitwise_equal(g_all, reference))) << "store-all restores no state";
  double previous = 0.0;
  for (const double tol : {1e-12, 1e-9, 1e-6, 1e-3}) {
    EngineConfig c = config("revolve", 4, 0);
    c.store.codec = {"zfp", tol};
    const auto [g, s] = adjoint(l96, c);
    const double err = relative_error(g, reference);
    if (world_rank() == 0)
      std::printf("zfp %.0e: gradient relative error %.2e, drift %.2e\n", tol, err,
                  s.verify_largest_drift);
    EXPECT_GT(err, 0.0) << tol;
    EXPECT_LE(err, 10 * tol) << tol;
    EXPECT_GE(err, previous) << tol;
    previous = err;
    EXPECT_TRUE(s.verify_lossy);
    EXPECT_GT(s.verify_drifted, 0) << tol;
    EXPECT_GT(s.verify_largest_drift, 0.0) << tol;
    EXPECT_EQ(s.ram_codec.codec, "zfp");
    EXPECT_NE(s.json().find("\"verify_lossy\": true"), std::string::npos);
    c.lossy_pullbacks = true;
    c.schedule = "mixed";
    const auto [g_p, s_p] = adjoint(l96, c);
    c.lossy_pullbacks = false;
    const auto [g_e, s_e] = adjoint(l96, c);
    EXPECT_LT(s_p.ram_codec.stored_bytes, s_e.ram_codec.stored_bytes) << tol;
    const double err_e = relative_error(g_e, reference), err_p = relative_error(g_p, reference);
    if (world_rank() == 0) std::printf("  mixed: exact pullbacks %.2e, lossy %.2e\n", err_e, err_p);
  }
  // Lossy pullback data asked of a lossless codec: refused by name.
  EngineConfig bad = config("revolve", 4, 0);
  bad.store.codec = {"zstd"};
  bad.lossy_pullbacks = true;
  try {
    adjoint(l96, bad);
    ADD_FAILURE() << "lossy_pullbacks with zstd was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("StoresConfig::lossy_pullbacks"), std::string::npos)
        << e.what();
  }
}

// A stepper whose recomputed steps (all of them, on rank 0) are not the first sweep's: what the
// replay check exists to catch.
class RecomputesDiffer final : public ForwardingStepper {
 public:
  explicit RecomputesDiffer(TestStepper& inner) : ForwardingStepper(inner) {}
  void forward(Step i, const StepContext& c) override {
    inner_.forward(i, c);
    auto x = inner_.state().front().data;
    if (c.recompute && world_rank() == 0 && !x.empty()) x[0] += 0.5;
  }
};

// Under a lossy codec the check still asks for the first sweep's bits where a recomputation
// starts from a checkpoint that gives them back: disk checkpoints (never compressed) and the
// stages zfp keeps exact. Only what descends from a lossy restore is measured instead.
TEST(EngineCodec, ALossyCodecStillChecksWhatDescendsFromExactCheckpoints) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  RecomputesDiffer wrong(l96);
  EngineConfig ram = config("revolve", 4, 0);
  ram.store.codec = {"zfp", 1e-6};
  const auto run = [&](const EngineConfig& c) -> std::string {
    try {
      wrong.reset(0.0);
      Engine engine(wrong, c);
      const RunStats s = engine.run();
      return s.verify_drifted > 0 ? "drifted" : "matched";
    } catch (const Error& e) {
      return e.what();
    }
  };
  // Every restore is a lossy RAM checkpoint: the differences (rank 0's, and every rank's from
  // the lossy restores) are measured, not an error.
  EXPECT_EQ(run(ram), "drifted");
  // Restores from disk give the stored bits: the same difference stops the run on every rank.
  EngineConfig disk = config("disk-revolve", 1, 8);
  disk.store.codec = {"zfp", 1e-6};
  const std::string what = run(disk);
  EXPECT_TRUE(all_ranks(what.find("differs from the one the first sweep reached (field 'x', "
                                  "rank 0)") != std::string::npos))
      << what;
}

// The Taylor test still passes with a lossy codec at a tolerance well above round-off.
TEST(EngineCodec, LossyRestartsPassTheTaylorTest) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  EngineConfig c = config("revolve", 4, 0);
  c.store.codec = {"zfp", 1e-8};
  c.lossy_pullbacks = true;
  const auto [g, s] = adjoint(l96, c);
  ASSERT_GT(s.verify_drifted, 0);
  const double dj = l96.directional_derivative();
  l96.reset(0.0);
  l96.run_forward(kSteps);
  const double j0 = l96.objective();
  std::vector<double> remainders;
  for (double h = 1e-2; h > 1e-3; h /= 2) {
    l96.reset(h);
    l96.run_forward(kSteps);
    remainders.push_back(std::abs(l96.objective() - j0 - h * dj));
  }
  for (std::size_t k = 1; k < remainders.size(); ++k) {
    EXPECT_NEAR(std::log2(remainders[k - 1] / remainders[k]), 2.0, 0.1)
        << remainders[k - 1] << " " << remainders[k];
  }
}

}  // namespace
}  // namespace rwd::testing
