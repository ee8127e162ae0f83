#include "rewind/error.hpp"

namespace rwd {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument:
      return "invalid argument";
    case ErrorCode::InvalidSchedule:
      return "invalid schedule";
    case ErrorCode::Io:
      return "I/O error";
    case ErrorCode::Corrupt:
      return "corrupt data";
    case ErrorCode::Mpi:
      return "MPI error";
    case ErrorCode::Internal:
      return "internal error";
    case ErrorCode::Client:
      return "error in the caller's code";
  }
  return "unknown error";
}

}  // namespace rwd
