#pragma once
/// @file
/// Closed forms of binomial checkpointing (Griewank & Walther), slot counts including x_0.

#include <cstdint>

namespace rwd::schedule {

/// beta(s, t) = C(s + t, s), saturated at 2^62; 0 for t < 0.
std::int64_t beta(std::int64_t s, std::int64_t t) noexcept;

/// The repetition number r = min { r >= 0 : beta(s, r) >= n } for n >= 1, s >= 1.
std::int64_t repetitions(std::int64_t n, std::int64_t s);

/// Forward steps Revolve evaluates for n steps and s slots: n + r*n - beta(s + 1, r - 1).
std::int64_t revolve_fwd_total(std::int64_t n, std::int64_t s);

}  // namespace rwd::schedule
