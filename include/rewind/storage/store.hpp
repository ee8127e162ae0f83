#pragma once
/// @file
/// Checkpoint stores: where restart data and pullback data live between the forward and the
/// reverse sweep. One interface, implementations chosen by name ("ram", "hdf5").
///
/// A checkpoint is a list of named distributed arrays (each rank passes its own block of a
/// global 1-D array of doubles) plus named scalars (time, step size, ...).

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/storage/codec.hpp"
#include "rewind/storage/key.hpp"

namespace rwd::storage {

struct SealedBlock;  // rewind/storage/sealed_blocks.hpp
class DurableStore;

/// This rank's block of a distributed array, for writing.
struct FieldView {
  std::string_view name;
  std::span<const double> data;  ///< this rank's block
  std::int64_t offset = 0;       ///< global index of data[0]
  std::int64_t global_size = 0;  ///< length of the whole array over all ranks
  Grid grid = {};                ///< this rank's block as a grid (a codec hint; none by default)
};

/// This rank's block of a distributed array, for reading into.
struct FieldSpan {
  std::string_view name;
  std::span<double> data;
  std::int64_t offset = 0;
  std::int64_t global_size = 0;
  Grid grid = {};  ///< as FieldView::grid
};

struct Scalar {
  std::string_view name;
  double value = 0.0;
};

/// A checkpoint to write. Field and scalar names must be unique within the checkpoint.
struct CheckpointView {
  std::span<const FieldView> fields;
  std::span<const Scalar> scalars;
  /// Keep these bits exactly: a store whose codec is lossy (StoreConfig::codec) compresses this
  /// checkpoint with a lossless one (zstd) instead. Lossless codecs and stores without a codec
  /// keep every checkpoint's bits anyway.
  bool exact = false;
};

/// Buffers to read a checkpoint into: fields in the same order, names and sizes as written;
/// scalars are matched by name and their values filled in.
struct CheckpointSpan {
  std::span<const FieldSpan> fields;
  std::span<Scalar> scalars;
};

/// Counters every store keeps (this rank's view): the one source of a store's I/O statistics.
/// Times are wall-clock seconds.
struct StoreStats {
  std::int64_t writes = 0;         ///< checkpoints stored
  std::int64_t reads = 0;          ///< checkpoints read
  std::int64_t bytes_written = 0;  ///< this rank's bytes (with a codec: as stored)
  std::int64_t bytes_read = 0;
  std::int64_t live = 0;       ///< checkpoints held now
  std::int64_t peak_live = 0;  ///< most checkpoints held at once
  /// This rank's bytes in the checkpoints held now (a disk store's file keeps room for their
  /// values, compressed or not: it counts that room).
  std::int64_t live_bytes = 0;
  std::int64_t peak_bytes = 0;  ///< most such bytes at once
  double write_seconds = 0.0;   ///< caller time inside put()
  double read_seconds = 0.0;    ///< caller time inside get()
  /// Disk stores: time spent moving bytes to and from the file (pwrite, pread, fsync and the
  /// checksums computed on the way; with a codec, compressing and decompressing them too), on
  /// whichever thread moved them.
  double io_seconds = 0.0;
  /// Caller time blocked on the store's background I/O: waiting for room in the staging pool,
  /// for the pending write of a checkpoint it reads or erases, for a prefetch not yet finished,
  /// for everything queued (flush, close).
  double wait_seconds = 0.0;
  /// Time the I/O thread spent moving this store's bytes while the caller was not blocked on
  /// this store: how long the computation really ran with I/O in flight.
  double overlap_seconds = 0.0;
  std::int64_t prefetch_hits = 0;      ///< get() served from a prefetched copy (late ones included)
  std::int64_t prefetch_late = 0;      ///< of those, get() found the read unfinished and waited
  std::int64_t prefetch_skipped = 0;   ///< prefetch() ignored: the staging pool was too small
  std::int64_t peak_staged_bytes = 0;  ///< most bytes of staging buffers in use at once
  std::int64_t staged_over_limit = 0;  ///< staging buffers allocated above max_staged_bytes
  /// With a codec (StoreConfig::codec), the byte counts above are what is stored (compressed
  /// blocks with their headers); this is what was given to put() before compression.
  std::int64_t uncompressed_bytes_written = 0;
  double compress_seconds = 0.0;    ///< time compressing, on whichever thread did it
  double decompress_seconds = 0.0;  ///< time decompressing (checksums included)
  /// Of compress_seconds and decompress_seconds, the time on the I/O thread (disk stores:
  /// checkpoints written behind and read ahead), off the caller's thread.
  double codec_io_thread_seconds = 0.0;
};

/// How to build a store.
struct StoreConfig {
  /// The solver's communicator (duplicated by the store). No default: a disk store, Stores and
  /// Engine refuse MPI_COMM_NULL (MPI_COMM_SELF for a solver on one rank's own).
  MPI_Comm comm = MPI_COMM_NULL;
  /// Disk stores: where the file goes. No default: a disk store refuses an empty directory
  /// (it never writes into the working directory unasked). engine::StoresConfig::make_directory
  /// has it made if missing.
  std::string directory;
  bool keep_files = false;        ///< disk stores: keep the file after a clean close
  std::string label = "run";      ///< disk stores: part of the file name (e.g. ensemble member)
  std::int64_t capacity = 0;      ///< RAM store: slots to preallocate (0 = grow on demand)
  std::int64_t slot_doubles = 0;  ///< RAM store: doubles per slot to preallocate
  /// Disk stores: write-behind and prefetch on the process's I/O thread (any MPI thread level,
  /// MPI_THREAD_FUNNELED included); false moves the bytes synchronously inside put() and get().
  bool async_io = true;
  /// Disk stores with async_io: bytes the staging pool may hold (checkpoints copied by put()
  /// and not yet written, plus prefetched ones not yet read). put() waits while it is full.
  std::int64_t max_staged_bytes = std::int64_t{256} << 20;
  /// Disk stores with async_io: a checkpoint of at most this many bytes per rank (on average
  /// over the ranks, so every rank decides alike) moves on the calling thread, as with async_io
  /// off, and is not prefetched: waking the I/O thread costs more than moving it. 0 sends every
  /// checkpoint to the I/O thread.
  std::int64_t inline_io_bytes = std::int64_t{64} << 10;
  /// How checkpoints are compressed (rewind/storage/codec.hpp; "none" by default); with a lossy
  /// codec, a checkpoint put with CheckpointView::exact is compressed by zstd. RAM store: each
  /// checkpoint is one block of its fields back to back, as large as it compresses to, and
  /// `capacity` slots are not preallocated. Disk store: each rank's block of each field is
  /// compressed on its own, on the thread that moves it (the I/O thread for a checkpoint written
  /// behind or read ahead), and written at the block's place in the file, which keeps room for
  /// the values (a block that does not get smaller is written as it is): compression saves
  /// bytes moved, not room in the file. Every rank must pass the same codec and settings.
  CodecSpec codec;
};

/// A checkpoint store. Whether put/get/erase are collective is stated by each store: "ram" is
/// rank-local; "hdf5" is collective on its communicator (every rank calls with the same keys in
/// the same order). Errors are rwd::Error; on collective paths every rank throws. Stores are made
/// by make_store() and used through this interface (and DurableStore): no layer above storage
/// names an implementation.
class Store {
 public:
  virtual ~Store() = default;
  virtual std::string name() const = 0;

  /// Stores `checkpoint` under `key`. Throws if the key is already held.
  virtual void put(const Key& key, const CheckpointView& checkpoint) = 0;

  /// Reads checkpoint `key` into `out`. Throws Error(InvalidArgument) if the key is missing or
  /// the fields do not match what was written (names, sizes, offsets), Error(Corrupt) if the
  /// data fails its checksum.
  virtual void get(const Key& key, const CheckpointSpan& out) = 0;

  /// Frees checkpoint `key`. Throws if it is not held.
  virtual void erase(const Key& key) = 0;

  virtual bool contains(const Key& key) const = 0;
  /// This rank's bytes checkpoint `key` takes in the store: a RAM store's block (with a codec,
  /// as compressed; it waits for a compression still running on the I/O thread), a disk store's
  /// room in its file. Rank-local. Throws Error(InvalidArgument) if the key is not held.
  virtual std::int64_t stored_bytes(const Key& key) = 0;
  /// Counters; a store that compresses behind the caller waits for what is in flight first.
  virtual StoreStats stats() const = 0;
  /// Starts the peaks (peak_live, peak_bytes) again from what is held now, for a caller that
  /// reports one run's peaks on a store several runs use. Not collective.
  virtual void reset_peaks() = 0;

  /// Disk stores: the file path (empty for RAM).
  virtual std::string path() const { return {}; }

  /// The communicator put/get/erase/flush are collective on (the store's own duplicate), or
  /// MPI_COMM_NULL for a rank-local store. Not collective.
  virtual MPI_Comm collective_comm() const { return MPI_COMM_NULL; }

  /// Waits until every earlier call has taken effect and makes it durable where the store can
  /// (a disk store syncs its file and seals its checkpoints). Collective like put(). Throws a
  /// failure of a background write that no earlier call reported.
  virtual void flush() {}

  /// Marks the run as failed: a disk store then deletes its file at destruction even when
  /// keep_files is set. Not collective; never throws. For error paths of the layers above.
  virtual void abandon() noexcept {}

  /// Ends the store's life where every rank can report a failure: a disk store keeps or deletes
  /// its file (see each store). Collective like put(); later calls other than close() throw.
  /// The default does nothing.
  virtual void close() {}

  /// A hint that checkpoint `key` will be read soon: a store that can read ahead starts now, so
  /// that the get() finds the data in memory. Called like get() (every rank of a collective
  /// store, same keys, same order), but never communicates. A store that reads ahead throws
  /// Error(InvalidArgument) if the key is not held. The default ignores the hint.
  virtual void prefetch(const Key& key) { (void)key; }

  /// How this store moves its data, in a few words for views and logs ("in memory",
  /// "synchronous (StoreConfig::async_io is off)", "write-behind and prefetch on the process
  /// I/O thread (...)"). Not collective.
  virtual std::string io_mode() const { return "in memory"; }

  /// The store's durable checkpoints (DurableStore), or nullptr for a store that keeps none
  /// (the RAM store). The answer never changes during the store's life. Not collective.
  virtual DurableStore* durable() { return nullptr; }
  virtual const DurableStore* durable() const { return nullptr; }
};

/// What a store that keeps checkpoints in a file beyond its own life offers (the "hdf5" store),
/// reached through Store::durable(): checkpoints that a later run can read back without the
/// store, as a resumed run reads the file of a run that was killed (docs/resume.md).
class DurableStore {
 public:
  virtual ~DurableStore() = default;

  /// This rank's blocks of checkpoint `key` once it is sealed (after Store::flush()): where they
  /// lie in the file and their checksums, so that they can be read back without HDF5
  /// (read_sealed_blocks(), rewind/storage/sealed_blocks.hpp). Rank-local. Throws
  /// Error(InvalidArgument) if the store does not hold `key` or has not sealed it yet.
  virtual std::vector<SealedBlock> sealed_blocks(const Key& key) const = 0;

  /// The name the file gets after a clean close with StoreConfig::keep_files (Store::path() is
  /// its name now). Not collective.
  virtual std::string final_path() const = 0;
};

/// Builds store `name` ("ram", "hdf5"). Collective on config.comm for collective stores.
std::unique_ptr<Store> make_store(std::string_view name, const StoreConfig& config);

/// Removes, in `directory`, the partial files that disk stores of runs killed on this host left
/// (the "hdf5" store's own pattern; never a live store's file, never another host's). A store
/// does this when it opens its file; a resumed run whose stores may never open one (a resumed
/// ensemble) calls it. Returns the names removed. Never throws; not collective.
std::vector<std::string> remove_files_of_dead_runs(const std::string& directory);

/// The registered store names, "ram, hdf5".
std::string store_names();

}  // namespace rwd::storage
