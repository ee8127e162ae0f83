#include "checksum.hpp"

#include <bit>
#include <cstring>

namespace rwd::storage::detail {
namespace {

// Odd 64-bit constants with well-mixed bits (golden ratio and splitmix64's multipliers).
constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;
constexpr std::uint64_t kMixA = 0xBF58476D1CE4E5B9ull;
constexpr std::uint64_t kMixB = 0x94D049BB133111EBull;

inline std::uint64_t load(const std::byte* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);  // alignment-free and no aliasing issue
  return w;
}

inline std::uint64_t lane(std::uint64_t acc, std::uint64_t word) noexcept {
  acc += word * kMixA;
  acc = std::rotl(acc, 29);
  return acc * kGolden;
}

inline std::uint64_t avalanche(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= kMixA;
  x ^= x >> 27;
  x *= kMixB;
  x ^= x >> 31;
  return x;
}

}  // namespace

std::uint64_t checksum(std::span<const std::byte> bytes) noexcept {
  const std::byte* p = bytes.data();
  const std::size_t n = bytes.size();
  std::uint64_t a = kGolden, b = kMixA, c = kMixB, d = ~kGolden;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = lane(a, load(p + i));
    b = lane(b, load(p + i + 8));
    c = lane(c, load(p + i + 16));
    d = lane(d, load(p + i + 24));
  }
  std::uint64_t h = std::rotl(a, 1) + std::rotl(b, 7) + std::rotl(c, 12) + std::rotl(d, 18);
  h ^= static_cast<std::uint64_t>(n) * kMixB;
  for (; i + 8 <= n; i += 8) h = lane(h, load(p + i));
  for (; i < n; ++i) h = (h ^ static_cast<std::uint64_t>(p[i])) * kMixA;
  return avalanche(h);
}

}  // namespace rwd::storage::detail
