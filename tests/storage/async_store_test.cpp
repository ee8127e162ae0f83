// AsyncStore beyond the conformance suite: that I/O really overlaps, that prefetch turns get into
// a copy, that the staging pool is bounded, that errors on the I/O thread come back, that the I/O
// thread owns the inner store, and that async and sync results are bitwise identical.
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "rewind/storage/async_store.hpp"
#include "rewind/storage/ram_store.hpp"
#include "store_test_util.hpp"

namespace rwd::storage::test {
namespace {

using namespace std::chrono_literals;

Key restart(std::int64_t step) {
  return {step, Kind::Restart};
}

// A rank-local store over a RamStore that records which threads call it, can be slow, and
// fails a put on request.
class ProbeStore final : public Store {
 public:
  struct Log {
    std::mutex mutex;
    std::set<std::thread::id> threads;
    std::thread::id constructed, destroyed;
    bool abandoned = false;
  };

  ProbeStore(std::shared_ptr<Log> log, std::chrono::milliseconds delay, std::int64_t fail_step = -1)
      : log_(std::move(log)), delay_(delay), fail_step_(fail_step), inner_(StoreConfig{}) {
    std::lock_guard lock(log_->mutex);
    log_->constructed = std::this_thread::get_id();
  }
  ~ProbeStore() override {
    std::lock_guard lock(log_->mutex);
    log_->destroyed = std::this_thread::get_id();
  }

  std::string name() const override { return "probe"; }
  void put(const Key& key, const CheckpointView& c) override {
    note();
    std::this_thread::sleep_for(delay_);
    if (key.step == fail_step_) {
      throw Error(ErrorCode::Io, "probe: disk on fire at step " + std::to_string(key.step));
    }
    inner_.put(key, c);
  }
  void get(const Key& key, const CheckpointSpan& out) override {
    note();
    std::this_thread::sleep_for(delay_);
    inner_.get(key, out);
  }
  void erase(const Key& key) override {
    note();
    inner_.erase(key);
  }
  bool contains(const Key& key) const override { return inner_.contains(key); }
  StoreStats stats() const override { return inner_.stats(); }
  void flush() override { note(); }
  void abandon() noexcept override {
    std::lock_guard lock(log_->mutex);
    log_->abandoned = true;
  }

 private:
  void note() {
    std::lock_guard lock(log_->mutex);
    log_->threads.insert(std::this_thread::get_id());
  }
  std::shared_ptr<Log> log_;
  std::chrono::milliseconds delay_;
  std::int64_t fail_step_;
  RamStore inner_;
};

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(AsyncStore, PutReturnsBeforeTheWriteAndTheWriteIsHidden) {
  auto log = std::make_shared<ProbeStore::Log>();
  AsyncStore store(std::make_unique<ProbeStore>(log, 50ms));
  std::vector<TestCheckpoint> cps;
  for (int i = 0; i < 4; ++i) cps.emplace_back(i);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) store.put(restart(i), cps[i].view());
  const double put_time = since(t0);
  EXPECT_LT(put_time, 0.1) << "put waited for writes that take 4 x 50 ms";
  std::this_thread::sleep_for(350ms);  // the solver computing
  store.flush();
  const AsyncStats st = store.async_stats();
  EXPECT_FALSE(st.synchronous);
  EXPECT_GE(st.io_seconds, 0.2);
  EXPECT_LT(st.wait_seconds, 0.1);
  EXPECT_GT(st.hidden_seconds(), 0.1);
  for (int i = 0; i < 4; ++i) expect_bitwise(store, restart(i), cps[i]);
}

TEST(AsyncStore, GetWaitsForThePendingWriteOfItsKey) {
  auto log = std::make_shared<ProbeStore::Log>();
  AsyncStore store(std::make_unique<ProbeStore>(log, 50ms));
  TestCheckpoint a(4);
  store.put(restart(1), a.view());
  expect_bitwise(store, restart(1), a);  // no "not held": the read queued behind the write
  EXPECT_GE(store.async_stats().wait_seconds, 0.05);
}

TEST(AsyncStore, PrefetchTurnsGetIntoACopy) {
  auto log = std::make_shared<ProbeStore::Log>();
  AsyncStore store(std::make_unique<ProbeStore>(log, 60ms));
  TestCheckpoint a(1), b(2);
  store.put(restart(1), a.view());
  store.put(restart(2), b.view());
  store.flush();
  const double waited = store.async_stats().wait_seconds;
  store.prefetch(restart(1));
  store.prefetch(restart(1));  // a second prefetch of the same key is a no-op
  std::this_thread::sleep_for(200ms);
  expect_bitwise(store, restart(1), a);
  AsyncStats st = store.async_stats();
  EXPECT_EQ(st.prefetch_hits, 1);
  EXPECT_LT(st.wait_seconds - waited, 0.03) << "get waited although the data was prefetched";
  expect_bitwise(store, restart(2), b);  // not prefetched: waits for the 60 ms read
  st = store.async_stats();
  EXPECT_EQ(st.prefetch_hits, 1);
  EXPECT_GE(st.wait_seconds - waited, 0.06);
  // A prefetched checkpoint can be erased unread; its buffer goes back to the pool.
  store.prefetch(restart(2));
  store.erase(restart(2));
  EXPECT_FALSE(store.contains(restart(2)));
  expect_error([&] { store.prefetch(restart(2)); }, ErrorCode::InvalidArgument, {"not held"});
}

TEST(AsyncStore, StagingPoolIsBounded) {
  auto log = std::make_shared<ProbeStore::Log>();
  AsyncConfig config;
  const std::int64_t one = 1000 * 8;  // bytes of one checkpoint
  config.max_staged_bytes = 3 * one;
  AsyncStore store(std::make_unique<ProbeStore>(log, 10ms), config);
  std::vector<TestCheckpoint> cps(10);
  for (int i = 0; i < 10; ++i) {
    cps[i].add("u", even(1000), static_cast<std::uint64_t>(i));
    store.put(restart(i), cps[i].view());
  }
  store.flush();
  const AsyncStats st = store.async_stats();
  EXPECT_LE(st.peak_staged_bytes, 3 * one);
  EXPECT_GE(st.peak_staged_bytes, one);
  EXPECT_EQ(st.over_limit, 0);
  EXPECT_GT(st.wait_seconds, 0.0) << "10 puts into a pool of 3 never waited";
  for (int i = 0; i < 10; ++i) expect_bitwise(store, restart(i), cps[i]);
}

TEST(AsyncStore, CheckpointLargerThanThePoolStillGoesThrough) {
  auto log = std::make_shared<ProbeStore::Log>();
  AsyncConfig config;
  config.max_staged_bytes = 100;
  AsyncStore store(std::make_unique<ProbeStore>(log, 0ms), config);
  TestCheckpoint a;
  a.add("u", even(1000), 7);
  store.put(restart(1), a.view());
  store.put(restart(2), a.view());
  expect_bitwise(store, restart(1), a);
  EXPECT_GE(store.async_stats().over_limit, 1);
  store.prefetch(restart(2));  // would exceed the pool: ignored, and counted
  EXPECT_EQ(store.async_stats().prefetch_skipped, 1);
  expect_bitwise(store, restart(2), a);
}

TEST(AsyncStore, FailureOnTheIoThreadIsRethrownAndSticks) {
  auto log = std::make_shared<ProbeStore::Log>();
  {
    AsyncStore store(std::make_unique<ProbeStore>(log, 5ms, 3));
    TestCheckpoint a(1);
    for (int i = 1; i <= 3; ++i) store.put(restart(i), a.view());  // the write of 3 fails later
    expect_error([&] { store.flush(); }, ErrorCode::Io, {"disk on fire at step 3"});
    expect_error([&] { store.put(restart(4), a.view()); }, ErrorCode::Io,
                 {"disk on fire at step 3"});
    Readback back(a);
    auto span = back.span();
    expect_error([&] { store.get(restart(1), span); }, ErrorCode::Io, {"disk on fire"});
    EXPECT_FALSE(log->abandoned);
  }
  EXPECT_TRUE(log->abandoned) << "a store whose write failed must be abandoned at destruction";
}

TEST(AsyncStore, TheIoThreadOwnsTheInnerStore) {
  auto log = std::make_shared<ProbeStore::Log>();
  {
    AsyncStore store([log] { return std::make_unique<ProbeStore>(log, 0ms); }, false);
    TestCheckpoint a(1);
    store.put(restart(1), a.view());
    store.prefetch(restart(1));
    expect_bitwise(store, restart(1), a);
    store.put(restart(2), a.view());
    expect_bitwise(store, restart(2), a);
    store.erase(restart(1));
    store.flush();
  }
  ASSERT_EQ(log->threads.size(), 1u) << "the inner store was called from several threads";
  const auto io = *log->threads.begin();
  EXPECT_NE(io, std::this_thread::get_id());
  EXPECT_EQ(log->constructed, io);
  EXPECT_EQ(log->destroyed, io);
  EXPECT_FALSE(log->abandoned);
}

TEST(AsyncStore, UnwindingAbandonsTheInnerStore) {
  auto log = std::make_shared<ProbeStore::Log>();
  try {
    AsyncStore store(std::make_unique<ProbeStore>(log, 0ms));
    TestCheckpoint a(1);
    store.put(restart(1), a.view());
    throw std::runtime_error("the solver failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(log->abandoned);
}

TEST(AsyncStore, ThreadLevelDecidesTheMode) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  EXPECT_EQ(provided, MPI_THREAD_MULTIPLE) << "the test main asks for MPI_THREAD_MULTIPLE";
  ScratchDir scratch;
  StoreConfig c;
  c.comm = MPI_COMM_WORLD;
  c.directory = scratch.path();
  auto hdf5 = make_async_store("hdf5", c);
  EXPECT_EQ(hdf5->async_stats().synchronous, provided < MPI_THREAD_MULTIPLE);
  EXPECT_NE(hdf5->collective_comm(), MPI_COMM_NULL);
  auto ram = make_async_store("ram", c);
  EXPECT_FALSE(ram->async_stats().synchronous) << "a rank-local store needs no MPI threads";
  EXPECT_EQ(ram->collective_comm(), MPI_COMM_NULL);
  AsyncConfig sync;
  sync.synchronous = true;
  auto forced = make_async_store("hdf5", c, sync);
  EXPECT_TRUE(forced->async_stats().synchronous);
  EXPECT_NE(forced->async_stats().synchronous_reason.find("AsyncConfig::synchronous"),
            std::string::npos);
  expect_error([] { make_async_store("tape", StoreConfig{}); }, ErrorCode::InvalidArgument,
               {"unknown store 'tape'; known: ram, hdf5"});
}

// The same calls with async on and off give the same bits.
class AsyncMatchesSync : public ::testing::TestWithParam<std::string> {};

TEST_P(AsyncMatchesSync, Bitwise) {
  ScratchDir scratch;
  StoreConfig c;
  c.comm = MPI_COMM_WORLD;
  c.directory = scratch.path();
  std::vector<std::vector<std::uint64_t>> results[2];
  for (int mode = 0; mode < 2; ++mode) {
    AsyncConfig a;
    a.synchronous = mode == 0;
    a.max_staged_bytes = 4096;
    auto store = make_async_store(GetParam(), c, a);
    EXPECT_EQ(store->async_stats().synchronous, mode == 0);
    std::vector<TestCheckpoint> cps;
    for (int i = 0; i < 6; ++i) {
      cps.emplace_back(100 + i);
      cps.back().add("big", even(300), 200 + i);
    }
    for (int i = 0; i < 6; ++i) {
      store->put(restart(i), cps[i].view());
      if (i % 2 == 1) store->erase(restart(i - 1));
    }
    for (int i = 5; i >= 1; i -= 2) {
      if (i > 1) store->prefetch(restart(i - 2));
      Readback back(cps[i]);
      auto span = back.span();
      store->get(restart(i), span);
      back.collect();
      std::vector<std::uint64_t> flat;
      for (const auto& f : back.fields) {
        for (double x : f.data) flat.push_back(bits(x));
      }
      for (const auto& s : back.scalars) flat.push_back(bits(s.second));
      results[mode].push_back(flat);
    }
  }
  ASSERT_EQ(results[0].size(), 3u);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_NE(results[0][0], results[0][1]) << "different checkpoints read back the same bits";
}

INSTANTIATE_TEST_SUITE_P(Stores, AsyncMatchesSync, ::testing::Values("ram", "hdf5"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace rwd::storage::test
