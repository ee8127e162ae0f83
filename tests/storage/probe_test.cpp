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
  // Every rank returns the slowest rank's figures.
  double mine[2] = {cost.write_seconds, cost.read_seconds}, low[2] = {0, 0};
  MPI_Allreduce(mine, low, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(low[0], cost.write_seconds);
  EXPECT_EQ(low[1], cost.read_seconds);
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
