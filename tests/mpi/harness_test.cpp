// Proves the harness reduces verdicts: the last rank fails, so every rank must exit non-zero.
// Registered with WILL_FAIL; if this test "passes" under ctest, the shared main works.
#include <gtest/gtest.h>
#include <mpi.h>

TEST(MpiHarness, LastRankFails) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_NE(rank, size - 1) << "deliberate failure on the last rank";
}
