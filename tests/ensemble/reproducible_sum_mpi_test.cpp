// ReproducibleSum::allreduce at 1, 2 and 4 ranks: the bits of a serial loop whatever the split
// of the vectors over ranks and partial sums; the ensemble's use (groups of g ranks, tasks on
// any group) gives the serial loop of one group; lengths that differ and too many terms fail on
// every rank; special values travel.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "rewind/ensemble/reproducible_sum.hpp"
#include "rewind/error.hpp"
#include "sum_test_data.hpp"

namespace rwd::ensemble {
namespace {

using test::bits;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void expect_same_bits(const std::vector<double>& got, const std::vector<double>& expected,
                      const char* what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t j = 0; j < got.size(); ++j) {
    ASSERT_EQ(bits(got[j]), bits(expected[j]))
        << what << ", entry " << j << " on rank " << world_rank() << " of " << world_size();
  }
}

// Every rank holds the same vectors; each trial gives each vector to a random rank, which adds
// it to one of its partial sums, in a random order; the allreduce must give the serial bits.
void check_random_splits(std::size_t length, std::size_t n, int trials) {
  std::mt19937_64 rng(1000 + length);  // the same on every rank
  const auto vectors = test::random_vectors(n, length, rng);
  ReproducibleSum serial(length);
  for (const auto& v : vectors) serial.add(v);
  const std::vector<double> expected = serial.result();

  const int rank = world_rank();
  const int size = world_size();
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<std::size_t> mine;
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (const std::size_t k : order) {
      if (static_cast<int>(rng() % static_cast<std::uint64_t>(size)) == rank) mine.push_back(k);
    }
    std::mt19937_64 local(rng() + static_cast<std::uint64_t>(rank));
    ReproducibleSum sum = test::sum_in_random_parts(vectors, mine, length, 3, local);
    sum.allreduce(MPI_COMM_WORLD);
    EXPECT_EQ(sum.terms(), n);
    expect_same_bits(sum.result(), expected, "random split");
  }
}

TEST(ReproducibleSumMpi, AllreduceGivesTheSerialBits) {
  check_random_splits(0, 20, 3);
  check_random_splits(1, 200, 10);
  check_random_splits(7, 200, 10);
  check_random_splits(1000, 64, 5);
}

// Large enough that MPI may pipeline the reduction and call the op on pieces.
TEST(ReproducibleSumMpi, LargeVectorsSplitByMpi) {
  check_random_splits(100003, 12, 2);
}

// The ensemble: K tasks on G = size / g groups of g ranks. Task k's gradient is a field of
// `global` doubles; rank r of a group holds block r of it (uneven blocks). Tasks go to groups
// at random; each rank sums its group's tasks, then the ranks with the same rank in their group
// reduce. Every rank must hold the bits of a serial loop over all tasks on its block.
TEST(ReproducibleSumMpi, EnsembleGivesTheSerialLoopOfOneGroup) {
  const int size = world_size();
  const int rank = world_rank();
  const std::size_t global = 1000;
  const std::size_t tasks = 37;
  for (int g = 1; g <= size; g *= 2) {
    if (size % g != 0) continue;
    const int groups = size / g;
    const int group = rank / g;
    const int in_group = rank % g;
    // Block of rank `in_group`: entries [begin, end) of the field, sizes differing by one.
    const std::size_t begin = global * static_cast<std::size_t>(in_group) / g;
    const std::size_t end = global * static_cast<std::size_t>(in_group + 1) / g;
    std::mt19937_64 rng(42);  // the same on every rank
    const auto fields = test::random_vectors(tasks, global, rng);
    auto block = [&](std::size_t k) {
      return std::vector<double>(fields[k].begin() + static_cast<std::ptrdiff_t>(begin),
                                 fields[k].begin() + static_cast<std::ptrdiff_t>(end));
    };
    ReproducibleSum serial(end - begin);
    for (std::size_t k = 0; k < tasks; ++k) serial.add(block(k));
    const std::vector<double> expected = serial.result();

    MPI_Comm across = MPI_COMM_NULL;
    ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, in_group, group, &across), MPI_SUCCESS);
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<std::size_t> order(tasks);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      ReproducibleSum mine(end - begin);
      for (const std::size_t k : order) {
        if (static_cast<int>(rng() % static_cast<std::uint64_t>(groups)) == group) {
          mine.add(block(k));
        }
      }
      mine.allreduce(across);
      EXPECT_EQ(mine.terms(), tasks);
      expect_same_bits(mine.result(), expected, "ensemble");
    }
    MPI_Comm_free(&across);
  }
}

TEST(ReproducibleSumMpi, DifferentLengthsFailOnEveryRank) {
  const int size = world_size();
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  const std::size_t length = world_rank() == 0 ? 3 : 4;
  ReproducibleSum sum(length);
  const std::vector<double> ones(length, 1.0);
  sum.add(ones);
  try {
    sum.allreduce(MPI_COMM_WORLD);
    ADD_FAILURE() << "allreduce accepted lengths 3 and 4";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("lengths differ (from 3 to 4)"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(sum.result(), ones) << "a failed allreduce changed the sum";
  // No rank was left inside a collective: a matching allreduce works.
  ReproducibleSum same(2);
  same.add(std::vector<double>{1.0, -0.5});
  same.allreduce(MPI_COMM_WORLD);
  EXPECT_EQ(same.result(), (std::vector<double>{1.0 * size, -0.5 * size}));
}

TEST(ReproducibleSumMpi, TooManyTermsFailOnEveryRank) {
  const int size = world_size();
  ReproducibleSum sum(1);
  sum.add(std::vector<double>{1.0});
  for (int i = 0; i < 30; ++i) sum.merge(sum);  // 2^30 terms on every rank
  if (size == 1) {
    sum.allreduce(MPI_COMM_WORLD);
    EXPECT_EQ(sum.result()[0], std::ldexp(1.0, 30));
    return;
  }
  EXPECT_THROW(sum.allreduce(MPI_COMM_WORLD), Error);
  EXPECT_EQ(sum.terms(), std::uint64_t{1} << 30);
}

TEST(ReproducibleSumMpi, SpecialValuesReachEveryRank) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  constexpr double max = std::numeric_limits<double>::max();
  const int rank = world_rank();
  const bool first = rank == 0;
  const bool last = rank == world_size() - 1;
  // Entries: NaN on the last rank; +Inf on the first and -Inf on the last; +Inf on the last;
  // -0.0 everywhere; -0.0 but +0.0 on the first; DBL_MAX everywhere, -DBL_MAX on all but the
  // first (exact sum DBL_MAX, no overflow on the way).
  const std::vector<double> a = {
      last ? nan : 1.0, first ? inf : 0.0, last ? inf : 2.0, -0.0, first ? 0.0 : -0.0, max};
  const std::vector<double> b = {0.0, last ? -inf : 0.0, 0.0, -0.0, -0.0, first ? 0.0 : -max};
  ReproducibleSum sum(a.size());
  sum.add(a);
  sum.add(b);
  sum.allreduce(MPI_COMM_WORLD);
  expect_same_bits(sum.result(), {nan, nan, inf, -0.0, 0.0, max}, "special values");
}

}  // namespace
}  // namespace rwd::ensemble
