#include "store_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
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
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
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
  return sanitize(host) + "-" + std::to_string(getpid()) + "-" + stamp + "." + frac + "Z-" +
         std::to_string(counter++);
}

const std::string kDirectoryHint =
    "; set StoreConfig::directory (PETSc: -ts_trajectory_dirname) to an existing writable "
    "directory";

}  // namespace

std::string reserve_file(const std::string& directory, const std::string& label) {
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
  for (int attempt = 0;; ++attempt) {
    const std::string base = (dir / ("rewind-" + sanitize(label) + "-" + unique_suffix())).string();
    const std::string partial = base + ".h5.partial";
    const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      if (::access((base + ".h5").c_str(), F_OK) != 0) return base;
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

}  // namespace rwd::storage::detail
