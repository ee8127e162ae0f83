#include "rewind/storage/probe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "io_thread.hpp"
#include "rewind/error.hpp"
#include "rewind/storage/collective.hpp"
#include "rewind/timing.hpp"

namespace rwd::storage {

namespace {

// Moves `data` to or from the start of `fd` with the jobs the stores use (so the probe measures
// what a checkpoint costs them); the message names the call that failed.
void move(detail::IoJob::Kind kind, int fd, std::vector<char>& data, const std::string& path) {
  detail::IoJob job{kind, fd, {{0, reinterpret_cast<std::byte*>(data.data()), data.size()}}, {}};
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
    path = directory + "/rewind-probe-" + std::to_string(::getpid()) + "-" + std::to_string(rank) +
           ".tmp";
    auto t0 = SteadyClock::now();
    int fd = open_or_throw(path, O_CREAT | O_WRONLY | O_TRUNC);
    try {
      move(detail::IoJob::Kind::Write, fd, data, path);
      move(detail::IoJob::Kind::Sync, fd, data, path);
      // So the read below measures the device, not the page cache.
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    mine.write_seconds = seconds_since(t0);
    t0 = SteadyClock::now();
    fd = open_or_throw(path, O_RDONLY);
    try {
      move(detail::IoJob::Kind::Read, fd, data, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    mine.read_seconds = seconds_since(t0);
  });
  if (!path.empty()) ::unlink(path.c_str());
  if (local && local->code() == ErrorCode::Io) {
    local.emplace(ErrorCode::Io, "measuring disk costs on rank " + std::to_string(rank) +
                                     ": could not write and read a probe file in '" + directory +
                                     "': " + local->what());
  }
  agree(comm, local);
  const double times[2] = {mine.write_seconds, mine.read_seconds};
  double worst[2] = {0.0, 0.0};
  mpi_check(MPI_Allreduce(times, worst, 2, MPI_DOUBLE, MPI_MAX, comm),
            "MPI_Allreduce (probe times)");
  return {worst[0], worst[1]};
}

}  // namespace rwd::storage
