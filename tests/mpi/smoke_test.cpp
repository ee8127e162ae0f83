// Every rank of a collective adjoint run must walk the same schedule, or the collective
// checkpoint writes deadlock. Each rank plans independently and the ranks compare streams.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>

#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rwd::schedule {
namespace {

std::uint64_t stream_hash(const std::string& name, const ScheduleParams& p, std::int64_t* count) {
  auto s = make_schedule(name, p);
  std::uint64_t h = 1469598103934665603ull;
  *count = 0;
  simulate(*s, p, [&](const Action& a) {
    h = (h ^ std::hash<std::string>{}(to_string(a))) * 1099511628211ull;
    ++*count;
  });
  return h;
}

TEST(MpiSmoke, EveryRankPlansTheSameStream) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (const char* name : {"revolve", "periodic", "auto"}) {
    ScheduleParams p;
    p.steps = 500;
    p.ram = 50;
    std::int64_t count = 0;
    const std::uint64_t h = stream_hash(name, p, &count);
    std::uint64_t lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lo, hi) << name << " differs across " << size << " ranks";
    EXPECT_GT(count, 4) << name;
  }
}

TEST(MpiSmoke, RanksSeeEachOther) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long long sum = 0;
  const long long mine = rank + 1;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(sum, static_cast<long long>(size) * (size + 1) / 2);
}

}  // namespace
}  // namespace rwd::schedule
