// The RAM store's codec off the caller's thread (ram_store.hpp, "Where the codec runs"): a put
// returns while the I/O thread is held back, and the checkpoint reads back bitwise from the
// values it packed; a lossy get gives the block's bits, the same as a store compressing on the
// caller's thread; at most RamStore::kInFlight checkpoints are compressed behind; prefetch()
// decodes ahead (hits, skips beyond kAhead, a damaged block still Corrupt); erase and the
// destructor with jobs in flight neither hang nor leave a job touching freed memory; a rank
// bound to one CPU (mpirun's default binding) keeps the codec on its own thread.
#include <sched.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "../support/cpus.hpp"
#include "io_thread.hpp"
#include "ram_store.hpp"
#include "store_test_util.hpp"

namespace rwd::storage::test {
namespace {

using detail::IoThread;

Key restart(std::int64_t step) {
  return {step, Kind::Restart};
}

StoreConfig behind_config(const CodecSpec& codec, bool async = true) {
  StoreConfig c;
  c.comm = MPI_COMM_WORLD;
  c.codec = codec;
  c.async_io = async;
  c.inline_io_bytes = 0;  // every checkpoint behind
  return c;
}

TestCheckpoint smooth(std::int64_t n, double phase) {
  TestCheckpoint c;
  TestCheckpoint::Field f{"u", {}, n * world_rank(), n * world_size()};
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i) / static_cast<double>(n);
    f.data.push_back(x < 0.5 ? 1.0 : std::sin(3 * x + phase) * std::exp(-x));
  }
  c.fields.push_back(std::move(f));
  c.scalars.emplace_back("time", phase);
  return c;
}

class RamStoreBehind : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test_support::on_every_cpu()) GTEST_SKIP() << "one CPU: the codec never runs behind";
  }
};

// Held back: jobs wait in the queue until the guard goes, whatever the test does meanwhile.
struct Paused {
  Paused() { IoThread::set_paused(true); }
  ~Paused() { IoThread::set_paused(false); }
};

TEST_F(RamStoreBehind, APutReturnsWhileTheIoThreadIsHeldAndReadsBackBitwise) {
  auto store = make_store("ram", behind_config({"zstd"}));
  TestCheckpoint a = smooth(20000, 0.1), b = smooth(20000, 0.2);
  {
    Paused held;  // nothing is compressed until this ends
    store->put(restart(1), a.view());
    store->put(restart(2), b.view());
    expect_bitwise(*store, restart(2), b);  // from the values packed at put()
    store->erase(restart(1));               // its job owns what it touches: no wait
    EXPECT_TRUE(store->contains(restart(2)));
  }
  const StoreStats s = store->stats();  // waits for the blocks
  EXPECT_EQ(s.live, 1);
  EXPECT_EQ(s.writes, 2);
  EXPECT_LT(s.live_bytes, 8 * 20000 * 3 / 4);  // b's block, compressed
  EXPECT_EQ(s.live_bytes, store->stored_bytes(restart(2)));
  EXPECT_GT(s.codec_io_thread_seconds, 0.0);
  EXPECT_EQ(s.codec_io_thread_seconds, s.compress_seconds);  // all of it behind
  expect_bitwise(*store, restart(2), b);                     // now from the block
  EXPECT_GT(store->stats().decompress_seconds, 0.0);
  store->erase(restart(2));
  EXPECT_EQ(store->stats().live_bytes, 0);
}

// A lossy get gives what the block decodes to (it waits for the block), bit for bit what a
// store that compresses on the caller's thread gives.
TEST_F(RamStoreBehind, ALossyGetGivesTheBlocksBitsAsOnTheCallersThread) {
  TestCheckpoint a = smooth(30000, 0.3);
  std::vector<double> got[2];
  for (const bool async : {true, false}) {
    auto store = make_store("ram", behind_config({"zfp", 1e-6}, async));
    store->put(restart(1), a.view());
    Readback back(a);
    auto span = back.span();
    store->get(restart(1), span);  // behind: the job may still run; get waits for its block
    got[async ? 0 : 1] = back.fields[0].data;
    EXPECT_EQ(store->stats().codec_io_thread_seconds > 0.0, async);
  }
  ASSERT_EQ(got[0].size(), got[1].size());
  double err = 0.0;
  for (std::size_t i = 0; i < got[0].size(); ++i) {
    ASSERT_EQ(bits(got[0][i]), bits(got[1][i])) << i;
    err = std::max(err, std::fabs(got[0][i] - a.fields[0].data[i]));
  }
  EXPECT_GT(err, 0.0);  // lossy indeed: not the packed values
  EXPECT_LE(err, 1e-6);
}

// A slow I/O thread: the third put waits for the first block (kInFlight = 2), and not before.
TEST_F(RamStoreBehind, AtMostKInFlightCheckpointsAreCompressedBehind) {
  static_assert(RamStore::kInFlight == 2);
  auto store = make_store("ram", behind_config({"zstd"}));
  TestCheckpoint a = smooth(20000, 0.4);
  IoThread::set_delay(std::chrono::milliseconds(200));
  store->put(restart(1), a.view());
  store->put(restart(2), a.view());
  const double two = store->stats().wait_seconds;  // stats() waits, but not in wait_seconds' put
  store->put(restart(3), a.view());
  store->put(restart(4), a.view());
  store->put(restart(5), a.view());
  IoThread::set_delay(std::chrono::microseconds(0));
  const StoreStats s = store->stats();
  EXPECT_GE(two, 0.3) << "stats() waited for both blocks (2 x 200 ms)";
  // puts 3 to 5 found two in flight: each waited for one job (about 200 ms); a margin of 2x.
  EXPECT_GE(s.wait_seconds - two, 0.2) << "the puts never waited for a block";
  for (std::int64_t k = 1; k <= 5; ++k) expect_bitwise(*store, restart(k), a);
}

TEST_F(RamStoreBehind, PrefetchDecodesAheadAndSkipsBeyondKAhead) {
  static_assert(RamStore::kAhead == 2);
  auto store = make_store("ram", behind_config({"zstd"}));
  TestCheckpoint a = smooth(20000, 0.5), b = smooth(20000, 0.6), c = smooth(20000, 0.7);
  store->put(restart(1), a.view());
  store->put(restart(2), b.view());
  store->put(restart(3), c.view());
  const double io_before = store->stats().codec_io_thread_seconds;  // the blocks, made
  store->prefetch(restart(1));
  store->prefetch(restart(2));
  store->prefetch(restart(3));  // a third: skipped
  store->prefetch(restart(1));  // already ahead: nothing
  expect_bitwise(*store, restart(1), a);
  expect_bitwise(*store, restart(3), c);  // decoded here
  store->erase(restart(2));               // decoded ahead and never read: no hang, no leak
  const StoreStats s = store->stats();
  EXPECT_EQ(s.prefetch_hits, 1);
  EXPECT_EQ(s.prefetch_skipped, 1);
  EXPECT_GT(s.codec_io_thread_seconds, io_before) << "restart 1 was decoded on the I/O thread";
  EXPECT_EQ(s.live, 2);
  expect_error([&] { store->prefetch(restart(9)); }, ErrorCode::InvalidArgument,
               {"ram store, prefetch(restart 9", "is not held"});
}

TEST_F(RamStoreBehind, ADamagedBlockDecodedAheadIsCorrupt) {
  auto store = make_store("ram", behind_config({"zstd"}));
  TestCheckpoint a = smooth(20000, 0.8);
  RamStore::damage_next_blocks(1);
  store->put(restart(1), a.view());  // made on the caller's thread while the hook is armed
  store->prefetch(restart(1));
  Readback back(a);
  auto span = back.span();
  expect_error([&] { store->get(restart(1), span); }, ErrorCode::Corrupt,
               {"ram store: restart 1", "went bad"});
  store->put(restart(2), a.view());  // the store carries on
  expect_bitwise(*store, restart(2), a);
}

// Destroyed with compressions queued and a decode ahead running: nothing waits forever, and no
// job touches the store's memory afterwards (ASan in the sanitizer build).
TEST_F(RamStoreBehind, DestroyedWithJobsInFlight) {
  TestCheckpoint a = smooth(20000, 0.9);
  IoThread::set_delay(std::chrono::milliseconds(20));
  {
    auto store = make_store("ram", behind_config({"zstd"}));
    store->put(restart(1), a.view());
    store->stored_bytes(restart(1));  // its block made
    store->prefetch(restart(1));
    store->put(restart(2), a.view());
    store->put(restart(3), a.view());
  }
  IoThread::set_delay(std::chrono::microseconds(0));
  auto store = make_store("ram", behind_config({"zstd"}));
  store->put(restart(1), a.view());
  expect_bitwise(*store, restart(1), a);
}

// Bound to one CPU, the I/O thread would take turns with the caller: the codec stays on the
// caller's thread, and io_mode() says why; it names async_io off first, and says when no
// checkpoint was large enough to go behind.
TEST_F(RamStoreBehind, ARankBoundToOneCpuCompressesOnItsOwnThread) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  auto bound = make_store("ram", behind_config({"zstd"}));
  auto bound_sync = make_store("ram", behind_config({"zstd"}, false));
  ASSERT_TRUE(test_support::on_every_cpu());
  auto free = make_store("ram", behind_config({"zstd"}));
  StoreConfig small_only = behind_config({"zstd"});
  small_only.inline_io_bytes = 1 << 20;
  auto small = make_store("ram", small_only);
  const auto says = [](Store& store, const char* what) {
    EXPECT_NE(store.io_mode().find(what), std::string::npos) << store.io_mode();
  };
  says(*bound, "one CPU only");
  says(*bound_sync, "(StoreConfig::async_io is off)");
  TestCheckpoint a = smooth(20000, 0.15);
  {
    Paused held;  // the bound store never needs the I/O thread
    bound->put(restart(1), a.view());
    EXPECT_GT(bound->stats().compress_seconds, 0.0);
    small->put(restart(1), a.view());  // 160 KB, below its 1 MiB
    says(*small, "no checkpoint was above 1048576 bytes");
    EXPECT_EQ(small->stats().codec_io_thread_seconds, 0.0);
  }
  EXPECT_EQ(bound->stats().codec_io_thread_seconds, 0.0);
  expect_bitwise(*bound, restart(1), a);
  free->put(restart(1), a.view());
  free->put(restart(2), a.view());
  says(*free, "on the process I/O thread (2 checkpoints above 0 bytes)");
}

}  // namespace
}  // namespace rwd::storage::test
