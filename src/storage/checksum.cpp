#include "checksum.hpp"

#include <algorithm>
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

void Checksum::stripe(const std::byte* p) noexcept {
  lanes_[0] = lane(lanes_[0], load(p));
  lanes_[1] = lane(lanes_[1], load(p + 8));
  lanes_[2] = lane(lanes_[2], load(p + 16));
  lanes_[3] = lane(lanes_[3], load(p + 24));
}

void Checksum::update(std::span<const std::byte> bytes) noexcept {
  const std::byte* p = bytes.data();
  std::size_t n = bytes.size();
  total_ += n;
  if (tail_size_ > 0) {
    const std::size_t take = std::min(n, sizeof tail_ - tail_size_);
    std::memcpy(tail_ + tail_size_, p, take);
    tail_size_ += take;
    p += take;
    n -= take;
    if (tail_size_ < sizeof tail_) return;
    stripe(tail_);
    tail_size_ = 0;
  }
  // Local copies of the lanes let the compiler keep them in registers over the long loop.
  std::uint64_t a = lanes_[0], b = lanes_[1], c = lanes_[2], d = lanes_[3];
  for (; n >= 32; p += 32, n -= 32) {
    a = lane(a, load(p));
    b = lane(b, load(p + 8));
    c = lane(c, load(p + 16));
    d = lane(d, load(p + 24));
  }
  lanes_[0] = a;
  lanes_[1] = b;
  lanes_[2] = c;
  lanes_[3] = d;
  if (n > 0) std::memcpy(tail_, p, n);
  tail_size_ = n;
}

std::uint64_t Checksum::value() const noexcept {
  std::uint64_t h = std::rotl(lanes_[0], 1) + std::rotl(lanes_[1], 7) + std::rotl(lanes_[2], 12) +
                    std::rotl(lanes_[3], 18);
  h ^= total_ * kMixB;
  std::size_t i = 0;
  for (; i + 8 <= tail_size_; i += 8) h = lane(h, load(tail_ + i));
  for (; i < tail_size_; ++i) h = (h ^ static_cast<std::uint64_t>(tail_[i])) * kMixA;
  return avalanche(h);
}

std::uint64_t checksum(std::span<const std::byte> bytes) noexcept {
  Checksum sum;
  sum.update(bytes);
  return sum.value();
}

}  // namespace rwd::storage::detail
