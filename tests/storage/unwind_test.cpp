// A rank that throws alone: it throws between two puts and its HDF5 store is destroyed while the
// exception unwinds, while the other ranks are not unwinding. The destructor must make no
// collective call then, so the thrower gets its own exception at once instead of waiting in an
// allreduce the others never join. The others learn of the failure over a plain point-to-point
// message (as an application would abort its solve) and let their stores go while their own
// exception unwinds. Registered at 2 and 3 ranks with a timeout: a hang is a failure.
#include <chrono>
#include <stdexcept>

#include "hdf5_store.hpp"
#include "io_thread.hpp"
#include "store_test_util.hpp"

namespace rwd::storage::test {
namespace {

constexpr int kFailedTag = 77;

struct Outcome {
  std::string what;       // the exception this rank caught
  double seconds = -1.0;  // from the throw to the catch
};

// Every rank builds a store and puts one checkpoint; `thrower` then throws before its second
// put, the others wait for its message and throw in turn. `paused`: the thrower's write is
// still queued on the (paused) I/O thread when it throws.
Outcome run(int thrower, const std::string& directory, bool paused) {
  const int rank = world_rank();
  StoreConfig c;
  c.comm = MPI_COMM_WORLD;
  c.directory = directory;
  c.label = "unwind";
  c.keep_files = true;    // a store destroyed while unwinding deletes its file all the same
  c.inline_io_bytes = 0;  // the write goes to the I/O thread, where it may still be queued
  Outcome out;
  auto thrown = std::chrono::steady_clock::now();
  try {
    Hdf5Store store(c);
    TestCheckpoint a(1);
    if (paused && rank == thrower) detail::IoThread::set_paused(true);
    store.put({1, Kind::Restart}, a.view());
    if (rank == thrower) {
      thrown = std::chrono::steady_clock::now();
      throw std::runtime_error("the solver failed on rank " + std::to_string(rank));
    }
    int failed = 0;
    MPI_Recv(&failed, 1, MPI_INT, thrower, kFailedTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    thrown = std::chrono::steady_clock::now();
    throw std::runtime_error("rank " + std::to_string(failed) + " failed");
  } catch (const std::runtime_error& e) {
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - thrown).count();
    out.what = e.what();
  }
  detail::IoThread::set_paused(false);
  if (rank == thrower) {
    for (int r = 0; r < world_size(); ++r) {
      if (r != thrower) MPI_Send(&thrower, 1, MPI_INT, r, kFailedTag, MPI_COMM_WORLD);
    }
  }
  return out;
}

class UnwindAlone : public ::testing::TestWithParam<bool> {};

TEST_P(UnwindAlone, TheThrowerGetsItsExceptionAndNoRankHangs) {
  ASSERT_GE(world_size(), 2) << "needs a rank that does not throw";
  ScratchDir dir;
  const int thrower = 1;
  const Outcome out = run(thrower, dir.path(), GetParam());
  if (world_rank() == thrower) {
    EXPECT_EQ(out.what, "the solver failed on rank 1") << "the thrower got another exception";
    // Its destructor talked to no one: it took file-system time, not a collective's.
    EXPECT_LT(out.seconds, 10.0);
  } else {
    EXPECT_EQ(out.what, "rank 1 failed");
  }
  EXPECT_EQ(detail::IoThread::running(), 0) << "the I/O thread outlived the store";
  EXPECT_TRUE(dir.files().empty()) << "a store destroyed while unwinding left its file";
}

INSTANTIATE_TEST_SUITE_P(Stores, UnwindAlone, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "WriteQueued" : "WriteDone"; });

}  // namespace
}  // namespace rwd::storage::test
