#include "rewind/schedule/action.hpp"

#include <sstream>

#include "rewind/error.hpp"
#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule {

const char* to_string(Level level) noexcept {
  switch (level) {
    case Level::None:
      return "none";
    case Level::Work:
      return "work";
    case Level::Ram:
      return "ram";
    case Level::Disk:
      return "disk";
  }
  return "?";
}

namespace {
struct Printer {
  std::ostringstream& os;
  void operator()(const Forward& a) const {
    os << "Forward(" << a.n0 << ", " << a.n1
       << ", restart=" << (a.write_restart ? to_string(a.level) : "none")
       << ", pullback=" << (a.write_pullback ? to_string(a.level) : "none") << ")";
  }
  void operator()(const Reverse& a) const {
    os << "Reverse(" << a.n1 << ", " << a.n0 << (a.clear_pullback ? ", clear" : ", keep");
    if (a.from_states) os << (a.keep_start ? ", from states, keep start" : ", from states");
    os << ")";
  }
  void operator()(const Copy& a) const {
    os << "Copy(" << a.n << ", " << to_string(a.from) << " -> " << to_string(a.to) << ")";
  }
  void operator()(const Move& a) const {
    os << "Move(" << a.n << ", " << to_string(a.from) << " -> " << to_string(a.to) << ")";
  }
  void operator()(const EndForward&) const { os << "EndForward"; }
  void operator()(const EndReverse&) const { os << "EndReverse"; }
};
}  // namespace

std::string to_string(const Action& action) {
  std::ostringstream os;
  std::visit(Printer{os}, action);
  return os.str();
}

std::string describe(const ScheduleParams& p) {
  std::ostringstream os;
  os << "n=" << p.steps << " ram=" << p.ram << " disk=";
  if (p.disk == kUnlimited) {
    os << "inf";
  } else {
    os << p.disk;
  }
  os << " wd=" << p.write_cost << " rd=" << p.read_cost;
  if (p.ram_units > 0) {
    os << " ram_units=" << p.ram_units << " (restart " << p.restart_units << ", pullback "
       << p.pullback_units << ")";
  }
  if (p.pullback_holds_next) os << " pullback_holds_next";
  return os.str();
}

void Schedule::finalize(Step n) {
  if (n != params_.steps) {
    throw Error(ErrorCode::InvalidArgument,
                name() + " is an offline schedule planned for " + std::to_string(params_.steps) +
                    " steps, but the run ended after " + std::to_string(n) +
                    "; plan with the real step count or use an online schedule");
  }
}

}  // namespace rwd::schedule
