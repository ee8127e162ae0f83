#pragma once
// rewind-plan --svg: one picture of a schedule. x is elapsed work (a forward or adjoint step
// takes 1, a disk write wd, a disk read rd), y the step index. Checkpoints are drawn as bars
// from the moment they are stored to the moment they are freed, at the height of their position.
#include <string>
#include <vector>

#include "rewind/schedule/action.hpp"
#include "rewind/schedule/schedule.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rwd::plan {

/// The SVG document for the actions of schedule `name` with parameters `p`, whose simulation
/// gave `result`.
std::string render_svg(const std::vector<schedule::Action>& actions,
                       const schedule::ScheduleParams& p, const std::string& name,
                       const schedule::SimulationResult& result);

}  // namespace rwd::plan
