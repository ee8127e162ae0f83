#include "rewind/storage/probe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "collective.hpp"
#include "rewind/error.hpp"
#include "rewind/timing.hpp"

namespace rwd::storage {

namespace {

[[noreturn]] void fail(const char* what, const std::string& path, int err) {
  throw Error(ErrorCode::Io, std::string(what) + " '" + path + "': " + std::strerror(err));
}

// Writes all of `data` and syncs it; the error text names the call that failed.
void write_synced(const std::string& path, const std::vector<char>& data) {
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail("creating", path, errno);
  std::size_t done = 0;
  int err = 0;
  while (done < data.size() && err == 0) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  // So the read below measures the device, not the page cache.
  if (err == 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  if (err != 0) fail("writing", path, err);
}

void read_back(const std::string& path, std::vector<char>& data) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("opening", path, errno);
  std::size_t done = 0;
  int err = 0;
  while (done < data.size() && err == 0) {
    const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n == 0) err = EIO;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (err != 0) fail("reading", path, err);
}

}  // namespace

DiskCost probe_disk(const std::string& directory, std::int64_t bytes, MPI_Comm comm) {
  const int rank = detail::comm_rank(comm);
  DiskCost mine;
  std::string path;
  std::optional<Error> local = detail::capture([&] {
    require(bytes >= 0, "probe_disk: bytes must be >= 0, got " + std::to_string(bytes));
    std::vector<char> data(std::max<std::size_t>(static_cast<std::size_t>(bytes), 4096), 'r');
    path = directory + "/rewind-probe-" + std::to_string(::getpid()) + "-" + std::to_string(rank) +
           ".tmp";
    auto t0 = SteadyClock::now();
    write_synced(path, data);
    mine.write_seconds = seconds_since(t0);
    t0 = SteadyClock::now();
    read_back(path, data);
    mine.read_seconds = seconds_since(t0);
  });
  if (!path.empty()) ::unlink(path.c_str());
  if (local && local->code() == ErrorCode::Io) {
    local.emplace(ErrorCode::Io, "measuring disk costs on rank " + std::to_string(rank) +
                                     ": could not write and read a probe file in '" + directory +
                                     "': " + local->what());
  }
  detail::agree(comm, local);
  const double times[2] = {mine.write_seconds, mine.read_seconds};
  double worst[2] = {0.0, 0.0};
  detail::mpi_check(MPI_Allreduce(times, worst, 2, MPI_DOUBLE, MPI_MAX, comm),
                    "MPI_Allreduce (probe times)");
  return {worst[0], worst[1]};
}

}  // namespace rwd::storage
