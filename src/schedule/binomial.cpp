#include "rewind/schedule/binomial.hpp"

#include <algorithm>

#include "rewind/error.hpp"

namespace rwd::schedule {

namespace {
constexpr std::int64_t kSaturated = std::int64_t{1} << 62;
}

std::int64_t beta(std::int64_t s, std::int64_t t) noexcept {
  if (t < 0 || s < 0) return 0;
  // C(s + t, k) with k = min(s, t); each partial product is itself a binomial coefficient.
  const std::int64_t k = std::min(s, t);
  unsigned __int128 c = 1;
  for (std::int64_t i = 1; i <= k; ++i) {
    c = c * static_cast<unsigned __int128>(s + t - k + i) / static_cast<unsigned __int128>(i);
    if (c >= static_cast<unsigned __int128>(kSaturated)) return kSaturated;
  }
  return static_cast<std::int64_t>(c);
}

std::int64_t repetitions(std::int64_t n, std::int64_t s) {
  require(n >= 1, "repetitions: n must be >= 1, got " + std::to_string(n));
  require(s >= 1, "repetitions: s must be >= 1, got " + std::to_string(s));
  // beta(s, r) = beta(s, r - 1) * (s + r) / r, exact in integers.
  unsigned __int128 b = 1;
  std::int64_t r = 0;
  while (b < static_cast<unsigned __int128>(n)) {
    ++r;
    b = b * static_cast<unsigned __int128>(s + r) / static_cast<unsigned __int128>(r);
  }
  return r;
}

std::int64_t revolve_fwd_total(std::int64_t n, std::int64_t s) {
  const std::int64_t r = repetitions(n, s);
  return n + r * n - beta(s + 1, r - 1);
}

}  // namespace rwd::schedule
