#pragma once
// Private: the built-in schedules and shared parameter checks. One file per schedule.

#include <string>

#include "rewind/schedule/registry.hpp"

namespace rwd::schedule::detail {

void register_storeall(ScheduleRegistry& registry);
void register_revolve(ScheduleRegistry& registry);
void register_periodic(ScheduleRegistry& registry);
void register_twolevel(ScheduleRegistry& registry);
void register_disk_revolve(ScheduleRegistry& registry);
void register_online(ScheduleRegistry& registry);
void register_mixed(ScheduleRegistry& registry);
void register_disk_mixed(ScheduleRegistry& registry);
void register_dynamic(ScheduleRegistry& registry);
void register_endpoints(ScheduleRegistry& registry);

/// Checks what every offline schedule needs: steps >= 1, ram >= min_ram, disk >= 0 or
/// unlimited, costs >= 0. Messages start with the schedule's name.
void check_offline_params(const std::string& schedule, const ScheduleParams& params,
                          std::int64_t min_ram);

}  // namespace rwd::schedule::detail
