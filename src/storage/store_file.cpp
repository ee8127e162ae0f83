#include "store_file.hpp"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <regex>
#include <set>
#include <string_view>

#include "rewind/error.hpp"

namespace rwd::storage::detail {
namespace {

constexpr const char* kStoreName = "hdf5 store";

std::string sanitize(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_';
    out += ok ? c : '_';
  }
  return out.empty() ? "_" : out;
}

// Host, process, time and a per-process counter: distinct for two runs on one machine, two
// stores in one run, and two machines writing to one shared directory.
std::string unique_suffix() {
  static std::atomic<int> counter{0};
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32] = {};
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  char frac[16] = {};
  std::snprintf(frac, sizeof frac, "%06lld", static_cast<long long>(micros));
  return host_in_file_names() + "-" + std::to_string(getpid()) + "-" + stamp + "." + frac + "Z-" +
         std::to_string(counter++);
}

// The store's partial-file names, as unique_suffix() and reserve_file() make them; label and
// host are sanitized, so they hold no '-'. Captures the host and the pid.
const std::regex& partial_name() {
  static const std::regex re(
      R"(rewind-[A-Za-z0-9._]+-([A-Za-z0-9._]+)-([0-9]{1,10})-[0-9]{8}T[0-9]{6}\.[0-9]{6}Z-[0-9]{1,10}\.h5\.partial)");
  return re;
}

std::string os_reason(int error) {
  return std::strerror(error);
}

const std::string kDirectoryHint =
    "; set StoreConfig::directory (PETSc: -ts_trajectory_dirname) to an existing writable "
    "directory";

// HDF5 writes its first metadata when it creates the file, before the store can allocate room
// for it (H5F_ACC_TRUNC frees blocks allocated earlier): a disk without room for that much is
// reported here, in plain words, rather than by a write failing inside HDF5.
void check_free_space(const std::string& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return;
  const auto free_bytes =
      static_cast<std::int64_t>(vfs.f_bavail) * static_cast<std::int64_t>(vfs.f_frsize);
  if (free_bytes >= FileRoom::kMargin) return;
  throw Error(ErrorCode::Io, std::string(kStoreName) + ": directory '" + dir + "' has " +
                                 std::to_string(free_bytes) + " bytes free, the store needs " +
                                 std::to_string(FileRoom::kMargin) +
                                 " to start: " + os_reason(ENOSPC) +
                                 "; free some space or choose another directory "
                                 "(StoreConfig::directory, PETSc: -ts_trajectory_dirname)");
}

}  // namespace

std::string host_in_file_names() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
  return sanitize(host);
}

std::vector<std::string> remove_stale_partials(const std::string& directory) {
  std::vector<std::string> removed;
  const std::string host = host_in_file_names();
  std::error_code ec;
  std::filesystem::directory_iterator it(directory, ec);
  for (const std::filesystem::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, partial_name()) || m[1].str() != host) continue;
    const long pid = std::stol(m[2].str());
    // Alive, or not ours to signal (EPERM: it exists): not stale.
    if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string path = it->path().string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat locked {};
    // A process in another PID namespace of this host may still hold the lock.
    if (::fstat(fd, &locked) == 0 && S_ISREG(locked.st_mode) &&
        ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      struct stat named {};
      // Unlink only the file that was locked, should the name have changed hands meanwhile.
      if (::lstat(path.c_str(), &named) == 0 && named.st_dev == locked.st_dev &&
          named.st_ino == locked.st_ino && ::unlink(path.c_str()) == 0) {
        removed.push_back(name);
      }
    }
    ::close(fd);
  }
  return removed;
}

ReservedFile reserve_file(const std::string& directory, const std::string& label) {
  if (directory.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(kStoreName) + ": the directory is empty" + kDirectoryHint);
  }
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(directory, ec);
  if (ec) dir = directory;
  dir = dir.lexically_normal();
  if (!dir.has_filename() && dir != dir.root_path()) dir = dir.parent_path();
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      throw Error(ErrorCode::Io, std::string(kStoreName) + ": directory '" + dir.string() +
                                     "' does not exist; create it first" + kDirectoryHint);
    }
    if (err == ENOTDIR) {
      throw Error(ErrorCode::Io, std::string(kStoreName) + ": directory '" + dir.string() +
                                     "' cannot exist: part of its path is a file, not a "
                                     "directory" +
                                     kDirectoryHint);
    }
    throw Error(ErrorCode::Io, std::string(kStoreName) + ": cannot access directory '" +
                                   dir.string() + "' (" + std::strerror(err) + ")" +
                                   kDirectoryHint);
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error(ErrorCode::Io, std::string(kStoreName) + ": '" + dir.string() +
                                   "' is not a directory" + kDirectoryHint);
  }
  remove_stale_partials(dir.string());
  for (int attempt = 0;; ++attempt) {
    const std::string base = (dir / ("rewind-" + sanitize(label) + "-" + unique_suffix())).string();
    const std::string partial = base + ".h5.partial";
    const int fd = ::open(partial.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      if (::access((base + ".h5").c_str(), F_OK) != 0) {
        // Held until the store lets go of the file (a file system without flock still works:
        // the pid in the name protects the file from cleanups on this host).
        [[maybe_unused]] const int rc = ::flock(fd, LOCK_EX | LOCK_NB);
        try {
          check_free_space(dir.string());
        } catch (...) {
          ::unlink(partial.c_str());
          ::close(fd);
          throw;
        }
        return {base, fd};
      }
      ::close(fd);
      ::unlink(partial.c_str());  // a finished file of that name exists: pick another name
      continue;
    }
    const int err = errno;
    if (err == EEXIST && attempt < 100) continue;
    throw Error(ErrorCode::Io, std::string(kStoreName) + ": cannot create a file in directory '" +
                                   dir.string() + "' (" + std::strerror(err) + ")" +
                                   kDirectoryHint);
  }
}

BlockFileSizeSignal::BlockFileSizeSignal() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &set_, &old_);
}

BlockFileSizeSignal::~BlockFileSizeSignal() {
  if (sigismember(&old_, SIGXFSZ) != 1) {  // it was not blocked before: consume what came
    const timespec now{0, 0};
    while (sigtimedwait(&set_, nullptr, &now) == SIGXFSZ) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

void check_file_size_limit(std::int64_t end) {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  if (static_cast<std::uint64_t>(end) <= static_cast<std::uint64_t>(limit.rlim_cur)) return;
  throw Error(ErrorCode::Io, "the file may grow to " + std::to_string(end) +
                                 " bytes, beyond this process's file size limit (RLIMIT_FSIZE, "
                                 "ulimit -f) of " +
                                 std::to_string(static_cast<std::uint64_t>(limit.rlim_cur)) +
                                 " bytes: " + os_reason(EFBIG));
}

void FileRoom::ensure(std::int64_t end) {
  check_file_size_limit(end);
  if (!allocates_ || fd_ < 0) return;
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return;
  // HDF5 may shorten the file when it flushes (freed space at its end): the blocks beyond the
  // new end went with it.
  if (st.st_size < last_size_) allocated_ = std::min<std::int64_t>(allocated_, st.st_size);
  last_size_ = st.st_size;
  if (end <= allocated_) return;
  BlockFileSizeSignal blocked;
  if (fallocate_works_) {
    int rc = 0;
    do {
      rc = ::fallocate(fd_, FALLOC_FL_KEEP_SIZE, allocated_, end - allocated_);
    } while (rc != 0 && errno == EINTR);
    if (rc == 0) {
      allocated_ = end;
      return;
    }
    const int err = errno;
    if (err != EOPNOTSUPP && err != ENOSYS && err != EINVAL) {
      throw Error(ErrorCode::Io, "allocating bytes [" + std::to_string(allocated_) + ", " +
                                     std::to_string(end) +
                                     ") of the file failed: " + os_reason(err));
    }
    fallocate_works_ = false;  // this file system cannot: count the free space instead
  }
  struct statvfs vfs {};
  if (::fstatvfs(fd_, &vfs) != 0) return;
  const auto free_bytes =
      static_cast<std::int64_t>(vfs.f_bavail) * static_cast<std::int64_t>(vfs.f_frsize);
  const std::int64_t grow = end - static_cast<std::int64_t>(st.st_size);
  if (grow > free_bytes) {
    throw Error(ErrorCode::Io, "the file may grow by " + std::to_string(grow) + " bytes, " +
                                   std::to_string(free_bytes) + " are free: " + os_reason(ENOSPC));
  }
}

void FileRoom::release_beyond_end(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  // Truncating to the present size frees the blocks allocated beyond it (FALLOC_FL_KEEP_SIZE).
  if (::fstat(fd, &st) == 0) {
    [[maybe_unused]] const int rc = ::ftruncate(fd, st.st_size);
  }
  ::close(fd);
}

LiftFileSizeLimit::LiftFileSizeLimit() {
  if (::getrlimit(RLIMIT_FSIZE, &saved_) == 0 && saved_.rlim_cur < saved_.rlim_max) {
    struct rlimit lifted = saved_;
    lifted.rlim_cur = saved_.rlim_max;
    lifted_ = ::setrlimit(RLIMIT_FSIZE, &lifted) == 0;
  }
}

LiftFileSizeLimit::~LiftFileSizeLimit() {
  if (lifted_) ::setrlimit(RLIMIT_FSIZE, &saved_);
}

namespace {

std::mutex& partials_mutex() {
  static std::mutex m;
  return m;
}

std::set<std::string>& live_partials() {
  static auto* set = new std::set<std::string>();  // never destroyed: used at exit
  return *set;
}

// The process that registered the files: a child forked without exec that calls exit() runs
// the same handler, and must not remove its parent's live files.
pid_t& registering_pid() {
  static pid_t pid = 0;
  return pid;
}

void remove_live_partials() noexcept {
  const std::lock_guard<std::mutex> lock(partials_mutex());
  if (::getpid() != registering_pid()) return;
  for (const std::string& path : live_partials()) remove_file_name(path);
  live_partials().clear();
}

}  // namespace

int remove_file_name(const std::string& path) noexcept {
  const int f = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (f >= 0) {
    struct stat st {};
    if (::fstat(f, &st) == 0 && st.st_nlink <= 1) {
      [[maybe_unused]] const int rc = ::ftruncate(f, 0);  // best effort; unlinked below
    }
    ::close(f);
  }
  return ::unlink(path.c_str()) != 0 && errno != ENOENT ? errno : 0;
}

void register_partial(const std::string& path) {
  static const bool registered = [] { return std::atexit([] { remove_live_partials(); }) == 0; }();
  (void)registered;
  const std::lock_guard<std::mutex> lock(partials_mutex());
  registering_pid() = ::getpid();
  live_partials().insert(path);
}

void unregister_partial(const std::string& path) {
  const std::lock_guard<std::mutex> lock(partials_mutex());
  live_partials().erase(path);
}

}  // namespace rwd::storage::detail

namespace rwd::storage {

std::vector<std::string> remove_files_of_dead_runs(const std::string& directory) {
  return detail::remove_stale_partials(directory);
}

}  // namespace rwd::storage
