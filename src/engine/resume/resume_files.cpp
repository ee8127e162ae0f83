#include "resume_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "manifest_format.hpp"
#include "rewind/engine/durable_files.hpp"
#include "rewind/error.hpp"

namespace rwd::engine::detail {

std::string sanitized(const std::string& label) {
  std::string out;
  for (char c : label) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_';
    out += ok ? c : '_';
  }
  return out.empty() ? std::string("_") : out;  // as the HDF5 store names its files
}

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int error) {
  throw Error(ErrorCode::Io, "resume: " + what + " '" + path + "': " + std::strerror(error));
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string manifest_path(const std::string& directory, const std::string& label) {
  return (std::filesystem::path(directory) / ("rewind-" + sanitized(label) + ".resume")).string();
}

std::string data_link_name(const std::string& label, std::int64_t generation) {
  return "rewind-" + sanitized(label) + ".resume-" + std::to_string(generation) + ".h5";
}

std::string data_links_pattern(const std::string& label) {
  return "rewind-" + sanitized(label) + ".resume-*.h5";
}

std::optional<std::string> read_text(const std::string& path) {
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail("cannot open", path, errno);
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) fail("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorCode::Io, "resume: '" + path + "' is not a regular file");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t got = ::read(file.fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("cannot read", path, errno);
    if (got == 0) break;
    text.append(buf, static_cast<std::size_t>(got));
    if (text.size() > (std::size_t{1} << 30)) {
      throw Error(ErrorCode::Corrupt, "resume: '" + path + "' is over 1 GiB: not a manifest");
    }
  }
  return text;
}

void write_atomically(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    Fd file{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (file.fd < 0) fail("cannot create", tmp, errno);
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t put = ::write(file.fd, text.data() + done, text.size() - done);
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        fail("cannot write", tmp, e);
      }
      done += static_cast<std::size_t>(put);
    }
    if (::fsync(file.fd) != 0) {
      const int e = errno;
      ::unlink(tmp.c_str());
      fail("cannot sync", tmp, e);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail("cannot put the new version in place (rename) at", path, e);
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  Fd d{::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0 || ::fsync(d.fd) != 0) fail("cannot sync the directory of", path, errno);
}

void hard_link(const std::string& from, const std::string& to) {
  if (::link(from.c_str(), to.c_str()) != 0) {
    const int e = errno;
    throw Error(ErrorCode::Io, "resume: cannot link '" + to + "' to the checkpoint file '" + from +
                                   "' (a resumable run keeps its checkpoint file under a second "
                                   "name, which needs hard links in the directory): " +
                                   std::strerror(e));
  }
}

bool link_once(const std::string& from, const std::string& to) {
  struct stat a {
  }, b{};
  if (::stat(to.c_str(), &b) == 0) {
    if (::stat(from.c_str(), &a) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) return true;
    remove_file(to);
  }
  if (::link(from.c_str(), to.c_str()) == 0) return true;
  const int e = errno;
  // Another file system, or one without hard links there: the caller goes without.
  if (e == EXDEV || e == EPERM || e == EMLINK || e == ENOTSUP || e == EOPNOTSUPP || e == ENOSYS) {
    return false;
  }
  hard_link(from, to);  // throws with the OS's reason
  return true;
}

int lock_run(const std::string& path, const std::string& elsewhere) {
  // The run that ends unlinks its lock file: a lock taken on a file that was unlinked (or
  // replaced) meanwhile locks nothing, so it is taken again on the file the name holds now. A
  // lock held by is_locked() is let go at once: it is waited for, a second at most.
  int busy = 0;
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) fail("cannot create the lock", path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      ::close(fd);
      if (e == EWOULDBLOCK && ++busy < 100) {
        ::usleep(10000);
        continue;
      }
      if (e == EWOULDBLOCK) {
        throw Error(ErrorCode::InvalidArgument,
                    "resume: another process holds '" + path +
                        "': a resumable run is live in this directory (a job that has not "
                        "ended); wait for it to end, or give this run " +
                        elsewhere);
      }
      fail("cannot lock", path, e);
    }
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
      return fd;
    }
    ::close(fd);
  }
  throw Error(ErrorCode::Io, "resume: the lock '" + path + "' keeps changing hands");
}

bool is_locked(const std::string& path) {
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
  if (file.fd < 0) return false;
  if (::flock(file.fd, LOCK_SH | LOCK_NB) != 0) return errno == EWOULDBLOCK;
  ::flock(file.fd, LOCK_UN);
  return false;
}

void remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) fail("cannot remove", path, errno);
}

std::vector<std::string> data_links(const std::string& directory, const std::string& label) {
  const std::string prefix = "rewind-" + sanitized(label) + ".resume-";
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(directory, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= prefix.size() + 3 || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - 3, 3, ".h5") != 0) {
      continue;
    }
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec2;
    if (!e.is_regular_file(ec2) || e.is_symlink(ec2)) continue;
    out.push_back(name);
  }
  return out;
}

std::vector<std::string> remove_partial_names_of(const std::string& directory,
                                                 const std::string& label,
                                                 const std::vector<std::string>& links) {
  std::vector<std::pair<dev_t, ino_t>> files;
  for (const std::string& name : links) {
    struct stat st {};
    const std::string path = (std::filesystem::path(directory) / name).string();
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      files.push_back({st.st_dev, st.st_ino});
  }
  const std::string prefix = "rewind-" + sanitized(label) + "-", suffix = ".h5.partial";
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(directory, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() ||
        name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    for (const auto& [dev, ino] : files) {
      if (st.st_dev == dev && st.st_ino == ino && ::unlink(e.path().c_str()) == 0) {
        removed.push_back(name);
        break;
      }
    }
  }
  return removed;
}

}  // namespace rwd::engine::detail

namespace rwd::engine {

std::string file_label(const std::string& label) {
  return detail::sanitized(label);
}
std::optional<std::string> read_durable(const std::string& path) {
  return detail::read_text(path);
}
void write_durable(const std::string& path, std::string_view bytes) {
  detail::write_atomically(path, bytes);
}
void remove_durable(const std::string& path) {
  detail::remove_file(path);
}
int lock_durable_run(const std::string& path, const std::string& elsewhere) {
  return detail::lock_run(path, elsewhere);
}
std::string hex_text(std::string_view text) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out.empty() ? std::string("-") : out;
}

std::optional<std::string> text_of_hex(std::string_view hex) {
  if (hex == "-") return std::string();
  if (hex.empty() || hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (std::size_t k = 0; k < hex.size(); k += 2) {
    unsigned v = 0;
    const auto [p, ec] = std::from_chars(hex.data() + k, hex.data() + k + 2, v, 16);
    if (ec != std::errc() || p != hex.data() + k + 2) return std::nullopt;
    out += static_cast<char>(v);
  }
  return out;
}

std::uint64_t durable_checksum(std::string_view bytes) {
  return detail::text_checksum(bytes);
}

}  // namespace rwd::engine
