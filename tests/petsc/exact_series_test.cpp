// ExactSeries (src/petsc/exact_series.hpp), the step log's storage: every value comes back bit
// for bit, whatever the pattern, and fixed-step series take a small fraction of a vector's bytes.

#include "exact_series.hpp"

#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace rwd::petsc {
namespace {

std::uint64_t bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Every value, by index and by copy_to, equals the reference bit for bit.
void expect_same(const ExactSeries& s, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(s.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(bits(s[i]), bits(want[i])) << what << ": value " << i;
  }
  std::vector<double> out(want.size() + 1, 7.0);
  s.copy_to(out.data(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(bits(out[i]), bits(want[i])) << what << ": copy_to " << i;
  }
  EXPECT_EQ(out.back(), 7.0) << what << ": copy_to wrote past n";
}

TEST(ExactSeries, ReturnsEveryPatternBitForBit) {
  std::mt19937_64 rng(20261126);
  std::uniform_real_distribution<double> uniform(-1e3, 1e3);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> cases;
  // Fixed steps from several starts, as TS advances its time (t += dt), long enough for many
  // blocks; one where the step cannot be recovered from the first two values.
  for (double t0 : {0.0, 1e9 + 0.1, -3.7}) {
    for (double dt : {0.5, 0.1, 1e-7}) {
      std::vector<double> v{t0};
      for (int i = 0; i < 1000; ++i) v.push_back(v.back() + dt);
      cases.push_back(v);
    }
  }
  cases.push_back(std::vector<double>(777, 0.25));  // constant
  cases.push_back(std::vector<double>(130, -0.0));  // -0.0 stays -0.0
  std::vector<double> zeros(200, 0.0);
  zeros[70] = -0.0;  // not constant, and 0.0 + 0.0 is never -0.0
  cases.push_back(zeros);
  std::vector<double> odd(300);
  for (auto& x : odd) x = uniform(rng);  // adaptive steps: nothing repeats
  cases.push_back(odd);
  std::vector<double> special(200, 1.0);
  special[3] = nan;
  special[100] = inf;
  special[101] = -inf;
  special[150] = std::numeric_limits<double>::denorm_min();
  cases.push_back(special);
  std::vector<double> nans(128, nan);  // a constant block of NaN
  cases.push_back(nans);
  // A fixed step with an odd value in the middle of a block.
  std::vector<double> bump{0.0};
  for (int i = 0; i < 300; ++i) bump.push_back(bump.back() + 0.5);
  bump[100] = 50.25;
  cases.push_back(bump);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    ExactSeries s;
    for (std::size_t i = 0; i < cases[c].size(); ++i) {
      s.push_back(cases[c][i]);
      if (i % 61 == 0) {
        ASSERT_EQ(bits(s[i]), bits(cases[c][i])) << "case " << c << " at " << i;
      }
    }
    expect_same(s, cases[c], ("case " + std::to_string(c)).c_str());
    ExactSeries a;
    a.assign(cases[c].data(), cases[c].data() + cases[c].size());
    expect_same(a, cases[c], ("assign, case " + std::to_string(c)).c_str());
  }
}

TEST(ExactSeries, TheLastValueCanBeReplacedAcrossABlockBoundary) {
  std::vector<double> want;
  ExactSeries s;
  for (std::size_t n = 1; n <= 3 * ExactSeries::kBlock + 5; ++n) {
    want.push_back(0.5 * static_cast<double>(n));
    s.push_back(want.back());
    if (n % 3 == 0 || n % ExactSeries::kBlock == 0) {
      want.back() = 1.0 / 3.0 * static_cast<double>(n);  // breaks the block's fixed step
      s.set_back(want.back());
    }
    ASSERT_NO_FATAL_FAILURE(expect_same(s, want, "after set_back"));
  }
  ExactSeries empty;
  EXPECT_THROW(empty.set_back(1.0), std::logic_error);
  s.assign(5, 2.0);
  EXPECT_EQ(s.size(), 5u);
  EXPECT_EQ(s[4], 2.0);
  s.clear();
  EXPECT_TRUE(s.empty());
}

TEST(ExactSeries, NeitherTrapsNorQuietsNorDependsOnTheRoundingMode) {
  // Under PETSc's -fp_trap the FPU traps invalid operations and overflows: storing values must
  // do no arithmetic that could raise them (a vector did none). A signalling NaN must come back
  // signalling (an addition would quiet it), and a program that changes the rounding mode
  // between storing and reading must still get the bits it stored.
  const double big = std::numeric_limits<double>::max();
  const double inf = std::numeric_limits<double>::infinity();
  const double snan = std::numeric_limits<double>::signaling_NaN();
  std::vector<std::vector<double>> cases;
  cases.push_back(std::vector<double>(64, inf));
  cases.push_back(std::vector<double>(128, snan));
  std::vector<double> alternating(128);
  for (std::size_t i = 0; i < alternating.size(); ++i) alternating[i] = i % 2 ? -big : big;
  cases.push_back(alternating);
  std::vector<double> climbing{1e300};  // a fixed step that would overflow past its block
  for (int i = 0; i < 200; ++i) climbing.push_back(climbing.back() * 4.0);
  cases.push_back(climbing);
  std::vector<double> tiny{0.0};  // subnormal steps: left to flush-to-zero's mercy if stepped
  for (int i = 0; i < 200; ++i)
    tiny.push_back(tiny.back() + std::numeric_limits<double>::denorm_min());
  cases.push_back(tiny);
  std::vector<double> tenths{0.0};
  for (int i = 0; i < 300; ++i) tenths.push_back(tenths.back() + 0.1);
  cases.push_back(tenths);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    ExactSeries s;
    feenableexcept(FE_INVALID | FE_OVERFLOW | FE_DIVBYZERO);
    for (double v : cases[c]) s.push_back(v);
    s.set_back(cases[c].back());
    fedisableexcept(FE_INVALID | FE_OVERFLOW | FE_DIVBYZERO);
    for (int mode : {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
      ASSERT_EQ(std::fesetround(mode), 0);
      const std::string what = "case " + std::to_string(c) + ", rounding " + std::to_string(mode);
      expect_same(s, cases[c], what.c_str());
      ASSERT_EQ(std::fegetround(), mode) << "reading changed the rounding mode";
    }
    ASSERT_EQ(std::fesetround(FE_TONEAREST), 0);
  }
  EXPECT_TRUE(std::isnan(snan));
}

TEST(ExactSeries, FixedStepsTakeAFractionOfAVector) {
  ExactSeries times, sizes, odd;
  double t = 0.0;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  constexpr std::size_t n = 100000;
  for (std::size_t i = 0; i < n; ++i) {
    times.push_back(t);
    sizes.push_back(0.5);
    odd.push_back(uniform(rng));
    t += 0.5;
  }
  const std::size_t vector_bytes = n * sizeof(double);
  // A block of 64 fixed steps is a header and two values (32 bytes, not 512); a constant
  // series one value a block.
  EXPECT_LT(times.bytes(), vector_bytes / 8) << times.bytes();
  EXPECT_LT(sizes.bytes(), vector_bytes / 12) << sizes.bytes();
  // Values that never repeat cost what a vector's would, plus a header a block, never a
  // vector's doubling.
  EXPECT_LT(odd.bytes(), vector_bytes + vector_bytes / 16 + 4096) << odd.bytes();
}

}  // namespace
}  // namespace rwd::petsc
