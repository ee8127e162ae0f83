#include "rewind/comm/agree.hpp"

#include <array>
#include <vector>

namespace rwd::comm {

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

bool agree(MPI_Comm comm, const Verdict& verdict) {
  const int rank = comm_rank(comm);
  const int size = comm_size(comm);
  // MAX of (size - rank) finds the lowest rank with a kept failure, and the lowest failing
  // rank; MAX of h and of ~h compare layouts; MAX of "no" finds whether any rank said no.
  const auto flag = [&](bool set) { return set ? static_cast<std::uint64_t>(size - rank) : 0u; };
  const std::array<std::uint64_t, 5> mine = {flag(verdict.kept.has_value()),
                                             flag(verdict.local.has_value()), verdict.layout,
                                             ~verdict.layout, verdict.yes ? 0u : 1u};
  std::array<std::uint64_t, 5> all{};
  mpi_check(MPI_Allreduce(mine.data(), all.data(), 5, MPI_UINT64_T, MPI_MAX, comm),
            "MPI_Allreduce (agreeing on failure)");
  if (all[0] == 0 && all[1] == 0) {
    if (all[2] != ~all[3]) throw Error(ErrorCode::InvalidArgument, verdict.mismatch);
    return all[4] == 0;
  }
  const bool kept = all[0] != 0;
  const std::optional<Error>& mine_failed = kept ? verdict.kept : verdict.local;
  const int first = size - static_cast<int>(kept ? all[0] : all[1]);
  int failed = mine_failed ? 1 : 0;
  int count = 0;
  mpi_check(MPI_Allreduce(&failed, &count, 1, MPI_INT, MPI_SUM, comm),
            "MPI_Allreduce (counting failed ranks)");
  int code = rank == first ? static_cast<int>(mine_failed->code()) : 0;
  std::string message = rank == first ? std::string(mine_failed->what()) : std::string();
  int length = static_cast<int>(message.size());
  mpi_check(MPI_Bcast(&code, 1, MPI_INT, first, comm), "MPI_Bcast (error code)");
  mpi_check(MPI_Bcast(&length, 1, MPI_INT, first, comm), "MPI_Bcast (error length)");
  message.resize(static_cast<std::size_t>(length));
  mpi_check(MPI_Bcast(message.data(), length, MPI_CHAR, first, comm), "MPI_Bcast (error message)");
  const std::string note = "s failed; the lowest failing ";  // in every note, whatever the unit
  if (count > 1 &&
      message.find(note) == std::string::npos) {  // an error agreed before keeps its note
    message += " [" + std::to_string(count) + " of " +
               std::to_string(verdict.total > 0 ? verdict.total : size) + " " + verdict.unit +
               note + verdict.unit + "'s error is shown]";
  }
  if (kept) throw KeptFailure(static_cast<ErrorCode>(code), message);
  throw Error(static_cast<ErrorCode>(code), message);
}

void agree(MPI_Comm comm, const std::optional<Error>& local, std::uint64_t layout,
           const std::string& mismatch) {
  agree(comm, Verdict{local, std::nullopt, layout, mismatch});
}

std::uint64_t setting_hash(const void* data, std::size_t bytes, std::uint64_t seed) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) seed = (seed ^ p[i]) * 1099511628211ull;
  return seed;
}

void agree_settings(MPI_Comm comm, std::span<const Setting> settings) {
  // MAX of each hash and of its complement: equal on every rank iff max(h) == ~max(~h).
  std::vector<std::uint64_t> mine, all(2 * settings.size());
  for (const Setting& s : settings) {
    mine.push_back(s.hash);
    mine.push_back(~s.hash);
  }
  mpi_check(MPI_Allreduce(mine.data(), all.data(), static_cast<int>(mine.size()), MPI_UINT64_T,
                          MPI_MAX, comm),
            "MPI_Allreduce (agreeing on settings)");
  for (std::size_t k = 0; k < settings.size(); ++k) {
    if (all[2 * k] != ~all[2 * k + 1]) {
      throw Error(ErrorCode::InvalidArgument,
                  settings[k].name + " differs between ranks; every rank must give the same");
    }
  }
}

}  // namespace rwd::comm
