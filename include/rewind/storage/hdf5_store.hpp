#pragma once
/// @file
/// Hdf5Store ("hdf5"): checkpoints in one parallel HDF5 file per store.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rewind/storage/store.hpp"

namespace rwd::storage {

/// Checkpoint store in one parallel HDF5 file, written with collective MPI-IO.
///
/// The file `<directory>/rewind-<label>-<host>-<pid>-<time>-<n>.h5` is created at construction
/// and stays open for the life of the store. While the store is live it is named `<that>.partial`;
/// a clean close with keep_files renames it to its final name, otherwise it is deleted. On a
/// failure (an I/O error, abandon(), or destruction while an exception unwinds) it is deleted
/// even with keep_files.
///
/// Each checkpoint is a group `<kind>_<step>` ("restart_12", "adjoint_12") with one contiguous
/// 1-D float64 dataset per field; each rank writes and reads only its block, at its offset. The
/// group's attributes are step, kind, ranks, scalar:<name> for each scalar and complete (0 while
/// the checkpoint is written, 1 once all of it is); each dataset's are index (its position in
/// the checkpoint), global_size, and rank_offsets, rank_counts, rank_checksums indexed by rank.
/// The ranks' blocks of a field must tile [0, global_size) exactly.
///
/// put, get, erase, flush, close and the destructor are collective on the store's duplicate of
/// StoreConfig::comm: every rank calls them with the same keys in the same order. A failure on
/// any rank makes every rank throw the same rwd::Error, so no rank waits in a collective. An I/O
/// failure leaves the store unusable (later calls throw ErrorCode::Io); a bad argument or a
/// checksum mismatch (ErrorCode::Corrupt) does not.
///
/// erase unlinks the checkpoint's group; HDF5 does not reuse the freed file space within a run,
/// so the file grows with the total number of checkpoints written. Calls must not run
/// concurrently with other HDF5 calls in the process (the HDF5 build is not thread-safe).
class Hdf5Store final : public Store {
 public:
  /// Collective on config.comm. Throws Error(Io) on every rank when config.directory does not
  /// exist, is not a directory or is not writable; Error(Mpi) if MPI is not initialised.
  explicit Hdf5Store(const StoreConfig& config);
  /// Collective. Closes the file if close() was not called, as described above.
  ~Hdf5Store() override;

  Hdf5Store(const Hdf5Store&) = delete;
  Hdf5Store& operator=(const Hdf5Store&) = delete;

  std::string name() const override { return "hdf5"; }
  /// Collective.
  void put(const Key& key, const CheckpointView& checkpoint) override;
  /// Collective. Verifies this rank's block of each field against its checksum.
  void get(const Key& key, const CheckpointSpan& out) override;
  /// Collective.
  void erase(const Key& key) override;
  /// Not collective (every rank holds the same keys).
  bool contains(const Key& key) const override;
  StoreStats stats() const override;
  /// The file as it is named now (`.h5.partial` while the store is live).
  std::string path() const override;
  MPI_Comm collective_comm() const override;
  /// Collective: H5Fflush, which syncs the file (MPI_File_sync).
  void flush() override;
  void abandon() noexcept override;

  /// Collective. Closes the file and, with keep_files and no earlier failure, renames it to
  /// final_path(); otherwise deletes it. Throws Error(Io) on every rank if closing fails (the
  /// file is then deleted). Later calls other than close() and the destructor throw.
  void close();

  /// The name the file gets after a clean close with keep_files.
  std::string final_path() const;

  /// Collective. Byte offset in the file of the data of field `field` of checkpoint `key`; rank
  /// r's block starts 8 * rank_offsets[r] bytes later. For tools and for tests that damage a
  /// file on purpose.
  std::int64_t field_file_offset(const Key& key, std::string_view field);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rwd::storage
