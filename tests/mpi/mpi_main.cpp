// Shared main of the MPI tests: initialises MPI once, lets only rank 0 print (the other ranks
// print only their failed assertions, with their rank), and makes every
// rank exit non-zero if any rank failed, so mpiexec and ctest see one verdict. It asks for
// MPI_THREAD_MULTIPLE, the most permissive level, or for REWIND_TEST_THREAD_LEVEL when that is
// defined (rewind_mpi_test_main_funneled: MPI_THREAD_FUNNELED, as PetscInitialize asks).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>

namespace {

// On ranks other than 0: each failed assertion, on stderr, named with the rank and the test.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  // gtest holds its lock here: nothing may call back into it.
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: failure\n%s\n", rank_, test_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace

#ifndef REWIND_TEST_THREAD_LEVEL
#define REWIND_TEST_THREAD_LEVEL MPI_THREAD_MULTIPLE
#endif

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, REWIND_TEST_THREAD_LEVEL, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
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
