#pragma once
/// @file
/// How the ranks of a communicator agree: on a failure, so that no rank is left waiting in a
/// collective and every rank throws the same rwd::Error (the collective stores on every call,
/// the ensemble for its tasks); and on settings that must be equal on every rank, refused by
/// name where they differ. The comm layer: MPI only, below the stores.

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "rewind/error.hpp"

namespace rwd::comm {

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

/// A setting every rank must give alike: its name as the user gives it (an option, a field) and
/// a hash of its value (setting_hash()).
struct Setting {
  std::string name;
  std::uint64_t hash = 0;
};

/// FNV-1a of bytes, for Setting::hash.
std::uint64_t setting_hash(const void* data, std::size_t bytes,
                           std::uint64_t seed = 1469598103934665603ull) noexcept;
inline std::uint64_t setting_hash(std::string_view text) noexcept {
  return setting_hash(text.data(), text.size());
}
template <class T>
requires std::is_trivially_copyable_v<T> std::uint64_t setting_hash(const T& value)
noexcept {
  return setting_hash(&value, sizeof value);
}

/// Collective on `comm`, one MPI_Allreduce. Throws Error(InvalidArgument) on every rank, naming
/// the first of `settings` whose hash differs between ranks: "<name> differs between ranks;
/// every rank must give the same". Every rank passes the same settings in the same order.
void agree_settings(MPI_Comm comm, std::span<const Setting> settings);

}  // namespace rwd::comm
