#pragma once
// rwd64: the 64-bit checksum the HDF5 store keeps for each rank's block of each field.

#include <cstddef>
#include <cstdint>
#include <span>

namespace rwd::storage::detail {

/// Hash of `bytes`: four independent multiply-rotate lanes over 8-byte words (so the CPU runs
/// them in parallel, several GB/s), a tail mix and a final avalanche. Not cryptographic: it
/// detects flipped bits, torn or misplaced writes and zeroed pages.
std::uint64_t checksum(std::span<const std::byte> bytes) noexcept;

inline std::uint64_t checksum(std::span<const double> values) noexcept {
  return checksum(std::as_bytes(values));
}

}  // namespace rwd::storage::detail
