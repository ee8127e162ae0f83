#pragma once
// Where a checkpoint's blocks go in the HDF5 store's file: the slabs and the shapes they are made
// for, the row a checkpoint takes and when a freed row may be taken again, how many rows a new
// slab gets, and the byte offset of a rank's block in a row. Plain data and logic, with no MPI
// and no HDF5 call, so that it is tested on its own (tests/storage/slab_table_test.cpp); the
// store makes the collective calls around it (hdf5_store.cpp) and writes what it holds into the
// file (hdf5_store_metadata.cpp).
//
// Words: a *slab* is a group `slab_<k>` of the file with one dataset [rows, global_size] per
// field; a *row* is one checkpoint's place in it, row j of every dataset of the slab. (A "slot"
// is a place in a budget, docs/runtime.md; the file's format 5 predates this word: its group
// attribute `slots` counts rows, and the per-row attributes step, kind, run, complete and
// scalar:<name> hold one value per row. Nothing written to the file is renamed.)

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rewind/storage/key.hpp"
#include "rewind/storage/store.hpp"

namespace rwd::storage::detail {

/// A slab holds at most this many rows, and at most this many bytes of them (but always one row).
inline constexpr std::int64_t kSlabRows = 64;
inline constexpr std::int64_t kSlabBytes = std::int64_t{64} << 20;

/// Every rank's block of each field of a checkpoint: offsets[field][rank], counts[field][rank].
struct Blocks {
  std::vector<std::vector<std::int64_t>> offsets, counts;
};

/// What a row holds.
enum class RowState : std::uint8_t {
  Free,  ///< may be taken
  Held,  ///< holds a checkpoint
  /// Erased while the file still calls it complete: free again once the next seal has written
  /// complete = 0 for it (until then a killed run's file would pair the erased checkpoint's step
  /// and checksums with another checkpoint's bytes).
  Erased,
};

/// Room for `rows` checkpoints of one shape (field names, global sizes, every rank's blocks,
/// scalar names): one dataset per field, a row per checkpoint. A checkpoint takes a free row and
/// gives it back when erased, so HDF5 creates objects only when a slab is added, and a put or
/// erase of a small checkpoint costs no metadata at all.
struct Slab {
  std::string name;       ///< "slab_3"
  std::size_t shape = 0;  ///< index in SlabTable::shapes(): what a checkpoint must match for a row
  std::string names;      ///< field names, global sizes and scalar names (names_of)
  std::vector<std::vector<std::int64_t>> offsets, counts;  ///< [field][rank]: the blocks
  std::vector<std::string> fields, scalar_names;
  std::int64_t rows = 0;             ///< the file's `slots` attribute
  std::vector<std::int64_t> base;    ///< file address of each field's dataset (0: empty)
  std::vector<std::int64_t> global;  ///< each field's global size
  std::vector<RowState> state;       ///< per row
  std::int64_t free = 0;             ///< rows in state Free
  // What the seal writes, per row (every rank holds the same).
  std::vector<std::int64_t> step, kind, run, complete;
  std::vector<std::vector<double>> scalars;           ///< [scalar][row]
  std::vector<std::vector<std::uint64_t>> checksums;  ///< [field][row * ranks + rank]
  std::vector<std::vector<std::int64_t>> stored;      ///< as checksums: compressed block bytes
  bool dirty = false;  ///< the per-row attributes in the file are out of date
};

/// Field names and global sizes, then scalar names: what every rank passes alike and, with the
/// ranks' blocks, what a checkpoint must match to take a slab's row. Every name goes with its
/// length, so no two different lists give the same text (a name may hold any character but '/').
std::string names_of(const CheckpointView& checkpoint);

/// Why the blocks of a field of `global_size` values, rank r's at offsets[r] with counts[r]
/// values, do not tile [0, global_size) exactly ("nothing covers [4, 6) before rank 1's block
/// [6, 10)"), or an empty string when they do. Empty blocks are ignored.
std::string tiling_problem(std::int64_t global_size, const std::vector<std::int64_t>& offsets,
                           const std::vector<std::int64_t>& counts);

/// The slabs of one file and the rows of its checkpoints. Every rank of a store holds the same
/// table: it changes only through calls every rank makes alike.
class SlabTable {
 public:
  /// One checkpoint's place: row `index` of slab `slab`.
  struct Row {
    std::size_t slab = 0;
    std::int64_t index = 0;
  };

  /// Where the next checkpoint of a shape goes: slab `slab`, which has a free row, or (none
  /// has) a new slab of `new_rows` rows.
  struct Choice {
    std::optional<std::size_t> slab;
    std::int64_t new_rows = 0;
  };

  /// `ranks`: the ranks of the store's communicator (each field's checksums hold one per rank).
  explicit SlabTable(int ranks) : ranks_(ranks) {}

  /// The last slab made for checkpoints with these names (names_of), if any.
  std::optional<std::size_t> last_for(const std::string& names) const;

  /// Whether `rank`'s block of every field of `checkpoint` is its block in slab `k`.
  bool holds_blocks_of(std::size_t k, int rank, const CheckpointView& checkpoint) const;

  /// The index of the shape made of `names` and `blocks` (every rank's blocks), registered if it
  /// is new.
  std::size_t shape_of(const std::string& names, const Blocks& blocks);

  /// The first slab of `shape` with a free row or, when none has one, the rows of a new slab:
  /// slabs double the rows of their shape so far (1, 1, 2, 4, ...) up to kSlabRows rows or
  /// kSlabBytes of checkpoints of `global_bytes` bytes (over all ranks), but always one row. So
  /// a run that holds n checkpoints makes O(log n) slabs, and its file holds at most twice the
  /// room they need.
  Choice choose(std::size_t shape, std::int64_t global_bytes) const;

  /// A new slab `slab_<n>` of `rows` free rows for checkpoints like `checkpoint`, of `shape`
  /// with `names` and `blocks`; not in the table yet, and its dataset addresses (`base`) are 0
  /// until the store has made its datasets and filled them in.
  Slab make_slab(std::size_t shape, const std::string& names, Blocks blocks,
                 const CheckpointView& checkpoint, std::int64_t rows) const;

  /// Adds a slab made by make_slab(); returns its index.
  std::size_t add(Slab slab);

  /// Takes the first free row of slab `k` (which has one, see choose()) for checkpoint `key`
  /// with these scalars (in the slab's order): held, not complete, the slab dirty.
  Row take(std::size_t k, const Key& key, std::span<const Scalar> scalars);

  /// Gives back a held row. A row the file calls complete becomes Erased (complete = 0, the
  /// slab dirty) and is taken again only after sealed(); any other row is free at once.
  void release(Row row);

  /// The seal's part: `rank`'s checksum of field `field` in `row`, then the row complete.
  void set_checksum(Row row, std::size_t field, int rank, std::uint64_t value);
  /// The seal's part in a compressed file: the bytes of `rank`'s compressed block (0: raw).
  void set_stored(Row row, std::size_t field, int rank, std::int64_t bytes);
  void mark_complete(Row row);

  /// Slabs whose per-row attributes in the file are out of date.
  std::int64_t dirty_slabs() const;

  /// The seal wrote every dirty slab: none is dirty now, and Erased rows are free.
  void sealed();

  /// Byte offset in the file of `rank`'s block of field `field` in `row`.
  std::int64_t block_at(Row row, std::size_t field, int rank) const;
  /// Byte offset in the file of the row of field `field` (where the block at offset 0 begins).
  std::int64_t row_at(Row row, std::size_t field) const;

  int ranks() const { return ranks_; }
  const std::vector<Slab>& slabs() const { return slabs_; }
  const Slab& slab(std::size_t k) const { return slabs_[k]; }
  /// Every shape a slab was made for: its names and all its blocks, as text.
  const std::vector<std::string>& shapes() const { return shapes_; }

 private:
  int ranks_ = 1;
  std::vector<Slab> slabs_;
  std::vector<std::string> shapes_;
};

}  // namespace rwd::storage::detail
