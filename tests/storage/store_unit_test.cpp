// Store pieces that need no other rank: the registry, key names, RamStore's slot management and
// the checksum.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "checksum.hpp"
#include "ram_store.hpp"
#include "rewind/timing.hpp"
#include "store_test_util.hpp"

namespace rwd::storage::test {
namespace {

Key restart(std::int64_t step) {
  return {step, Kind::Restart};
}

TEST(StoreRegistry, NamesAndErrors) {
  EXPECT_EQ(store_names(), "ram, hdf5");
  expect_error([] { make_store("x", StoreConfig{}); }, ErrorCode::InvalidArgument,
               {"unknown store 'x'; known: ram, hdf5"});
  auto ram = make_store("ram", StoreConfig{});
  EXPECT_EQ(ram->name(), "ram");
  EXPECT_EQ(ram->path(), "");
  EXPECT_EQ(ram->collective_comm(), MPI_COMM_NULL);
  EXPECT_EQ(ram->durable(), nullptr);
}

TEST(StoreRegistry, KeyNames) {
  EXPECT_EQ(to_string(Key{12, Kind::Restart}), "restart 12");
  EXPECT_EQ(to_string(Key{0, Kind::Pullback}), "pullback 0");
  EXPECT_EQ(to_string(Key{4, Kind::Restart, 3}), "restart 4 of recording 3");
  EXPECT_LT((Key{1, Kind::Restart}), (Key{1, Kind::Pullback}));
  EXPECT_LT((Key{1, Kind::Pullback}), (Key{2, Kind::Restart}));
}

TEST(RamStore, PreallocatesAndReusesSlots) {
  StoreConfig c;
  c.capacity = 3;
  c.slot_doubles = 100;
  RamStore store(c);
  EXPECT_EQ(store.slots(), 3);
  EXPECT_EQ(store.allocated_bytes(), 3 * 100 * 8);
  std::vector<TestCheckpoint> cps(6);
  for (int i = 0; i < 6; ++i) cps[i].add("u", even(100 - i), static_cast<std::uint64_t>(i));
  for (int i = 0; i < 3; ++i) store.put(restart(i), cps[i].view());
  EXPECT_EQ(store.grow_count(), 0) << "checkpoints within capacity allocated memory";
  store.put(restart(3), cps[3].view());  // beyond capacity: grows
  EXPECT_EQ(store.grow_count(), 1);
  EXPECT_EQ(store.slots(), 4);
  store.erase(restart(0));
  store.erase(restart(1));
  store.put(restart(4), cps[4].view());  // reuses a freed slot
  EXPECT_EQ(store.grow_count(), 1);
  TestCheckpoint large;
  large.add("u", even(500), 9);
  store.put(restart(5), large.view());  // larger than any free slot: one free slot is enlarged
  EXPECT_EQ(store.grow_count(), 2);
  EXPECT_EQ(store.slots(), 4);
  expect_bitwise(store, restart(2), cps[2]);
  expect_bitwise(store, restart(3), cps[3]);
  expect_bitwise(store, restart(4), cps[4]);
  expect_bitwise(store, restart(5), large);
  expect_error(
      [] {
        StoreConfig cfg;
        cfg.comm = MPI_COMM_SELF;
        cfg.capacity = -1;
        RamStore bad(cfg);
      },
      ErrorCode::InvalidArgument, {"capacity and slot_doubles must be >= 0"});
}

// The free slot a put takes is the smallest one that holds it; only when none does is the largest
// free slot enlarged.
TEST(RamStore, TakesTheBestFittingFreeSlot) {
  RamStore store(StoreConfig{});
  std::vector<TestCheckpoint> sized(3);
  for (int i = 0; i < 3; ++i) sized[i].add("u", even(100 * (i + 1)), static_cast<std::uint64_t>(i));
  for (int i = 0; i < 3; ++i) store.put(restart(i), sized[i].view());  // slots of 100, 200, 300
  ASSERT_EQ(store.slots(), 3);
  ASSERT_EQ(store.grow_count(), 3);
  for (int i = 0; i < 3; ++i) store.erase(restart(i));
  EXPECT_EQ(store.free_slots(), 3);
  const std::int64_t bytes = store.allocated_bytes();

  // 150 doubles: the 200 slot (best fit), not the 300 one (first large enough by size) ...
  TestCheckpoint a, b, c, d;
  a.add("u", even(150), 10);
  b.add("u", even(250), 11);
  c.add("u", even(100), 12);
  d.add("u", even(120), 13);
  store.put(restart(10), a.view());
  // ... so that 250 still finds the 300 slot, and 100 the 100 slot (exact fit), without growing.
  store.put(restart(11), b.view());
  store.put(restart(12), c.view());
  EXPECT_EQ(store.grow_count(), 3) << "a best-fitting free slot was not taken";
  EXPECT_EQ(store.allocated_bytes(), bytes);
  EXPECT_EQ(store.free_slots(), 0);
  // Nothing free: a new slot.
  store.put(restart(13), d.view());
  EXPECT_EQ(store.grow_count(), 4);
  EXPECT_EQ(store.slots(), 4);

  // Free 100 (restart 12) and 200 (restart 10); 250 fits neither: the largest free one (200) is
  // enlarged, the 100 one stays free.
  store.erase(restart(12));
  store.erase(restart(10));
  TestCheckpoint e;
  e.add("u", even(250), 14);
  store.put(restart(14), e.view());
  EXPECT_EQ(store.grow_count(), 5);
  EXPECT_EQ(store.slots(), 4);
  EXPECT_EQ(store.free_slots(), 1);
  EXPECT_EQ(store.allocated_bytes(), bytes + (120 + 250 - 200) * 8);
  for (const auto& [key, cp] :
       {std::pair{restart(11), &b}, std::pair{restart(13), &d}, std::pair{restart(14), &e}}) {
    expect_bitwise(store, key, *cp);
  }
}

// A put takes a free slot in O(log n): with 16 384 free slots it costs about what it costs with
// 64 (the linear scan it replaces took 250 times longer there). A loose bound: only a scan over
// every free slot fails it.
TEST(RamStore, FindingAFreeSlotDoesNotScanThemAll) {
  const auto per_put = [](std::int64_t free_slots) {
    StoreConfig c;
    c.capacity = free_slots;
    c.slot_doubles = 1;
    RamStore store(c);
    const std::vector<double> one(1, 1.0);
    const std::vector<FieldView> fields = {FieldView{"u", one, 0, 1}};
    double best = 1e9;
    for (int trial = 0; trial < 5; ++trial) {
      const auto t0 = SteadyClock::now();
      for (int i = 0; i < 2000; ++i) {
        store.put(restart(i), {fields, {}});
        store.erase(restart(i));
      }
      best = std::min(best, seconds_since(t0) / 2000);
    }
    return best;
  };
  const double few = per_put(64);
  const double many = per_put(16384);
  std::printf("[ info ] put + erase: %.2f us with 64 free slots, %.2f us with 16384\n", 1e6 * few,
              1e6 * many);
  EXPECT_LT(many, 10 * few + 2e-6) << "the free-slot search grows with the number of free slots";
}

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST(RamStore, FirstWriteIntoAPreallocatedSlotDoesNotFault) {
  constexpr std::int64_t n = 1 << 20;  // 8 MiB, 2048 pages of 4 KiB
  TestCheckpoint big;
  big.add("u", even(n), 1);
  StoreConfig c;
  c.capacity = 1;
  c.slot_doubles = n;
  RamStore prepared(c);
  long before = minor_faults();
  prepared.put(restart(1), big.view());
  const long prepared_faults = minor_faults() - before;

  RamStore cold(StoreConfig{});
  before = minor_faults();
  cold.put(restart(1), big.view());
  const long cold_faults = minor_faults() - before;
  if (cold_faults < 256) {
    GTEST_SKIP() << "page faults of a fresh buffer are not visible here (" << cold_faults
                 << "; transparent huge pages?)";
  }
  EXPECT_LT(prepared_faults, cold_faults / 8)
      << "preallocated: " << prepared_faults << " faults, fresh: " << cold_faults;
}

TEST(Checksum, SeesEveryBitAndOrder) {
  std::vector<std::byte> data(100);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 37 + 11);
  const std::uint64_t base = detail::checksum(std::span<const std::byte>(data));
  EXPECT_EQ(base, detail::checksum(std::span<const std::byte>(data)));
  for (std::size_t i = 0; i < data.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      data[i] ^= std::byte(1u << bit);
      EXPECT_NE(detail::checksum(std::span<const std::byte>(data)), base)
          << "byte " << i << " bit " << bit;
      data[i] ^= std::byte(1u << bit);
    }
  }
  // Swapped 8-byte words, in one lane and across lanes.
  for (const auto& [a, b] : {std::pair{0, 32}, std::pair{0, 8}, std::pair{40, 88}}) {
    std::vector<std::byte> swapped = data;
    std::swap_ranges(swapped.begin() + a, swapped.begin() + a + 8, swapped.begin() + b);
    EXPECT_NE(detail::checksum(std::span<const std::byte>(swapped)), base) << a << " <-> " << b;
  }
  // Length counts, even for zeros; -0.0 is not 0.0.
  const std::vector<double> z8(1, 0.0), z16(2, 0.0), minus(1, -0.0);
  EXPECT_NE(detail::checksum(std::span<const double>(z8)),
            detail::checksum(std::span<const double>(z16)));
  EXPECT_NE(detail::checksum(std::span<const double>(z8)),
            detail::checksum(std::span<const double>(minus)));
  EXPECT_NE(detail::checksum(std::span<const std::byte>()),
            detail::checksum(std::span<const double>(z8)));
}

}  // namespace
}  // namespace rwd::storage::test
