#include "report.hpp"

#include <algorithm>
#include <array>
#include <sstream>
#include <string>

#include "rewind/comm/agree.hpp"

namespace rwd::ensemble {

namespace {

constexpr std::size_t kCounts = 5;  // per level: stored, uncompressed, three times

std::array<double, kCounts> counts(const engine::CodecStats& c) {
  return {static_cast<double>(c.stored_bytes), static_cast<double>(c.uncompressed_bytes),
          c.compress_seconds, c.decompress_seconds, c.io_thread_seconds};
}

// counts() back, under `codec`.
engine::CodecStats from_counts(const std::string& codec, const double* v) {
  return {codec, static_cast<std::int64_t>(v[0]), static_cast<std::int64_t>(v[1]), v[2], v[3],
          v[4]};
}

// One level's totals, the codec's settings, and each rank's bytes and ratio (null for a rank
// that wrote nothing).
void level_json(std::ostream& os, const char* name, const GroupCodecs& total,
                const std::vector<GroupCodecs>& codecs, engine::CodecStats GroupCodecs::*level) {
  const storage::CodecSpec& spec = total.spec;
  os << "\"" << name << "\": {" << (total.*level).counts_json() << ", \"level\": " << spec.level
     << ", \"tolerance\": " << spec.tolerance << ", \"precision\": " << spec.precision;
  if (level == &GroupCodecs::ram) {
    os << ", \"lossy_pullbacks\": " << (total.lossy_pullbacks ? "true" : "false");
  }
  const auto per_rank = [&](const char* what, const auto& value) {
    os << ", \"" << what << "_per_rank\": [";
    for (std::size_t r = 0; r < codecs.size(); ++r)
      os << (r ? ", " : "") << value(codecs[r].*level);
    os << "]";
  };
  per_rank("stored_bytes", [](const engine::CodecStats& c) { return c.stored_bytes; });
  per_rank("uncompressed_bytes", [](const engine::CodecStats& c) { return c.uncompressed_bytes; });
  per_rank("ratio", [](const engine::CodecStats& c) {
    return c.stored_bytes > 0 ? std::to_string(c.ratio()) : std::string("null");
  });
  os << "}";
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
    out[r].ram = from_counts(mine.ram.codec, &all[r * v.size()]);
    out[r].disk = from_counts(mine.disk.codec, &all[r * v.size() + kCounts]);
    out[r].spec = mine.spec;  // agreed between ranks
    out[r].lossy_pullbacks = mine.lossy_pullbacks;
  }
  return out;
}

GroupCodecs codecs_since(const GroupCodecs& now, const GroupCodecs& before) {
  GroupCodecs d = now;
  d.ram = now.ram.counts_since(before.ram);
  d.disk = now.disk.counts_since(before.disk);
  return d;
}

GroupCodecs EnsembleReport::codec_totals() const {
  GroupCodecs t;
  if (codecs.empty()) return t;
  t.ram.codec = codecs.front().ram.codec;
  t.disk.codec = codecs.front().disk.codec;
  t.spec = codecs.front().spec;
  t.lossy_pullbacks = codecs.front().lossy_pullbacks;
  for (const GroupCodecs& c : codecs) {
    t.ram.add_counts(c.ram);
    t.disk.add_counts(c.disk);
  }
  return t;
}

double EnsembleReport::worst_codec_ratio(bool disk) const {
  double worst = 0;
  for (const GroupCodecs& g : codecs) {
    const engine::CodecStats& c = disk ? g.disk : g.ram;
    if (c.stored_bytes > 0) worst = worst > 0 ? std::min(worst, c.ratio()) : c.ratio();
  }
  return worst;
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
    level_json(os, "ram", t, codecs, &GroupCodecs::ram);
    if (t.disk.codec != "none") {  // disk checkpoints compressed (a lossless codec)
      os << ", ";
      level_json(os, "disk", t, codecs, &GroupCodecs::disk);
    }
    os << "}";
  }
  os << "}";
  return os.str();
}

}  // namespace rwd::ensemble
