#include "collective.hpp"

#include <array>
#include <vector>

namespace rwd::storage::detail {

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw Error(ErrorCode::Mpi, std::string(what) + " failed: " + std::string(text, len));
}

int comm_rank(MPI_Comm comm) {
  int rank = 0;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  return rank;
}

int comm_size(MPI_Comm comm) {
  int size = 0;
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return size;
}

void agree(MPI_Comm comm, const std::optional<Error>& local, std::uint64_t layout,
           const std::string& mismatch) {
  const int rank = comm_rank(comm);
  const int size = comm_size(comm);
  // MAX of (size - rank) finds the lowest failing rank; MAX of h and of ~h compare layouts.
  const std::array<std::uint64_t, 3> mine = {local ? static_cast<std::uint64_t>(size - rank) : 0u,
                                             layout, ~layout};
  std::array<std::uint64_t, 3> all{};
  mpi_check(MPI_Allreduce(mine.data(), all.data(), 3, MPI_UINT64_T, MPI_MAX, comm),
            "MPI_Allreduce (agreeing on failure)");
  if (all[0] == 0) {
    if (all[1] != ~all[2]) throw Error(ErrorCode::InvalidArgument, mismatch);
    return;
  }
  const int first = size - static_cast<int>(all[0]);
  int failed = local ? 1 : 0;
  int count = 0;
  mpi_check(MPI_Allreduce(&failed, &count, 1, MPI_INT, MPI_SUM, comm),
            "MPI_Allreduce (counting failed ranks)");
  int code = rank == first ? static_cast<int>(local->code()) : 0;
  std::string message = rank == first ? std::string(local->what()) : std::string();
  int length = static_cast<int>(message.size());
  mpi_check(MPI_Bcast(&code, 1, MPI_INT, first, comm), "MPI_Bcast (error code)");
  mpi_check(MPI_Bcast(&length, 1, MPI_INT, first, comm), "MPI_Bcast (error length)");
  message.resize(static_cast<std::size_t>(length));
  mpi_check(MPI_Bcast(message.data(), length, MPI_CHAR, first, comm), "MPI_Bcast (error message)");
  const std::string note = " ranks failed; the lowest failing rank's error is shown]";
  if (count > 1 &&
      message.find(note) == std::string::npos) {  // an error agreed before keeps its note
    message += " [" + std::to_string(count) + " of " + std::to_string(size) + note;
  }
  throw Error(static_cast<ErrorCode>(code), message);
}

}  // namespace rwd::storage::detail
