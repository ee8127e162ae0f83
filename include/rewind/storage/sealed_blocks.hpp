#pragma once
/// @file
/// A sealed checkpoint's blocks read back without HDF5: what a resumed run does with the file of
/// a run that was killed (its HDF5 metadata may be torn; the data of a sealed checkpoint is on
/// disk and its place and checksum are known).

#include <cstdint>
#include <span>
#include <string>

#include "rewind/storage/store.hpp"

namespace rwd::storage {

/// Where this rank's block of one field of a sealed checkpoint lies in a store's file.
struct SealedBlock {
  std::string field;           ///< the field's name
  std::int64_t at = 0;         ///< byte offset of the block in the file
  std::int64_t count = 0;      ///< doubles in the block
  std::uint64_t checksum = 0;  ///< XXH3-64 of the block's values (the store's)
  /// > 0: the block is a compressed block of this many bytes at `at` (rewind/storage/codec.hpp)
  /// that decodes to `count` values; 0: `count` float64 values as they are.
  std::int64_t stored = 0;
};

/// The checksum SealedBlock::checksum holds for a block of these values (XXH3-64).
std::uint64_t block_checksum(std::span<const double> values) noexcept;

/// Reads `blocks` from the file `path` (pread) into `out`, the same fields in the same order with
/// the same counts, and checks each block against its checksum (a compressed block's own checksum
/// of its bytes first, then its values'). Rank-local. Throws
/// Error(InvalidArgument) if `out` does not match `blocks`, Error(Io) with the operating system's
/// reason if the file cannot be read, Error(Corrupt) naming the field and the file when a block
/// fails its checksum (the data is then unspecified).
void read_sealed_blocks(const std::string& path, std::span<const SealedBlock> blocks,
                        std::span<const FieldSpan> out);

}  // namespace rwd::storage
