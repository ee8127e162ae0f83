// The HDF5 store under MPI_THREAD_FUNNELED, the level PetscInitialize asks for: write-behind and
// prefetch still overlap, because the I/O thread never calls MPI. Linked with the test main that
// asks for MPI_THREAD_FUNNELED. It also leaves a store to be destroyed after MPI_Finalize, from a
// static, as programs that keep stores in globals do.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <thread>

#include "hdf5_store.hpp"
#include "io_thread.hpp"
#include "store_test_util.hpp"

namespace rwd::storage::test {
namespace {

using namespace std::chrono_literals;
using detail::IoThread;

// Removes the directory of the store below once that store is gone: statics go in reverse order
// of construction, and this one is constructed first.
struct RemovedLast {
  std::string path;
  ~RemovedLast() {
    if (path.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
} outlives_main_dir;

// Destroyed after main returns, after MPI_Finalize.
std::unique_ptr<Store> outlives_main;

TEST(Funneled, TheThreadLevelIsFunneled) {
  int provided = -1;
  MPI_Query_thread(&provided);
  EXPECT_EQ(provided, MPI_THREAD_FUNNELED);
}

TEST(Funneled, WriteBehindReallyOverlaps) {
  ScratchDir dir;
  StoreConfig c;
  c.comm = MPI_COMM_WORLD;
  c.directory = dir.path();
  c.inline_io_bytes = 0;  // small checkpoints: send them to the I/O thread anyway
  Hdf5Store store(c);
  EXPECT_NE(store.io_mode().find("write-behind"), std::string::npos) << store.io_mode();
  std::vector<TestCheckpoint> cps;
  for (int i = 0; i < 3; ++i) {
    cps.emplace_back(i);
    cps.back().add("big", even(5000), 10 + i);
  }
  const auto delay = 40ms;
  IoThread::set_paused(true);
  const std::int64_t before = IoThread::jobs_finished();
  for (int i = 0; i < 3; ++i) store.put({i, Kind::Restart}, cps[i].view());
  // put returned before any write happened: the I/O thread is paused.
  EXPECT_EQ(IoThread::jobs_finished(), before);
  IoThread::set_delay(delay);
  IoThread::set_paused(false);
  // The solver computes (and may call MPI on this thread) while the writes go on.
  const auto t0 = std::chrono::steady_clock::now();
  while (IoThread::jobs_finished() < before + 3) {
    ASSERT_LT(std::chrono::steady_clock::now() - t0, 60s);
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(1ms);
  }
  IoThread::set_delay(0us);
  const StoreStats st = store.stats();
  EXPECT_GE(st.overlap_seconds, 3 * std::chrono::duration<double>(delay).count());
  EXPECT_EQ(st.wait_seconds, 0.0);
  store.prefetch({0, Kind::Restart});
  for (int i = 0; i < 3; ++i) expect_bitwise(store, {i, Kind::Restart}, cps[i]);
  EXPECT_EQ(store.stats().prefetch_hits, 1);
}

TEST(Funneled, AStoreMayOutliveMpiFinalize) {
  std::string made;
  if (world_rank() == 0) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "rewind-store-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) made = pattern;
  }
  outlives_main_dir.path = broadcast(made);
  StoreConfig c;
  c.comm = MPI_COMM_WORLD;
  c.directory = outlives_main_dir.path;
  outlives_main = make_store("hdf5", c);
  TestCheckpoint a(5);
  outlives_main->put({1, Kind::Restart}, a.view());
  EXPECT_TRUE(outlives_main->contains({1, Kind::Restart}));
}

}  // namespace
}  // namespace rwd::storage::test
