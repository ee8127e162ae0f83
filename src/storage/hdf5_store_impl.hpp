#pragma once
// The HDF5 store's state, shared by the files that make the store: hdf5_store.cpp (the
// collective protocol of each public call), hdf5_store_file.cpp (creating, closing and
// discarding the file), hdf5_store_metadata.cpp (slabs, their attributes and the seal) and
// hdf5_store_jobs.cpp (moving the bytes: jobs on the I/O thread or on the calling thread).
// Where each checkpoint lies in the file is the slab table's (slab_table.hpp).
//
// How the bytes move. HDF5 and MPI are called only on the thread that calls the store: file
// creation, slabs (groups, datasets, attributes), seals, flush and close, and every agreement.
// The bytes of each rank's block go with POSIX pwrite/pread on the store's own O_RDWR descriptor
// of the same file, at H5Dget_offset(dataset) + 8 * (row * global_size + offset) (SlabTable),
// either on the calling thread (async_io off) or as jobs on the process's one I/O thread
// (detail::IoThread), which never calls HDF5 or MPI. So no two threads are ever inside HDF5
// (whose Debian build is not thread-safe) and the I/O thread needs no MPI thread support at all.
//
// Why writing into the file behind HDF5's back is safe:
// - Every dataset is contiguous, allocated at creation (H5D_ALLOC_TIME_EARLY) and never filled
//   (H5D_FILL_TIME_NEVER): its extent [H5Dget_offset, + 8 * rows * global_size) is reserved
//   when H5Dcreate returns, and HDF5 itself never writes raw data there, because the store never
//   calls H5Dwrite. HDF5's metadata lives in other blocks of the file.
// - The store never deletes a dataset, so HDF5 never hands an extent out twice. A row freed by
//   erase() is taken by a later put() only after erase() waited for that checkpoint's pending
//   write and prefetch, so no job touches a row another checkpoint owns.
// - The MPI-IO driver may truncate or extend the file to HDF5's allocated end (EOA) when it
//   flushes or closes. flush() and close() wait for every queued job of the store before they
//   call H5Fflush or H5Fclose, so no pwrite is in flight when the size changes; every dataset
//   lies below EOA.
// - Our descriptor and MPI-IO's reach the same file through the kernel, which keeps one page
//   cache per file; on a parallel file system both go through the same POSIX client.

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hdf5_store.hpp"
#include "hdf5_util.hpp"
#include "io_thread.hpp"
#include "layout.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"
#include "slab_table.hpp"
#include "staging_pool.hpp"
#include "store_file.hpp"

namespace rwd::storage {

/// The store's name in messages: "hdf5 store, put(restart 3) on rank 1: ...".
inline constexpr const char* kHdf5Store = "hdf5 store";

struct Hdf5Store::Impl {
  // A checkpoint read ahead into a staging buffer.
  struct Prefetch {
    std::shared_ptr<detail::StagingPool::Lease> buffer;
    std::shared_ptr<detail::Ticket> ticket;
    detail::IoJob job;  // the segments, for messages
  };

  struct Entry {
    detail::Layout layout;
    detail::SlabTable::Row row;
    std::vector<std::int64_t> at;           ///< file byte offset of this rank's block per field
    std::vector<std::uint64_t> checksums;   ///< of this rank's block per field, once written
    std::shared_ptr<detail::Ticket> write;  ///< the write, until it is reaped
    /// With a codec: per field, the bytes of this rank's compressed block (0: raw values), filled
    /// in by the write job (see IoJob::stored); null without a codec.
    std::shared_ptr<std::vector<std::int64_t>> stored;
    bool exact = false;       ///< put with CheckpointView::exact (a lossy codec uses zstd for it)
    std::vector<Grid> grids;  ///< with a codec: each field's grid (FieldView::grid)
    std::optional<Prefetch> prefetch;
    bool behind = false;  ///< moves on the I/O thread (written behind, may be prefetched)
    bool sealed = false;  ///< rank_checksums and complete = 1 are in the file
  };

  // A job on the I/O thread, in the order submitted.
  struct InFlight {
    std::shared_ptr<detail::Ticket> ticket;
    Key key;
    detail::IoJob job;  // kind and segments, for accounting and messages (keep_alive moved out)
  };

  // What a failure of this call does to the store: nothing, leave it unusable, or leave it
  // unusable if the agreed failure is an I/O error (no room on the disk).
  enum class OnFailure { CarryOn, Unusable, UnusableIfIo };

  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::string directory;
  std::string partial_path;
  std::string final_path;
  std::string current_path;
  int lock_fd = -1;  ///< rank 0: holds the partial file's advisory lock while the store is live
  bool keep = false;
  bool async = true;
  std::int64_t inline_io_bytes = 0;
  CodecSpec codec;  ///< StoreConfig::codec, agreed ("none": the values as they are)
  detail::Hid file;
  int fd = -1;
  detail::FileRoom room;
  std::int64_t extents_end = 0;  ///< the largest end of a dataset extent HDF5 handed out
  std::map<Key, Entry> entries;
  detail::SlabTable slabs{1};  ///< where each checkpoint lies in the file (alike on every rank)
  StoreStats stats;
  std::string failure;        ///< non-empty once a failure made the store unusable (agreed)
  std::optional<Error> kept;  ///< this rank's failure off the collective path, not yet agreed
  bool closed = false;
  bool abandoned = false;
  int uncaught = 0;

  std::shared_ptr<detail::IoThread> io;       // async only
  std::unique_ptr<detail::StagingPool> pool;  // async only
  std::deque<InFlight> in_flight;
  std::deque<detail::StagingPool::Wait> blocked;  // caller waits on this store, for overlap

  // In hdf5_store.cpp: the collective protocol.

  // "restart 12 (slab_3, row 5)": a checkpoint and where it lies in the file, for messages.
  std::string located(const Key& key) const;

  // Throws Error(Io) on every rank once the store is unusable (the state is the same on all
  // ranks, so no agreement is needed).
  void check_usable(std::string_view call, const Key* key) const;

  // Whether `checkpoint` moves on the I/O thread. Decided on the global sizes, which every rank
  // passes alike (the layout hash checks it).
  bool behind(const CheckpointView& checkpoint) const;

  // "; check free space, quotas and permissions of '<directory>', or choose another ...".
  std::string io_hint() const;

  // The agreement every collective call makes, with this rank's kept failure in it: a kept
  // failure on any rank makes the store unusable on every rank (so does any failure with
  // OnFailure::Unusable). Every rank throws the same error.
  // Returns whether every rank's `yes` is true (comm::Verdict::yes).
  bool agree_here(std::optional<Error> local, OnFailure on_failure = OnFailure::CarryOn,
                  std::uint64_t layout = 0, const std::string& mismatch = {}, bool yes = true);

  // Runs one step that holds collective HDF5 calls, then agrees with the other ranks on whether
  // it failed. A failure makes the store unusable, on every rank.
  template <class Fn>
  void collective(const std::string& what, Fn&& fn) {
    std::optional<Error> local = comm::capture(fn);
    if (local) {
      std::string message = what + " failed on rank " + std::to_string(rank) + ": " + local->what();
      if (local->code() == ErrorCode::Io) message += io_hint();
      local.emplace(local->code(), message);
    }
    agree_here(std::move(local), OnFailure::Unusable);
  }

  // put, rank-local: checks the call and, for a checkpoint written behind, copies it into the
  // staging pool (before anything collective, so a failure here is agreed on too). Fills in
  // entry.layout and entry.behind; returns this rank's failure.
  std::optional<Error> stage(const Key& key, const CheckpointView& checkpoint, Entry& entry,
                             std::shared_ptr<detail::StagingPool::Lease>& buffer);

  // put, collective: agrees on the call (with `local`, this rank's failure so far) and takes
  // the row the checkpoint goes to, in a new slab when no slab of its shape has a free one.
  detail::SlabTable::Row place(const Key& key, const CheckpointView& checkpoint,
                               const std::string& at, std::optional<Error> local);

  // put, collective: every rank's blocks of each field, checked to tile it.
  detail::Blocks gather_blocks(const std::string& at, const CheckpointView& checkpoint);

  // put, collective: makes room for and creates a slab of `rows` rows; returns its index.
  std::size_t add_slab(const std::string& at, std::size_t shape, const std::string& names,
                       detail::Blocks blocks, const CheckpointView& checkpoint, std::int64_t rows);

  // In hdf5_store_file.cpp: the file's life.

  // Collective on config.comm: the constructor's work. Agrees the settings, names, creates and
  // opens the file; joins the I/O thread with async_io.
  void open(const StoreConfig& config);
  // Collective: throws Error(InvalidArgument) naming the settings that differ between ranks.
  void agree_settings(const StoreConfig& config);
  // Collective: rank 0 reserves the file's name and every rank learns it.
  void name_file(const StoreConfig& config);
  // Collective: creates the file with its root attributes and opens this rank's descriptor.
  void create_file(const StoreConfig& config);

  // Before a step that may grow the file by `grow` bytes: makes sure the file can take them and
  // the metadata HDF5 writes meanwhile (see detail::FileRoom), so that HDF5 never meets a full
  // disk or a file-size limit inside a collective call. Throws Error(Io) with the OS's reason.
  void make_room(std::int64_t grow, const std::string& at);

  // Collective: closes the file and renames (keeps) or removes it; returns the agreed failure.
  std::optional<Error> shut(bool keep_file);

  // Not collective: the store goes without a word to the other ranks (it is destroyed while an
  // exception unwinds, or after MPI_Finalize). Queued jobs are dropped, the descriptor closed and
  // the file unlinked. HDF5's file handle is left to the library: H5Fclose is collective under
  // MPI-IO and would wait for ranks that may never call it; HDF5 closes it when it shuts down
  // (in MPI_Finalize), where every rank that let go of the same store takes part.
  void discard_locally() noexcept;

  // In hdf5_store_metadata.cpp: slabs, their attributes and the seal.

  // What a slab of `rows` checkpoints like this one adds to the file: its data and, per field,
  // a dataset's object header and attributes (rank_checksums holds rows x ranks values).
  std::int64_t growth_of(const CheckpointView& checkpoint, std::int64_t rows) const;

  // Collective: the group of a new slab, its per-row attributes and one dataset per field,
  // allocated now (see the top of this file); fills in slab.base.
  void create_slab(detail::Slab& slab);

  // Collective: fills in rank_checksums and complete = 1 for every checkpoint not sealed yet,
  // and complete = 0 for the rows erased since the last seal, by rewriting the per-row
  // attributes of every slab that changed. Called with every job finished and no failure kept
  // on any rank.
  void seal();

  // The per-row attributes of a slab's group (format 5 says "per slot"): created with the slab,
  // rewritten at a seal.
  void write_row_attributes(hid_t group, const detail::Slab& slab, bool rewrite) const;

  // In hdf5_store_jobs.cpp: moving the bytes.

  // Adds a finished job's busy time: to io_seconds, and, where the caller was not blocked on
  // this store meanwhile (`background` jobs only), to overlap_seconds.
  void account(const detail::JobResult& r, bool background);
  // Records a time the caller was blocked on this store.
  void note_blocked(const detail::StagingPool::Wait& w);
  // Takes in the jobs that finished, in order: checksums of writes, failures kept.
  void reap();
  // Waits for one job of this store, then reaps.
  void wait_for(const detail::Ticket& ticket);
  // Waits for every job of this store.
  void drain();
  // Queues a job on the I/O thread.
  std::shared_ptr<detail::Ticket> submit(const Key& key, detail::IoJob job);
  // A checkpoint's bytes as one job, to or from `memory` (fields back to back).
  detail::IoJob job_for(detail::IoJob::Kind kind, const Entry& e, std::span<double> memory) const;
  // Makes `job` compress (Write) or decompress (Read) as the store's codec says for `e`.
  void add_codec(detail::IoJob& job, const Entry& e) const;
  // This rank's bytes of `e` in the file: its compressed blocks, or its values where raw.
  std::int64_t stored_bytes(const Entry& e) const;
  // A finished write of `e` moved stored_bytes(e), not the values' bytes: counts the
  // difference and the time compressing (on the I/O thread if `background`).
  void account_write(const Entry& e, const detail::JobResult& r, bool background);
  // A finished read of `e`: the time decompressing, and an Error(Corrupt) if a block that
  // passed its checksum did not decode.
  std::optional<Error> account_read(const Key& key, const Entry& e, const detail::JobResult& r,
                                    bool background);

  // Puts this rank's data on disk (fsync) before a seal marks it complete. Rank-local: a failure
  // is kept, and the agreement before the seal reports it on every rank.
  void sync_data();
  // Writes `checkpoint` on the calling thread, from the caller's buffers, and keeps its
  // checksums in `entry`. Throws Error(Io) naming the field and the OS's reason.
  void write_here(const CheckpointView& checkpoint, Entry& entry);
  // Reads `key` on the calling thread, straight into the caller's buffers, and checks it.
  // Returns a checksum mismatch; a failed read is kept.
  std::optional<Error> read_here(const Key& key, const Entry& e, const CheckpointSpan& out);
  // Takes the prefetched copy of `key` into `out`, waiting for it if needed, and checks it.
  std::optional<Error> read_prefetched(const Key& key, Entry& e, const CheckpointSpan& out);

  void keep_sync_failure(const detail::JobResult& r);
  // Reading `key` went wrong on this rank: the data is unreachable, the store unusable.
  void keep_read_failure(const Key& key, const detail::JobResult& r, const detail::IoJob& job,
                         const Entry& e);
  // Compares what was read with what was written; the message names the block.
  std::optional<Error> verify(const Key& key, const Entry& e,
                              const std::vector<std::uint64_t>& read) const;
  // Waits for a prefetch and lets go of its buffer. Waiting first means the buffer's bytes are
  // back in the pool when this returns, on every rank alike (see StagingPool::prefetch_fits).
  void drop_prefetch(Entry& e);
};

}  // namespace rwd::storage
