#pragma once
/// @file
/// `endpoints`: the schedule for steps whose pullback data is made of the states they start and
/// end in (ScheduleParams::pullback_from_states: a theta method in endpoint form, PETSc's CN and
/// backward Euler). The adjoint of step i then needs x_i and x_{i+1} held, stored or working, and
/// no re-run of the step; neighbouring steps share a state, so a run of stored states reverses
/// with no recomputation at one unit a step where stored stages take two. Pure C++.

#include <cstdint>

#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule {

/// The fewest forward steps (the first sweep included) `endpoints` reverses `steps` >= 1 steps
/// with, holding at most `states` >= 2 restart states (x_0 included) and the working state: the
/// recursion in docs/schedules.md. Throws Error(InvalidArgument) for fewer than 2 states or a
/// table over kEndpointsMaxWork.
std::int64_t endpoints_forward_steps(Step steps, std::int64_t states);

/// The largest steps² × states the planner searches (about a second); beyond it `endpoints`
/// refuses and `auto` prices the others.
inline constexpr double kEndpointsMaxWork = 4e8;

/// How many restart states `params` lets `endpoints` hold: ram_units / restart_units with units,
/// else the RAM slots.
std::int64_t endpoints_states(const ScheduleParams& params);

}  // namespace rwd::schedule
