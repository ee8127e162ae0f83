#pragma once
/// @file
/// Schedules are created by name. The registry lists every schedule it knows, so front ends
/// (rewind-plan, the PETSc options database) pick up new schedules with no change.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule {

using ScheduleFactory = std::function<std::unique_ptr<Schedule>(const ScheduleParams&)>;

/// One registered schedule.
struct ScheduleInfo {
  std::string name;
  std::string summary;     ///< one line for `--help` listings
  bool online = false;     ///< works without knowing the step count in advance
  bool uses_disk = false;  ///< may place checkpoints on disk
  ScheduleFactory factory;
  /// Stores restart states only (pullback data at most in work): its cost for a slot budget can
  /// never be below the two-level optimum for that budget, so `auto` may skip it once something
  /// at least that cheap is found.
  bool restart_only = false;
  /// Plans with checkpoint sizes (ScheduleParams::ram_units, restart_units, pullback_units,
  /// pullback_holds_next). The others are given parameters without them.
  bool sized = false;
  /// Reverses steps from two stored states (schedule::Reverse::from_states) when
  /// ScheduleParams::pullback_from_states allows: the engine then composes pullback data from
  /// states and checks the stepper's declaration; it keeps none, so its refusals are its own.
  bool composes_pullback = false;
};

/// A schedule priced for a budget: the parameters it runs with (the period it chose included,
/// Schedule::period()) and the cost the simulator counted when it was replayed with them.
struct PricedSchedule {
  std::string name;
  ScheduleParams params;
  double cost = 0.0;
  bool stores_pullback = false;    ///< it keeps pullback data outside the working state
  std::int64_t forward_steps = 0;  ///< every forward step the replay ran, recomputations included
  std::int64_t ram_peak = 0;       ///< most RAM checkpoints live at once in the replay
  std::int64_t disk_peak = 0;      ///< most disk checkpoints live at once in the replay
};

/// Name -> factory table. The built-in schedules are registered on first use.
class ScheduleRegistry {
 public:
  /// The process-wide registry, with the built-in schedules in it.
  static ScheduleRegistry& instance();

  /// Adds a schedule; throws if the name is taken or is "auto".
  void add(ScheduleInfo info);

  /// Builds schedule `name` for `params`. "auto" picks the cheapest registered schedule that
  /// accepts the budget (see choose()). Throws Error(InvalidArgument) for an unknown name,
  /// listing the known ones, and for parameters the schedule cannot honour.
  std::unique_ptr<Schedule> create(std::string_view name, const ScheduleParams& params) const;

  /// The name "auto" resolves to for `params`: with a known step count, every registered
  /// schedule that accepts the budget is replayed by the simulator and the cheapest wins (ties
  /// go to the earlier registration); a restart-only schedule is skipped, unreplayed, when the
  /// two-level optimum's proven lower bound already reaches the cheapest found. With an unknown
  /// count, the first online schedule that accepts the budget.
  std::string choose(const ScheduleParams& params) const;

  /// For a driver whose pullback checkpoints (one step's stage values) are larger than its
  /// restart checkpoints, so a byte budget holds fewer of them: schedule `name` is replayed with
  /// `params`; if it keeps pullback data outside the working state it is priced, and must run,
  /// with `pullback_ram` RAM slots instead of params.ram (0 included: then only a schedule that
  /// needs no RAM slot, such as storeall on disk, accepts). Returns nothing if it keeps pullback
  /// data and `pullback_ram` is nullopt (the driver may not store it). Throws like create() when
  /// the schedule does not accept the budget. With pullback_ram == params.ram this is the plain
  /// replayed cost.
  std::optional<PricedSchedule> price(std::string_view name, const ScheduleParams& params,
                                      std::optional<std::int64_t> pullback_ram) const;

  /// choose() for such a driver (params.steps >= 1): every registered schedule is priced by
  /// price() and the cheapest wins, ties to the earlier registration. Throws
  /// Error(InvalidArgument) listing why each one was rejected if none can run.
  PricedSchedule choose_priced(const ScheduleParams& params,
                               std::optional<std::int64_t> pullback_ram) const;

  /// Every registered schedule, in registration order.
  const std::vector<ScheduleInfo>& list() const { return entries_; }

  /// The entry registered as `name`; nullptr for "auto" and unknown names.
  const ScheduleInfo* find(std::string_view name) const;

  /// True if `name` is registered (or is "auto").
  bool contains(std::string_view name) const;

  /// "auto, storeall, revolve, periodic" for error messages and help text.
  std::string names() const;

 private:
  ScheduleRegistry() = default;
  /// price(); if `bound` is given, it receives the schedule's lower_bound() for `params`.
  std::optional<PricedSchedule> price(std::string_view name, const ScheduleParams& params,
                                      std::optional<std::int64_t> pullback_ram,
                                      std::optional<double>* bound) const;
  std::vector<ScheduleInfo> entries_;
};

/// Shorthand for ScheduleRegistry::instance().create(name, params).
std::unique_ptr<Schedule> make_schedule(std::string_view name, const ScheduleParams& params);

}  // namespace rwd::schedule
