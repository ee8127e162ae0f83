#pragma once
// Test data and references for ReproducibleSum: columns of addends that make plain summation
// depend on the order, an exact (correctly rounded) reference sum, and a random way to split
// a set of vectors over partial sums.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "rewind/ensemble/reproducible_sum.hpp"

namespace rwd::ensemble::test {

inline std::uint64_t bits(double x) {
  return std::bit_cast<std::uint64_t>(x);
}

inline double naive_sum(std::span<const double> xs) {
  double s = 0.0;
  for (const double x : xs) s += x;
  return s;
}

// The exact sum of finite doubles, rounded to nearest (ties to even): Shewchuk's exact partials
// (each step is an error-free two-sum, so the partials always add up to the exact sum), then
// the partials added from the largest down with the half-way correction. The partial sums
// must not overflow.
inline double exact_sum(std::span<const double> xs) {
  std::vector<double> partials;
  for (double x : xs) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < partials.size(); ++i) {
      double y = partials[i];
      if (std::abs(x) < std::abs(y)) std::swap(x, y);
      const double hi = x + y;
      const double lo = y - (hi - x);
      if (lo != 0.0) partials[kept++] = lo;
      x = hi;
    }
    partials.resize(kept);
    partials.push_back(x);
  }
  if (partials.empty()) return 0.0;
  std::size_t n = partials.size();
  double hi = partials[--n];
  double lo = 0.0;
  while (n > 0) {
    const double x = hi;
    const double y = partials[--n];
    hi = x + y;
    lo = y - (hi - x);
    if (lo != 0.0) break;
  }
  if (n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0))) {
    const double y = lo * 2.0;
    const double x = hi + y;
    if (y == x - hi) hi = x;
  }
  return hi;
}

// Kinds of columns (the addends of one entry).
enum class Kind {
  Wide,          // magnitudes 1e-300 .. 1e300, random signs
  Cancellation,  // large values and their negations around small ones (1e16 + 1 - 1e16)
  Subnormal,     // subnormals and the smallest normals
  Similar,       // uniform in (-1, 1)
  Mixed,         // all of the above, plus -0.0
  NegativeZero,  // -0.0 only
  SignedZeros,   // -0.0 and +0.0
  WithNaN,       // finite values and one NaN
  WithInf,       // finite values and one +Inf
  Straddling,    // +-2^100 pairs that cancel, and values near 2^30 whose low bits fall below
                 // 2^100's window: the result depends on how digits below it are dropped
};

inline constexpr Kind kAllKinds[] = {
    Kind::Wide,         Kind::Cancellation, Kind::Subnormal, Kind::Similar, Kind::Mixed,
    Kind::NegativeZero, Kind::SignedZeros,  Kind::WithNaN,   Kind::WithInf, Kind::Straddling};

// Kinds whose plain sum changes with the order (on a few hundred addends). Not Mixed: its
// largest addends are so far apart that plain summation rarely rounds differently.
inline bool naive_depends_on_order(Kind kind) {
  return kind == Kind::Wide || kind == Kind::Cancellation || kind == Kind::Similar ||
         kind == Kind::Straddling;
}

inline double random_value(Kind kind, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double sign = rng() % 2 == 0 ? 1.0 : -1.0;
  switch (kind) {
    case Kind::Wide:
      return sign * std::pow(10.0, -300.0 + 600.0 * unit(rng));
    case Kind::Cancellation:  // the small ones; random_column() adds the large pairs
      return sign * unit(rng);
    case Kind::Subnormal: {
      const double tiny = std::numeric_limits<double>::denorm_min();
      return rng() % 4 == 0 ? sign * std::numeric_limits<double>::min() * (1.0 + unit(rng))
                            : sign * tiny * static_cast<double>(rng() >> 12);
    }
    case Kind::Similar:
      return sign * unit(rng);
    case Kind::Mixed: {
      const Kind parts[] = {Kind::Wide, Kind::Cancellation, Kind::Subnormal, Kind::Similar,
                            Kind::NegativeZero};
      return random_value(parts[rng() % 5], rng);
    }
    case Kind::NegativeZero:
      return -0.0;
    case Kind::SignedZeros:
      return sign * 0.0;
    case Kind::WithNaN:
    case Kind::WithInf:
      return random_value(Kind::Wide, rng);
    case Kind::Straddling:  // the small ones; random_column() adds the large pairs
      return sign * std::ldexp(1.0 + unit(rng), 30);
  }
  return 0.0;
}

// n addends of one kind. In Cancellation and Straddling columns every large value comes with
// its negation.
inline std::vector<double> random_column(Kind kind, std::size_t n, std::mt19937_64& rng) {
  std::vector<double> column(n);
  for (auto& x : column) x = random_value(kind, rng);
  if (kind == Kind::Cancellation || kind == Kind::Straddling) {
    std::uniform_real_distribution<double> unit(1.0, 2.0);
    for (std::size_t i = 0; i + 1 < n; i += 2) {
      if (kind == Kind::Cancellation && rng() % 3 != 0) {
        column[i] = std::ldexp(unit(rng), 53) * (rng() % 2 == 0 ? 1.0 : -1.0);
      } else if (kind == Kind::Straddling && rng() % 16 == 0) {
        column[i] = std::ldexp(1.0, 100) * (rng() % 2 == 0 ? 1.0 : -1.0);
      } else {
        continue;
      }
      column[i + 1] = -column[i];
    }
  }
  if (n > 0 && kind == Kind::WithNaN) column[rng() % n] = std::numeric_limits<double>::quiet_NaN();
  if (n > 0 && kind == Kind::WithInf) column[rng() % n] = std::numeric_limits<double>::infinity();
  std::shuffle(column.begin(), column.end(), rng);
  return column;
}

// `n` vectors whose entry j is column kinds[j % kinds.size()] (so every kind appears in every
// vector length that holds it).
inline std::vector<std::vector<double>> random_vectors(std::size_t n, std::size_t length,
                                                       std::mt19937_64& rng) {
  std::vector<std::vector<double>> vectors(n, std::vector<double>(length));
  const std::size_t kinds = std::size(kAllKinds);
  for (std::size_t j = 0; j < length; ++j) {
    const auto column = random_column(kAllKinds[j % kinds], n, rng);
    for (std::size_t k = 0; k < n; ++k) vectors[k][j] = column[k];
  }
  return vectors;
}

// Adds the vectors `order` names into 1..max_parts partial sums (each vector to a random one,
// skewed so that some partial sums get few vectors and their windows differ) and merges the
// partial sums pairwise in a random order.
inline ReproducibleSum sum_in_random_parts(const std::vector<std::vector<double>>& vectors,
                                           std::span<const std::size_t> order, std::size_t length,
                                           std::size_t max_parts, std::mt19937_64& rng) {
  std::vector<ReproducibleSum> parts(1 + rng() % max_parts, ReproducibleSum(length));
  for (const std::size_t k : order) parts[rng() % (1 + rng() % parts.size())].add(vectors[k]);
  while (parts.size() > 1) {
    const std::size_t into = rng() % parts.size();
    std::size_t from = rng() % (parts.size() - 1);
    if (from >= into) ++from;
    parts[into].merge(parts[from]);
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(from));
  }
  return parts.front();
}

}  // namespace rwd::ensemble::test
