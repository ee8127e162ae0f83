#pragma once
// Where the HDF5 store's file goes and what it is called, the partial files of runs that died,
// the room the file may grow into, and the file-size limit while a discarded file is closed.

#include <signal.h>
#include <sys/resource.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rwd::storage::detail {

/// A partial file reserved by reserve_file(): its name without ".h5.partial", and a descriptor
/// of it holding an exclusive advisory lock (flock) for as long as the store is live, so that
/// another run's cleanup never takes it for a dead run's file. Rank 0 only.
struct ReservedFile {
  std::string base;
  int lock_fd = -1;
};

/// Rank 0 of the HDF5 store: checks `directory`, removes the partial files of dead runs of this
/// host there (remove_stale_partials), and creates the (empty) partial file
/// `<directory>/rewind-<label>-<host>-<pid>-<UTC time>-<n>.h5.partial`, locked, so that a bad
/// directory is reported in plain words before any collective HDF5 call. Throws Error(Io) naming
/// the directory and what to change.
ReservedFile reserve_file(const std::string& directory, const std::string& label);

/// Deletes, in `directory`, the files a killed run of the HDF5 store left: regular files named
/// exactly `rewind-<label>-<host>-<pid>-<YYYYMMDDTHHMMSS.ffffff>Z-<n>.h5.partial` (the store's
/// own pattern, nothing else), where <host> is this host, process <pid> no longer exists here,
/// and no process holds the file's advisory lock (a live store holds it on its file). Files of
/// other hosts are never touched: whether their process lives cannot be known from here.
/// Returns the names removed. Never throws; what cannot be checked is left alone.
std::vector<std::string> remove_stale_partials(const std::string& directory);

/// Removes the name `path`, emptying the file first unless another link holds its data (a
/// resumable run's data file, docs/resume.md): its space comes back at once. Returns 0, or the
/// errno of a failed unlink (a name already gone counts as removed). Never throws.
int remove_file_name(const std::string& path) noexcept;

/// A live store's `.h5.partial` file, removed when the process exits (std::exit, or main
/// returning) while it is still registered: a program that stops on an error without destroying
/// its store (PETSc's error handling returns from main) leaves no partial file behind. Only this
/// name goes; a file with another link (a resumable run's data file) keeps its data. Rank-local
/// and thread-safe; unregister once the store has closed or removed the file.
void register_partial(const std::string& path);
void unregister_partial(const std::string& path);

/// This host's name as it appears in the store's file names.
std::string host_in_file_names();

/// Blocks SIGXFSZ on the calling thread for its lifetime. A write (or fallocate) beyond
/// RLIMIT_FSIZE then fails with EFBIG, reported as an I/O error, instead of the signal's default
/// action, which kills the process. A SIGXFSZ raised meanwhile stays pending on this thread and
/// is consumed before the old mask comes back.
class BlockFileSizeSignal {
 public:
  BlockFileSizeSignal();
  ~BlockFileSizeSignal();
  BlockFileSizeSignal(const BlockFileSizeSignal&) = delete;
  BlockFileSizeSignal& operator=(const BlockFileSizeSignal&) = delete;

 private:
  sigset_t set_{};
  sigset_t old_{};
};

/// The room a store's file may grow into, made sure of before HDF5 needs it. HDF5's own writes
/// (metadata, through MPI-IO, collective) cannot fail cleanly: a write that fails on some ranks
/// only leaves the others waiting inside HDF5. So before every step that may grow the file, each
/// rank checks that the file may reach the step's end on this rank (RLIMIT_FSIZE), and rank 0
/// allocates the blocks up to it (fallocate, keeping the size; where the file system cannot,
/// it checks the free space instead). A full disk, a quota or a file-size limit is then an error
/// of that step, agreed on by every rank, before anything is written.
class FileRoom {
 public:
  /// Bytes kept allocated beyond what a step needs: room for the metadata HDF5 writes.
  static constexpr std::int64_t kMargin = std::int64_t{4} << 20;

  FileRoom() = default;
  /// `fd`: the store's descriptor of its file. `allocates`: this rank allocates the blocks.
  FileRoom(int fd, bool allocates) : fd_(fd), allocates_(allocates) {}

  /// Makes sure bytes [0, end) of the file may be written on this rank. Throws Error(Io) with
  /// the OS's reason ("File too large", "No space left on device", "Disk quota exceeded").
  void ensure(std::int64_t end);

  /// Gives back the blocks allocated beyond the end of the file at `path` (rank 0, once the
  /// file is closed and kept). Best effort; never throws.
  static void release_beyond_end(const std::string& path);

 private:
  int fd_ = -1;
  bool allocates_ = false;
  bool fallocate_works_ = true;
  std::int64_t allocated_ = 0;  // bytes [0, allocated_) are allocated (rank 0)
  std::int64_t last_size_ = 0;  // the file size seen last time
};

/// Throws Error(Io) unless the file may grow to `end` bytes under this process's RLIMIT_FSIZE.
void check_file_size_limit(std::int64_t end);

// While a discarded file is closed, lifts the soft file-size limit (RLIMIT_FSIZE) to the hard
// one. HDF5 still writes metadata into the file (already emptied and unlinked, so the bytes go
// nowhere); if those writes fail, HDF5 1.10 leaves the file half closed and crashes when
// MPI_Finalize shuts the library down. Restored at once.
class LiftFileSizeLimit {
 public:
  LiftFileSizeLimit();
  ~LiftFileSizeLimit();
  LiftFileSizeLimit(const LiftFileSizeLimit&) = delete;
  LiftFileSizeLimit& operator=(const LiftFileSizeLimit&) = delete;

 private:
  struct rlimit saved_ {};
  bool lifted_ = false;
};

}  // namespace rwd::storage::detail
