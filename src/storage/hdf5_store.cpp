#include "rewind/storage/hdf5_store.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "hdf5_util.hpp"
#include "io_thread.hpp"
#include "layout.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"
#include "rewind/timing.hpp"
#include "slab_table.hpp"
#include "staging_pool.hpp"
#include "store_file.hpp"

#ifndef REWIND_VERSION
#define REWIND_VERSION "unknown"
#endif

// How the bytes move. HDF5 and MPI are called only on the thread that calls the store: file
// creation, slabs (groups, datasets, attributes), seals, flush and close, and every agreement.
// The bytes of each rank's block go with POSIX pwrite/pread on the store's own O_RDWR descriptor
// of the same file, at H5Dget_offset(dataset) + 8 * (row * global_size + offset) (SlabTable),
// either on the calling thread (async_io off) or as jobs on the process's one I/O thread
// (detail::IoThread), which never calls HDF5 or MPI. So no two threads are ever inside HDF5 (whose
// Debian build is not thread-safe) and the I/O thread needs no MPI thread support at all.
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

namespace rwd::storage {

using comm::agree;
using comm::capture;
using comm::comm_rank;
using comm::comm_size;
using comm::KeptFailure;
using comm::mpi_check;
using comm::Verdict;
using detail::BlockFileSizeSignal;
using detail::h5_check;
using detail::h5_fail;
using detail::Hid;
using detail::IoJob;
using detail::make_hid;
using detail::QuietHdf5;
using detail::SlabTable;
using detail::Ticket;

namespace {

constexpr const char* kStore = "hdf5 store";

// The root's `format` attribute, written into every file: its words are part of format 5 and
// stay as they are (its "slot" is what the code calls a row).
constexpr const char* kFormat =
    "rewind checkpoint file, format 5. Checkpoints live in slabs: each group slab_<k> holds "
    "one dataset per field, float64 [slots, global_size], and slot j of every dataset is one "
    "checkpoint. Group attributes: slots, ranks, fields, and per slot (arrays of length slots) "
    "step, kind (0 restart: the state at the start of step <step>; 1 pullback: the data the "
    "adjoint of step <step> reads; 2 final), run, complete and scalar:<name> (e.g. the time). "
    "Dataset attributes: index (the field's position in the checkpoint), global_size, "
    "rank_offsets and rank_counts (rank r wrote rank_counts[r] values at rank_offsets[r] of "
    "its row), rank_checksums (slots * ranks values: [j * ranks + r] is the checksum of rank "
    "r's block in slot j, see the checksum attribute). The writer seals checkpoints in batches "
    "(when it flushes or closes the file): only then are a slot's rank_checksums filled in and "
    "complete set to 1, after the data is on disk; an erased slot gets complete = 0 at the "
    "next seal. A slot with complete = 0 holds no checkpoint: its data and checksums must not "
    "be used.";

constexpr const char* kChecksum =
    "XXH3-64 (xxHash 0.8, seed 0) over the little-endian float64 bytes of one rank's block "
    "(formats 1 to 4 had rwd64)";

// The OS's reason for a failed job: "field 'u': pwrite of 160000 bytes at byte 4096 failed: File
// too large".
std::string job_failure(const detail::JobResult& r, const IoJob& job,
                        const detail::Layout& layout) {
  const std::string reason = std::strerror(r.error);
  if (r.failed_call == "fsync") return "fsync failed: " + reason;
  const auto& seg = job.segments[r.failed_segment];
  return "field '" + layout.fields[r.failed_segment].name + "': " + r.failed_call + " of " +
         std::to_string(seg.bytes) + " bytes at byte " + std::to_string(seg.file_offset) +
         " failed: " + reason;
}

// Throws Error(InvalidArgument), alike on every rank (they all hold every block), unless the
// ranks' blocks of `field` tile [0, global_size) exactly.
void check_tiling(const std::string& at, const FieldView& field,
                  const std::vector<std::int64_t>& offsets,
                  const std::vector<std::int64_t>& counts) {
  const std::string problem = detail::tiling_problem(field.global_size, offsets, counts);
  if (!problem.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                at + ": field '" + std::string(field.name) +
                    "': the ranks' blocks must tile [0, global_size) exactly: " + problem +
                    "; check each rank's offset and size");
  }
}

}  // namespace

struct Hdf5Store::Impl {
  // A checkpoint read ahead into a staging buffer.
  struct Prefetch {
    std::shared_ptr<detail::StagingPool::Lease> buffer;
    std::shared_ptr<Ticket> ticket;
    IoJob job;  // the segments, for messages
  };

  struct Entry {
    detail::Layout layout;
    SlabTable::Row row;
    std::vector<std::int64_t> at;          ///< file byte offset of this rank's block per field
    std::vector<std::uint64_t> checksums;  ///< of this rank's block per field, once written
    std::shared_ptr<Ticket> write;         ///< the write, until it is reaped
    std::optional<Prefetch> prefetch;
    bool behind = false;  ///< moves on the I/O thread (written behind, may be prefetched)
    bool sealed = false;  ///< rank_checksums and complete = 1 are in the file
  };

  // A job on the I/O thread, in the order submitted.
  struct InFlight {
    std::shared_ptr<Ticket> ticket;
    Key key;
    IoJob job;  // kind and segments, for accounting and messages (keep_alive moved out)
  };

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
  Hid file;
  int fd = -1;
  detail::FileRoom room;
  std::int64_t extents_end = 0;  ///< the largest end of a dataset extent HDF5 handed out
  std::map<Key, Entry> entries;
  SlabTable slabs{1};  ///< where each checkpoint lies in the file (every rank holds the same)
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

  // "restart 12 (slab_3, row 5)": a checkpoint and where it lies in the file, for messages.
  std::string located(const Key& key) const {
    const auto it = entries.find(key);
    if (it == entries.end()) return to_string(key);
    const SlabTable::Row& row = it->second.row;
    return to_string(key) + " (" + slabs.slab(row.slab).name + ", row " +
           std::to_string(row.index) + ")";
  }

  // Throws Error(Io) on every rank once the store is unusable (the state is the same on all
  // ranks, so no agreement is needed).
  void check_usable(std::string_view call, const Key* key) const {
    if (!closed && failure.empty()) return;  // every call asks: no message built for nothing
    const std::string at = key ? detail::where(kStore, call, *key, rank)
                               : std::string(kStore) + ", " + std::string(call);
    if (closed) throw Error(ErrorCode::Io, at + ": the store was closed ('" + current_path + "')");
    throw Error(ErrorCode::Io, at + ": the store is unusable after an earlier failure: " + failure);
  }

  // Whether `checkpoint` moves on the I/O thread. Decided on the global sizes, which every rank
  // passes alike (the layout hash checks it).
  bool behind(const CheckpointView& checkpoint) const {
    if (!async) return false;
    std::int64_t global = 0;
    for (const auto& f : checkpoint.fields) global += f.global_size;
    return global * static_cast<std::int64_t>(sizeof(double)) > inline_io_bytes * size;
  }

  std::string io_hint() const {
    return "; check free space, quotas and permissions of '" + directory +
           "', or choose another directory (StoreConfig::directory, PETSc: "
           "-ts_trajectory_dirname)";
  }

  // What a failure of this call does to the store: nothing, leave it unusable, or leave it
  // unusable if the agreed failure is an I/O error (no room on the disk).
  enum class OnFailure { CarryOn, Unusable, UnusableIfIo };

  // The agreement every collective call makes, with this rank's kept failure in it: a kept
  // failure on any rank makes the store unusable on every rank (so does any failure with
  // OnFailure::Unusable). Every rank throws the same error.
  // Returns whether every rank's `yes` is true (Verdict::yes).
  bool agree_here(std::optional<Error> local, OnFailure on_failure = OnFailure::CarryOn,
                  std::uint64_t layout = 0, const std::string& mismatch = {}, bool yes = true) {
    try {
      Verdict v{std::move(local), kept, layout, mismatch};
      v.yes = yes;
      return agree(comm, v);
    } catch (const KeptFailure& e) {
      failure = e.what();
      kept.reset();  // reported; the store refuses further calls on every rank
      throw;
    } catch (const Error& e) {
      if (on_failure == OnFailure::Unusable ||
          (on_failure == OnFailure::UnusableIfIo && e.code() == ErrorCode::Io)) {
        failure = e.what();
      }
      throw;
    }
  }

  // Before a step that may grow the file by `grow` bytes: makes sure the file can take them and
  // the metadata HDF5 writes meanwhile (see detail::FileRoom), so that HDF5 never meets a full
  // disk or a file-size limit inside a collective call. Throws Error(Io) with the OS's reason.
  //
  // HDF5 has no public way to ask the MPI-IO driver where the file's allocated end (EOA) is, so
  // it is bounded from what the store knows: the file's size (HDF5 extends the file to EOA when
  // it flushes), the end of the last dataset extent HDF5 handed out, and a margin for metadata
  // allocated beyond both and not written yet.
  void make_room(std::int64_t grow, const std::string& at) {
    try {
      struct stat st {};
      const std::int64_t size_now =
          ::fstat(fd, &st) == 0 ? static_cast<std::int64_t>(st.st_size) : 0;
      const std::int64_t known = std::max(size_now, extents_end);
      room.ensure(known + grow + 2 * detail::FileRoom::kMargin);
    } catch (const Error& e) {
      throw Error(ErrorCode::Io, at + ": no room in '" + partial_path + "' on rank " +
                                     std::to_string(rank) + ": " + e.what() + io_hint());
    }
  }

  // What a slab of `rows` checkpoints like this one adds to the file: its data and, per field,
  // a dataset's object header and attributes (rank_checksums holds rows x ranks values).
  std::int64_t growth_of(const CheckpointView& checkpoint, std::int64_t rows) const {
    std::int64_t bytes = 0;
    for (const auto& f : checkpoint.fields) {
      bytes += rows * (8 * f.global_size + 8 * static_cast<std::int64_t>(size)) + 4096 +
               16 * static_cast<std::int64_t>(size);
    }
    return bytes + 4096 + 64 * rows * (5 + static_cast<std::int64_t>(checkpoint.scalars.size()));
  }

  // Runs one step that holds collective HDF5 calls, then agrees with the other ranks on whether
  // it failed. A failure makes the store unusable, on every rank.
  template <class Fn>
  void collective(const std::string& what, Fn&& fn) {
    std::optional<Error> local = capture(fn);
    if (local) {
      std::string message = what + " failed on rank " + std::to_string(rank) + ": " + local->what();
      if (local->code() == ErrorCode::Io) message += io_hint();
      local.emplace(local->code(), message);
    }
    agree_here(std::move(local), OnFailure::Unusable);
  }

  // ---- background jobs ------------------------------------------------------------------

  // Adds a finished job's busy time: to io_seconds, and, where the caller was not blocked on
  // this store meanwhile, to overlap_seconds. Jobs of one store run one after the other, and
  // the caller's waits are recorded in order, so a wait that ended before this job started
  // cannot meet a later job either.
  void account(const detail::JobResult& r, bool background) {
    const double busy = r.seconds();
    stats.io_seconds += busy;
    if (!background) return;
    while (!blocked.empty() && blocked.front().to <= r.started) blocked.pop_front();
    double covered = 0.0;
    for (const auto& w : blocked) {
      const auto from = std::max(w.from, r.started);
      const auto to = std::min(w.to, r.finished);
      if (to > from) covered += std::chrono::duration<double>(to - from).count();
    }
    stats.overlap_seconds += std::max(0.0, busy - covered);
  }

  void note_blocked(const detail::StagingPool::Wait& w) {
    if (w.to <= w.from) return;
    blocked.push_back(w);
    stats.wait_seconds += std::chrono::duration<double>(w.to - w.from).count();
  }

  // Takes in the jobs that finished, in order: checksums of writes, failures kept.
  void reap() {
    while (!in_flight.empty() && in_flight.front().ticket->done()) {
      InFlight f = std::move(in_flight.front());
      in_flight.pop_front();
      const detail::JobResult& r = f.ticket->result();
      if (r.cancelled) continue;
      account(r, true);
      if (f.job.kind == IoJob::Kind::Write) {
        auto it = entries.find(f.key);
        if (it != entries.end() && it->second.write == f.ticket) {
          it->second.checksums = r.checksums;
          it->second.write.reset();
          if (r.error != 0 && !kept) {
            kept.emplace(ErrorCode::Io, detail::where(kStore, "put", f.key, rank) +
                                            ": the background write of checkpoint " +
                                            located(f.key) + " to '" + partial_path + "' failed: " +
                                            job_failure(r, f.job, it->second.layout) + io_hint());
          }
        }
      } else if (f.job.kind == IoJob::Kind::Sync) {
        keep_sync_failure(r);
      }
      // A prefetch's result is taken by get() from its own ticket.
    }
    if (in_flight.empty()) blocked.clear();  // later jobs start after every recorded wait
  }

  void wait_for(const Ticket& ticket) {
    if (!ticket.done()) {
      const auto from = SteadyClock::now();
      io->wait(ticket);
      note_blocked({from, SteadyClock::now()});
    }
    reap();
  }

  // Puts this rank's data on disk (fsync) before a seal marks it complete. Rank-local: a failure
  // is kept, and the agreement before the seal reports it on every rank.
  void sync_data() {
    IoJob sync;
    sync.kind = IoJob::Kind::Sync;
    sync.fd = fd;
    if (async) {
      submit(Key{}, std::move(sync));
      drain();
    } else {
      const detail::JobResult r = detail::run_job(sync);
      account(r, false);
      keep_sync_failure(r);
    }
  }

  // Waits for every job of this store.
  void drain() {
    if (!in_flight.empty()) wait_for(*in_flight.back().ticket);
  }

  std::shared_ptr<Ticket> submit(const Key& key, IoJob job) {
    IoJob record = job;
    record.keep_alive.reset();
    auto ticket = io->submit(std::move(job), this);
    in_flight.push_back({ticket, key, std::move(record)});
    return ticket;
  }

  // A checkpoint's bytes as one job, to or from `memory` (fields back to back).
  IoJob job_for(IoJob::Kind kind, const Entry& e, std::span<double> memory) const {
    IoJob job;
    job.kind = kind;
    job.fd = fd;
    std::size_t at = 0;
    for (std::size_t f = 0; f < e.layout.fields.size(); ++f) {
      const auto n = static_cast<std::size_t>(e.layout.fields[f].size);
      job.segments.push_back(
          {e.at[f], reinterpret_cast<std::byte*>(memory.data() + at), n * sizeof(double)});
      at += n;
    }
    return job;
  }

  void keep_sync_failure(const detail::JobResult& r) {
    if (r.error == 0 || kept) return;
    kept.emplace(ErrorCode::Io, std::string(kStore) + ", flush on rank " + std::to_string(rank) +
                                    ": syncing '" + partial_path +
                                    "' failed: " + std::strerror(r.error) + io_hint());
  }

  // Reading `key` went wrong on this rank: the data is unreachable, the store unusable.
  void keep_read_failure(const Key& key, const detail::JobResult& r, const IoJob& job,
                         const Entry& e) {
    if (kept) return;
    kept.emplace(ErrorCode::Io, detail::where(kStore, "get", key, rank) + ": reading checkpoint " +
                                    located(key) + " from '" + partial_path +
                                    "' failed: " + job_failure(r, job, e.layout));
  }

  // Compares what was read with what was written; the message names the block.
  std::optional<Error> verify(const Key& key, const Entry& e,
                              const std::vector<std::uint64_t>& read) const {
    for (std::size_t f = 0; f < e.layout.fields.size(); ++f) {
      const auto& field = e.layout.fields[f];
      if (read[f] == e.checksums[f]) continue;
      char hex[64];
      std::snprintf(hex, sizeof hex, "%016llx, read %016llx",
                    static_cast<unsigned long long>(e.checksums[f]),
                    static_cast<unsigned long long>(read[f]));
      return Error(ErrorCode::Corrupt,
                   detail::where(kStore, "get", key, rank) + ": checkpoint " + located(key) +
                       " in '" + partial_path + "' is corrupt: field '" + field.name + "', rank " +
                       std::to_string(rank) + "'s block [" + std::to_string(field.offset) + ", " +
                       std::to_string(field.offset + field.size) +
                       ") fails its checksum (written " + hex +
                       "); the file was modified or the storage returned bad data");
    }
    return std::nullopt;
  }

  // Waits for a prefetch and lets go of its buffer. Waiting first means the buffer's bytes are
  // back in the pool when this returns, on every rank alike (see StagingPool::prefetch_fits).
  void drop_prefetch(Entry& e) {
    if (!e.prefetch) return;
    wait_for(*e.prefetch->ticket);
    e.prefetch.reset();
  }

  // ---- sealing and closing ----------------------------------------------------------------

  // Collective: the group of a new slab, its per-row attributes and one dataset per field,
  // allocated now (see the top of the file); fills in slab.base.
  void create_slab(detail::Slab& slab) {
    Hid group =
        make_hid(H5Gcreate2(file.get(), slab.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 H5Gclose, "H5Gcreate2('" + slab.name + "')");
    const hid_t g = group.get();
    detail::attribute_i64(g, "slots", slab.rows);  // format 5's name: it counts rows
    detail::attribute_i64(g, "ranks", size);
    detail::attribute_i64(g, "fields", static_cast<std::int64_t>(slab.fields.size()));
    write_row_attributes(g, slab, false);
    Hid dcpl = make_hid(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate(dataset create)");
    h5_check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), "H5Pset_layout");
    h5_check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
    // The extent must exist before any rank writes into it (see the top of file).
    h5_check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time");
    for (std::size_t f = 0; f < slab.fields.size(); ++f) {
      const std::string& name = slab.fields[f];
      const hsize_t dims[2] = {static_cast<hsize_t>(slab.rows),
                               static_cast<hsize_t>(slab.global[f])};
      Hid space = make_hid(H5Screate_simple(2, dims, nullptr), H5Sclose, "H5Screate_simple");
      Hid d = make_hid(H5Dcreate2(g, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT,
                                  dcpl.get(), H5P_DEFAULT),
                       H5Dclose, "H5Dcreate2('" + name + "')");
      detail::attribute_i64(d.get(), "index", static_cast<std::int64_t>(f));
      detail::attribute_i64(d.get(), "global_size", slab.global[f]);
      detail::attribute_i64s(d.get(), "rank_offsets", slab.offsets[f]);
      detail::attribute_i64s(d.get(), "rank_counts", slab.counts[f]);
      detail::attribute_u64s(d.get(), "rank_checksums", slab.checksums[f]);  // at the seal
      if (slab.global[f] > 0) {  // an empty dataset has no storage
        const haddr_t address = H5Dget_offset(d.get());
        if (address == HADDR_UNDEF) h5_fail("H5Dget_offset('" + name + "')");
        slab.base[f] = static_cast<std::int64_t>(address);
        extents_end = std::max(extents_end,
                               static_cast<std::int64_t>(address) + 8 * slab.rows * slab.global[f]);
      }
    }
  }

  // Collective: fills in rank_checksums and complete = 1 for every checkpoint not sealed yet,
  // and complete = 0 for the rows erased since the last seal, by rewriting the per-row
  // attributes of every slab that changed. Called with every job finished and no failure kept
  // on any rank.
  void seal() {
    std::vector<std::uint64_t> mine;
    std::vector<Entry*> open;
    for (auto& [key, e] : entries) {
      if (e.sealed) continue;
      open.push_back(&e);
      mine.insert(mine.end(), e.checksums.begin(), e.checksums.end());
    }
    if (!open.empty()) {  // alike on every rank: they hold the same checkpoints
      std::vector<std::uint64_t> all(mine.size() * static_cast<std::size_t>(size));
      mpi_check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                              static_cast<int>(mine.size()), MPI_UINT64_T, comm),
                "MPI_Allgather (checksums to seal)");
      std::size_t column = 0;
      for (Entry* e : open) {
        for (std::size_t f = 0; f < e->layout.fields.size(); ++f, ++column) {
          for (int r = 0; r < size; ++r) {
            slabs.set_checksum(e->row, f, r,
                               all[static_cast<std::size_t>(r) * mine.size() + column]);
          }
        }
        slabs.mark_complete(e->row);
      }
    }
    const std::int64_t changed = slabs.dirty_slabs();
    if (changed == 0) return;
    collective(std::string(kStore) + ": sealing " + std::to_string(open.size()) +
                   " checkpoint(s) in " + std::to_string(changed) + " slab(s) of '" + partial_path +
                   "'",
               [&] {
                 for (const detail::Slab& slab : slabs.slabs()) {
                   if (!slab.dirty) continue;
                   Hid group = make_hid(H5Gopen2(file.get(), slab.name.c_str(), H5P_DEFAULT),
                                        H5Gclose, "H5Gopen2('" + slab.name + "')");
                   write_row_attributes(group.get(), slab, true);
                   for (std::size_t f = 0; f < slab.checksums.size(); ++f) {
                     Hid d = make_hid(H5Dopen2(group.get(), slab.fields[f].c_str(), H5P_DEFAULT),
                                      H5Dclose, "H5Dopen2('" + slab.fields[f] + "')");
                     detail::rewrite_attribute_u64s(d.get(), "rank_checksums", slab.checksums[f]);
                   }
                 }
               });
    for (Entry* e : open) e->sealed = true;
    slabs.sealed();
  }

  // The per-row attributes of a slab's group (format 5 says "per slot"): created with the slab,
  // rewritten at a seal.
  void write_row_attributes(hid_t group, const detail::Slab& slab, bool rewrite) const {
    const auto i64s = rewrite ? detail::rewrite_attribute_i64s : detail::attribute_i64s;
    const auto f64s = rewrite ? detail::rewrite_attribute_f64s : detail::attribute_f64s;
    i64s(group, "step", slab.step);
    i64s(group, "kind", slab.kind);
    i64s(group, "run", slab.run);
    i64s(group, "complete", slab.complete);
    for (std::size_t k = 0; k < slab.scalars.size(); ++k) {
      f64s(group, "scalar:" + slab.scalar_names[k], slab.scalars[k]);
    }
  }

  // Not collective: the store goes without a word to the other ranks (it is destroyed while an
  // exception unwinds, or after MPI_Finalize). Queued jobs are dropped, the descriptor closed and
  // the file unlinked. HDF5's file handle is left to the library: H5Fclose is collective under
  // MPI-IO and would wait for ranks that may never call it; HDF5 closes it when it shuts down
  // (in MPI_Finalize), where every rank that let go of the same store takes part.
  void discard_locally() noexcept {
    if (io) io->cancel(this);
    in_flight.clear();
    entries.clear();
    io.reset();
    if (fd >= 0) ::close(fd);
    fd = -1;
    ::unlink(partial_path.c_str());  // every such rank tries; the others find it gone
    detail::unregister_partial(partial_path);
    if (lock_fd >= 0) ::close(lock_fd);
    lock_fd = -1;
    file.forget();
    closed = true;
  }

  // Collective: closes the file and renames (keeps) or removes it; returns the agreed failure.
  std::optional<Error> shut(bool keep_file);
};

Hdf5Store::Hdf5Store(const StoreConfig& config) : impl_(std::make_unique<Impl>()) {
  QuietHdf5 quiet;
  BlockFileSizeSignal no_sigxfsz;
  Impl& s = *impl_;
  s.uncaught = std::uncaught_exceptions();
  s.keep = config.keep_files;
  s.async = config.async_io;
  s.inline_io_bytes = config.inline_io_bytes;
  int initialized = 0;
  mpi_check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    throw Error(ErrorCode::Mpi, std::string(kStore) +
                                    ": MPI is not initialised; call MPI_Init (or PetscInitialize) "
                                    "before creating the store");
  }
  require(config.comm != MPI_COMM_NULL,
          std::string(kStore) + ": StoreConfig::comm is MPI_COMM_NULL; pass the solver's one");
  if (s.async) s.pool = std::make_unique<detail::StagingPool>(config.max_staged_bytes);
  mpi_check(MPI_Comm_dup(config.comm, &s.comm), "MPI_Comm_dup");
  mpi_check(MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  s.rank = comm_rank(s.comm);
  s.size = comm_size(s.comm);
  s.slabs = SlabTable(s.size);
  // How a put moves its bytes decides how many agreements it makes, and the staging pool which
  // checkpoints are prefetched: settings that differ between ranks would pair one rank's
  // collective calls with another's.
  {
    const std::array<std::int64_t, 3> mine = {config.async_io ? 1 : 0, config.inline_io_bytes,
                                              config.max_staged_bytes};
    std::array<std::int64_t, 6> both{}, all{};
    for (std::size_t i = 0; i < 3; ++i) {
      both[i] = mine[i];
      both[3 + i] = -mine[i];
    }
    std::string differ;
    try {
      mpi_check(MPI_Allreduce(both.data(), all.data(), 6, MPI_INT64_T, MPI_MAX, s.comm),
                "MPI_Allreduce (store settings)");
    } catch (...) {
      MPI_Comm_free(&s.comm);
      throw;
    }
    const char* names[] = {"StoreConfig::async_io", "StoreConfig::inline_io_bytes",
                           "StoreConfig::max_staged_bytes"};
    for (std::size_t i = 0; i < 3; ++i) {
      if (all[i] != -all[3 + i]) {
        differ += std::string(differ.empty() ? "" : ", ") + names[i] + " (" +
                  std::to_string(-all[3 + i]) + " to " + std::to_string(all[i]) + ")";
      }
    }
    if (!differ.empty()) {
      MPI_Comm_free(&s.comm);
      throw Error(ErrorCode::InvalidArgument,
                  std::string(kStore) + ": the ranks passed different settings: " + differ +
                      "; every rank must pass the same");
    }
  }

  std::optional<Error> local;
  std::string base;
  if (s.rank == 0) {
    local = capture([&] {
      detail::ReservedFile reserved = detail::reserve_file(config.directory, config.label);
      base = std::move(reserved.base);
      s.lock_fd = reserved.lock_fd;
    });
  }
  int length = static_cast<int>(base.size());
  try {
    mpi_check(MPI_Bcast(&length, 1, MPI_INT, 0, s.comm), "MPI_Bcast (file name)");
    base.resize(static_cast<std::size_t>(length));
    mpi_check(MPI_Bcast(base.data(), length, MPI_CHAR, 0, s.comm), "MPI_Bcast (file name)");
    agree(s.comm, local);
  } catch (...) {
    if (s.lock_fd >= 0) {
      ::unlink((base + ".h5.partial").c_str());
      ::close(s.lock_fd);
    }
    MPI_Comm_free(&s.comm);
    throw;
  }
  s.partial_path = base + ".h5.partial";
  if (s.rank == 0) detail::register_partial(s.partial_path);
  s.final_path = base + ".h5";
  s.current_path = s.partial_path;
  s.directory = std::filesystem::path(base).parent_path().string();

  try {
    s.collective("hdf5 store: creating '" + s.partial_path + "'", [&] {
      // HDF5's first metadata goes in before the store can allocate room for it.
      detail::check_file_size_limit(detail::FileRoom::kMargin);
      Hid fapl = make_hid(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate(file access)");
      h5_check(H5Pset_fapl_mpio(fapl.get(), s.comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
      // Rank 0 reads metadata and broadcasts it; metadata is written collectively.
      h5_check(H5Pset_all_coll_metadata_ops(fapl.get(), true), "H5Pset_all_coll_metadata_ops");
      h5_check(H5Pset_coll_metadata_write(fapl.get(), true), "H5Pset_coll_metadata_write");
      // 1.8+ object headers: attributes indexed by rank may exceed 64 KiB at large rank counts.
      h5_check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST),
               "H5Pset_libver_bounds");
      s.file = make_hid(H5Fcreate(s.partial_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                        H5Fclose, "H5Fcreate");
      const hid_t root = s.file.get();
      detail::attribute_string(root, "format", kFormat);
      detail::attribute_string(root, "checksum", kChecksum);
      detail::attribute_string(root, "writer", std::string("rewind ") + REWIND_VERSION);
      detail::attribute_string(root, "label", config.label);
      detail::attribute_i64(root, "ranks", s.size);
      s.fd = ::open(s.partial_path.c_str(), O_RDWR | O_CLOEXEC);
      if (s.fd < 0) {
        const int err = errno;
        throw Error(ErrorCode::Io,
                    "opening '" + s.partial_path + "' for the data failed: " + std::strerror(err));
      }
      s.room = detail::FileRoom(s.fd, s.rank == 0);
      s.room.ensure(detail::FileRoom::kMargin);
    });
  } catch (...) {
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
    s.shut(false);
    throw;
  }
  if (s.async) s.io = detail::IoThread::acquire();
}

Hdf5Store::~Hdf5Store() {
  Impl& s = *impl_;
  if (s.closed) return;
  BlockFileSizeSignal no_sigxfsz;
  int finalized = 0;
  MPI_Finalized(&finalized);
  // While an exception unwinds, this rank may be the only one here: a collective close would
  // wait for ranks that never come (the rank would hang instead of reporting its error).
  if (finalized || std::uncaught_exceptions() > s.uncaught) {
    s.discard_locally();
    return;
  }
  try {
    close();
  } catch (...) {
    // close() removed the file and every rank knows; a destructor cannot report more.
  }
}

std::optional<Error> Hdf5Store::Impl::shut(bool keep_file) {
  QuietHdf5 quiet;
  std::optional<Error> result;
  const auto settle = [&](const std::optional<Error>& local) {
    try {
      agree(comm, local);
    } catch (const Error& e) {
      if (!result) result = e;
    }
  };
  if (fd >= 0) ::close(fd);  // every job has finished (close() drained the queue)
  fd = -1;
  if (!keep_file) {
    // A file that is not kept is emptied (unless it has another name) and unlinked before HDF5
    // closes it: its space comes back at once (so the metadata HDF5 still writes while closing
    // finds room on a full disk), and nothing that looks like a checkpoint file survives a failed
    // close or a crash.
    settle(std::nullopt);  // every rank is here, so no write is in flight
    std::optional<Error> removed;
    if (rank == 0) {
      removed = capture([&] {
        // A file with another name (a resumable run's link) keeps its data: only this name goes.
        if (const int err = detail::remove_file_name(partial_path); err != 0) {
          throw Error(ErrorCode::Io, std::string(kStore) + ": removing '" + partial_path +
                                         "' failed (" + std::strerror(err) + ")");
        }
      });
    }
    settle(removed);
  }
  settle(capture([&] {
    std::optional<detail::LiftFileSizeLimit> lift;
    if (!keep_file) lift.emplace();
    if (file && file.reset() < 0) h5_fail("hdf5 store: closing '" + partial_path + "'");
  }));
  if (keep_file) {
    std::optional<Error> moved;
    if (rank == 0) {
      moved = capture([&] {
        if (result) {  // closing failed: the file is not trustworthy
          ::unlink(partial_path.c_str());
          return;
        }
        detail::FileRoom::release_beyond_end(partial_path);
        if (std::rename(partial_path.c_str(), final_path.c_str()) != 0) {
          const int err = errno;
          ::unlink(partial_path.c_str());
          throw Error(ErrorCode::Io, std::string(kStore) + ": renaming '" + partial_path +
                                         "' to '" + final_path + "' failed (" + std::strerror(err) +
                                         "); the file was removed");
        }
      });
    }
    settle(moved);
    if (!result) current_path = final_path;
  }
  if (lock_fd >= 0) ::close(lock_fd);
  lock_fd = -1;
  detail::unregister_partial(partial_path);
  closed = true;
  io.reset();
  MPI_Comm_free(&comm);
  return result;
}

void Hdf5Store::close() {
  Impl& s = *impl_;
  if (s.closed) return;
  QuietHdf5 quiet;
  BlockFileSizeSignal no_sigxfsz;
  // No job may be in flight when HDF5 closes the file (it may truncate it to its allocated end).
  s.drain();
  // A kept file is sealed below: its data goes to disk first, as in flush().
  if (s.keep && !s.abandoned && s.failure.empty() && !s.kept) s.sync_data();
  std::optional<Error> result;
  try {
    // A kept file is sealed and its metadata written: room for them first.
    std::optional<Error> local;
    if (s.keep && !s.abandoned && s.failure.empty() && !s.kept) {
      local = capture([&] { s.make_room(0, std::string(kStore) + ", close"); });
    }
    s.agree_here(std::move(local), Impl::OnFailure::UnusableIfIo);
  } catch (const Error& e) {
    result = e;
  }
  // Keep the file only if every rank can: abandon() is rank-local.
  const int discard_here = !s.keep || !s.failure.empty() || s.abandoned ? 1 : 0;
  int discard = discard_here;
  if (MPI_Allreduce(&discard_here, &discard, 1, MPI_INT, MPI_MAX, s.comm) != MPI_SUCCESS) {
    discard = 1;
  }
  if (!discard) {
    try {
      s.seal();
    } catch (const Error& e) {
      result = e;
      discard = 1;
    }
  }
  const std::optional<Error> shut = s.shut(!discard);
  if (!result) result = shut;
  if (result) throw *result;
}

void Hdf5Store::put(const Key& key, const CheckpointView& checkpoint) {
  QuietHdf5 quiet;
  BlockFileSizeSignal no_sigxfsz;
  Impl& s = *impl_;
  const auto t0 = SteadyClock::now();
  s.check_usable("put", &key);
  s.reap();
  const std::string at = detail::where(kStore, "put", key, -1);
  Impl::Entry entry;
  std::shared_ptr<detail::StagingPool::Lease> buffer;
  std::optional<Error> local = capture([&] {
    if (contains(key)) detail::throw_duplicate(kStore, key, s.rank);
    detail::validate_put(kStore, key, checkpoint, s.rank);
    entry.layout = detail::layout_of(checkpoint);
    entry.behind = s.behind(checkpoint);
    if (!entry.behind) return;
    // Copied before anything collective, so a failure here is agreed on too.
    detail::StagingPool::Wait waited;
    buffer = std::make_shared<detail::StagingPool::Lease>(
        s.pool->acquire(static_cast<std::size_t>(entry.layout.doubles()),
                        detail::StagingPool::Use::Write, &waited));
    s.note_blocked(waited);
    detail::pack(checkpoint, buffer->span());
  });
  // The last slab made for these names (every rank holds the same slabs): if every rank's blocks
  // are its blocks, the same agreement says so, and nobody needs the others' blocks.
  const std::size_t nf = checkpoint.fields.size();
  const std::string names = detail::names_of(checkpoint);
  const std::optional<std::size_t> last = s.slabs.last_for(names);
  const bool mine_fit = !local && last && s.slabs.holds_blocks_of(*last, s.rank, checkpoint);
  const bool all_fit = s.agree_here(
      std::move(local), Impl::OnFailure::UnusableIfIo, detail::layout_hash(checkpoint),
      at + ": the ranks passed different checkpoint layouts (field names or global sizes, scalar "
           "names or values differ between ranks); every rank must pass the same fields and "
           "scalars, each with its own block",
      mine_fit);

  std::size_t shape = 0;
  detail::Blocks blocks;
  if (all_fit) {
    shape = s.slabs.slab(*last).shape;
  } else {
    // Every rank learns every block: the ranks' blocks must tile each field.
    std::vector<std::int64_t> mine(2 * nf);
    for (std::size_t f = 0; f < nf; ++f) {
      mine[2 * f] = checkpoint.fields[f].offset;
      mine[2 * f + 1] = static_cast<std::int64_t>(checkpoint.fields[f].data.size());
    }
    std::vector<std::int64_t> all(2 * nf * static_cast<std::size_t>(s.size));
    mpi_check(MPI_Allgather(mine.data(), static_cast<int>(2 * nf), MPI_INT64_T, all.data(),
                            static_cast<int>(2 * nf), MPI_INT64_T, s.comm),
              "MPI_Allgather (blocks)");
    blocks.offsets.resize(nf);
    blocks.counts.resize(nf);
    for (std::size_t f = 0; f < nf; ++f) {
      for (int r = 0; r < s.size; ++r) {
        const std::int64_t* b = &all[2 * (static_cast<std::size_t>(r) * nf + f)];
        blocks.offsets[f].push_back(b[0]);
        blocks.counts[f].push_back(b[1]);
      }
      check_tiling(at, checkpoint.fields[f], blocks.offsets[f], blocks.counts[f]);
    }
    shape = s.slabs.shape_of(names, blocks);
  }

  std::int64_t global_bytes = 0;
  for (const auto& f : checkpoint.fields) global_bytes += 8 * f.global_size;
  SlabTable::Choice choice = s.slabs.choose(shape, global_bytes);
  if (!choice.slab) {
    const std::int64_t rows = choice.new_rows;
    s.agree_here(capture([&] {
                   s.make_room(s.growth_of(checkpoint, rows),
                               at + ": a slab of " + std::to_string(rows) + " checkpoint(s)");
                 }),
                 Impl::OnFailure::UnusableIfIo);
    if (all_fit) {  // a full slab of a known shape: its blocks
      blocks = {s.slabs.slab(*last).offsets, s.slabs.slab(*last).counts};
    }
    detail::Slab slab = s.slabs.make_slab(shape, names, std::move(blocks), checkpoint, rows);
    s.collective(at + ": creating " + slab.name + " (" + std::to_string(rows) +
                     " checkpoint(s)) in '" + s.partial_path + "'",
                 [&] { s.create_slab(slab); });
    choice.slab = s.slabs.add(std::move(slab));
  }
  const SlabTable::Row row = s.slabs.take(*choice.slab, key, checkpoint.scalars);
  const std::string& slab_name = s.slabs.slab(row.slab).name;
  entry.row = row;
  entry.at.assign(nf, 0);
  for (std::size_t f = 0; f < nf; ++f) entry.at[f] = s.slabs.block_at(row, f, s.rank);
  if (!entry.behind) {
    // Straight from the caller's buffers: no staging copy. Agreed on, as the bytes move here.
    s.collective(at + ": writing checkpoint " + to_string(key) + " to " + slab_name + ", row " +
                     std::to_string(row.index) + " in '" + s.partial_path + "'",
                 [&] {
                   IoJob job;
                   job.kind = IoJob::Kind::Write;
                   job.fd = s.fd;
                   for (std::size_t f = 0; f < nf; ++f) {
                     const auto& data = checkpoint.fields[f].data;
                     job.segments.push_back(
                         {entry.at[f],
                          const_cast<std::byte*>(reinterpret_cast<const std::byte*>(data.data())),
                          data.size_bytes()});
                   }
                   const detail::JobResult r = detail::run_job(job);
                   s.account(r, false);
                   if (r.error != 0) {
                     throw Error(ErrorCode::Io, job_failure(r, job, entry.layout));
                   }
                   entry.checksums = r.checksums;
                 });
  }
  if (entry.behind) {
    IoJob job = s.job_for(IoJob::Kind::Write, entry, buffer->span());
    job.keep_alive = std::move(buffer);
    entry.write = s.submit(key, std::move(job));
  }
  const std::int64_t bytes = entry.layout.bytes();
  s.entries.emplace(key, std::move(entry));
  detail::count_put(s.stats, bytes, static_cast<std::int64_t>(s.entries.size()));
  s.stats.write_seconds += seconds_since(t0);
}

void Hdf5Store::get(const Key& key, const CheckpointSpan& out) {
  Impl& s = *impl_;
  const auto t0 = SteadyClock::now();
  s.check_usable("get", &key);
  s.reap();
  const auto it = s.entries.find(key);
  std::optional<Error> local = capture([&] {
    if (it == s.entries.end()) detail::throw_missing(kStore, "get", key, s.rank);
    detail::validate_get(kStore, key, it->second.layout, out, s.rank);
  });
  if (!local) {
    Impl::Entry& e = it->second;
    if (e.write) s.wait_for(*e.write);
    if (e.prefetch) {
      Impl::Prefetch p = std::move(*e.prefetch);
      e.prefetch.reset();
      s.stats.prefetch_hits += 1;
      if (!p.ticket->done()) s.stats.prefetch_late += 1;
      s.wait_for(*p.ticket);
      const detail::JobResult& r = p.ticket->result();
      if (r.error != 0) {
        s.keep_read_failure(key, r, p.job, e);
      } else if (!s.kept) {
        local = s.verify(key, e, r.checksums);
        if (!local) detail::unpack(p.buffer->span(), out);
      }
    } else if (!s.kept) {
      // Straight into the caller's buffers, on this thread: no copy, and nothing to wait for.
      IoJob job;
      job.kind = IoJob::Kind::Read;
      job.fd = s.fd;
      for (std::size_t f = 0; f < out.fields.size(); ++f) {
        const auto& data = out.fields[f].data;
        job.segments.push_back(
            {e.at[f], reinterpret_cast<std::byte*>(data.data()), data.size_bytes()});
      }
      const detail::JobResult r = detail::run_job(job);
      s.account(r, false);
      if (r.error != 0) {
        s.keep_read_failure(key, r, job, e);
      } else {
        local = s.verify(key, e, r.checksums);
      }
    }
  } else if (it != s.entries.end()) {
    s.drop_prefetch(it->second);  // so every rank's pool holds the same prefetches
  }
  // A damaged block is this rank's finding; every rank throws it, and the store stays usable.
  s.agree_here(local);
  detail::fill_scalars(it->second.layout, out);
  detail::count_get(s.stats, it->second.layout.bytes());
  s.stats.read_seconds += seconds_since(t0);
}

void Hdf5Store::prefetch(const Key& key) {
  Impl& s = *impl_;
  s.check_usable("prefetch", &key);
  const auto it = s.entries.find(key);
  if (it == s.entries.end()) detail::throw_missing(kStore, "prefetch", key, s.rank);
  Impl::Entry& e = it->second;
  if (!e.behind || e.prefetch) return;
  s.reap();
  const std::int64_t bytes = e.layout.bytes();
  if (!s.pool->prefetch_fits(bytes)) {
    s.stats.prefetch_skipped += 1;
    return;
  }
  detail::StagingPool::Wait waited;
  auto buffer = std::make_shared<detail::StagingPool::Lease>(s.pool->acquire(
      static_cast<std::size_t>(e.layout.doubles()), detail::StagingPool::Use::Prefetch, &waited));
  s.note_blocked(waited);
  IoJob job = s.job_for(IoJob::Kind::Read, e, buffer->span());
  IoJob record = job;
  job.keep_alive = buffer;
  // Queued behind this checkpoint's write, if that is still pending: the queue is FIFO.
  e.prefetch = Impl::Prefetch{buffer, s.submit(key, std::move(job)), std::move(record)};
}

void Hdf5Store::erase(const Key& key) {
  QuietHdf5 quiet;
  BlockFileSizeSignal no_sigxfsz;
  Impl& s = *impl_;
  s.check_usable("erase", &key);
  s.reap();
  const auto it = s.entries.find(key);
  std::optional<Error> local = capture([&] {
    if (it == s.entries.end()) detail::throw_missing(kStore, "erase", key, s.rank);
  });
  if (!local) {
    // A later put may take the row: nothing of ours may still touch it.
    if (it->second.write) s.wait_for(*it->second.write);
    s.drop_prefetch(it->second);
  }
  s.agree_here(local, Impl::OnFailure::UnusableIfIo);
  Impl::Entry& e = it->second;
  s.slabs.release(e.row);
  const std::int64_t bytes = e.layout.bytes();
  s.entries.erase(it);
  detail::count_erase(s.stats, bytes, static_cast<std::int64_t>(s.entries.size()));
}

bool Hdf5Store::contains(const Key& key) const {
  return impl_->entries.count(key) != 0;
}

StoreStats Hdf5Store::stats() const {
  Impl& s = *impl_;
  if (!s.closed) s.reap();
  StoreStats out = s.stats;
  if (s.pool) {
    const auto pool = s.pool->stats();
    out.peak_staged_bytes = pool.peak_in_use_bytes;
    out.staged_over_limit = pool.over_limit;
  }
  return out;
}

void Hdf5Store::reset_peaks() {
  impl_->stats.peak_live = impl_->stats.live;
  impl_->stats.peak_bytes = impl_->stats.live_bytes;
}

std::string Hdf5Store::path() const {
  return impl_->current_path;
}

std::string Hdf5Store::final_path() const {
  return impl_->final_path;
}

MPI_Comm Hdf5Store::collective_comm() const {
  return impl_->comm;
}

std::string Hdf5Store::io_mode() const {
  if (!impl_->async) return "synchronous (StoreConfig::async_io is off)";
  std::string mode =
      "write-behind and prefetch on the process I/O thread (POSIX pwrite/pread; HDF5 and MPI on "
      "the calling thread), staging at most ";
  const std::int64_t staged = impl_->pool->max_bytes();
  char text[48];
  if (staged < (1 << 20)) {
    std::snprintf(text, sizeof text, "%lld bytes a rank", static_cast<long long>(staged));
  } else {
    std::snprintf(text, sizeof text, "%.4g MiB a rank", static_cast<double>(staged) / (1 << 20));
  }
  mode += text;
  if (impl_->inline_io_bytes > 0) {
    mode += "; checkpoints of at most " + std::to_string(impl_->inline_io_bytes) +
            " bytes a rank move on the calling thread, where the thread would cost more than it "
            "hides";
  }
  return mode;
}

void Hdf5Store::flush() {
  QuietHdf5 quiet;
  BlockFileSizeSignal no_sigxfsz;
  Impl& s = *impl_;
  s.check_usable("flush", nullptr);
  // The data is on disk before the seal marks it complete.
  s.sync_data();
  s.agree_here(capture([&] { s.make_room(0, std::string(kStore) + ", flush"); }),
               Impl::OnFailure::UnusableIfIo);
  s.seal();
  s.collective(std::string(kStore) + ", flush: flushing '" + s.partial_path + "'",
               [&] { h5_check(H5Fflush(s.file.get(), H5F_SCOPE_GLOBAL), "H5Fflush"); });
}

void Hdf5Store::abandon() noexcept {
  impl_->abandoned = true;
}

std::vector<SealedBlock> Hdf5Store::sealed_blocks(const Key& key) const {
  const Impl& s = *impl_;
  const auto it = s.entries.find(key);
  if (it == s.entries.end()) detail::throw_missing(kStore, "sealed_blocks", key, s.rank);
  const Impl::Entry& e = it->second;
  if (!e.sealed) {
    throw Error(ErrorCode::InvalidArgument,
                detail::where(kStore, "sealed_blocks", key, s.rank) +
                    ": the checkpoint is not sealed yet (flush() seals it)");
  }
  std::vector<SealedBlock> blocks;
  for (std::size_t f = 0; f < e.layout.fields.size(); ++f) {
    const auto& field = e.layout.fields[f];
    blocks.push_back({field.name, e.at[f], field.size, e.checksums[f]});
  }
  return blocks;
}

std::int64_t Hdf5Store::field_file_offset(const Key& key, std::string_view field) {
  QuietHdf5 quiet;
  BlockFileSizeSignal no_sigxfsz;
  Impl& s = *impl_;
  s.check_usable("field_file_offset", &key);
  agree(s.comm, capture([&] {
          if (!contains(key)) detail::throw_missing(kStore, "field_file_offset", key, s.rank);
        }));
  const Impl::Entry& e = s.entries.at(key);
  const detail::Slab& slab = s.slabs.slab(e.row.slab);
  for (std::size_t f = 0; f < slab.fields.size(); ++f) {
    if (slab.fields[f] == field && slab.global[f] > 0) return s.slabs.row_at(e.row, f);
  }
  throw Error(ErrorCode::InvalidArgument, std::string(kStore) + ": checkpoint " + s.located(key) +
                                              " has no field '" + std::string(field) +
                                              "' with data in the file");
}

}  // namespace rwd::storage
