// How the HDF5 store moves its bytes: jobs on the process's I/O thread (submitted, waited for,
// reaped in order, their time accounted) or run on the calling thread, and the checks of what
// was read against what was written. No HDF5 and no MPI call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "hdf5_store_impl.hpp"
#include "rewind/timing.hpp"

namespace rwd::storage {

using detail::IoJob;

namespace {

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

}  // namespace

// Jobs of one store run one after the other, and the caller's waits are recorded in order, so a
// wait that ended before this job started cannot meet a later job either.
void Hdf5Store::Impl::account(const detail::JobResult& r, bool background) {
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

void Hdf5Store::Impl::note_blocked(const detail::StagingPool::Wait& w) {
  if (w.to <= w.from) return;
  blocked.push_back(w);
  stats.wait_seconds += std::chrono::duration<double>(w.to - w.from).count();
}

void Hdf5Store::Impl::reap() {
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
        account_write(it->second, r, true);
        it->second.write.reset();
        if (r.error != 0 && !kept) {
          kept.emplace(ErrorCode::Io, detail::where(kHdf5Store, "put", f.key, rank) +
                                          ": the background write of checkpoint " + located(f.key) +
                                          " to '" + partial_path + "' failed: " +
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

void Hdf5Store::Impl::wait_for(const detail::Ticket& ticket) {
  if (!ticket.done()) {
    const auto from = SteadyClock::now();
    io->wait(ticket);
    note_blocked({from, SteadyClock::now()});
  }
  reap();
}

void Hdf5Store::Impl::sync_data() {
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

void Hdf5Store::Impl::drain() {
  if (!in_flight.empty()) wait_for(*in_flight.back().ticket);
}

std::shared_ptr<detail::Ticket> Hdf5Store::Impl::submit(const Key& key, IoJob job) {
  IoJob record = job;
  record.keep_alive.reset();
  auto ticket = io->submit(std::move(job), this);
  in_flight.push_back({ticket, key, std::move(record)});
  return ticket;
}

IoJob Hdf5Store::Impl::job_for(IoJob::Kind kind, const Entry& e, std::span<double> memory) const {
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
  add_codec(job, e);
  return job;
}

void Hdf5Store::Impl::add_codec(IoJob& job, const Entry& e) const {
  if (!e.stored) return;
  job.stored = e.stored;
  if (job.kind == IoJob::Kind::Write) {
    job.codec = codec_for(codec, e.exact);
    job.grids = e.grids;
  }
}

std::int64_t Hdf5Store::Impl::stored_bytes(const Entry& e) const {
  if (!e.stored) return e.layout.bytes();
  std::int64_t bytes = 0;
  for (std::size_t f = 0; f < e.layout.fields.size(); ++f) {
    const std::int64_t block = (*e.stored)[f];
    bytes += block > 0 ? block : 8 * e.layout.fields[f].size;
  }
  return bytes;
}

void Hdf5Store::Impl::account_write(const Entry& e, const detail::JobResult& r, bool background) {
  if (!e.stored || r.error != 0) return;
  stats.bytes_written += stored_bytes(e) - e.layout.bytes();
  stats.compress_seconds += r.codec_seconds;
  if (background) stats.codec_io_thread_seconds += r.codec_seconds;
}

std::optional<Error> Hdf5Store::Impl::account_read(const Key& key, const Entry& e,
                                                   const detail::JobResult& r, bool background) {
  stats.decompress_seconds += r.codec_seconds;
  if (background) stats.codec_io_thread_seconds += r.codec_seconds;
  if (r.decode_error.empty()) return std::nullopt;
  const auto& field = e.layout.fields[r.failed_segment];
  return Error(ErrorCode::Corrupt,
               detail::where(kHdf5Store, "get", key, rank) + ": checkpoint " + located(key) +
                   " in '" + partial_path + "' is corrupt: field '" + field.name + "', rank " +
                   std::to_string(rank) + "'s compressed block of values [" +
                   std::to_string(field.offset) + ", " + std::to_string(field.offset + field.size) +
                   ") does not decompress (" + r.decode_error +
                   "); the file was modified or the storage returned bad data");
}

void Hdf5Store::Impl::keep_sync_failure(const detail::JobResult& r) {
  if (r.error == 0 || kept) return;
  kept.emplace(ErrorCode::Io, std::string(kHdf5Store) + ", flush on rank " + std::to_string(rank) +
                                  ": syncing '" + partial_path +
                                  "' failed: " + std::strerror(r.error) + io_hint());
}

void Hdf5Store::Impl::keep_read_failure(const Key& key, const detail::JobResult& r,
                                        const IoJob& job, const Entry& e) {
  if (kept) return;
  kept.emplace(ErrorCode::Io, detail::where(kHdf5Store, "get", key, rank) +
                                  ": reading checkpoint " + located(key) + " from '" +
                                  partial_path + "' failed: " + job_failure(r, job, e.layout));
}

std::optional<Error> Hdf5Store::Impl::verify(const Key& key, const Entry& e,
                                             const std::vector<std::uint64_t>& read) const {
  for (std::size_t f = 0; f < e.layout.fields.size(); ++f) {
    const auto& field = e.layout.fields[f];
    if (read[f] == e.checksums[f]) continue;
    char hex[64];
    std::snprintf(hex, sizeof hex, "%016llx, read %016llx",
                  static_cast<unsigned long long>(e.checksums[f]),
                  static_cast<unsigned long long>(read[f]));
    return Error(ErrorCode::Corrupt,
                 detail::where(kHdf5Store, "get", key, rank) + ": checkpoint " + located(key) +
                     " in '" + partial_path + "' is corrupt: field '" + field.name + "', rank " +
                     std::to_string(rank) + "'s block [" + std::to_string(field.offset) + ", " +
                     std::to_string(field.offset + field.size) + ") fails its checksum (written " +
                     hex + "); the file was modified or the storage returned bad data");
  }
  return std::nullopt;
}

void Hdf5Store::Impl::drop_prefetch(Entry& e) {
  if (!e.prefetch) return;
  wait_for(*e.prefetch->ticket);
  e.prefetch.reset();
}

void Hdf5Store::Impl::write_here(const CheckpointView& checkpoint, Entry& entry) {
  IoJob job;
  job.kind = IoJob::Kind::Write;
  job.fd = fd;
  for (std::size_t f = 0; f < checkpoint.fields.size(); ++f) {
    const auto& data = checkpoint.fields[f].data;
    job.segments.push_back({entry.at[f],
                            const_cast<std::byte*>(reinterpret_cast<const std::byte*>(data.data())),
                            data.size_bytes()});
  }
  add_codec(job, entry);
  const detail::JobResult r = detail::run_job(job);
  account(r, false);
  if (r.error != 0) throw Error(ErrorCode::Io, job_failure(r, job, entry.layout));
  entry.checksums = r.checksums;
  account_write(entry, r, false);
}

std::optional<Error> Hdf5Store::Impl::read_here(const Key& key, const Entry& e,
                                                const CheckpointSpan& out) {
  // Straight into the caller's buffers, on this thread: no copy, and nothing to wait for.
  IoJob job;
  job.kind = IoJob::Kind::Read;
  job.fd = fd;
  for (std::size_t f = 0; f < out.fields.size(); ++f) {
    const auto& data = out.fields[f].data;
    job.segments.push_back({e.at[f], reinterpret_cast<std::byte*>(data.data()), data.size_bytes()});
  }
  add_codec(job, e);
  const detail::JobResult r = detail::run_job(job);
  account(r, false);
  if (r.error != 0) {
    keep_read_failure(key, r, job, e);
    return std::nullopt;
  }
  std::optional<Error> undecoded = account_read(key, e, r, false);
  return undecoded ? undecoded : verify(key, e, r.checksums);
}

std::optional<Error> Hdf5Store::Impl::read_prefetched(const Key& key, Entry& e,
                                                      const CheckpointSpan& out) {
  Prefetch p = std::move(*e.prefetch);
  e.prefetch.reset();
  stats.prefetch_hits += 1;
  if (!p.ticket->done()) stats.prefetch_late += 1;
  wait_for(*p.ticket);
  const detail::JobResult& r = p.ticket->result();
  if (r.error != 0) {
    keep_read_failure(key, r, p.job, e);
    return std::nullopt;
  }
  if (kept) return std::nullopt;
  std::optional<Error> bad = account_read(key, e, r, true);
  if (!bad) bad = verify(key, e, r.checksums);
  if (!bad) detail::unpack(p.buffer->span(), out);
  return bad;
}

}  // namespace rwd::storage
