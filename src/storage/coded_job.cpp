// Jobs that compress what they write and decompress what they read (io_thread.hpp says how):
// the codec's work happens on the job's thread, around a job of raw bytes. The checksums a job
// returns are of the values, as for a job without compression: a compressed block checks its own
// bytes when it is decoded, and the values are checked after.
#include <cerrno>
#include <string>
#include <vector>

#include "checksum.hpp"
#include "io_thread.hpp"
#include "rewind/error.hpp"

namespace rwd::storage::detail {

namespace {

std::span<double> values_of(const Segment& seg) {
  return {reinterpret_cast<double*>(seg.memory), seg.bytes / sizeof(double)};
}

}  // namespace

JobResult run_coded_job(const IoJob& job) {
  const auto t0 = SteadyClock::now();
  const std::size_t n = job.segments.size();
  IoJob raw;
  raw.kind = job.kind;
  raw.fd = job.fd;
  std::vector<std::vector<std::byte>> blocks(n);
  if (job.kind == IoJob::Kind::Write) {
    std::vector<std::int64_t> stored(n, 0);
    for (std::size_t s = 0; s < n; ++s) {
      const Segment& seg = job.segments[s];
      if (seg.bytes > 0) {
        try {
          encode_block(job.codec, values_of(seg), blocks[s],
                       s < job.grids.size() ? job.grids[s] : Grid{});
        } catch (const Error&) {
          blocks[s].clear();  // the store checked the codec: never seen; the values go raw
        }
      }
      if (!blocks[s].empty() && blocks[s].size() < seg.bytes) {
        stored[s] = static_cast<std::int64_t>(blocks[s].size());
        raw.segments.push_back({seg.file_offset, blocks[s].data(), blocks[s].size()});
      } else {
        raw.segments.push_back(seg);  // does not compress: the values as they are
      }
    }
    const double coding = seconds_since(t0);
    JobResult r = run_raw_job(raw);
    r.started = t0;
    r.codec_seconds = coding;
    // The checksums are of the values a read gives, compressed or not (a block carries its own
    // of its bytes): a lossy block's are those it decodes to.
    const bool lossy = codec_is_lossy(job.codec.name);
    std::vector<double> decoded;
    for (std::size_t s = 0; s < r.checksums.size(); ++s) {
      if (stored[s] == 0) continue;
      std::span<const double> values = values_of(job.segments[s]);
      if (lossy) {
        const auto td = SteadyClock::now();
        decoded.resize(values.size());
        try {
          decode_block(blocks[s], decoded);
        } catch (const Error&) {  // a block just made that does not decode: never seen
          r.error = EIO;
          r.failed_call = "decoding the block just compressed";
          r.failed_segment = s;
          break;
        }
        values = decoded;
        r.codec_seconds += seconds_since(td);
      }
      r.checksums[s] = checksum(values);
    }
    if (job.stored) *job.stored = std::move(stored);
    return r;
  }
  const std::vector<std::int64_t>& stored = *job.stored;
  for (std::size_t s = 0; s < n; ++s) {
    const Segment& seg = job.segments[s];
    if (s < stored.size() && stored[s] > 0) {
      blocks[s].resize(static_cast<std::size_t>(stored[s]));
      raw.segments.push_back({seg.file_offset, blocks[s].data(), blocks[s].size()});
    } else {
      raw.segments.push_back(seg);
    }
  }
  JobResult r = run_raw_job(raw);
  if (r.error != 0) return r;
  const auto td = SteadyClock::now();
  for (std::size_t s = 0; s < n; ++s) {
    if (blocks[s].empty()) continue;
    try {
      // The block's own checksum is checked first: damaged bytes are never decoded.
      decode_block(blocks[s], values_of(job.segments[s]));
      r.checksums[s] = checksum(std::span<const double>(values_of(job.segments[s])));
    } catch (const Error& e) {
      if (r.decode_error.empty()) {
        r.decode_error = e.what();
        r.failed_segment = s;
      }
    }
  }
  r.codec_seconds = seconds_since(td);
  r.finished = SteadyClock::now();
  return r;
}

}  // namespace rwd::storage::detail
