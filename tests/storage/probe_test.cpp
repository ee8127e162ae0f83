// The disk-cost probe: collective, measures something, leaves nothing behind, and fails alike on
// every rank.
#include "rewind/storage/probe.hpp"
#include "store_test_util.hpp"

namespace rwd::storage::test {
namespace {

TEST(ProbeDisk, MeasuresWriteAndReadAndLeavesNothingBehind) {
  ScratchDir dir;
  const DiskCost cost = probe_disk(dir.path(), 1 << 20, MPI_COMM_WORLD);
  EXPECT_GT(cost.write_seconds, 0.0);
  EXPECT_GT(cost.read_seconds, 0.0);
  EXPECT_GT(cost.cached_write_seconds, 0.0);
  EXPECT_GT(cost.cached_read_seconds, 0.0);
  // A run of 1 MiB checkpoints making 4 MiB; the device's time holds the writes into the cache.
  EXPECT_EQ(cost.probed, 4);
  EXPECT_GE(cost.write_seconds, cost.cached_write_seconds);
  // Every rank returns the slowest rank's figures.
  double mine[4] = {cost.write_seconds, cost.read_seconds, cost.cached_write_seconds,
                    cost.cached_read_seconds},
         low[4] = {0, 0, 0, 0};
  MPI_Allreduce(mine, low, 4, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(low[0], cost.write_seconds);
  EXPECT_EQ(low[1], cost.read_seconds);
  EXPECT_EQ(low[2], cost.cached_write_seconds);
  EXPECT_EQ(low[3], cost.cached_read_seconds);
  // Small checkpoints: at most 64 of them.
  EXPECT_EQ(probe_disk(dir.path(), 100, MPI_COMM_WORLD).probed, 64);
  EXPECT_TRUE(dir.files().empty()) << "a probe file was left behind";
}

TEST(ProbeDisk, AnUnwritableDirectoryFailsOnEveryRank) {
  expect_error([] { probe_disk("/proc", 4096, MPI_COMM_WORLD); }, ErrorCode::Io,
               {"measuring disk costs", "'/proc'"});
  // Only the last rank's directory is missing: every rank throws all the same.
  ScratchDir dir;
  const bool bad = world_rank() == world_size() - 1;
  const std::string where = bad ? dir.path() + "/missing" : dir.path();
  expect_error([&] { probe_disk(where, 4096, MPI_COMM_WORLD); }, ErrorCode::Io,
               {"No such file or directory", "rank " + std::to_string(world_size() - 1)});
  EXPECT_TRUE(dir.files().empty());
}

}  // namespace
}  // namespace rwd::storage::test
