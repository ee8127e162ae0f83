// Engine tests under MPI (1, 2, 4 ranks) of compressed RAM checkpoints (StoreConfig::codec):
// with a lossless codec every registered schedule the planner accepts gives store-all's gradient
// bit for bit, RAM-only and two-level (disk checkpoints stay uncompressed), and the statistics
// are those of the same run without compression: compression changes where the bytes are, not
// what the schedule does.
#include <gtest/gtest.h>
#include <mpi.h>

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
