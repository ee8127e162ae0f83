#pragma once
/// @file
/// Wall-clock intervals for statistics, shared by every layer.

#include <chrono>

namespace rwd {

using SteadyClock = std::chrono::steady_clock;

/// Seconds elapsed since `t0`.
inline double seconds_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

}  // namespace rwd
