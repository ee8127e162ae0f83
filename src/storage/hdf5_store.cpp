#include "rewind/storage/hdf5_store.hpp"
#include "rewind/timing.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "checksum.hpp"
#include "collective.hpp"
#include "layout.hpp"
#include "rewind/error.hpp"

#ifndef REWIND_VERSION
#define REWIND_VERSION "unknown"
#endif

namespace rwd::storage {

using detail::agree;
using detail::capture;
using detail::mpi_check;

namespace {

constexpr const char* kStore = "hdf5 store";

constexpr const char* kFormat =
    "rewind checkpoint file, format 2. Each group [run<r>_]<kind>_<step> is one checkpoint of "
    "run r (no prefix: run 0): kind 'restart' holds the state at the start of step <step>, "
    "kind 'pullback' the data the adjoint of step <step> reads. Group attributes: step, kind, "
    "run, ranks (MPI ranks that wrote it), "
    "fields, scalar:<name> (e.g. the time), complete (1 once every field is written; a group "
    "with complete = 0 was cut short and must not be used). Each field is a 1-D float64 "
    "dataset; rank r wrote rank_counts[r] values at rank_offsets[r], whose checksum (see the "
    "checksum attribute) is rank_checksums[r]; index is the field's position in the checkpoint.";

constexpr const char* kChecksum =
    "rwd64 over the little-endian float64 bytes of one rank's block: four lanes over 32-byte "
    "stripes, lane = rotl(lane + word * 0xBF58476D1CE4E5B9, 29) * 0x9E3779B97F4A7C15, seeded "
    "0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, ~0x9E3779B97F4A7C15; then "
    "rotl(a,1)+rotl(b,7)+rotl(c,12)+rotl(d,18) xor (bytes * 0x94D049BB133111EB), the remaining "
    "words through the lane step, remaining bytes h = (h ^ byte) * 0xBF58476D1CE4E5B9, and the "
    "splitmix64 finaliser (src/storage/checksum.cpp)";

// Silences HDF5's automatic error printing for the duration of one store call; the error stack
// is turned into the rwd::Error message instead. Restores the caller's setting afterwards.
class QuietHdf5 {
 public:
  QuietHdf5() {
    if (H5Eget_auto2(H5E_DEFAULT, &func_, &data_) < 0) func_ = nullptr;
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

herr_t collect_error(unsigned, const H5E_error2_t* e, void* out) {
  auto& lines = *static_cast<std::vector<std::string>*>(out);
  lines.push_back(std::string(e->func_name ? e->func_name : "?") +
                  "(): " + (e->desc ? e->desc : ""));
  return 0;
}

// The HDF5 error stack as one line: the API call, then the innermost entries, which carry what
// the OS or MPI reported (errno text, MPI error string).
std::string hdf5_errors() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &lines);
  H5Eclear2(H5E_DEFAULT);
  if (lines.empty()) return "HDF5 gave no details";
  std::string out = lines.front();
  const std::size_t from = lines.size() > 3 ? lines.size() - 2 : 1;
  if (from > 1) out += " ...";
  for (std::size_t i = from; i < lines.size(); ++i) out += " <- " + lines[i];
  return out;
}

[[noreturn]] void h5_fail(const std::string& what) {
  throw Error(ErrorCode::Io, what + " failed; HDF5 says: " + hdf5_errors());
}

void h5_check(herr_t rc, const std::string& what) {
  if (rc < 0) h5_fail(what);
}

// Owns one HDF5 id and closes it with the matching H5?close.
class Hid {
 public:
  using Close = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Close close) : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, -1);
      close_ = o.close_;
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid() { reset(); }

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  void forget() noexcept { id_ = -1; }  // for ids HDF5 has already closed itself
  herr_t reset() noexcept {
    herr_t rc = 0;
    if (id_ >= 0 && close_ != nullptr) rc = close_(id_);
    id_ = -1;
    return rc;
  }

 private:
  hid_t id_ = -1;
  Close close_ = nullptr;
};

Hid make_hid(hid_t id, Hid::Close close, const std::string& what) {
  if (id < 0) h5_fail(what);
  return Hid(id, close);
}

Hid make_space(hsize_t n) {
  const hsize_t dims[1] = {n};
  return make_hid(H5Screate_simple(1, dims, nullptr), H5Sclose, "H5Screate_simple");
}

// This rank's block of a dataset: the file-space hyperslab [offset, offset + count) and a
// matching memory space (both selecting nothing for an empty block, which HDF5 still needs for
// the collective call).
std::pair<Hid, Hid> select_block(hid_t dataset, std::int64_t offset, hsize_t count) {
  Hid file_space = make_hid(H5Dget_space(dataset), H5Sclose, "H5Dget_space");
  const hsize_t start = static_cast<hsize_t>(offset);
  Hid memory_space = make_space(std::max<hsize_t>(count, 1));
  if (count > 0) {
    h5_check(
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr),
        "H5Sselect_hyperslab");
  } else {
    h5_check(H5Sselect_none(file_space.get()), "H5Sselect_none");
    h5_check(H5Sselect_none(memory_space.get()), "H5Sselect_none");
  }
  return {std::move(file_space), std::move(memory_space)};
}

Hid make_scalar_space() {
  return make_hid(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate(H5S_SCALAR)");
}

// Attributes are written collectively: every rank passes the same value.
void write_attribute(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type,
                     const void* data, std::optional<hsize_t> count) {
  Hid space = count ? make_space(*count) : make_scalar_space();
  Hid attr =
      make_hid(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
               H5Aclose, "H5Acreate2('" + name + "')");
  h5_check(H5Awrite(attr.get(), memory_type, data), "H5Awrite('" + name + "')");
}

void attribute_i64(hid_t object, const std::string& name, std::int64_t value) {
  write_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, std::nullopt);
}

void attribute_f64(hid_t object, const std::string& name, double value) {
  write_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, std::nullopt);
}

void attribute_i64s(hid_t object, const std::string& name, const std::vector<std::int64_t>& v) {
  write_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, v.data(), v.size());
}

void attribute_u64s(hid_t object, const std::string& name, const std::vector<std::uint64_t>& v) {
  write_attribute(object, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, v.data(), v.size());
}

void attribute_string(hid_t object, const std::string& name, const std::string& value) {
  Hid type = make_hid(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  h5_check(H5Tset_size(type.get(), value.size() + 1), "H5Tset_size");
  h5_check(H5Tset_strpad(type.get(), H5T_STR_NULLTERM), "H5Tset_strpad");
  write_attribute(object, name, type.get(), type.get(), value.c_str(), std::nullopt);
}

std::string kind_name(Kind kind) {
  return kind == Kind::Restart ? "restart" : kind == Kind::Pullback ? "pullback" : "final";
}

// "restart_12", "pullback_12"; "run3_restart_12" for a key of run 3.
std::string group_name(const Key& key) {
  const std::string run = key.run != 0 ? "run" + std::to_string(key.run) + "_" : "";
  return run + kind_name(key.kind) + "_" + std::to_string(key.step);
}

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

// Rank 0: checks the directory and creates the (empty) partial file, so that a bad directory is
// reported in plain words before any collective HDF5 call. Returns the path without extension.
std::string reserve_file(const std::string& directory, const std::string& label) {
  if (directory.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(kStore) + ": the directory is empty" + kDirectoryHint);
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
      throw Error(ErrorCode::Io, std::string(kStore) + ": directory '" + dir.string() +
                                     "' does not exist; create it first" + kDirectoryHint);
    }
    if (err == ENOTDIR) {
      throw Error(ErrorCode::Io, std::string(kStore) + ": directory '" + dir.string() +
                                     "' cannot exist: part of its path is a file, not a "
                                     "directory" +
                                     kDirectoryHint);
    }
    throw Error(ErrorCode::Io, std::string(kStore) + ": cannot access directory '" + dir.string() +
                                   "' (" + std::strerror(err) + ")" + kDirectoryHint);
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error(ErrorCode::Io, std::string(kStore) + ": '" + dir.string() + "' is not a directory" +
                                   kDirectoryHint);
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
    throw Error(ErrorCode::Io, std::string(kStore) + ": cannot create a file in directory '" +
                                   dir.string() + "' (" + std::strerror(err) + ")" +
                                   kDirectoryHint);
  }
}

// While a discarded file is closed, lifts the soft file-size limit (RLIMIT_FSIZE) to the hard
// one. HDF5 still writes metadata into the file (already emptied and unlinked, so the bytes go
// nowhere); if those writes fail, HDF5 1.10 leaves the file half closed and crashes when
// MPI_Finalize shuts the library down. Restored at once.
class LiftFileSizeLimit {
 public:
  LiftFileSizeLimit() {
    if (::getrlimit(RLIMIT_FSIZE, &saved_) == 0 && saved_.rlim_cur < saved_.rlim_max) {
      struct rlimit lifted = saved_;
      lifted.rlim_cur = saved_.rlim_max;
      lifted_ = ::setrlimit(RLIMIT_FSIZE, &lifted) == 0;
    }
  }
  ~LiftFileSizeLimit() {
    if (lifted_) ::setrlimit(RLIMIT_FSIZE, &saved_);
  }
  LiftFileSizeLimit(const LiftFileSizeLimit&) = delete;
  LiftFileSizeLimit& operator=(const LiftFileSizeLimit&) = delete;

 private:
  struct rlimit saved_ {};
  bool lifted_ = false;
};

}  // namespace

struct Hdf5Store::Impl {
  struct Entry {
    detail::Layout layout;
    std::vector<std::uint64_t> checksums;  ///< this rank's block of each field
  };

  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::string directory;
  std::string partial_path;
  std::string final_path;
  std::string current_path;
  bool keep = false;
  Hid file;
  Hid dxpl;
  std::map<Key, Entry> entries;
  StoreStats stats;
  std::string failure;  ///< non-empty once an I/O failure made the store unusable
  bool closed = false;
  bool abandoned = false;
  int uncaught = 0;

  // Throws Error(Io) on every rank once the store is unusable (the state is the same on all
  // ranks, so no agreement is needed).
  void check_usable(std::string_view call, const Key* key) const {
    const std::string at = key ? detail::where(kStore, call, *key, rank)
                               : std::string(kStore) + ", " + std::string(call);
    if (closed) throw Error(ErrorCode::Io, at + ": the store was closed ('" + current_path + "')");
    if (!failure.empty()) {
      throw Error(ErrorCode::Io,
                  at + ": the store is unusable after an earlier failure: " + failure);
    }
  }

  // Runs one step that holds collective HDF5 calls, then agrees with the other ranks on whether
  // it failed. A failure makes the store unusable, on every rank.
  template <class Fn>
  void collective(const std::string& what, Fn&& fn) {
    std::optional<Error> local = capture(fn);
    if (local) {
      std::string message = what + " failed on rank " + std::to_string(rank) + ": " + local->what();
      if (local->code() == ErrorCode::Io) {
        message += "; check free space, quotas and permissions of '" + directory +
                   "', or choose another directory (StoreConfig::directory, PETSc: "
                   "-ts_trajectory_dirname)";
      }
      local.emplace(local->code(), message);
    }
    try {
      agree(comm, local);
    } catch (const Error& e) {
      failure = e.what();
      throw;
    }
  }

  // Collective: closes the file and renames (keeps) or removes it; returns the agreed failure.
  std::optional<Error> shut(bool keep_file);
};

Hdf5Store::Hdf5Store(const StoreConfig& config) : impl_(std::make_unique<Impl>()) {
  QuietHdf5 quiet;
  Impl& s = *impl_;
  s.uncaught = std::uncaught_exceptions();
  s.keep = config.keep_files;
  int initialized = 0;
  mpi_check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    throw Error(ErrorCode::Mpi, std::string(kStore) +
                                    ": MPI is not initialised; call MPI_Init (or PetscInitialize) "
                                    "before creating the store");
  }
  require(config.comm != MPI_COMM_NULL,
          std::string(kStore) + ": StoreConfig::comm is MPI_COMM_NULL; pass the solver's one");
  mpi_check(MPI_Comm_dup(config.comm, &s.comm), "MPI_Comm_dup");
  mpi_check(MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  s.rank = detail::comm_rank(s.comm);
  s.size = detail::comm_size(s.comm);

  std::optional<Error> local;
  std::string base;
  if (s.rank == 0) local = capture([&] { base = reserve_file(config.directory, config.label); });
  int length = static_cast<int>(base.size());
  try {
    mpi_check(MPI_Bcast(&length, 1, MPI_INT, 0, s.comm), "MPI_Bcast (file name)");
    base.resize(static_cast<std::size_t>(length));
    mpi_check(MPI_Bcast(base.data(), length, MPI_CHAR, 0, s.comm), "MPI_Bcast (file name)");
    agree(s.comm, local);
  } catch (...) {
    MPI_Comm_free(&s.comm);
    throw;
  }
  s.partial_path = base + ".h5.partial";
  s.final_path = base + ".h5";
  s.current_path = s.partial_path;
  s.directory = std::filesystem::path(base).parent_path().string();

  try {
    s.collective("hdf5 store: creating '" + s.partial_path + "'", [&] {
      Hid fapl = make_hid(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate(file access)");
      h5_check(H5Pset_fapl_mpio(fapl.get(), s.comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
      // Rank 0 reads metadata and broadcasts it; metadata is written collectively.
      h5_check(H5Pset_all_coll_metadata_ops(fapl.get(), true), "H5Pset_all_coll_metadata_ops");
      h5_check(H5Pset_coll_metadata_write(fapl.get(), true), "H5Pset_coll_metadata_write");
      // 1.8+ object headers: attributes indexed by rank may exceed 64 KiB at large rank counts.
      h5_check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST),
               "H5Pset_libver_bounds");
      s.file = make_hid(H5Fcreate(s.partial_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                        H5Fclose, "H5Fcreate");
      s.dxpl = make_hid(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate(transfer)");
      h5_check(H5Pset_dxpl_mpio(s.dxpl.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
      // Collective H5Dwrite/H5Dread, but each rank moves its own contiguous block with its own
      // MPI-IO call: Open MPI 4.1's collective-buffering write (ompio, fcoll vulcan) reports
      // success on every rank when an aggregator's write fails (EFBIG, ENOSPC), so the loss
      // would go unseen. With per-rank I/O, the rank whose write failed sees the error and
      // the store's agreement spreads it.
      h5_check(H5Pset_dxpl_mpio_collective_opt(s.dxpl.get(), H5FD_MPIO_INDIVIDUAL_IO),
               "H5Pset_dxpl_mpio_collective_opt");
      const hid_t root = s.file.get();
      attribute_string(root, "format", kFormat);
      attribute_string(root, "checksum", kChecksum);
      attribute_string(root, "writer", std::string("rewind ") + REWIND_VERSION);
      attribute_string(root, "label", config.label);
      attribute_i64(root, "ranks", s.size);
    });
  } catch (...) {
    s.shut(false);
    throw;
  }
}

Hdf5Store::~Hdf5Store() {
  Impl& s = *impl_;
  if (s.closed) return;
  if (std::uncaught_exceptions() > s.uncaught) s.abandoned = true;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    // Too late for collective calls; HDF5 closed the file in MPI_Finalize.
    s.file.forget();
    s.dxpl.forget();
    if (s.rank == 0) ::unlink(s.partial_path.c_str());
    return;
  }
  try {
    close();
  } catch (...) {
    // close() removed the file and every rank knows; a destructor cannot report more.
  }
}

std::optional<Error> Hdf5Store::Impl::shut(bool keep_file) {
  QuietHdf5 quiet;
  std::optional<Error> result;
  const auto settle = [&](const std::optional<Error>& local) {
    try {
      agree(comm, local);
    } catch (const Error& e) {
      if (!result) result = e;
    }
  };
  if (!keep_file) {
    // A file that is not kept is emptied and unlinked before HDF5 closes it: its space comes
    // back at once (so the metadata HDF5 still writes while closing finds room on a full disk),
    // and nothing that looks like a checkpoint file survives a failed close or a crash.
    settle(std::nullopt);  // every rank is here, so no write is in flight
    std::optional<Error> removed;
    if (rank == 0) {
      removed = capture([&] {
        const int fd = ::open(partial_path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
          [[maybe_unused]] const int rc = ::ftruncate(fd, 0);  // best effort; unlinked below
          ::close(fd);
        }
        if (::unlink(partial_path.c_str()) != 0 && errno != ENOENT) {
          const int err = errno;
          throw Error(ErrorCode::Io, std::string(kStore) + ": removing '" + partial_path +
                                         "' failed (" + std::strerror(err) + ")");
        }
      });
    }
    settle(removed);
  }
  settle(capture([&] {
    std::optional<LiftFileSizeLimit> lift;
    if (!keep_file) lift.emplace();
    dxpl.reset();
    if (file && file.reset() < 0) h5_fail("hdf5 store: closing '" + partial_path + "'");
  }));
  if (keep_file) {
    std::optional<Error> moved;
    if (rank == 0) {
      moved = capture([&] {
        if (result) {  // closing failed: the file is not trustworthy
          ::unlink(partial_path.c_str());
          return;
        }
        if (std::rename(partial_path.c_str(), final_path.c_str()) != 0) {
          const int err = errno;
          ::unlink(partial_path.c_str());
          throw Error(ErrorCode::Io, std::string(kStore) + ": renaming '" + partial_path +
                                         "' to '" + final_path + "' failed (" + std::strerror(err) +
                                         "); the file was removed");
        }
      });
    }
    settle(moved);
    if (!result) current_path = final_path;
  }
  closed = true;
  MPI_Comm_free(&comm);
  return result;
}

void Hdf5Store::close() {
  Impl& s = *impl_;
  if (s.closed) return;
  const bool keep = s.keep && s.failure.empty() && !s.abandoned;
  if (auto e = s.shut(keep)) throw *e;
}

void Hdf5Store::put(const Key& key, const CheckpointView& checkpoint) {
  QuietHdf5 quiet;
  Impl& s = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  s.check_usable("put", &key);
  const std::string at = detail::where(kStore, "put", key, -1);
  std::optional<Error> local = capture([&] {
    if (contains(key)) detail::throw_duplicate(kStore, key, s.rank);
    detail::validate_put(kStore, key, checkpoint, s.rank);
  });
  agree(s.comm, local, detail::layout_hash(checkpoint),
        at + ": the ranks passed different checkpoint layouts (field names or global sizes, "
             "scalar names or values differ between ranks); every rank must pass the same "
             "fields and scalars, each with its own block");

  // Every rank learns every block and checksum: the attributes are written collectively.
  const std::size_t nf = checkpoint.fields.size();
  Impl::Entry entry{detail::layout_of(checkpoint), {}};
  std::vector<std::uint64_t> mine(3 * nf);
  for (std::size_t f = 0; f < nf; ++f) {
    const auto& field = checkpoint.fields[f];
    entry.checksums.push_back(detail::checksum(field.data));
    mine[3 * f] = static_cast<std::uint64_t>(field.offset);
    mine[3 * f + 1] = field.data.size();
    mine[3 * f + 2] = entry.checksums.back();
  }
  std::vector<std::uint64_t> all(3 * nf * static_cast<std::size_t>(s.size));
  mpi_check(MPI_Allgather(mine.data(), static_cast<int>(3 * nf), MPI_UINT64_T, all.data(),
                          static_cast<int>(3 * nf), MPI_UINT64_T, s.comm),
            "MPI_Allgather (blocks and checksums)");
  std::vector<std::vector<std::int64_t>> offsets(nf), counts(nf);
  std::vector<std::vector<std::uint64_t>> sums(nf);
  for (std::size_t f = 0; f < nf; ++f) {
    struct Block {
      std::int64_t begin, end;
      int rank;
    };
    std::vector<Block> blocks;
    for (int r = 0; r < s.size; ++r) {
      const std::uint64_t* b = &all[3 * (static_cast<std::size_t>(r) * nf + f)];
      offsets[f].push_back(static_cast<std::int64_t>(b[0]));
      counts[f].push_back(static_cast<std::int64_t>(b[1]));
      sums[f].push_back(b[2]);
      if (b[1] > 0) {
        blocks.push_back(
            {static_cast<std::int64_t>(b[0]), static_cast<std::int64_t>(b[0] + b[1]), r});
      }
    }
    std::sort(blocks.begin(), blocks.end(),
              [](const Block& a, const Block& b) { return a.begin < b.begin; });
    std::int64_t end = 0;
    std::string problem;
    for (std::size_t i = 0; i < blocks.size() && problem.empty(); ++i) {
      const Block& b = blocks[i];
      const std::string range = "rank " + std::to_string(b.rank) + "'s block [" +
                                std::to_string(b.begin) + ", " + std::to_string(b.end) + ")";
      if (b.begin < end)
        problem = range + " overlaps the block before it, which ends at " + std::to_string(end);
      if (b.begin > end)
        problem = "nothing covers [" + std::to_string(end) + ", " + std::to_string(b.begin) +
                  ") before " + range;
      end = b.end;
    }
    const std::int64_t global = checkpoint.fields[f].global_size;
    if (problem.empty() && end != global) {
      problem = "the blocks end at " + std::to_string(end) + " but the global size is " +
                std::to_string(global);
    }
    if (!problem.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  at + ": field '" + std::string(checkpoint.fields[f].name) +
                      "': the ranks' blocks must tile [0, global_size) exactly: " + problem +
                      "; check each rank's offset and size");
    }
  }

  const std::string group_path = group_name(key);
  const std::string in_file = "' in '" + s.partial_path + "'";
  Hid group;
  std::vector<Hid> datasets(nf);
  s.collective(at + ": creating checkpoint '" + group_path + in_file, [&] {
    group = make_hid(
        H5Gcreate2(s.file.get(), group_path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
        H5Gclose, "H5Gcreate2('" + group_path + "')");
    const hid_t g = group.get();
    attribute_i64(g, "step", key.step);
    attribute_string(g, "kind", kind_name(key.kind));
    attribute_i64(g, "run", key.run);
    attribute_i64(g, "ranks", s.size);
    attribute_i64(g, "fields", static_cast<std::int64_t>(nf));
    for (const auto& scalar : checkpoint.scalars) {
      attribute_f64(g, "scalar:" + std::string(scalar.name), scalar.value);
    }
    attribute_i64(g, "complete", 0);
    Hid dcpl = make_hid(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate(dataset create)");
    h5_check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), "H5Pset_layout");
    h5_check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
    // Parallel HDF5 allocates contiguous datasets at creation anyway; say so.
    h5_check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time");
    for (std::size_t f = 0; f < nf; ++f) {
      const auto& field = checkpoint.fields[f];
      const std::string name(field.name);
      Hid space = make_space(static_cast<hsize_t>(field.global_size));
      datasets[f] = make_hid(H5Dcreate2(g, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT,
                                        dcpl.get(), H5P_DEFAULT),
                             H5Dclose, "H5Dcreate2('" + name + "')");
      const hid_t d = datasets[f].get();
      attribute_i64(d, "index", static_cast<std::int64_t>(f));
      attribute_i64(d, "global_size", field.global_size);
      attribute_i64s(d, "rank_offsets", offsets[f]);
      attribute_i64s(d, "rank_counts", counts[f]);
      attribute_u64s(d, "rank_checksums", sums[f]);
    }
  });
  for (std::size_t f = 0; f < nf; ++f) {
    const auto& field = checkpoint.fields[f];
    if (field.global_size == 0) continue;  // no storage is allocated for an empty dataset
    s.collective(at + ": writing field '" + std::string(field.name) + in_file, [&] {
      const hsize_t count = field.data.size();
      auto [file_space, memory_space] = select_block(datasets[f].get(), field.offset, count);
      static const double empty = 0.0;
      const double* data = count > 0 ? field.data.data() : &empty;
      h5_check(H5Dwrite(datasets[f].get(), H5T_NATIVE_DOUBLE, memory_space.get(), file_space.get(),
                        s.dxpl.get(), data),
               "H5Dwrite");
    });
  }
  s.collective(at + ": marking checkpoint '" + group_path + "' complete" + in_file, [&] {
    for (auto& d : datasets) h5_check(d.reset(), "H5Dclose");
    const std::int64_t one = 1;
    Hid attr = make_hid(H5Aopen(group.get(), "complete", H5P_DEFAULT), H5Aclose, "H5Aopen");
    h5_check(H5Awrite(attr.get(), H5T_NATIVE_INT64, &one), "H5Awrite('complete')");
    attr.reset();
    h5_check(group.reset(), "H5Gclose");
  });

  const std::int64_t bytes = entry.layout.doubles() * static_cast<std::int64_t>(sizeof(double));
  s.entries.emplace(key, std::move(entry));
  s.stats.writes += 1;
  s.stats.bytes_written += bytes;
  s.stats.live = static_cast<std::int64_t>(s.entries.size());
  s.stats.peak_live = std::max(s.stats.peak_live, s.stats.live);
  s.stats.write_seconds += seconds_since(t0);
}

void Hdf5Store::get(const Key& key, const CheckpointSpan& out) {
  QuietHdf5 quiet;
  Impl& s = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  s.check_usable("get", &key);
  const auto it = s.entries.find(key);
  agree(s.comm, capture([&] {
          if (it == s.entries.end()) detail::throw_missing(kStore, "get", key, s.rank);
          detail::validate_get(kStore, key, it->second.layout, out, s.rank);
        }));
  const Impl::Entry& entry = it->second;
  const std::string at = detail::where(kStore, "get", key, -1);
  const std::string group_path = group_name(key);
  const std::string in_file = "' in '" + s.partial_path + "'";
  const std::size_t nf = out.fields.size();
  std::vector<Hid> datasets(nf);
  s.collective(at + ": opening checkpoint '" + group_path + in_file, [&] {
    Hid group = make_hid(H5Gopen2(s.file.get(), group_path.c_str(), H5P_DEFAULT), H5Gclose,
                         "H5Gopen2('" + group_path + "')");
    for (std::size_t f = 0; f < nf; ++f) {
      const std::string name(out.fields[f].name);
      datasets[f] = make_hid(H5Dopen2(group.get(), name.c_str(), H5P_DEFAULT), H5Dclose,
                             "H5Dopen2('" + name + "')");
    }
  });
  for (std::size_t f = 0; f < nf; ++f) {
    const auto& field = out.fields[f];
    if (field.global_size == 0) continue;
    s.collective(at + ": reading field '" + std::string(field.name) + in_file, [&] {
      const hsize_t count = field.data.size();
      auto [file_space, memory_space] = select_block(datasets[f].get(), field.offset, count);
      double empty = 0.0;
      double* data = count > 0 ? field.data.data() : &empty;
      h5_check(H5Dread(datasets[f].get(), H5T_NATIVE_DOUBLE, memory_space.get(), file_space.get(),
                       s.dxpl.get(), data),
               "H5Dread");
      h5_check(datasets[f].reset(), "H5Dclose");
    });
  }
  // A damaged block is this rank's finding; every rank throws it, and the store stays usable.
  agree(s.comm, capture([&] {
          for (std::size_t f = 0; f < nf; ++f) {
            const auto& field = out.fields[f];
            const std::uint64_t sum = detail::checksum(std::span<const double>(field.data));
            if (sum == entry.checksums[f]) continue;
            char hex[64];
            std::snprintf(hex, sizeof hex, "%016llx, read %016llx",
                          static_cast<unsigned long long>(entry.checksums[f]),
                          static_cast<unsigned long long>(sum));
            throw Error(
                ErrorCode::Corrupt,
                detail::where(kStore, "get", key, s.rank) + ": checkpoint '" + group_path +
                    in_file + " is corrupt: field '" + std::string(field.name) + "', rank " +
                    std::to_string(s.rank) + "'s block [" + std::to_string(field.offset) + ", " +
                    std::to_string(field.offset + static_cast<std::int64_t>(field.data.size())) +
                    ") fails its checksum (written " + hex +
                    "); the file was modified or the storage returned bad data");
          }
        }));
  detail::fill_scalars(entry.layout, out);
  s.stats.reads += 1;
  s.stats.bytes_read += entry.layout.doubles() * static_cast<std::int64_t>(sizeof(double));
  s.stats.read_seconds += seconds_since(t0);
}

void Hdf5Store::erase(const Key& key) {
  QuietHdf5 quiet;
  Impl& s = *impl_;
  s.check_usable("erase", &key);
  agree(s.comm, capture([&] {
          if (!contains(key)) detail::throw_missing(kStore, "erase", key, s.rank);
        }));
  const std::string group_path = group_name(key);
  s.collective(
      detail::where(kStore, "erase", key, -1) + ": unlinking '" + group_path + "' in '" +
          s.partial_path + "'",
      [&] { h5_check(H5Ldelete(s.file.get(), group_path.c_str(), H5P_DEFAULT), "H5Ldelete"); });
  s.entries.erase(key);
  s.stats.live = static_cast<std::int64_t>(s.entries.size());
}

bool Hdf5Store::contains(const Key& key) const {
  return impl_->entries.count(key) != 0;
}

StoreStats Hdf5Store::stats() const {
  return impl_->stats;
}

std::string Hdf5Store::path() const {
  return impl_->current_path;
}

std::string Hdf5Store::final_path() const {
  return impl_->final_path;
}

MPI_Comm Hdf5Store::collective_comm() const {
  return impl_->comm;
}

void Hdf5Store::flush() {
  QuietHdf5 quiet;
  Impl& s = *impl_;
  s.check_usable("flush", nullptr);
  s.collective(std::string(kStore) + ", flush: flushing '" + s.partial_path + "'",
               [&] { h5_check(H5Fflush(s.file.get(), H5F_SCOPE_GLOBAL), "H5Fflush"); });
}

void Hdf5Store::abandon() noexcept {
  impl_->abandoned = true;
}

std::int64_t Hdf5Store::field_file_offset(const Key& key, std::string_view field) {
  QuietHdf5 quiet;
  Impl& s = *impl_;
  s.check_usable("field_file_offset", &key);
  agree(s.comm, capture([&] {
          if (!contains(key)) detail::throw_missing(kStore, "field_file_offset", key, s.rank);
        }));
  std::int64_t offset = -1;
  const std::string path = group_name(key) + "/" + std::string(field);
  s.collective(std::string(kStore) + ": locating '" + path + "' in '" + s.partial_path + "'", [&] {
    Hid dataset = make_hid(H5Dopen2(s.file.get(), path.c_str(), H5P_DEFAULT), H5Dclose,
                           "H5Dopen2('" + path + "')");
    const haddr_t address = H5Dget_offset(dataset.get());
    if (address == HADDR_UNDEF) h5_fail("H5Dget_offset('" + path + "')");
    offset = static_cast<std::int64_t>(address);
  });
  return offset;
}

}  // namespace rwd::storage
