// Engine tests under MPI (1, 2, 4 ranks) of compressed RAM checkpoints (StoreConfig::codec):
// with a lossless codec every registered schedule the planner accepts gives store-all's gradient
// bit for bit, RAM-only and two-level (disk checkpoints stay uncompressed), and the statistics
// are those of the same run without compression: compression changes where the bytes are, not
// what the schedule does.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine_test_util.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"

namespace rwd::testing {
namespace {

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
        stepper->reset(0.0);
        try {
          engine::plan_for(*stepper, MPI_COMM_WORLD, plain);
        } catch (const Error& e) {
          ASSERT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
          continue;
        }
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

// A ratio given too high for the states (half the ring compresses, half does not: at 2 ranks
// the second rank's block is the one over budget): a checkpoint that does not fit is moved to
// disk on every rank where there is disk room, bit for bit, and the RAM never holds more than
// the budget; with no disk room every rank stops with an error that says what to change.
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
  EngineConfig c = config("revolve", 3, 0);
  c.store.codec.name = "zstd";
  c.compress_ratio = 8.0;
  try {
    adjoint(*stepper, c);
    ADD_FAILURE() << "RAM checkpoints over their compressed budget were kept";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << m;
    EXPECT_NE(m.find("compressed RAM checkpoints take more than their budget: on rank " +
                     std::to_string(world_size() - 1)),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("planned with a compression ratio of 8"), std::string::npos) << m;
    EXPECT_NE(m.find("Plan with a lower ratio (RecordingConfig::compress_ratio"), std::string::npos)
        << m;
  }
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

// A lossy codec restores states within its tolerance, not bit for bit, and nothing could vouch
// for the gradient (the replay check sees restart states only, and a run that recomputes nothing
// none): it is refused when the engine is made, on every rank, naming the codec.
TEST(EngineCodec, LossyRamCompressionIsRefused) {
  const Ring ring(MPI_COMM_WORLD, 40);
  Lorenz96Rk4 l96(ring, 0.01);
  for (const char* schedule : {"revolve", "storeall"}) {
    EngineConfig c = config(schedule, 40, 0);
    c.store.codec = {"zfp", 1e-6};
    try {
      adjoint(l96, c);
      ADD_FAILURE() << schedule << ": a lossy codec was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find("'zfp' is lossy"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("use a lossless codec (zstd or blosc)"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace rwd::testing
