// Store pieces that need no other rank: the registry, key names, RamStore's slot management and
// the checksum.
#include <sys/resource.h>

#include <cstring>
#include <vector>

#include "checksum.hpp"
#include "rewind/storage/ram_store.hpp"
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
}

TEST(StoreRegistry, KeyNames) {
  EXPECT_EQ(to_string(Key{12, Kind::Restart}), "restart 12");
  EXPECT_EQ(to_string(Key{0, Kind::Pullback}), "pullback 0");
  EXPECT_EQ(to_string(Key{4, Kind::Restart, 3}), "restart 4 of run 3");
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
        RamStore bad(StoreConfig{MPI_COMM_SELF, ".", false, "run", -1, 0});
      },
      ErrorCode::InvalidArgument, {"capacity and slot_doubles must be >= 0"});
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
