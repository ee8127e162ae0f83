#pragma once
/// @file
/// The one error type rewind throws. rewind's C++ namespace is `rwd`: `rewind` is taken by C's
/// stdio function rewind(FILE*), which every program that includes <cstdio> sees globally.
/// Every message says what was wrong and what to change.

#include <stdexcept>
#include <string>

namespace rwd {

/// Broad category of a failure, so callers (the PETSc adapter, apps) can map it to their own codes.
enum class ErrorCode {
  InvalidArgument,  ///< bad user input: an option, a size, a name
  InvalidSchedule,  ///< a schedule emitted an action stream the model rejects
  Io,               ///< a file or directory could not be read or written
  Corrupt,          ///< stored data failed its checksum or does not match what was written
  Mpi,              ///< an MPI call failed or ranks disagree
  Internal,         ///< a broken invariant inside rewind (a bug)
  Client,           ///< the caller's code threw something else (a stepper, a task, a callback)
};

/// Human name of an error code ("invalid argument", ...).
const char* to_string(ErrorCode code) noexcept;

/// Exception thrown by every rewind layer. Not collective by itself: collective paths agree on
/// failure before they throw (see the storage layer).
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

/// Throws Error(ErrorCode::InvalidArgument, message) unless `condition` holds.
inline void require(bool condition, const std::string& message) {
  if (!condition) throw Error(ErrorCode::InvalidArgument, message);
}

}  // namespace rwd
