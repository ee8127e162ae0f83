#pragma once
// Where the HDF5 store's file goes and what it is called, and the file-size limit while a
// discarded file is closed.

#include <sys/resource.h>

#include <string>

namespace rwd::storage::detail {

/// Rank 0 of the HDF5 store: checks `directory` and creates the (empty) partial file
/// `<directory>/rewind-<label>-<host>-<pid>-<UTC time>-<n>.h5.partial`, so that a bad directory
/// is reported in plain words before any collective HDF5 call. Returns the path without
/// ".h5.partial". Throws Error(Io) naming the directory and what to change.
std::string reserve_file(const std::string& directory, const std::string& label);

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
