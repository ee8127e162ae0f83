// The HDF5 store's public calls: the collective protocol of each (what every rank checks, when
// the ranks agree, what a failure does to the store) and the handing of bytes to the I/O thread.
// The file's life, its HDF5 metadata and the jobs that move the bytes are in the other
// hdf5_store_*.cpp files (hdf5_store_impl.hpp says which).
#include "hdf5_store.hpp"

#include <cstdio>
#include <exception>
#include <utility>

#include "hdf5_store_impl.hpp"
#include "rewind/timing.hpp"

namespace rwd::storage {

using comm::agree;
using comm::capture;
using comm::KeptFailure;
using comm::mpi_check;
using comm::Verdict;
using detail::BlockFileSizeSignal;
using detail::IoJob;
using detail::QuietHdf5;
using detail::SlabTable;

namespace {

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

std::string Hdf5Store::Impl::located(const Key& key) const {
  const auto it = entries.find(key);
  if (it == entries.end()) return to_string(key);
  const SlabTable::Row& row = it->second.row;
  return to_string(key) + " (" + slabs.slab(row.slab).name + ", row " + std::to_string(row.index) +
         ")";
}

void Hdf5Store::Impl::check_usable(std::string_view call, const Key* key) const {
  if (!closed && failure.empty()) return;  // every call asks: no message built for nothing
  const std::string at = key ? detail::where(kHdf5Store, call, *key, rank)
                             : std::string(kHdf5Store) + ", " + std::string(call);
  if (closed) throw Error(ErrorCode::Io, at + ": the store was closed ('" + current_path + "')");
  throw Error(ErrorCode::Io, at + ": the store is unusable after an earlier failure: " + failure);
}

bool Hdf5Store::Impl::behind(const CheckpointView& checkpoint) const {
  if (!async) return false;
  std::int64_t global = 0;
  for (const auto& f : checkpoint.fields) global += f.global_size;
  return global * static_cast<std::int64_t>(sizeof(double)) > inline_io_bytes * size;
}

std::string Hdf5Store::Impl::io_hint() const {
  return "; check free space, quotas and permissions of '" + directory +
         "', or choose another directory (StoreConfig::directory, PETSc: "
         "-ts_trajectory_dirname)";
}

bool Hdf5Store::Impl::agree_here(std::optional<Error> local, OnFailure on_failure,
                                 std::uint64_t layout, const std::string& mismatch, bool yes) {
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

Hdf5Store::Hdf5Store(const StoreConfig& config) : impl_(std::make_unique<Impl>()) {
  QuietHdf5 quiet;
  BlockFileSizeSignal no_sigxfsz;
  impl_->uncaught = std::uncaught_exceptions();
  impl_->open(config);
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
      local = capture([&] { s.make_room(0, std::string(kHdf5Store) + ", close"); });
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

std::optional<Error> Hdf5Store::Impl::stage(const Key& key, const CheckpointView& checkpoint,
                                            Entry& entry,
                                            std::shared_ptr<detail::StagingPool::Lease>& buffer) {
  return capture([&] {
    if (entries.count(key) != 0) detail::throw_duplicate(kHdf5Store, key, rank);
    detail::validate_put(kHdf5Store, key, checkpoint, rank);
    entry.layout = detail::layout_of(checkpoint);
    entry.behind = behind(checkpoint);
    entry.exact = checkpoint.exact;
    if (codec.name != "none") {
      entry.stored = std::make_shared<std::vector<std::int64_t>>(checkpoint.fields.size(), 0);
      for (const FieldView& f : checkpoint.fields) entry.grids.push_back(f.grid);
    }
    if (!entry.behind) return;
    detail::StagingPool::Wait waited;
    buffer = std::make_shared<detail::StagingPool::Lease>(
        pool->acquire(static_cast<std::size_t>(entry.layout.doubles()),
                      detail::StagingPool::Use::Write, &waited));
    note_blocked(waited);
    detail::pack(checkpoint, buffer->span());
  });
}

SlabTable::Row Hdf5Store::Impl::place(const Key& key, const CheckpointView& checkpoint,
                                      const std::string& at, std::optional<Error> local) {
  // The last slab made for these names (every rank holds the same slabs): if every rank's blocks
  // are its blocks, the same agreement says so, and nobody needs the others' blocks.
  const std::string names = detail::names_of(checkpoint);
  const std::optional<std::size_t> last = slabs.last_for(names);
  const bool mine_fit = !local && last && slabs.holds_blocks_of(*last, rank, checkpoint);
  const bool all_fit = agree_here(
      std::move(local), OnFailure::UnusableIfIo, detail::layout_hash(checkpoint),
      at + ": the ranks passed different checkpoint layouts (field names or global sizes, scalar "
           "names or values differ between ranks); every rank must pass the same fields and "
           "scalars, each with its own block",
      mine_fit);

  std::size_t shape = 0;
  detail::Blocks blocks;
  if (all_fit) {
    shape = slabs.slab(*last).shape;
  } else {
    blocks = gather_blocks(at, checkpoint);
    shape = slabs.shape_of(names, blocks);
  }
  std::int64_t global_bytes = 0;
  for (const auto& f : checkpoint.fields) global_bytes += 8 * f.global_size;
  SlabTable::Choice choice = slabs.choose(shape, global_bytes);
  if (!choice.slab) {
    if (all_fit) {  // a full slab of a known shape: its blocks
      blocks = {slabs.slab(*last).offsets, slabs.slab(*last).counts};
    }
    choice.slab = add_slab(at, shape, names, std::move(blocks), checkpoint, choice.new_rows);
  }
  return slabs.take(*choice.slab, key, checkpoint.scalars);
}

detail::Blocks Hdf5Store::Impl::gather_blocks(const std::string& at,
                                              const CheckpointView& checkpoint) {
  const std::size_t nf = checkpoint.fields.size();
  std::vector<std::int64_t> mine(2 * nf);
  for (std::size_t f = 0; f < nf; ++f) {
    mine[2 * f] = checkpoint.fields[f].offset;
    mine[2 * f + 1] = static_cast<std::int64_t>(checkpoint.fields[f].data.size());
  }
  std::vector<std::int64_t> all(2 * nf * static_cast<std::size_t>(size));
  mpi_check(MPI_Allgather(mine.data(), static_cast<int>(2 * nf), MPI_INT64_T, all.data(),
                          static_cast<int>(2 * nf), MPI_INT64_T, comm),
            "MPI_Allgather (blocks)");
  detail::Blocks blocks;
  blocks.offsets.resize(nf);
  blocks.counts.resize(nf);
  for (std::size_t f = 0; f < nf; ++f) {
    for (int r = 0; r < size; ++r) {
      const std::int64_t* b = &all[2 * (static_cast<std::size_t>(r) * nf + f)];
      blocks.offsets[f].push_back(b[0]);
      blocks.counts[f].push_back(b[1]);
    }
    check_tiling(at, checkpoint.fields[f], blocks.offsets[f], blocks.counts[f]);
  }
  return blocks;
}

std::size_t Hdf5Store::Impl::add_slab(const std::string& at, std::size_t shape,
                                      const std::string& names, detail::Blocks blocks,
                                      const CheckpointView& checkpoint, std::int64_t rows) {
  agree_here(capture([&] {
               make_room(growth_of(checkpoint, rows),
                         at + ": a slab of " + std::to_string(rows) + " checkpoint(s)");
             }),
             OnFailure::UnusableIfIo);
  detail::Slab slab = slabs.make_slab(shape, names, std::move(blocks), checkpoint, rows);
  collective(at + ": creating " + slab.name + " (" + std::to_string(rows) + " checkpoint(s)) in '" +
                 partial_path + "'",
             [&] { create_slab(slab); });
  return slabs.add(std::move(slab));
}

void Hdf5Store::put(const Key& key, const CheckpointView& checkpoint) {
  QuietHdf5 quiet;
  BlockFileSizeSignal no_sigxfsz;
  Impl& s = *impl_;
  const auto t0 = SteadyClock::now();
  s.check_usable("put", &key);
  s.reap();
  const std::string at = detail::where(kHdf5Store, "put", key, -1);
  Impl::Entry entry;
  std::shared_ptr<detail::StagingPool::Lease> buffer;
  std::optional<Error> local = s.stage(key, checkpoint, entry, buffer);
  const SlabTable::Row row = s.place(key, checkpoint, at, std::move(local));
  entry.row = row;
  entry.at.assign(checkpoint.fields.size(), 0);
  for (std::size_t f = 0; f < entry.at.size(); ++f) entry.at[f] = s.slabs.block_at(row, f, s.rank);
  if (!entry.behind) {
    // Straight from the caller's buffers: no staging copy. Agreed on, as the bytes move here.
    s.collective(at + ": writing checkpoint " + to_string(key) + " to " +
                     s.slabs.slab(row.slab).name + ", row " + std::to_string(row.index) + " in '" +
                     s.partial_path + "'",
                 [&] { s.write_here(checkpoint, entry); });
  } else {
    IoJob job = s.job_for(IoJob::Kind::Write, entry, buffer->span());
    job.keep_alive = std::move(buffer);
    entry.write = s.submit(key, std::move(job));
  }
  const std::int64_t bytes = entry.layout.bytes();
  s.entries.emplace(key, std::move(entry));
  // The file holds room for the values: live bytes count that; bytes written what moved.
  detail::count_put(s.stats, bytes, static_cast<std::int64_t>(s.entries.size()));
  if (s.codec.name != "none") s.stats.uncompressed_bytes_written += bytes;
  s.stats.write_seconds += seconds_since(t0);
}

void Hdf5Store::get(const Key& key, const CheckpointSpan& out) {
  Impl& s = *impl_;
  const auto t0 = SteadyClock::now();
  s.check_usable("get", &key);
  s.reap();
  const auto it = s.entries.find(key);
  std::optional<Error> local = capture([&] {
    if (it == s.entries.end()) detail::throw_missing(kHdf5Store, "get", key, s.rank);
    detail::validate_get(kHdf5Store, key, it->second.layout, out, s.rank);
  });
  if (!local) {
    Impl::Entry& e = it->second;
    if (e.write) s.wait_for(*e.write);
    if (e.prefetch) {
      local = s.read_prefetched(key, e, out);
    } else if (!s.kept) {
      local = s.read_here(key, e, out);
    }
  } else if (it != s.entries.end()) {
    s.drop_prefetch(it->second);  // so every rank's pool holds the same prefetches
  }
  // A damaged block is this rank's finding; every rank throws it, and the store stays usable.
  s.agree_here(local);
  detail::fill_scalars(it->second.layout, out);
  detail::count_get(s.stats, s.stored_bytes(it->second));
  s.stats.read_seconds += seconds_since(t0);
}

void Hdf5Store::prefetch(const Key& key) {
  Impl& s = *impl_;
  s.check_usable("prefetch", &key);
  const auto it = s.entries.find(key);
  if (it == s.entries.end()) detail::throw_missing(kHdf5Store, "prefetch", key, s.rank);
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
    if (it == s.entries.end()) detail::throw_missing(kHdf5Store, "erase", key, s.rank);
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

std::int64_t Hdf5Store::stored_bytes(const Key& key) {
  const auto it = impl_->entries.find(key);
  if (it == impl_->entries.end()) {
    detail::throw_missing("hdf5 store", "stored_bytes", key, impl_->rank);
  }
  return it->second.layout.bytes();
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
  s.agree_here(capture([&] { s.make_room(0, std::string(kHdf5Store) + ", flush"); }),
               Impl::OnFailure::UnusableIfIo);
  s.seal();
  s.collective(std::string(kHdf5Store) + ", flush: flushing '" + s.partial_path + "'",
               [&] { detail::h5_check(H5Fflush(s.file.get(), H5F_SCOPE_GLOBAL), "H5Fflush"); });
}

void Hdf5Store::abandon() noexcept {
  impl_->abandoned = true;
}

std::vector<SealedBlock> Hdf5Store::sealed_blocks(const Key& key) const {
  const Impl& s = *impl_;
  const auto it = s.entries.find(key);
  if (it == s.entries.end()) detail::throw_missing(kHdf5Store, "sealed_blocks", key, s.rank);
  const Impl::Entry& e = it->second;
  if (!e.sealed) {
    throw Error(ErrorCode::InvalidArgument,
                detail::where(kHdf5Store, "sealed_blocks", key, s.rank) +
                    ": the checkpoint is not sealed yet (flush() seals it)");
  }
  std::vector<SealedBlock> blocks;
  for (std::size_t f = 0; f < e.layout.fields.size(); ++f) {
    const auto& field = e.layout.fields[f];
    blocks.push_back(
        {field.name, e.at[f], field.size, e.checksums[f], e.stored ? (*e.stored)[f] : 0});
  }
  return blocks;
}

std::int64_t Hdf5Store::field_file_offset(const Key& key, std::string_view field) {
  QuietHdf5 quiet;
  BlockFileSizeSignal no_sigxfsz;
  Impl& s = *impl_;
  s.check_usable("field_file_offset", &key);
  agree(s.comm, capture([&] {
          if (!contains(key)) detail::throw_missing(kHdf5Store, "field_file_offset", key, s.rank);
        }));
  const Impl::Entry& e = s.entries.at(key);
  const detail::Slab& slab = s.slabs.slab(e.row.slab);
  for (std::size_t f = 0; f < slab.fields.size(); ++f) {
    if (slab.fields[f] == field && slab.global[f] > 0) return s.slabs.row_at(e.row, f);
  }
  throw Error(ErrorCode::InvalidArgument, std::string(kHdf5Store) + ": checkpoint " +
                                              s.located(key) + " has no field '" +
                                              std::string(field) + "' with data in the file");
}

}  // namespace rwd::storage
