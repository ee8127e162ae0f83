#pragma once
// rwd64: the 64-bit checksum the HDF5 store keeps for each rank's block of each field.

#include <cstddef>
#include <cstdint>
#include <span>

namespace rwd::storage::detail {

/// rwd64 computed piece by piece, so that whoever moves a block can hash each chunk while it is
/// in cache (between two pwrite calls, after a pread). Feeding the bytes in any number of pieces
/// gives the same value as checksum() of the whole.
class Checksum {
 public:
  void update(std::span<const std::byte> bytes) noexcept;
  void update(std::span<const double> values) noexcept { update(std::as_bytes(values)); }
  std::uint64_t value() const noexcept;

 private:
  void stripe(const std::byte* p) noexcept;

  std::uint64_t lanes_[4] = {0x9E3779B97F4A7C15ull, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull,
                             ~0x9E3779B97F4A7C15ull};
  std::byte tail_[32] = {};  ///< bytes of a stripe not yet complete
  std::size_t tail_size_ = 0;
  std::uint64_t total_ = 0;
};

/// Hash of `bytes`: four independent multiply-rotate lanes over 8-byte words (so the CPU runs
/// them in parallel, several GB/s), a tail mix and a final avalanche. Not cryptographic: it
/// detects flipped bits, torn or misplaced writes and zeroed pages.
std::uint64_t checksum(std::span<const std::byte> bytes) noexcept;

inline std::uint64_t checksum(std::span<const double> values) noexcept {
  return checksum(std::as_bytes(values));
}

}  // namespace rwd::storage::detail
