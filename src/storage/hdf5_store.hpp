#pragma once
// Hdf5Store ("hdf5"): checkpoints in one parallel HDF5 file per store. Private to storage: the
// layers above reach it through make_store("hdf5", ...), Store and DurableStore (store.hpp).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <vector>

#include "rewind/storage/sealed_blocks.hpp"
#include "rewind/storage/store.hpp"

namespace rwd::storage {

/// Checkpoint store in one parallel HDF5 file.
///
/// The file `<directory>/rewind-<label>-<host>-<pid>-<time>-<n>.h5` is created at construction
/// and stays open for the life of the store. While the store is live it is named `<that>.partial`;
/// a clean close with keep_files renames it to its final name, otherwise it is deleted. On a
/// failure (an I/O error, abandon(), or destruction while an exception unwinds) it is deleted
/// even with keep_files.
///
/// Checkpoints live in slabs (file format 5): a group `slab_<k>` holds one contiguous,
/// early-allocated float64 dataset [rows, global_size] per field for checkpoints of one shape
/// (field names, global sizes, every rank's block, scalar names); a checkpoint is one row of
/// each dataset, and each rank's block lies at its offset in the row. The group's attributes are
/// slots (the number of rows: format 5's name), ranks, fields and, per row, step, kind, run,
/// complete and scalar:<name>; each dataset's are index (its position in the checkpoint),
/// global_size, rank_offsets and rank_counts indexed by rank, and rank_checksums (rows x ranks).
/// Checksums and complete = 1 are written when the store seals its checkpoints, in flush() and in
/// a close() that keeps the file, after the data is synced; a row with complete = 0 is never
/// valid. The ranks' blocks of a field must tile [0, global_size) exactly.
///
/// Every HDF5 and MPI call is made on the thread that calls the store. The bytes of this rank's
/// blocks move with POSIX pwrite/pread on the store's own descriptor of the file: with
/// StoreConfig::async_io (the default) on the process's one I/O thread — put() copies the
/// checkpoint into a bounded staging pool and returns (write-behind), prefetch() reads ahead so
/// that get() only copies — otherwise on the calling thread. Checkpoints of at most
/// StoreConfig::inline_io_bytes per rank move on the calling thread in both modes. Both modes
/// work at any MPI thread level (MPI_THREAD_FUNNELED included) and give the same bits. The store
/// must be called from one thread at a time, and the application must not call HDF5 from another
/// thread meanwhile.
///
/// put, get, erase, flush, close and the destructor are collective on the store's duplicate of
/// StoreConfig::comm: every rank calls them with the same keys in the same order; prefetch is
/// called alike but never communicates. A failure on any rank makes every rank throw the same
/// rwd::Error, so no rank waits in a collective. A background write that fails is kept and
/// reported by the store's next collective call on every rank (at the latest by flush() or
/// close(), and by get() or erase() of that checkpoint). An I/O failure leaves the store
/// unusable (later calls throw ErrorCode::Io); a bad argument or a checksum mismatch
/// (ErrorCode::Corrupt) does not.
///
/// erase frees the checkpoint's row for a later checkpoint of its shape (a row the file calls
/// complete only after the next seal has said otherwise), so the file grows with the
/// checkpoints held at once, not with the number ever written.
class Hdf5Store final : public Store, public DurableStore {
 public:
  /// Collective on config.comm. Throws Error(Io) on every rank when config.directory does not
  /// exist, is not a directory or is not writable; Error(Mpi) if MPI is not initialised.
  explicit Hdf5Store(const StoreConfig& config);
  /// Collective, as close(), unless an exception is unwinding through it (or MPI is finalised):
  /// then this rank alone drops its queued jobs, closes its descriptor and unlinks the file,
  /// without a word to the other ranks, so a rank that throws alone gets its exception instead
  /// of waiting for ranks that never come. HDF5's file handle is then left to the library
  /// (H5Fclose is collective under MPI-IO); HDF5 closes it at MPI_Finalize.
  ~Hdf5Store() override;

  Hdf5Store(const Hdf5Store&) = delete;
  Hdf5Store& operator=(const Hdf5Store&) = delete;

  std::string name() const override { return "hdf5"; }
  /// Collective. With async_io, returns once the checkpoint is copied into the staging pool
  /// (blocking while earlier writes fill it); the write happens behind.
  void put(const Key& key, const CheckpointView& checkpoint) override;
  /// Collective. Waits for a pending write of `key`; copies from a prefetched buffer, or reads
  /// on the calling thread. Verifies this rank's block of each field against its checksum.
  void get(const Key& key, const CheckpointSpan& out) override;
  /// Called like get() but not collective: with async_io, queues a read of `key` into the
  /// staging pool. Skipped (and counted) when the prefetched checkpoints would exceed
  /// StoreConfig::max_staged_bytes, a decision that depends only on the calls made, so every
  /// rank takes it alike. Does nothing with async_io off.
  void prefetch(const Key& key) override;
  /// Collective. Waits for the checkpoint's pending write and prefetch, then frees its row.
  void erase(const Key& key) override;
  /// Not collective (every rank holds the same keys).
  bool contains(const Key& key) const override;
  /// The room the checkpoint takes in the file: its values' bytes, compressed or not.
  std::int64_t stored_bytes(const Key& key) override;
  StoreStats stats() const override;
  void reset_peaks() override;
  /// The file as it is named now (`.h5.partial` while the store is live).
  std::string path() const override;
  MPI_Comm collective_comm() const override;
  /// Collective: waits for every queued job, syncs the data (fsync), seals the checkpoints not
  /// sealed yet (rank_checksums, complete = 1) and flushes HDF5's metadata (H5Fflush).
  void flush() override;
  void abandon() noexcept override;
  std::string io_mode() const override;

  /// Collective. Waits for every queued job, then closes the file and, with keep_files and no
  /// failure (earlier, kept, or abandon() on any rank), seals the checkpoints and renames it to
  /// final_path(); otherwise deletes it. Throws Error(Io) on every rank if a kept failure
  /// surfaces or closing fails (the file is then deleted). Later calls other than close() and
  /// the destructor throw.
  void close() override;

  /// This store: its checkpoints are sealed in a file that outlives it.
  DurableStore* durable() override { return this; }
  const DurableStore* durable() const override { return this; }

  /// The name the file gets after a clean close with keep_files.
  std::string final_path() const override;

  /// This rank's blocks of checkpoint `key` once it is sealed (after flush()): where they lie
  /// in the file and their checksums, so that they can be read back without HDF5
  /// (read_sealed_blocks()), as a resumed run reads the file of a run that was killed.
  /// Rank-local. Throws Error(InvalidArgument) if the store does not hold `key` or has not
  /// sealed it yet.
  std::vector<SealedBlock> sealed_blocks(const Key& key) const override;
  /// Collective. Byte offset in the file of the data of field `field` of checkpoint `key`; rank
  /// r's block starts 8 * rank_offsets[r] bytes later. For tools and for tests that damage a
  /// file on purpose.
  std::int64_t field_file_offset(const Key& key, std::string_view field);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rwd::storage
