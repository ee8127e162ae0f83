// Shared main of the MPI tests: initialises MPI once, lets only rank 0 print, and makes every
// rank exit non-zero if any rank failed, so mpiexec and ctest see one verdict. It asks for
// MPI_THREAD_MULTIPLE, which the asynchronous stores need to overlap collective I/O (tests read
// what was granted with MPI_Query_thread).
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int local_failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&local_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_failed && rank == 0) {
    std::fprintf(stderr, "mpi test: a test failed on at least one rank (this rank: %s)\n",
                 local_failed ? "failed" : "passed");
  }
  MPI_Finalize();
  return any_failed;
}
