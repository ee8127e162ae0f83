#pragma once
/// @file
/// How ranks agree on a failure, so that no rank is left waiting in a collective and every rank
/// throws the same rwd::Error: the collective stores use it on every call, the ensemble for its
/// tasks.

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>

#include "rewind/error.hpp"

namespace rwd::storage {

/// Throws Error(Mpi) naming `what` and MPI's error string unless rc == MPI_SUCCESS.
void mpi_check(int rc, const char* what);

int comm_rank(MPI_Comm comm);
int comm_size(MPI_Comm comm);

/// Thrown by agree() on every rank when some rank brought a kept failure: the store is unusable
/// everywhere from now on.
class KeptFailure : public Error {
 public:
  using Error::Error;
};

/// What one rank brings to an agreement.
struct Verdict {
  std::optional<Error> local;  ///< this call failed here (a bad argument, a corrupt block)
  /// A failure this rank met earlier, off the collective path (a background write that failed),
  /// that leaves the store unusable. Wins over every rank's `local`.
  std::optional<Error> kept;
  std::uint64_t layout = 0;  ///< what must be equal on every rank (0 when nothing must)
  std::string mismatch;      ///< the message when `layout` differs between ranks
  /// What a failing rank stands for in the note "[2 of 4 ranks failed; ...]": "group" when
  /// one rank per group brings its group's agreed failure, out of `total` (0: the ranks).
  std::string unit = "rank";
  int total = 0;
  /// This rank's answer to a yes/no question every rank asks itself in the same call; agree()
  /// returns whether every rank said yes (in the same MPI_Allreduce).
  bool yes = true;
};

/// Collective on `comm`. When some rank has a kept failure, every rank throws KeptFailure with
/// the lowest such rank's code and message. Otherwise, when some rank failed, every rank throws
/// the failure of the lowest failing rank (code and message), with a note of how many ranks
/// failed. When none failed but `layout` differs between ranks, every rank throws
/// Error(InvalidArgument, mismatch). Returns whether every rank's `yes` is true. One
/// MPI_Allreduce when nothing failed.
bool agree(MPI_Comm comm, const Verdict& verdict);

/// agree() with only a failure of this call, and optionally a layout.
void agree(MPI_Comm comm, const std::optional<Error>& local, std::uint64_t layout = 0,
           const std::string& mismatch = {});

/// Runs `fn`, turning whatever it throws into an Error for agree(). An exception that is not an
/// rwd::Error gets `other`: Internal inside rewind, Client around the caller's code (a task).
template <class Fn>
std::optional<Error> capture(Fn&& fn, ErrorCode other = ErrorCode::Internal) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  } catch (const std::bad_alloc&) {
    return Error(ErrorCode::Io, "out of memory");
  } catch (const std::exception& e) {
    return Error(other, e.what());
  } catch (...) {
    return Error(other, "an exception that is not a std::exception");
  }
  return std::nullopt;
}

}  // namespace rwd::storage
