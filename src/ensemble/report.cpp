#include "report.hpp"

#include <algorithm>
#include <array>
#include <sstream>

#include "rewind/comm/agree.hpp"

namespace rwd::ensemble {

namespace {

constexpr std::size_t kCounts = 5;  // per level: stored, uncompressed, three times

std::array<double, kCounts> counts(const engine::CodecStats& c) {
  return {static_cast<double>(c.stored_bytes), static_cast<double>(c.uncompressed_bytes),
          c.compress_seconds, c.decompress_seconds, c.io_thread_seconds};
}

void add(engine::CodecStats& c, const double* v) {
  c.stored_bytes += static_cast<std::int64_t>(v[0]);
  c.uncompressed_bytes += static_cast<std::int64_t>(v[1]);
  c.compress_seconds += v[2];
  c.decompress_seconds += v[3];
  c.io_thread_seconds += v[4];
}

// One level's totals and each rank's ratio.
void level_json(std::ostream& os, const char* name, const engine::CodecStats& total,
                const std::vector<GroupCodecs>& codecs, engine::CodecStats GroupCodecs::*level) {
  os << "\"" << name << "\": {" << total.counts_json() << ", \"ratio_per_rank\": [";
  for (std::size_t r = 0; r < codecs.size(); ++r)
    os << (r ? ", " : "") << (codecs[r].*level).ratio();
  os << "]}";
}

}  // namespace

GroupCodecs TaskRunner::codecs() const {
  return {};
}

std::vector<GroupCodecs> gather_codecs(const GroupCodecs& mine, MPI_Comm world) {
  int size = 0;
  comm::mpi_check(MPI_Comm_size(world, &size), "MPI_Comm_size (codec counts)");
  std::array<double, 2 * kCounts> v{};
  const auto ram = counts(mine.ram), disk = counts(mine.disk);
  std::copy(ram.begin(), ram.end(), v.begin());
  std::copy(disk.begin(), disk.end(), v.begin() + kCounts);
  std::vector<double> all(v.size() * static_cast<std::size_t>(size));
  comm::mpi_check(MPI_Allgather(v.data(), static_cast<int>(v.size()), MPI_DOUBLE, all.data(),
                                static_cast<int>(v.size()), MPI_DOUBLE, world),
                  "MPI_Allgather (codec counts)");
  if (mine.ram.codec == "none" && mine.disk.codec == "none") return {};
  std::vector<GroupCodecs> out(static_cast<std::size_t>(size));
  for (std::size_t r = 0; r < out.size(); ++r) {
    out[r].ram.codec = mine.ram.codec;
    out[r].disk.codec = mine.disk.codec;
    add(out[r].ram, &all[r * v.size()]);
    add(out[r].disk, &all[r * v.size() + kCounts]);
  }
  return out;
}

GroupCodecs EnsembleReport::codec_totals() const {
  GroupCodecs t;
  if (codecs.empty()) return t;
  t.ram.codec = codecs.front().ram.codec;
  t.disk.codec = codecs.front().disk.codec;
  for (const GroupCodecs& c : codecs) {
    add(t.ram, counts(c.ram).data());
    add(t.disk, counts(c.disk).data());
  }
  return t;
}

std::string EnsembleReport::json() const {
  std::ostringstream os;
  os.precision(9);
  os << "{\"tasks\": " << tasks << ", \"groups\": " << groups << ", \"group_size\": " << group_size
     << ", \"assign\": \"" << to_string(assign)
     << "\", \"costliest_first\": " << (costliest_first ? "true" : "false")
     << ", \"resumed_generation\": " << resumed_generation
     << ", \"forward_seconds\": " << forward_seconds
     << ", \"backward_seconds\": " << backward_seconds
     << ", \"backward_cotangent_bytes\": " << backward_cotangent_bytes
     << ", \"backward_reduction_bytes\": " << backward_reduction_bytes << ", \"peak_rss_bytes\": [";
  for (std::size_t r = 0; r < peak_rss_bytes.size(); ++r) {
    os << (r ? ", " : "") << peak_rss_bytes[r];
  }
  os << "], \"mapping\": [";
  for (std::size_t k = 0; k < mapping.size(); ++k) {
    const TaskRecord& m = mapping[k];
    const TaskCost& c = m.cost;
    os << (k ? ", " : "") << "{\"task\": " << m.task << ", \"group\": " << m.group
       << ", \"position\": " << m.position << ", \"forward\": [" << m.forward_begin << ", "
       << m.forward_end << "], \"backward\": [" << m.backward_begin << ", " << m.backward_end
       << "], \"steps\": " << c.steps << ", \"forward_steps\": " << c.forward_steps
       << ", \"adjoint_steps\": " << c.adjoint_steps << ", \"ram_peak_bytes\": " << c.ram_peak_bytes
       << ", \"disk_bytes_written\": " << c.disk_bytes_written
       << ", \"spilled\": " << (c.spilled ? "true" : "false")
       << ", \"cut\": " << (c.cut ? "true" : "false")
       << ", \"forward_resumed\": " << (m.forward_resumed ? "true" : "false")
       << ", \"backward_resumed\": " << (m.backward_resumed ? "true" : "false") << "}";
  }
  os << "]";
  if (!codecs.empty()) {
    const GroupCodecs t = codec_totals();
    os << ", \"group_codecs\": {";
    level_json(os, "ram", t.ram, codecs, &GroupCodecs::ram);
    os << ", ";
    level_json(os, "disk", t.disk, codecs, &GroupCodecs::disk);
    os << "}";
  }
  os << "}";
  return os.str();
}

}  // namespace rwd::ensemble
