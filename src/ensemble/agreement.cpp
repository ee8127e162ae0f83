#include "agreement.hpp"

#include <chrono>
#include <string>
#include <thread>

#include "rewind/comm/agree.hpp"
#include "rewind/timing.hpp"

namespace rwd::ensemble::detail {

std::optional<Error> agree_in_group(MPI_Comm group, const std::optional<Error>& local,
                                    double wait_seconds) {
  int mine = local ? 1 : 0, any = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  comm::mpi_check(MPI_Iallreduce(&mine, &any, 1, MPI_INT, MPI_MAX, group, &request),
                  "MPI_Iallreduce (task failure)");
  if (!local) {
    comm::mpi_check(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait (task failure)");
  } else {
    const auto t0 = SteadyClock::now();
    int done = 0;
    while (true) {
      comm::mpi_check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test (task failure)");
      if (done) break;
      if (seconds_since(t0) > wait_seconds) {
        // The request cannot be cancelled; the job is about to be aborted anyway.
        throw Error(local->code(),
                    std::string(local->what()) +
                        " [the other ranks of this group did not come to agree on the failure "
                        "within " +
                        std::to_string(static_cast<int>(wait_seconds)) +
                        " s: they are probably blocked in a collective call of the task, and "
                        "cannot be told; abort the job (MPI_Abort)]");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (!any) return std::nullopt;
  try {
    comm::agree(group, local);
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;  // not reached: some rank failed, so agree() threw
}

}  // namespace rwd::ensemble::detail
