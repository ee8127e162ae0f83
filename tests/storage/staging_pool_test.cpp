// The staging pool on its own: bounded bytes, reuse, put blocking while writes fill it, no
// endless wait when only prefetched data fills it, and the prefetch decision.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "rewind/error.hpp"
#include "staging_pool.hpp"

namespace rwd::storage::detail {
namespace {

using namespace std::chrono_literals;
using Use = StagingPool::Use;

constexpr std::int64_t kDoubles = 1000;
constexpr std::int64_t kBytes = kDoubles * 8;

TEST(StagingPool, LendsWhatWasAskedAndReusesBuffers) {
  StagingPool pool(3 * kBytes);
  {
    StagingPool::Lease a = pool.acquire(kDoubles, Use::Write);
    ASSERT_TRUE(a);
    EXPECT_EQ(a.span().size(), static_cast<std::size_t>(kDoubles));
    a.span()[kDoubles - 1] = 1.0;  // the whole span is ours
    EXPECT_EQ(pool.stats().in_use_bytes, kBytes);
  }
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
  for (int i = 0; i < 10; ++i) {
    StagingPool::Lease b = pool.acquire(kDoubles - i, Use::Write);  // fits the free buffer
  }
  const auto st = pool.stats();
  EXPECT_EQ(st.allocated_bytes, kBytes) << "a free buffer that fits was not reused";
  EXPECT_EQ(st.peak_in_use_bytes, kBytes);
  EXPECT_EQ(st.over_limit, 0);
}

TEST(StagingPool, AcquireBlocksWhileWritesFillThePoolAndResumesWhenOneComesBack) {
  StagingPool pool(2 * kBytes);
  auto first = std::make_unique<StagingPool::Lease>(pool.acquire(kDoubles, Use::Write));
  StagingPool::Lease second = pool.acquire(kDoubles, Use::Write);
  std::atomic<bool> returned{false};
  StagingPool::Wait waited;
  auto third = std::async(std::launch::async, [&] {
    StagingPool::Lease l = pool.acquire(kDoubles, Use::Write, &waited);
    returned = true;
    return l.span().size();
  });
  // Nothing came back, so the third acquire cannot have returned, however long this takes.
  EXPECT_EQ(third.wait_for(100ms), std::future_status::timeout);
  EXPECT_FALSE(returned.load());
  std::thread io([&] { first.reset(); });  // the I/O thread finishes a write
  io.join();
  EXPECT_EQ(third.get(), static_cast<std::size_t>(kDoubles));
  EXPECT_TRUE(returned.load());
  EXPECT_GT(waited.to, waited.from) << "the blocked time was not reported";
  EXPECT_LE(pool.stats().allocated_bytes, 2 * kBytes);
  EXPECT_EQ(pool.stats().over_limit, 0);
}

TEST(StagingPool, OnlyPrefetchedDataInTheWayAllocatesAboveTheLimit) {
  StagingPool pool(2 * kBytes);
  StagingPool::Lease p1 = pool.acquire(kDoubles, Use::Prefetch);
  StagingPool::Lease p2 = pool.acquire(kDoubles, Use::Prefetch);
  // Waiting here would wait for ever: prefetched data comes back only when the caller reads it.
  StagingPool::Lease w = pool.acquire(kDoubles, Use::Write);
  ASSERT_TRUE(w);
  const auto st = pool.stats();
  EXPECT_EQ(st.over_limit, 1);
  EXPECT_EQ(st.allocated_bytes, 3 * kBytes);
  EXPECT_EQ(st.peak_in_use_bytes, 3 * kBytes);
}

TEST(StagingPool, ABufferLargerThanThePoolGoesThroughWhenNothingElseIsLent) {
  StagingPool pool(kBytes);
  {
    StagingPool::Lease big = pool.acquire(4 * kDoubles, Use::Write);
    ASSERT_TRUE(big);
    EXPECT_EQ(pool.stats().over_limit, 1);
  }
  // Above the limit, the buffer was let go rather than kept.
  EXPECT_LE(pool.stats().allocated_bytes, kBytes);
  StagingPool::Lease small = pool.acquire(kDoubles, Use::Write);
  EXPECT_EQ(pool.stats().over_limit, 1);
}

TEST(StagingPool, FreeBuffersTooSmallMakeRoomForALargerOne) {
  StagingPool pool(4 * kBytes);
  {
    StagingPool::Lease a = pool.acquire(kDoubles, Use::Write);
    StagingPool::Lease b = pool.acquire(kDoubles, Use::Write);
    StagingPool::Lease c = pool.acquire(kDoubles, Use::Write);
  }
  EXPECT_EQ(pool.stats().allocated_bytes, 3 * kBytes);
  StagingPool::Lease large = pool.acquire(3 * kDoubles, Use::Write);  // no free one fits
  const auto st = pool.stats();
  EXPECT_LE(st.allocated_bytes, 4 * kBytes);
  EXPECT_EQ(st.over_limit, 0);
}

TEST(StagingPool, PrefetchDecisionCountsBytesAskedFor) {
  StagingPool pool(3 * kBytes);
  // A free buffer larger than asked for is lent; the decision must not depend on it.
  { StagingPool::Lease w = pool.acquire(3 * kDoubles, Use::Write); }
  EXPECT_TRUE(pool.prefetch_fits(2 * kBytes));
  StagingPool::Lease p = pool.acquire(kDoubles, Use::Prefetch);
  EXPECT_EQ(pool.stats().prefetch_bytes, kBytes);
  EXPECT_TRUE(pool.prefetch_fits(2 * kBytes));
  EXPECT_FALSE(pool.prefetch_fits(2 * kBytes + 8));
  // Write buffers do not count against prefetches (they come back by themselves).
  StagingPool::Lease w = pool.acquire(kDoubles, Use::Write);
  EXPECT_TRUE(pool.prefetch_fits(2 * kBytes));
  p = StagingPool::Lease();
  EXPECT_EQ(pool.stats().prefetch_bytes, 0);
  EXPECT_TRUE(pool.prefetch_fits(3 * kBytes));
}

TEST(StagingPool, LeaseOutlivesThePool) {
  StagingPool::Lease kept;
  {
    StagingPool pool(kBytes);
    kept = pool.acquire(kDoubles, Use::Write);
  }
  kept.span()[0] = 2.0;  // still valid; giving it back later must not touch freed memory
  kept = StagingPool::Lease();
  EXPECT_FALSE(kept);
}

TEST(StagingPool, RejectsANonPositiveLimit) {
  EXPECT_THROW(StagingPool(0), Error);
}

}  // namespace
}  // namespace rwd::storage::detail
