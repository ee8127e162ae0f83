#pragma once
// The 64-bit checksum the HDF5 store keeps for each rank's block of each field: XXH3-64 (seed 0)
// from Debian's libxxhash, through its run-time dispatch (AVX-512, AVX2 or SSE2, whichever the
// CPU has). A verified read is a pread plus this hash over the same bytes, so the hash's speed
// bounds the read's: 73-91 GB/s on one core of the development VM (AVX-512, a chunk in cache),
// against 21 for the SSE2 code of a header-only XXH3 and 23 for rwd64, the hand-written hash of
// formats 1 to 4.

#include <cstddef>
#include <cstdint>
#include <span>

namespace rwd::storage::detail {

/// The checksum computed piece by piece, so that whoever moves a block can hash each chunk while
/// it is in cache (between two pwrite calls, after a pread). Feeding the bytes in any number of
/// pieces gives the same value as checksum() of the whole.
class Checksum {
 public:
  Checksum() noexcept;
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;

  void update(std::span<const std::byte> bytes) noexcept;
  void update(std::span<const double> values) noexcept { update(std::as_bytes(values)); }
  std::uint64_t value() const noexcept;

 private:
  // XXH3_state_t, kept opaque so that only checksum.cpp sees xxhash.h (which checks the size and
  // the alignment): 576 bytes in xxHash 0.8.
  alignas(64) unsigned char state_[640];
};

/// XXH3-64 of `bytes`. Not cryptographic: it detects flipped bits, torn or misplaced writes and
/// zeroed pages.
std::uint64_t checksum(std::span<const std::byte> bytes) noexcept;

inline std::uint64_t checksum(std::span<const double> values) noexcept {
  return checksum(std::as_bytes(values));
}

}  // namespace rwd::storage::detail
