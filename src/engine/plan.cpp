#include "rewind/engine/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"

namespace rwd::engine {

namespace {

using schedule::ScheduleParams;

// What a resolution depends on: the name asked for, the parameters, and the slots a schedule
// that stores pullback data gets.
struct CacheKey {
  std::string name;
  schedule::Step steps;
  std::int64_t ram, disk, period, pullback_slots, ram_units, restart_units, pullback_units;
  bool holds_next, from_states;
  double write_cost, read_cost, ram_bytes;
  std::vector<double> step_cost, state_bytes;
  auto tie() const {
    return std::tie(name, steps, ram, disk, period, pullback_slots, ram_units, restart_units,
                    pullback_units, holds_next, from_states, write_cost, read_cost, ram_bytes,
                    step_cost, state_bytes);
  }
  bool operator<(const CacheKey& o) const { return tie() < o.tie(); }
};

struct Resolved {
  std::string schedule;
  ScheduleParams params;
  std::optional<bool> stores_pullback;  // known when the schedule was replayed
  std::optional<double> cost;
  std::optional<std::int64_t> forward_steps;
  std::optional<std::int64_t> disk_peak;
};

struct Cache {
  std::mutex mutex;
  std::map<CacheKey, Resolved> entries;
  PlanCacheStats stats;
  static constexpr std::size_t kMax = 256;
};

Cache& cache() {
  static Cache c;
  return c;
}

std::int64_t slots_for(double bytes, std::int64_t each) {
  if (each <= 0) return std::numeric_limits<std::int64_t>::max();
  const double n = std::floor(bytes / static_cast<double>(each));
  return n >= 9e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(n);
}

// Checkpoints of different sizes, for the schedules that plan with them: the budget's bytes in
// units of a common divisor of the two sizes, coarsened so that the larger kind takes at most
// kFinest units (sizes rounded up: a plan never holds more bytes than the budget).
struct Units {
  std::int64_t bytes = 0, budget = 0, restart = 0, pullback = 0;
};

std::optional<Units> units_for(double budget_bytes, const CheckpointSizes& s) {
  constexpr std::int64_t kFinest = 16;
  if (!two_sizes(s)) return std::nullopt;  // slots say it
  const std::int64_t largest = std::max(s.restart, s.pullback);
  std::int64_t unit = std::gcd(s.restart, s.pullback);
  if (largest / unit > kFinest) unit = (largest + kFinest - 1) / kFinest;
  Units u;
  u.bytes = unit;
  u.restart = (s.restart + unit - 1) / unit;
  u.pullback = (s.pullback + unit - 1) / unit;
  u.budget = slots_for(budget_bytes, unit);
  return u;
}

// The registry's answer for `name` ("auto" or a schedule) under `p`, without the cache.
Resolved resolve(const std::string& name, const ScheduleParams& p,
                 std::optional<std::int64_t> pullback_slots, const RecordingConfig& config,
                 const CheckpointSizes& sizes) {
  const auto& registry = schedule::ScheduleRegistry::instance();
  const SettingNames& names = config.names;
  const std::string without =
      config.pullback_checkpoints ? "" : " without storing " + names.pullback_data;
  Resolved out{name, p, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  if (name == "auto" && p.steps == 0) {
    try {
      out.schedule = registry.choose(p);
    } catch (const Error& err) {
      if (err.code() != ErrorCode::InvalidArgument) throw;
      throw Error(
          ErrorCode::InvalidArgument,
          "no online schedule fits " + schedule::describe(p) + without + "; raise " + names.ram +
              " or " + names.disk +
              (names.give_steps.empty() ? std::string()
                                        : ", or give the step count (" + names.give_steps + ")") +
              "\n" + err.what());
    }
    return out;
  }
  if (name == "auto") {
    schedule::PricedSchedule best;
    try {
      best = registry.choose_priced(p, pullback_slots);
    } catch (const Error& err) {
      if (err.code() != ErrorCode::InvalidArgument) throw;
      throw Error(ErrorCode::InvalidArgument, "no schedule fits " + schedule::describe(p) +
                                                  without + "; raise " + names.ram + " or " +
                                                  names.disk + "\n" + err.what());
    }
    return {best.name, best.params,        best.stores_pullback,
            best.cost, best.forward_steps, best.disk_peak};
  }
  if (p.steps > 0) {
    std::optional<schedule::PricedSchedule> priced;
    try {
      priced = registry.price(name, p, pullback_slots);
    } catch (const Error& err) {
      // (A schedule that composes pullback data keeps none: its refusals are its own.)
      const schedule::ScheduleInfo* info = registry.find(name);
      if (err.code() != ErrorCode::InvalidArgument || !pullback_slots || *pullback_slots == p.ram ||
          (info && info->composes_pullback))
        throw;
      // The schedule keeps pullback data and was priced with the slots that leaves.
      throw Error(ErrorCode::InvalidArgument,
                  std::string(err.what()) + " (" + names.schedule + " " + name + " keeps " +
                      names.pullback_data + ": " + std::to_string(sizes.pullback) +
                      " bytes a step against " + std::to_string(sizes.restart) +
                      " of restart data, so the RAM budget holds " +
                      std::to_string(*pullback_slots) + " of them; raise " + names.ram +
                      (config.ram_bytes > 0 ? " or " + names.ram_bytes : "") +
                      " or choose another schedule)");
    }
    if (!priced) {
      throw Error(ErrorCode::InvalidArgument, names.schedule + " " + name + " stores " +
                                                  names.pullback_data + ", which " +
                                                  names.no_pullback +
                                                  " forbids; choose another "
                                                  "schedule");
    }
    return {priced->name, priced->params,        priced->stores_pullback,
            priced->cost, priced->forward_steps, priced->disk_peak};
  }
  const auto schedule = registry.create(name, p);
  require(schedule->online(),
          "schedule '" + name + "' needs the step count in advance; " + step_count_advice(names));
  return out;
}

}  // namespace

bool two_sizes(const CheckpointSizes& s) {
  return s.restart > 0 && s.pullback > 0 && (s.restart != s.pullback || s.pullback_holds_next);
}

std::int64_t any_slot_bytes(const CheckpointSizes& sizes, bool counts_state) {
  const std::int64_t with_state =
      sizes.pullback + (sizes.pullback_holds_next && !counts_state ? 0 : sizes.restart);
  return std::max(sizes.restart, with_state);
}

std::int64_t slots_filled(double bytes, std::int64_t slot_bytes) {
  if (bytes <= 0 || slot_bytes <= 0) return 0;
  // A hair below a whole slot is that slot (sums of sizes in double).
  return static_cast<std::int64_t>(std::ceil(bytes / static_cast<double>(slot_bytes) - 1e-9));
}

std::int64_t claimed_slots(const Plan& plan, std::int64_t count, double bytes) {
  return plan.slot_bytes > 0 ? slots_filled(bytes, plan.slot_bytes) : count;
}

std::string step_count_advice(const SettingNames& names) {
  const std::string give =
      names.give_steps.empty() ? "" : "give the exact step count (" + names.give_steps + ")";
  const std::string online = names.online_schedule.empty() ? "" : "choose " + names.online_schedule;
  if (give.empty() && online.empty()) return "the run needs a schedule that fits its step count";
  return give + (give.empty() || online.empty() ? "" : ", or ") + online;
}

// The bytes one RAM slot of the budget stands for when planning with checkpoint sizes.
static std::int64_t slot_bytes_of(const RecordingConfig& config, const CheckpointSizes& sizes) {
  return config.slot_size == SlotSize::Any ? any_slot_bytes(sizes, config.slot_counts_state)
                                           : sizes.restart;
}

// A RAM slot count at least this large stands for no slot budget (a byte budget alone decides).
constexpr std::int64_t kHugeSlots = std::int64_t{1} << 40;

// Whether restart-only schedules fill the budget's slots with restart states by bytes: when a
// slot stands for a step's pullback data with the state it ends in (SlotSize::Any, PETSc's
// stage checkpoint, any_slot_bytes()) and that is larger than a restart state, N slots hold
// N * any_slot_bytes / restart states, as PETSc lets CAMS spend them.
static bool restart_only_fill(const RecordingConfig& config, const CheckpointSizes& sizes,
                              std::int64_t ram) {
  return config.slot_size == SlotSize::Any && two_sizes(sizes) && ram > 0 && ram < kHugeSlots &&
         any_slot_bytes(sizes, config.slot_counts_state) > sizes.restart;
}

// The budget (`ram` slots, and the byte budget) in units, for schedules that know checkpoint
// sizes (`mixed`): a restart checkpoint then takes only its own bytes, where a slot must fit the
// larger kind (SlotSize::Any: a slot is worth a step's pullback data with the state it ends in,
// any_slot_bytes()). Only when pullback data may be kept and the step count is known.
static std::optional<Units> budget_units(const RecordingConfig& config,
                                         const CheckpointSizes& sizes, std::int64_t ram) {
  if (!config.pullback_checkpoints || config.params.steps <= 0) return std::nullopt;
  double bytes = static_cast<double>(ram) * static_cast<double>(slot_bytes_of(config, sizes));
  if (config.ram_bytes > 0) bytes = std::min(bytes, config.ram_bytes);
  return units_for(bytes, sizes);
}

// A plan made in units claims the budget's slots its units fill (more checkpoints of the smaller
// kind may be live; the bytes are the bound).
static void in_units(Plan& plan, const Units& units, std::int64_t slot_bytes,
                     std::int64_t restart_slots) {
  plan.unit_bytes = units.bytes;
  plan.ram_bytes_bound =
      static_cast<double>(plan.params.ram_units) * static_cast<double>(units.bytes);
  plan.slot_bytes = slot_bytes;
  plan.params.ram = std::clamp<std::int64_t>(slots_filled(plan.ram_bytes_bound, slot_bytes), 1,
                                             std::max<std::int64_t>(restart_slots, 1));
}

// The settings plan_recording() refuses, by the front end's names.
static void check_config(const RecordingConfig& config, const CheckpointSizes& sizes) {
  const SettingNames& names = config.names;
  const ScheduleParams& p = config.params;
  require(p.steps >= 0,
          names.steps + " must be >= 0 (0 = not known in advance), got " + std::to_string(p.steps));
  require(std::isfinite(config.ram_bytes) && config.ram_bytes >= 0,
          names.ram_bytes + " must be a finite number >= 0 (0: no byte budget)");
  require(std::isfinite(config.verify_tolerance) && config.verify_tolerance >= 0 &&
              config.verify_tolerance < 1,
          config.names.verify_tolerance +
              " must be at least 0 (0: the same bits) and below 1 (a difference as large as "
              "the state), got " +
              std::to_string(config.verify_tolerance));
  require(config.verify || config.verify_tolerance == 0,
          config.names.verify_tolerance + " is given with the replay check off (" +
              config.names.verify + "), where it would do nothing");
  require(config.max_steps >= 0, "RecordingConfig::max_steps must be >= 0 (0: no bound), got " +
                                     std::to_string(config.max_steps));
  require(sizes.restart >= 0 && sizes.pullback >= 0, "checkpoint sizes must be >= 0");
}

// RAM slots: for restart checkpoints (as many as the bytes hold where a slot stands for more,
// restart_only_fill()), and for schedules that keep pullback data, which a byte budget (or
// restart-sized slots) holds fewer of when it is larger.
static std::pair<std::int64_t, std::optional<std::int64_t>> budget_slots(
    const RecordingConfig& config, const CheckpointSizes& sizes, std::int64_t ram, bool fill) {
  std::int64_t restart_slots = ram;
  if (fill) {
    restart_slots =
        slots_for(static_cast<double>(ram) * static_cast<double>(slot_bytes_of(config, sizes)),
                  sizes.restart);
  }
  const std::int64_t largest = std::max(sizes.restart, sizes.pullback);
  std::optional<std::int64_t> pullback_slots;
  if (config.pullback_checkpoints) {
    pullback_slots =
        config.slot_size == SlotSize::Any || largest == 0
            ? ram
            : slots_for(static_cast<double>(ram) * static_cast<double>(sizes.restart), largest);
  }
  if (config.ram_bytes > 0) {
    const std::int64_t by_bytes = slots_for(config.ram_bytes, sizes.restart);
    require(by_bytes >= 1, config.names.ram_bytes + " " +
                               std::to_string(static_cast<long long>(config.ram_bytes)) +
                               " holds no checkpoint of " + std::to_string(sizes.restart) +
                               " bytes; raise it");
    restart_slots = std::min(restart_slots, by_bytes);
    if (pullback_slots)
      pullback_slots = std::min(*pullback_slots, slots_for(config.ram_bytes, largest));
  }
  return {restart_slots, pullback_slots};
}

// plan_recording() for checkpoints of the sizes given (no compression).
static Plan plan_sized(const RecordingConfig& config, const CheckpointSizes& sizes) {
  ScheduleParams p = config.params;
  check_config(config, sizes);
  // A byte budget with no slot count (params.ram = 0): the bytes alone decide.
  if (config.ram_bytes > 0 && p.ram == 0) p.ram = kHugeSlots;
  const bool fill = restart_only_fill(config, sizes, p.ram);
  auto [restart_slots, pullback_slots] = budget_slots(config, sizes, p.ram, fill);
  const std::optional<Units> units = budget_units(config, sizes, p.ram);
  if (p.steps > 0) {  // more slots than steps are of no use
    restart_slots = std::min(restart_slots, p.steps);
    if (pullback_slots) pullback_slots = std::min(*pullback_slots, p.steps);
  }
  p.ram = restart_slots;
  if (units) {
    p.ram_units = units->budget;
    p.restart_units = units->restart;
    p.pullback_units = units->pullback;
    p.pullback_holds_next = sizes.pullback_holds_next;
  }
  p.pullback_from_states = sizes.pullback_from_states;

  const CacheKey key{config.schedule,
                     p.steps,
                     p.ram,
                     p.disk,
                     p.period,
                     pullback_slots.value_or(-1),
                     p.ram_units,
                     p.restart_units,
                     p.pullback_units,
                     p.pullback_holds_next,
                     p.pullback_from_states,
                     p.write_cost,
                     p.read_cost,
                     p.ram_bytes,
                     p.step_cost,
                     p.state_bytes};
  Resolved resolved;
  {
    Cache& c = cache();
    std::unique_lock lock(c.mutex);
    auto it = c.entries.find(key);
    if (it != c.entries.end()) {
      ++c.stats.reused;
      resolved = it->second;
    } else {
      lock.unlock();  // planning may take seconds; another thread may plan the same meanwhile
      resolved = resolve(config.schedule, p, pullback_slots, config, sizes);
      lock.lock();
      ++c.stats.planned;
      if (c.entries.size() >= Cache::kMax) c.entries.clear();
      c.entries.emplace(key, resolved);
    }
  }

  Plan plan;
  plan.schedule = resolved.schedule;
  plan.params = resolved.params;
  plan.cost = resolved.cost;
  plan.forward_steps = resolved.forward_steps;
  plan.disk_peak = resolved.disk_peak;
  plan.restart_slots = restart_slots;
  plan.pullback_slots = pullback_slots;
  const schedule::ScheduleInfo* info = schedule::ScheduleRegistry::instance().find(plan.schedule);
  plan.composes_pullback = info && info->composes_pullback && plan.params.pullback_from_states;
  if (resolved.stores_pullback) {
    plan.stores_pullback = *resolved.stores_pullback;
  } else if (info) {  // not replayed (no step count): what the schedule may do
    plan.stores_pullback = config.pullback_checkpoints && !info->restart_only;
  }
  if (plan.params.ram_units > 0) {
    in_units(plan, *units, slot_bytes_of(config, sizes), restart_slots);
  } else {
    plan.ram_bytes_bound =
        static_cast<double>(plan.params.ram) *
        static_cast<double>(plan.stores_pullback ? std::max(sizes.restart, sizes.pullback)
                                                 : sizes.restart);
    // Restart states filling the bytes of slots that stand for more: claims count those slots.
    if (fill && !plan.stores_pullback) {
      plan.slot_bytes = slot_bytes_of(config, sizes);
    }
  }
  plan.sizes = sizes;
  return plan;
}

// The RAM bytes a budget stands for when its checkpoints are compressed: params.ram slots of
// uncompressed checkpoints (what a slot holds, slot_bytes_of()) and the byte budget, whichever
// is smaller; 0 for no RAM budget.
static double ram_budget_bytes(const RecordingConfig& config, const CheckpointSizes& sizes) {
  const std::int64_t ram = config.params.ram;
  const std::int64_t steps = config.params.steps;
  if (config.ram_bytes <= 0 && steps > 0 && ram >= steps) return 0.0;  // every step fits anyway
  double bytes = 0.0;
  if (ram > 0 && ram < kHugeSlots)
    bytes = static_cast<double>(ram) * static_cast<double>(slot_bytes_of(config, sizes));
  if (config.ram_bytes > 0)
    bytes = bytes > 0 ? std::min(bytes, config.ram_bytes) : config.ram_bytes;
  return bytes;
}

void check_compress_ratio(double ratio, const std::string& name) {
  if (std::isfinite(ratio) && (ratio == 0.0 || (ratio >= 1.0 && ratio <= kMaxCompressRatio))) {
    return;
  }
  char text[160];
  std::snprintf(text, sizeof text,
                " must be 0 (measured on the initial state), 1 (plan as uncompressed) or a ratio "
                "above 1 (at most %g), got %g",
                kMaxCompressRatio, ratio);
  throw Error(ErrorCode::InvalidArgument, name + text);
}

CheckpointSizes stored_sizes(const CheckpointSizes& sizes) {
  CheckpointSizes out = sizes;
  out.compress_ratio = 1.0;
  if (sizes.compress_ratio <= 1.0) return out;
  const auto scaled = [&](std::int64_t bytes) {
    return static_cast<std::int64_t>(std::ceil(static_cast<double>(bytes) / sizes.compress_ratio));
  };
  out.restart = scaled(sizes.restart);
  out.pullback = scaled(sizes.pullback);
  out.state = scaled(sizes.state);
  return out;
}

Plan plan_recording(const RecordingConfig& config, const CheckpointSizes& sizes) {
  require(std::isfinite(sizes.compress_ratio) && sizes.compress_ratio >= 1.0,
          config.names.compress_ratio + " must plan with a ratio of at least 1, got " +
              std::to_string(sizes.compress_ratio));
  CheckpointSizes plain = sizes;
  plain.compress_ratio = 1.0;
  const double budget = sizes.compress_ratio > 1.0 ? ram_budget_bytes(config, plain) : 0.0;
  if (budget <= 0.0) {
    Plan plan = plan_sized(config, plain);
    plan.sizes = sizes;
    return plan;
  }
  // The same budget in bytes, filled with checkpoints of their compressed sizes.
  RecordingConfig compressed = config;
  compressed.ram_bytes = budget;
  compressed.params.ram = 0;
  Plan plan = plan_sized(compressed, stored_sizes(sizes));
  plan.sizes = sizes;
  plan.compressed_budget = budget;
  // Claims count the slots of uncompressed checkpoints the planned bytes fill.
  plan.slot_bytes = slot_bytes_of(config, plain);
  plan.pullback_data = config.names.pullback_data;
  plan.over_budget_advice = "Plan with a lower ratio (" + config.names.compress_ratio +
                            "; 1: as if uncompressed), or give disk checkpoints, or more of "
                            "them (" +
                            config.names.disk + "), for the checkpoints that do not fit";
  try {
    const Plan without = plan_sized(config, plain);
    plan.uncompressed_restart_slots = without.restart_slots;
    plan.uncompressed_forward_steps = without.forward_steps;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::InvalidArgument) throw;  // only compression makes it fit
  }
  return plan;
}

schedule::SimulationResult replay_plan(const Plan& plan, double write_cost, double read_cost) {
  require(plan.params.steps > 0, "replay_plan: the plan of an online run (" + plan.schedule +
                                     ", step count unknown) has no cost to replay");
  const auto schedule = schedule::make_schedule(plan.schedule, plan.params);
  ScheduleParams limits = plan.params;
  limits.write_cost = write_cost;
  limits.read_cost = read_cost;
  return schedule::simulate(*schedule, limits);
}

PlanCacheStats plan_cache_stats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.stats;
}

}  // namespace rwd::engine
