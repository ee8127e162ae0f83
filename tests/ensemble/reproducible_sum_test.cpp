// ReproducibleSum on one rank: the same bits for every order, grouping and split of the
// additions; the stated accuracy against an exact reference; special values; the limits.
#include "rewind/ensemble/reproducible_sum.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "rewind/error.hpp"
#include "sum_test_data.hpp"

namespace rwd::ensemble {
namespace {

using test::bits;
using test::exact_sum;
using test::Kind;
using test::naive_sum;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kMax = std::numeric_limits<double>::max();
constexpr double kTiny = std::numeric_limits<double>::denorm_min();
constexpr double kMinNormal = std::numeric_limits<double>::min();

// Sum of scalars, one add() each.
double sum_of(const std::vector<double>& xs) {
  ReproducibleSum s(1);
  for (const double x : xs) s.add({&x, 1});
  return s.result()[0];
}

// The same bits for sum_of() in every order of `xs`; returns them.
double same_in_every_order(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end(), [](double a, double b) { return bits(a) < bits(b); });
  const double first = sum_of(xs);
  do {
    EXPECT_EQ(bits(sum_of(xs)), bits(first)) << "order changed the sum";
  } while (std::next_permutation(xs.begin(), xs.end(),
                                 [](double a, double b) { return bits(a) < bits(b); }));
  return first;
}

TEST(ReproducibleSum, EmptySumsAndZeroLength) {
  ReproducibleSum none(0);
  none.add({});
  EXPECT_TRUE(none.result().empty());
  EXPECT_EQ(none.terms(), 1u);
  const ReproducibleSum three(3);
  for (const double x : three.result()) EXPECT_EQ(bits(x), bits(0.0));
}

TEST(ReproducibleSum, WrongLengthsThrowAndLeaveTheSumAlone) {
  ReproducibleSum s(3);
  const std::vector<double> v = {1.0, 2.0, 3.0};
  s.add(v);
  const std::vector<double> two = {1.0, 2.0};
  try {
    s.add(two);
    FAIL() << "add accepted 2 values for a sum of length 3";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("got 2 values for a sum of length 3"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(s.merge(ReproducibleSum(4)), Error);
  EXPECT_EQ(s.result(), v);
  EXPECT_EQ(s.terms(), 1u);
}

TEST(ReproducibleSum, CancellationGivesTheExactSumInEveryOrder) {
  EXPECT_EQ(same_in_every_order({1e16, 1.0, -1e16}), 1.0);
  const double big = std::ldexp(1.0, 60);
  EXPECT_EQ(same_in_every_order({big, 1.0, -big, 0.125}), 1.125);
  // Plain summation gives 0 or 1 depending on the order.
  EXPECT_EQ(naive_sum(std::vector<double>{1e16, 1.0, -1e16}), 0.0);
  EXPECT_EQ(naive_sum(std::vector<double>{1e16, -1e16, 1.0}), 1.0);
}

// The core guarantee: random permutations of the vectors, random splits over partial sums and
// random merge orders all give the bits of one serial loop; plain summation of the same data in
// the same orders does not.
TEST(ReproducibleSum, SameBitsForEveryOrderGroupingAndSplit) {
  std::mt19937_64 rng(20261123);
  const std::size_t n = 300;
  const std::size_t length = 2 * std::size(test::kAllKinds);
  const auto vectors = test::random_vectors(n, length, rng);

  ReproducibleSum serial(length);
  for (const auto& v : vectors) serial.add(v);
  const std::vector<double> expected = serial.result();

  std::vector<std::set<std::uint64_t>> naive(length);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (int trial = 0; trial < 100; ++trial) {
    std::shuffle(order.begin(), order.end(), rng);
    const ReproducibleSum sum = test::sum_in_random_parts(vectors, order, length, 8, rng);
    EXPECT_EQ(sum.terms(), n);
    const std::vector<double> got = sum.result();
    for (std::size_t j = 0; j < length; ++j) {
      ASSERT_EQ(bits(got[j]), bits(expected[j])) << "entry " << j << ", trial " << trial;
      std::vector<double> column;
      for (const std::size_t k : order) column.push_back(vectors[k][j]);
      naive[j].insert(bits(naive_sum(column)));
    }
  }
  for (std::size_t j = 0; j < length; ++j) {
    const Kind kind = test::kAllKinds[j % std::size(test::kAllKinds)];
    if (test::naive_depends_on_order(kind)) {
      EXPECT_GT(naive[j].size(), 1u) << "entry " << j << ": plain summation gave one value in "
                                     << "every order, so this data would not catch a bug";
    }
  }
  // The special columns: NaN, +Inf, and the zeros' signs.
  for (std::size_t j = 0; j < length; ++j) {
    switch (test::kAllKinds[j % std::size(test::kAllKinds)]) {
      case Kind::WithNaN:
        EXPECT_EQ(bits(expected[j]), bits(kNaN));
        break;
      case Kind::WithInf:
        EXPECT_EQ(bits(expected[j]), bits(kInf));
        break;
      case Kind::NegativeZero:
        EXPECT_EQ(bits(expected[j]), bits(-0.0));
        break;
      case Kind::SignedZeros:
        EXPECT_EQ(bits(expected[j]), bits(0.0));
        break;
      default:
        break;
    }
  }
}

// Integer-valued addends are never truncated, so the sum is the exact sum correctly rounded:
// compared with a 128-bit integer sum converted to double, also when the sum needs rounding.
TEST(ReproducibleSum, IntegerSumsAreCorrectlyRounded) {
  std::mt19937_64 rng(7);
  for (const int scale : {0, -600, 500}) {
    for (const std::size_t n :
         {std::size_t{1}, std::size_t{2}, std::size_t{17}, std::size_t{1000}}) {
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<double> xs(n);
        __int128 exact = 0;
        for (auto& x : xs) {
          const int drop = 11 + static_cast<int>(rng() % 40);
          const auto magnitude = static_cast<std::int64_t>(rng() >> drop);
          const std::int64_t i = rng() % 2 == 0 ? magnitude : -magnitude;
          exact += i;
          x = std::ldexp(static_cast<double>(i), scale);
        }
        const double expected = std::ldexp(static_cast<double>(exact), scale);
        EXPECT_EQ(bits(sum_of(xs)), bits(expected)) << "n " << n << ", scale 2^" << scale;
        EXPECT_EQ(bits(exact_sum(xs)), bits(expected)) << "the reference disagrees";
      }
    }
  }
  // Ties round to even.
  const double two53 = 9007199254740992.0;
  EXPECT_EQ(same_in_every_order({two53, 1.0}), two53);
  EXPECT_EQ(same_in_every_order({two53, 3.0}), two53 + 4.0);
  EXPECT_EQ(same_in_every_order({two53, 1.0, 1.0}), two53 + 2.0);
  EXPECT_EQ(same_in_every_order({-two53, -1.0}), -two53);
}

// |result - exact| <= ulp(result)/2 + n 2^-64 max|x| (see the header), against an exact
// reference; and the correctly rounded exact sum when the addends span less than 2^40.
TEST(ReproducibleSum, AgreesWithTheExactSumToTheStatedAccuracy) {
  std::mt19937_64 rng(11);
  for (const Kind kind :
       {Kind::Wide, Kind::Cancellation, Kind::Subnormal, Kind::Similar, Kind::Mixed}) {
    for (const std::size_t n : {std::size_t{2}, std::size_t{10}, std::size_t{1000}}) {
      for (int trial = 0; trial < 20; ++trial) {
        const auto xs = test::random_column(kind, n, rng);
        const double got = sum_of(xs);
        const double reference = exact_sum(xs);
        double largest = 0.0;
        for (const double x : xs) largest = std::max(largest, std::abs(x));
        const double ulp =
            std::max(std::abs(got), std::abs(reference)) * std::numeric_limits<double>::epsilon() +
            kTiny;
        const double bound = (static_cast<double>(n) * std::ldexp(largest, -64) + ulp) * 1.000001;
        EXPECT_LE(std::abs(got - reference), bound)
            << "n " << n << ", kind " << static_cast<int>(kind) << ": " << got << " vs "
            << reference;
        if (kind == Kind::Subnormal) {  // every bit is inside the window
          EXPECT_EQ(bits(got), bits(reference)) << "n " << n;
        }
      }
    }
  }
  // Addends within a factor 2^40 of each other: nothing is truncated, any signs.
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> xs(1 + rng() % 500);
    std::uniform_real_distribution<double> unit(1.0, 2.0);
    const int base = static_cast<int>(rng() % 1900) - 1000;
    for (auto& x : xs) {
      x = std::ldexp(unit(rng), base + static_cast<int>(rng() % 40)) * (rng() % 2 ? 1.0 : -1.0);
    }
    EXPECT_EQ(bits(sum_of(xs)), bits(exact_sum(xs))) << "trial " << trial;
  }
}

// The accuracy is relative to the largest addend, not to the result: next to 1e300 - 1e300 a
// 1.0 is below the window (2^-64 of the largest addend) and the documented result is +0.0.
TEST(ReproducibleSum, TruncationIsRelativeToTheLargestAddend) {
  EXPECT_EQ(bits(same_in_every_order({1e300, 1.0, -1e300})), bits(0.0));
  const double big = std::ldexp(1.0, 70);
  EXPECT_EQ(bits(same_in_every_order({big, -big, 1e-30})), bits(0.0));
  // Next to a smaller largest addend it is kept.
  EXPECT_EQ(same_in_every_order({1.0, -1.0, std::ldexp(1.0, -60)}), std::ldexp(1.0, -60));
  // The window ends at a digit boundary 64 to 96 bits below the largest addend's leading bit:
  // 1.0 is bit 1074 above 2^-1074, 18 bits into digit 33, so the window is digits 31..33 and
  // ends at 2^-82. 1 + 2^-82 - 1 is exact, 1 + 2^-83 - 1 gives 0, and an addend straddling the
  // boundary is cut toward zero.
  const double kept = std::ldexp(1.0, -82);
  EXPECT_EQ(same_in_every_order({1.0, kept, -1.0}), kept);
  EXPECT_EQ(bits(same_in_every_order({1.0, kept / 2, -1.0})), bits(0.0));
  EXPECT_EQ(same_in_every_order({1.0, -1.5 * kept, -1.0}), -kept);
}

TEST(ReproducibleSum, SignedZeros) {
  EXPECT_EQ(bits(same_in_every_order({-0.0})), bits(-0.0));
  EXPECT_EQ(bits(same_in_every_order({-0.0, -0.0, -0.0})), bits(-0.0));
  EXPECT_EQ(bits(same_in_every_order({-0.0, 0.0})), bits(0.0));
  EXPECT_EQ(bits(same_in_every_order({1.0, -1.0})), bits(0.0));
  EXPECT_EQ(bits(same_in_every_order({-0.0, 1.0, -1.0})), bits(0.0));
  EXPECT_EQ(bits(same_in_every_order({-0.0, -1.0})), bits(-1.0));
}

TEST(ReproducibleSum, SubnormalsAreExact) {
  EXPECT_EQ(same_in_every_order({3 * kTiny, 5 * kTiny}), 8 * kTiny);
  const double largest_subnormal = kMinNormal - kTiny;
  EXPECT_EQ(same_in_every_order({largest_subnormal, kTiny}), kMinNormal);
  EXPECT_EQ(same_in_every_order({kMinNormal, -kTiny}), largest_subnormal);
  EXPECT_EQ(bits(same_in_every_order({kTiny, -kTiny})), bits(0.0));
  EXPECT_EQ(same_in_every_order({kMinNormal, -kMinNormal, -kTiny, kTiny, kTiny}), kTiny);
}

TEST(ReproducibleSum, NaNAndInfinities) {
  const double other_nan = -std::numeric_limits<double>::signaling_NaN();
  EXPECT_EQ(bits(same_in_every_order({kNaN, 1.0, kInf})), bits(kNaN));
  EXPECT_EQ(bits(same_in_every_order({other_nan, 1.0})), bits(kNaN)) << "canonical NaN";
  EXPECT_EQ(bits(same_in_every_order({kInf, -kMax, 1.0})), bits(kInf));
  EXPECT_EQ(bits(same_in_every_order({-kInf, kMax})), bits(-kInf));
  EXPECT_EQ(bits(same_in_every_order({kInf, -kInf, 1.0})), bits(kNaN));
  EXPECT_EQ(bits(same_in_every_order({kInf, kInf, -0.0})), bits(kInf));
}

TEST(ReproducibleSum, OverflowOnlyWhenTheRoundedSumIsTooLarge) {
  EXPECT_EQ(same_in_every_order({kMax, kMax, -kMax}), kMax);
  EXPECT_EQ(naive_sum(std::vector<double>{kMax, kMax, -kMax}), kInf) << "plain summation";
  EXPECT_EQ(same_in_every_order({kMax, kMax}), kInf);
  EXPECT_EQ(same_in_every_order({-kMax, -kMax}), -kInf);
  const double half_ulp = std::ldexp(1.0, 970);            // ulp(DBL_MAX) = 2^971
  EXPECT_EQ(same_in_every_order({kMax, half_ulp}), kInf);  // a tie, rounded to even: 2^1024
  EXPECT_EQ(same_in_every_order({kMax, half_ulp / 2}), kMax);
}

// Doubling a sum by merging it into itself is exact; max_terms is enforced by add and merge.
TEST(ReproducibleSum, TermLimit) {
  ReproducibleSum one(2);
  const std::vector<double> v = {0.1, -3.0e-200};
  one.add(v);
  ReproducibleSum all(2);
  all.merge(one);
  ReproducibleSum power = one;
  for (int i = 1; i <= 30; ++i) {
    power.merge(power);
    all.merge(power);
  }
  EXPECT_EQ(power.terms(), std::uint64_t{1} << 30);
  EXPECT_EQ(power.result()[0], std::ldexp(0.1, 30));
  EXPECT_EQ(power.result()[1], std::ldexp(-3.0e-200, 30));
  EXPECT_EQ(all.terms(), ReproducibleSum::max_terms);
  EXPECT_THROW(all.add(v), Error);
  EXPECT_THROW(power.merge(all), Error);
  EXPECT_EQ(all.terms(), ReproducibleSum::max_terms);
  EXPECT_EQ(power.result()[0], std::ldexp(0.1, 30));
  // Same magnitudes, so no truncation: the correctly rounded (2^31 - 1) * 0.1.
  EXPECT_EQ(all.result()[0], 0.1 * 2147483647.0);
}

}  // namespace
}  // namespace rwd::ensemble
