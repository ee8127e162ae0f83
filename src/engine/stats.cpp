#include <algorithm>
#include <cstdio>
#include <sstream>
#include <utility>

#include "rewind/engine/stats.hpp"

namespace rwd::engine {

namespace {
std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}
void level_json(std::ostringstream& os, const char* name, const LevelTraffic& t) {
  os << "\"" << name << "\": {\"writes\": " << t.writes << ", \"reads\": " << t.reads
     << ", \"bytes_written\": " << t.bytes_written << ", \"bytes_read\": " << t.bytes_read
     << ", \"peak\": " << t.peak << ", \"peak_bytes\": " << t.peak_bytes << "}";
}
}  // namespace

std::string RunStats::summary() const {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "schedule %s: %lld steps, %lld forward steps (%lld recomputed), %lld adjoint\n"
                "  RAM:  %lld written, %lld read, peak %lld live (%s), %s written\n"
                "  disk: %lld written, %lld read, peak %lld live (%s), %s written\n"
                "  time: forward %.3f s, recompute %.3f s, adjoint %.3f s, I/O wait %.3f s "
                "(%.3f s of disk I/O overlapped), replay check %.3f s, total %.3f s\n",
                schedule.c_str(), static_cast<long long>(steps),
                static_cast<long long>(forward_steps), static_cast<long long>(recomputed()),
                static_cast<long long>(adjoint_steps), static_cast<long long>(ram.writes),
                static_cast<long long>(ram.reads), static_cast<long long>(ram.peak),
                mib(ram.peak_bytes).c_str(), mib(ram.bytes_written).c_str(),
                static_cast<long long>(disk.writes), static_cast<long long>(disk.reads),
                static_cast<long long>(disk.peak), mib(disk.peak_bytes).c_str(),
                mib(disk.bytes_written).c_str(), forward_seconds, recompute_seconds,
                adjoint_seconds, io_seconds, io_overlap_seconds, verify_seconds, total_seconds);
  std::string out = buf;
  if (composed > 0) {
    out += "  pullback data composed from two states for " + std::to_string(composed) +
           " adjoint steps\n";
  }
  if (resumed_at >= 0) {
    out += "  resumed at step " + std::to_string(resumed_at) +
           (resumed_in_reverse ? " of the reverse sweep\n" : " of the first sweep\n");
  }
  return out;
}

namespace {

// Counts and bytes add up, peaks are the larger.
void add_traffic(LevelTraffic& to, const LevelTraffic& from) {
  to.writes += from.writes;
  to.reads += from.reads;
  to.bytes_written += from.bytes_written;
  to.bytes_read += from.bytes_read;
  to.peak = std::max(to.peak, from.peak);
  to.peak_bytes = std::max(to.peak_bytes, from.peak_bytes);
}

}  // namespace

void RunStats::add_durable(const LevelTraffic& traffic, double seconds) {
  add_traffic(disk, traffic);
  io_seconds += seconds;
}

void RunStats::add(const RunStats& s) {
  if (schedule.empty()) schedule = s.schedule;
  steps += s.steps;
  forward_steps += s.forward_steps;
  adjoint_steps += s.adjoint_steps;
  composed += s.composed;
  add_traffic(ram, s.ram);
  add_traffic(disk, s.disk);
  forward_seconds += s.forward_seconds;
  recompute_seconds += s.recompute_seconds;
  adjoint_seconds += s.adjoint_seconds;
  io_seconds += s.io_seconds;
  io_overlap_seconds += s.io_overlap_seconds;
  prefetch.hits += s.prefetch.hits;
  prefetch.late += s.prefetch.late;
  prefetch.skipped += s.prefetch.skipped;
  total_seconds += s.total_seconds;
  parks += s.parks;
  verify_seconds += s.verify_seconds;
  verify_tolerated += s.verify_tolerated;
  verify_largest_tolerated = std::max(verify_largest_tolerated, s.verify_largest_tolerated);
  verify_lossy = verify_lossy || s.verify_lossy;
  verify_drifted += s.verify_drifted;
  verify_largest_drift = std::max(verify_largest_drift, s.verify_largest_drift);
  rebuilt_steps += s.rebuilt_steps;
  rerecorded_steps += s.rerecorded_steps;
  if (disk_codec.codec == "none") disk_codec.codec = s.disk_codec.codec;
  disk_codec.add_counts(s.disk_codec);
  if (ram_codec.codec == "none") ram_codec.codec = s.ram_codec.codec;
  ram_codec.add_counts(s.ram_codec);
  ram_codec.peak_stored_bytes =
      std::max(ram_codec.peak_stored_bytes, s.ram_codec.peak_stored_bytes);
  ram_codec.moved_to_disk += s.ram_codec.moved_to_disk;
  ram_codec.dropped += s.ram_codec.dropped;
  ram_codec.dropped_steps += s.ram_codec.dropped_steps;
  if (ram_codec.replanned_ratio == 0.0 && s.ram_codec.replanned_ratio != 0.0) {  // the first
    ram_codec.reached_ratio = s.ram_codec.reached_ratio;
    ram_codec.replanned_ratio = s.ram_codec.replanned_ratio;
    ram_codec.replanned_schedule = s.ram_codec.replanned_schedule;
  }
  ram_codec.replanned_forward_steps += s.ram_codec.replanned_forward_steps;
  if (ram_codec.planned_ratio == 1.0 && s.ram_codec.planned_ratio != 1.0) {  // the first plan's
    ram_codec.planned_ratio = s.ram_codec.planned_ratio;
    ram_codec.ratio_source = s.ram_codec.ratio_source;
    ram_codec.budget_bytes = s.ram_codec.budget_bytes;
    ram_codec.restart_slots = s.ram_codec.restart_slots;
    ram_codec.uncompressed_restart_slots = s.ram_codec.uncompressed_restart_slots;
    ram_codec.forward_steps = s.ram_codec.forward_steps;
    ram_codec.uncompressed_forward_steps = s.ram_codec.uncompressed_forward_steps;
  }
}

void CodecStats::add_counts(const CodecStats& s) {
  stored_bytes += s.stored_bytes;
  uncompressed_bytes += s.uncompressed_bytes;
  compress_seconds += s.compress_seconds;
  decompress_seconds += s.decompress_seconds;
  io_thread_seconds += s.io_thread_seconds;
}

CodecStats CodecStats::counts_since(const CodecStats& before) const {
  return {codec,
          stored_bytes - before.stored_bytes,
          uncompressed_bytes - before.uncompressed_bytes,
          compress_seconds - before.compress_seconds,
          decompress_seconds - before.decompress_seconds,
          io_thread_seconds - before.io_thread_seconds};
}

std::string CodecStats::counts_json() const {
  std::ostringstream os;
  os.precision(9);
  os << "\"codec\": \"" << codec << "\", \"stored_bytes\": " << stored_bytes
     << ", \"uncompressed_bytes\": " << uncompressed_bytes << ", \"ratio\": " << ratio()
     << ", \"compress_seconds\": " << compress_seconds
     << ", \"decompress_seconds\": " << decompress_seconds
     << ", \"io_thread_seconds\": " << io_thread_seconds;
  return os.str();
}

std::string RunStats::json() const {
  std::ostringstream os;
  os.precision(9);
  os << "{\"schedule\": \"" << schedule << "\", \"steps\": " << steps
     << ", \"forward_steps\": " << forward_steps << ", \"recomputed\": " << recomputed()
     << ", \"adjoint_steps\": " << adjoint_steps << ", \"composed\": " << composed << ", ";
  level_json(os, "ram", ram);
  os << ", ";
  level_json(os, "disk", disk);
  os << ", \"forward_seconds\": " << forward_seconds
     << ", \"recompute_seconds\": " << recompute_seconds
     << ", \"adjoint_seconds\": " << adjoint_seconds << ", \"io_seconds\": " << io_seconds
     << ", \"io_overlap_seconds\": " << io_overlap_seconds
     << ", \"prefetch\": {\"hits\": " << prefetch.hits << ", \"late\": " << prefetch.late
     << ", \"skipped\": " << prefetch.skipped << "}"
     << ", \"total_seconds\": " << total_seconds << ", \"parks\": " << parks
     << ", \"verify_seconds\": " << verify_seconds << ", \"verify_tolerated\": " << verify_tolerated
     << ", \"verify_largest_tolerated\": " << verify_largest_tolerated
     << ", \"verify_lossy\": " << (verify_lossy ? "true" : "false")
     << ", \"verify_drifted\": " << verify_drifted
     << ", \"verify_largest_drift\": " << verify_largest_drift
     << ", \"rebuilt_steps\": " << rebuilt_steps << ", \"rerecorded_steps\": " << rerecorded_steps
     << ", \"resumed_at\": " << resumed_at
     << ", \"resumed_in_reverse\": " << (resumed_in_reverse ? "true" : "false")
     << ", \"ram_codec\": {";
  os << ram_codec.counts_json() << ", \"planned_ratio\": " << ram_codec.planned_ratio
     << ", \"budget_bytes\": " << ram_codec.budget_bytes
     << ", \"peak_stored_bytes\": " << ram_codec.peak_stored_bytes
     << ", \"moved_to_disk\": " << ram_codec.moved_to_disk
     << ", \"restart_slots\": " << ram_codec.restart_slots
     << ", \"uncompressed_restart_slots\": " << ram_codec.uncompressed_restart_slots
     << ", \"forward_steps_planned\": " << ram_codec.forward_steps
     << ", \"uncompressed_forward_steps\": " << ram_codec.uncompressed_forward_steps
     << ", \"dropped\": " << ram_codec.dropped << ", \"dropped_steps\": " << ram_codec.dropped_steps
     << ", \"reached_ratio\": " << ram_codec.reached_ratio
     << ", \"replanned_ratio\": " << ram_codec.replanned_ratio << ", \"replanned_schedule\": \""
     << ram_codec.replanned_schedule
     << "\", \"replanned_forward_steps\": " << ram_codec.replanned_forward_steps << "}"
     << ", \"disk_codec\": {";
  os << disk_codec.counts_json() << "}}";
  return os.str();
}

}  // namespace rwd::engine
