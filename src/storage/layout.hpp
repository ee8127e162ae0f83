#pragma once
// What a checkpoint looks like on this rank, and the argument checks every store shares, so
// that every store rejects the same calls with the same messages.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/storage/store.hpp"

namespace rwd::storage::detail {

/// One field as this rank wrote it.
struct FieldLayout {
  std::string name;
  std::int64_t size = 0;  ///< this rank's element count
  std::int64_t offset = 0;
  std::int64_t global_size = 0;
};

/// A checkpoint as this rank wrote it: its fields in order and its scalars.
struct Layout {
  std::vector<FieldLayout> fields;
  std::vector<std::string> scalar_names;
  std::vector<double> scalar_values;
  std::int64_t doubles() const;  ///< elements over all fields on this rank
  std::int64_t bytes() const { return doubles() * static_cast<std::int64_t>(sizeof(double)); }
};

Layout layout_of(const CheckpointView& checkpoint);

/// "hdf5 store, put(restart 3) on rank 1" (the rank is left out when negative).
std::string where(std::string_view store, std::string_view call, const Key& key, int rank);

/// Throws Error(InvalidArgument) for an empty or duplicate name, a name with '/', or a block
/// outside [0, global_size). Rank-local.
void validate_put(std::string_view store, const Key& key, const CheckpointView& checkpoint,
                  int rank);

/// Throws Error(InvalidArgument) unless `out` asks for the fields of `written` in order with the
/// same names, sizes, offsets and global sizes, and only for scalars it holds. Rank-local.
void validate_get(std::string_view store, const Key& key, const Layout& written,
                  const CheckpointSpan& out, int rank);

/// Copies the fields of `checkpoint` back to back into `to`, which holds at least
/// layout_of(checkpoint).doubles() values. With unpack(), the one place where a checkpoint
/// becomes one contiguous buffer (a RAM slot, a staging buffer) and back.
void pack(const CheckpointView& checkpoint, std::span<double> to);

/// Copies `from`, fields back to back as pack() wrote them, into the fields of `out`.
void unpack(std::span<const double> from, const CheckpointSpan& out);

/// Copies the scalars of `written` into `out` by name (after validate_get).
void fill_scalars(const Layout& written, const CheckpointSpan& out);

/// Hash of what every rank must pass identically: field names and global sizes, scalar names
/// and value bits.
std::uint64_t layout_hash(const CheckpointView& checkpoint);

/// The counters every store keeps the same way: a checkpoint of `bytes` (this rank's) stored,
/// read or freed; `live` checkpoints are held afterwards.
void count_put(StoreStats& stats, std::int64_t bytes, std::int64_t live);
void count_get(StoreStats& stats, std::int64_t bytes);
void count_erase(StoreStats& stats, std::int64_t bytes, std::int64_t live);

/// Throws Error(InvalidArgument) "<where>: checkpoint <key> is not held ...".
[[noreturn]] void throw_missing(std::string_view store, std::string_view call, const Key& key,
                                int rank);

/// Throws Error(InvalidArgument) "<where>: checkpoint <key> is already held ...".
[[noreturn]] void throw_duplicate(std::string_view store, const Key& key, int rank);

}  // namespace rwd::storage::detail
