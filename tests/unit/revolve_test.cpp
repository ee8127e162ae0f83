#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "rewind/error.hpp"
#include "rewind/schedule/binomial.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "schedule_test_util.hpp"

namespace rwd::schedule {
namespace {

using testing::ram_budget;

// Independent dynamic programme for single-level checkpointing: T[s][L] is the fewest forward
// steps that reverse L steps with s RAM slots, one of them holding the start state. Either
// advance m steps, store, reverse the right part with one slot fewer and the left part again
// with all s; with one slot, nothing can be stored and every step restarts from the start.
class RevolveTable {
 public:
  RevolveTable(int max_n, int max_s) : t_(max_s + 1, std::vector<std::int64_t>(max_n + 1, 0)) {
    for (int s = 1; s <= max_s; ++s) {
      for (int L = 1; L <= max_n; ++L) {
        if (L == 1) {
          t_[s][L] = 1;
        } else if (s == 1) {
          t_[s][L] = L + t_[s][L - 1];
        } else {
          std::int64_t best = std::numeric_limits<std::int64_t>::max();
          for (int m = 1; m < L; ++m) best = std::min(best, m + t_[s - 1][L - m] + t_[s][m]);
          t_[s][L] = best;
        }
      }
    }
  }
  std::int64_t operator()(int n, int s) const { return t_[s][n]; }

 private:
  std::vector<std::vector<std::int64_t>> t_;
};

SimulationResult plan(Step n, std::int64_t s) {
  const auto p = ram_budget(n, s);
  auto schedule = make_schedule("revolve", p);
  return simulate(*schedule, p);
}

TEST(Binomial, BetaAndRepetitions) {
  EXPECT_EQ(beta(2, 3), 10);
  EXPECT_EQ(beta(10, 0), 1);
  EXPECT_EQ(beta(3, -1), 0);
  EXPECT_EQ(beta(1000, 1000), std::int64_t{1} << 62);  // saturates
  EXPECT_EQ(repetitions(1, 5), 0);
  EXPECT_EQ(repetitions(10, 2), 3);
  EXPECT_EQ(repetitions(11, 2), 4);
  EXPECT_THROW(repetitions(0, 2), Error);
}

TEST(Revolve, DocumentedValues) {
  EXPECT_EQ(revolve_fwd_total(10, 2), 30);
  EXPECT_EQ(revolve_fwd_total(1000, 10), 4636);
  EXPECT_EQ(plan(10, 2).fwd_total, 30);
  EXPECT_EQ(plan(1000, 10).fwd_total, 4636);
}

TEST(Revolve, ClosedFormAndDynamicProgrammeForAllSmallCases) {
  const RevolveTable table(300, 20);
  for (int n = 1; n <= 300; ++n) {
    for (int s = 1; s <= std::min(n, 20); ++s) {
      const SimulationResult r = plan(n, s);
      ASSERT_EQ(r.fwd_total, revolve_fwd_total(n, s)) << "n=" << n << " s=" << s;
      ASSERT_EQ(r.fwd_total, table(n, s)) << "n=" << n << " s=" << s;
      ASSERT_EQ(r.adjoint_steps, n);
      ASSERT_LE(r.ram.peak, s);
      ASSERT_EQ(r.disk.writes, 0);
    }
  }
}

TEST(Revolve, ClosedFormOnASampleUpTo2000Steps) {
  std::mt19937_64 rng(20261122);
  std::uniform_int_distribution<int> steps(1, 2000);
  for (int i = 0; i < 400; ++i) {
    const int n = steps(rng);
    const int s = std::uniform_int_distribution<int>(1, std::min(n, 64))(rng);
    ASSERT_EQ(plan(n, s).fwd_total, revolve_fwd_total(n, s)) << "n=" << n << " s=" << s;
  }
}

TEST(Revolve, ClosedFormSpotChecksUpToAMillionSteps) {
  for (const auto& [n, s] : std::vector<std::pair<Step, std::int64_t>>{
           {10000, 3}, {100000, 20}, {1000000, 100}, {1000000, 30}, {999983, 64}}) {
    const SimulationResult r = plan(n, s);
    EXPECT_EQ(r.fwd_total, revolve_fwd_total(n, s)) << "n=" << n << " s=" << s;
    EXPECT_LE(r.ram.peak, s);
  }
}

TEST(Revolve, RejectsBadInputNamingTheArgument) {
  const auto message = [](Step n, std::int64_t s) {
    try {
      make_schedule("revolve", ram_budget(n, s));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(0, 1).find("step count must be >= 1"), std::string::npos);
  EXPECT_NE(message(10, 0).find("RAM slots must be >= 1"), std::string::npos);
  EXPECT_NE(message(10, 11).find("RAM slots (11) exceed the step count (10)"), std::string::npos);
}

TEST(Revolve, OfflineFinalizeMustMatchThePlannedCount) {
  auto s = make_schedule("revolve", ram_budget(10, 3));
  EXPECT_NO_THROW(s->finalize(10));
  EXPECT_THROW(s->finalize(11), Error);
}

}  // namespace
}  // namespace rwd::schedule
