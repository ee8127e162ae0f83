#include "rewind/storage/probe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "io_thread.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"
#include "rewind/timing.hpp"

namespace rwd::storage {

using comm::agree;
using comm::capture;
using comm::comm_rank;
using comm::mpi_check;

namespace {

// Moves `data` to or from `fd` at `offset` with the jobs the stores use (so the probe measures
// what a checkpoint costs them); the message names the call that failed.
void move(detail::IoJob::Kind kind, int fd, std::vector<char>& data, std::int64_t offset,
          const std::string& path) {
  detail::IoJob job;
  job.kind = kind;
  job.fd = fd;
  job.segments = {{offset, reinterpret_cast<std::byte*>(data.data()), data.size()}};
  const detail::JobResult r = detail::run_job(job);
  if (r.error != 0) {
    throw Error(ErrorCode::Io, r.failed_call + " '" + path + "': " + std::strerror(r.error));
  }
}

int open_or_throw(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    throw Error(ErrorCode::Io, "opening '" + path + "': " + std::strerror(err));
  }
  return fd;
}

}  // namespace

DiskCost probe_disk(const std::string& directory, std::int64_t bytes, MPI_Comm comm) {
  const int rank = comm_rank(comm);
  DiskCost mine;
  std::string path;
  std::optional<Error> local = capture([&] {
    require(bytes >= 0, "probe_disk: bytes must be >= 0, got " + std::to_string(bytes));
    std::vector<char> data(std::max<std::size_t>(static_cast<std::size_t>(bytes), 4096), 'r');
    const auto each = static_cast<std::int64_t>(data.size());
    // A few MiB, so that the device's sustained speed shows rather than a sync's fixed cost.
    const std::int64_t k = std::clamp<std::int64_t>(((4 << 20) + each - 1) / each, 1, 64);
    mine.probed = k;
    path = directory + "/rewind-probe-" + std::to_string(::getpid()) + "-" + std::to_string(rank) +
           ".tmp";
    const auto per = [k](SteadyClock::time_point t0) {
      return seconds_since(t0) / static_cast<double>(k);
    };
    const auto all = [&](detail::IoJob::Kind kind, int fd) {
      for (std::int64_t j = 0; j < k; ++j) move(kind, fd, data, j * each, path);
    };
    auto t0 = SteadyClock::now();
    int fd = open_or_throw(path, O_CREAT | O_WRONLY | O_TRUNC);
    try {
      all(detail::IoJob::Kind::Write, fd);
      mine.cached_write_seconds = per(t0);
      move(detail::IoJob::Kind::Sync, fd, data, 0, path);
      // So the read below measures the device, not the page cache.
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    mine.write_seconds = per(t0);
    fd = open_or_throw(path, O_RDONLY);
    try {
      t0 = SteadyClock::now();
      all(detail::IoJob::Kind::Read, fd);
      mine.read_seconds = per(t0);
      t0 = SteadyClock::now();
      all(detail::IoJob::Kind::Read, fd);
      mine.cached_read_seconds = per(t0);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  });
  if (!path.empty()) ::unlink(path.c_str());
  if (local && local->code() == ErrorCode::Io) {
    local.emplace(ErrorCode::Io, "measuring disk costs on rank " + std::to_string(rank) +
                                     ": could not write and read a probe file in '" + directory +
                                     "': " + local->what());
  }
  agree(comm, local);
  const double times[4] = {mine.write_seconds, mine.read_seconds, mine.cached_write_seconds,
                           mine.cached_read_seconds};
  double worst[4] = {0.0, 0.0, 0.0, 0.0};
  mpi_check(MPI_Allreduce(times, worst, 4, MPI_DOUBLE, MPI_MAX, comm),
            "MPI_Allreduce (probe times)");
  return {worst[0], worst[1], worst[2], worst[3], mine.probed};
}

}  // namespace rwd::storage
