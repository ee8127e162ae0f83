#include "rewind/schedule/registry.hpp"

#include <mutex>
#include <optional>
#include <variant>

#include "builtin.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rwd::schedule {

namespace detail {

void check_offline_params(const std::string& schedule, const ScheduleParams& p,
                          std::int64_t min_ram) {
  require(p.steps >= 1, schedule + ": the step count must be >= 1 (got " + std::to_string(p.steps) +
                            "); this schedule needs it in advance");
  require(p.ram >= min_ram, schedule + ": RAM slots must be >= " + std::to_string(min_ram) +
                                " (the count includes the slot holding x_0), got " +
                                std::to_string(p.ram));
  require(p.disk >= 0 || p.disk == kUnlimited,
          schedule + ": disk slots must be >= 0 or unlimited, got " + std::to_string(p.disk));
  require(p.write_cost >= 0.0,
          schedule + ": disk write cost must be >= 0, got " + std::to_string(p.write_cost));
  require(p.read_cost >= 0.0,
          schedule + ": disk read cost must be >= 0, got " + std::to_string(p.read_cost));
}

}  // namespace detail

ScheduleRegistry& ScheduleRegistry::instance() {
  static ScheduleRegistry registry;
  static std::once_flag once;
  std::call_once(once, [] {
    detail::register_storeall(registry);
    detail::register_revolve(registry);
    detail::register_periodic(registry);
    detail::register_twolevel(registry);
    detail::register_online(registry);
    detail::register_disk_revolve(registry);
    detail::register_mixed(registry);
    detail::register_disk_mixed(registry);
    detail::register_dynamic(registry);
    detail::register_endpoints(registry);
  });
  return registry;
}

void ScheduleRegistry::add(ScheduleInfo info) {
  require(!info.name.empty() && info.name != "auto",
          "schedule registry: the name '" + info.name + "' is reserved or empty");
  require(find(info.name) == nullptr,
          "schedule registry: a schedule named '" + info.name + "' is already registered");
  require(static_cast<bool>(info.factory), "schedule registry: '" + info.name + "' has no factory");
  entries_.push_back(std::move(info));
}

const ScheduleInfo* ScheduleRegistry::find(std::string_view name) const {
  for (const auto& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

bool ScheduleRegistry::contains(std::string_view name) const {
  return name == "auto" || find(name) != nullptr;
}

std::string ScheduleRegistry::names() const {
  std::string out = "auto";
  for (const auto& e : entries_) out += ", " + e.name;
  return out;
}

std::string ScheduleRegistry::choose(const ScheduleParams& params) const {
  if (params.steps <= 0) {
    // Without a step count nothing can be replayed: the first online schedule that accepts the
    // budget (registration order puts the general ones first).
    std::string why;
    for (const auto& e : entries_) {
      if (!e.online) continue;
      try {
        e.factory(params);
        return e.name;
      } catch (const Error& err) {
        if (err.code() != ErrorCode::InvalidArgument) throw;
        why += "\n  " + e.name + ": " + err.what();
      }
    }
    throw Error(ErrorCode::InvalidArgument,
                "auto: the step count is not known in advance and no online schedule accepts " +
                    describe(params) + ":" + why);
  }
  return choose_priced(params, params.ram).name;
}

std::optional<PricedSchedule> ScheduleRegistry::price(
    std::string_view name, const ScheduleParams& params,
    std::optional<std::int64_t> pullback_ram) const {
  return price(name, params, pullback_ram, nullptr);
}

std::optional<PricedSchedule> ScheduleRegistry::price(std::string_view name,
                                                      const ScheduleParams& params,
                                                      std::optional<std::int64_t> pullback_ram,
                                                      std::optional<double>* bound) const {
  // A schedule that knows checkpoint sizes plans with the units; the others with slots.
  const ScheduleInfo* info = find(name);
  const bool sized = info != nullptr && info->sized && params.ram_units > 0;
  ScheduleParams base = params;
  if (!sized) {
    base.ram_units = 0;
    base.pullback_holds_next = false;
  }
  const auto replay = [&](const ScheduleParams& p, PricedSchedule& out) {
    auto schedule = create(name, p);
    out.name = schedule->name();
    out.params = p;
    // The period it chose: the parameters then say all the schedule does.
    if (const std::int64_t k = schedule->period(); k > 0) out.params.period = k;
    const SimulationResult r = simulate(*schedule, p, [&](const Action& a) {
      if (const auto* f = std::get_if<Forward>(&a)) {
        out.stores_pullback = out.stores_pullback || (f->write_pullback && f->level != Level::Work);
      }
    });
    out.cost = r.cost;
    out.forward_steps = r.fwd_total;
    out.ram_peak = r.ram.peak;
    out.disk_peak = r.disk.peak;
    if (bound != nullptr && &p == &base) *bound = schedule->lower_bound();
  };
  PricedSchedule out;
  replay(base, out);
  if (sized) {  // the units count each kind's size already
    if (out.stores_pullback && !pullback_ram) return std::nullopt;
    return out;
  }
  if (!out.stores_pullback || pullback_ram == params.ram) return out;
  if (!pullback_ram) return std::nullopt;
  ScheduleParams q = base;
  q.ram = *pullback_ram;
  replay(q, out);
  out.stores_pullback = true;
  return out;
}

PricedSchedule ScheduleRegistry::choose_priced(const ScheduleParams& params,
                                               std::optional<std::int64_t> pullback_ram) const {
  require(params.steps >= 1, "auto: pricing schedules needs the step count");
  std::optional<PricedSchedule> best;
  std::string rejected;
  // A proven lower bound on every restart-only schedule for this slot budget: twolevel's
  // (the two-level optimum; Revolve's without disk). Not for byte budgets.
  std::optional<double> restart_bound;
  for (const auto& e : entries_) {
    if (e.restart_only && restart_bound && params.ram_bytes <= 0.0 && best &&
        *restart_bound >= best->cost) {
      continue;  // cannot be cheaper than what was found
    }
    std::optional<PricedSchedule> priced;
    try {
      // twolevel's bound (planned anyway) serves the restart-only schedules after it.
      priced = price(e.name, params, pullback_ram, e.name == "twolevel" ? &restart_bound : nullptr);
    } catch (const Error& err) {
      if (err.code() != ErrorCode::InvalidArgument) throw;
      rejected += "\n  " + e.name + ": " + err.what();
      continue;
    }
    if (!priced) {
      rejected += "\n  " + e.name + ": stores pullback data, which this budget cannot hold";
      continue;
    }
    if (!best || priced->cost < best->cost) best = std::move(priced);
  }
  if (!best) {
    throw Error(ErrorCode::InvalidArgument,
                "auto: no registered schedule accepts " + describe(params) + ":" + rejected);
  }
  return *best;
}

std::unique_ptr<Schedule> ScheduleRegistry::create(std::string_view name,
                                                   const ScheduleParams& params) const {
  if (name == "auto") return create(choose(params), params);
  const ScheduleInfo* info = find(name);
  if (info == nullptr) {
    throw Error(ErrorCode::InvalidArgument,
                "unknown schedule '" + std::string(name) + "'; known schedules: " + names());
  }
  return info->factory(params);
}

std::unique_ptr<Schedule> make_schedule(std::string_view name, const ScheduleParams& params) {
  return ScheduleRegistry::instance().create(name, params);
}

}  // namespace rwd::schedule
