#include "recompute_warning.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "rewind/error.hpp"

namespace rwd::petsc {

namespace {

// The largest checkpoint, the unit a byte budget is raised in.
double largest(const engine::CheckpointSizes& sizes) {
  return static_cast<double>(
      std::max<std::int64_t>({sizes.restart, sizes.pullback, std::int64_t{1}}));
}

// `config` with a RAM budget of `ram` checkpoints: the slot count if the budget was given as
// one, and a byte budget raised to as many of the largest checkpoints.
engine::RecordingConfig with_ram(engine::RecordingConfig config,
                                 const engine::CheckpointSizes& sizes, std::int64_t ram,
                                 bool slots) {
  if (slots) config.params.ram = ram;
  if (config.ram_bytes > 0) config.ram_bytes = static_cast<double>(ram) * largest(sizes);
  return config;
}

// The steps the plan of `config` recomputes, or nothing if no schedule accepts the budget.
std::optional<std::int64_t> recomputed(const engine::RecordingConfig& config,
                                       const engine::CheckpointSizes& sizes) {
  try {
    const engine::Plan plan = engine::plan_recording(config, sizes);
    if (!plan.forward_steps) return std::nullopt;
    return *plan.forward_steps - config.params.steps;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::InvalidArgument) throw;
    return std::nullopt;
  }
}

std::string times(double r) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", r);
  return text;
}

}  // namespace

std::int64_t ram_for_recompute(const engine::RecordingConfig& config,
                               const engine::CheckpointSizes& sizes, double multiple, bool slots) {
  const std::int64_t n = config.params.steps;
  if (n <= 0) return 0;
  const auto fits = [&](std::int64_t ram) {
    const std::optional<std::int64_t> r = recomputed(with_ram(config, sizes, ram, slots), sizes);
    return r && static_cast<double>(*r) <= multiple * static_cast<double>(n);
  };
  // More RAM never makes a plan recompute more: the smallest that fits, by bisection between
  // the budget given (which does not) and the step count (which stores every step).
  std::int64_t given = slots ? config.params.ram : n;
  if (config.ram_bytes > 0) {
    given = std::min(given, static_cast<std::int64_t>(config.ram_bytes / largest(sizes)));
  }
  std::int64_t low = std::clamp<std::int64_t>(given, 0, n), high = n;
  if (!fits(high)) return 0;
  while (high - low > 1) {
    const std::int64_t mid = low + (high - low) / 2;
    (fits(mid) ? high : low) = mid;
  }
  return high;
}

std::string recompute_warning(const engine::Plan& plan, const engine::RecordingConfig& config,
                              const Options& o) {
  const std::int64_t n = plan.params.steps;
  const double multiple = o.recompute_warning;
  if (multiple <= 0 || n <= 0 || !plan.forward_steps) return {};
  const std::int64_t again = *plan.forward_steps - n;
  if (static_cast<double>(again) <= multiple * static_cast<double>(n)) return {};
  std::string out =
      "rewind: warning: the plan recomputes " + std::to_string(again) + " steps to reverse " +
      std::to_string(n) + ", " + times(static_cast<double>(again) / static_cast<double>(n)) +
      " times as many (" + plan.schedule + " with " + std::to_string(plan.params.ram) +
      (plan.params.ram == 1 ? " RAM checkpoint" : " RAM checkpoints") + "), more than the " +
      times(multiple) + " times -ts_trajectory_rewind_recompute_warning allows";
  const bool slots = o.max_cps_ram >= 0 || o.ram_bytes <= 0;
  const std::int64_t ram = ram_for_recompute(config, plan.sizes, multiple, slots);
  if (ram > 0) {
    const engine::RecordingConfig better = with_ram(config, plan.sizes, ram, slots);
    const std::int64_t at = recomputed(better, plan.sizes).value_or(0);
    std::string budget;
    if (slots) {
      budget = "-ts_trajectory_max_cps_ram " + std::to_string(ram);
    }
    if (o.ram_bytes > 0) {
      char bytes[32];
      std::snprintf(bytes, sizeof bytes, "%.0f", better.ram_bytes);
      budget +=
          (budget.empty() ? "" : " ") + std::string("-ts_trajectory_rewind_ram_bytes ") + bytes;
    }
    out += "; the smallest RAM budget that recomputes at most " + times(multiple) +
           " times as many is " + budget + " (" + std::to_string(at) + " steps, " +
           times(static_cast<double>(at) / static_cast<double>(n)) + " times)";
  } else {
    out +=
        "; no RAM budget up to the step count brings it there (with this disk budget and "
        "schedule)";
  }
  return out + ". -ts_trajectory_rewind_recompute_warning 0 silences this warning.\n";
}

}  // namespace rwd::petsc
