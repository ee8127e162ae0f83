// rewind-plan: what will an adjoint run cost with a given checkpoint budget, before anyone runs
// a solver? Every count comes from replaying the schedule in the simulator.
//
//   rewind-plan --steps 1000 --ram 10
//   rewind-plan --steps 1000 --ram 10 --schedule periodic --json
//   rewind-plan --steps 10 --ram 3 --schedule revolve --actions
//   rewind-plan --steps 50 --ram 2 --disk 5 --write-cost 0.5 --read-cost 0.5 --schedule twolevel
//   rewind-plan --steps 5000 --ram 8 --online                      # n unknown while running
//   rewind-plan --steps 40 --ram 3 --disk 4 --schedule twolevel --svg schedule.svg
//   rewind-plan --steps 300 --ram 20 --pullback-from-states        # CN: endpoints
//   rewind-plan --list
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"
#include "schedule_svg.hpp"

namespace rs = rwd::schedule;

namespace {

constexpr const char* kUsage =
    "usage: rewind-plan --steps N --ram S [--disk D|inf] [--write-cost W] [--read-cost R]\n"
    "                   [--schedule NAME] [--period K] [--online] [--json] [--actions]\n"
    "                   [--svg FILE] [--pullback-from-states]\n"
    "       rewind-plan --list\n"
    "\n"
    "  --steps N        number of time steps (>= 1)\n"
    "  --ram S          RAM checkpoint slots, counting the one holding x_0 (>= 0)\n"
    "  --disk D|inf     disk checkpoint slots (default 0)\n"
    "  --write-cost W   cost of one disk write, in forward steps (default 0)\n"
    "  --read-cost R    cost of one disk read, in forward steps (default 0)\n"
    "  --schedule NAME  a registered schedule or 'auto' (default auto: the cheapest that fits)\n"
    "  --period K       checkpoint interval for 'periodic', disk interval for 'disk-revolve'\n"
    "                   and 'disk-mixed' (default: best for the budget; disk-mixed places its\n"
    "                   disk checkpoints by a recursion unless given one)\n"
    "  --json           print one JSON object instead of the summary\n"
    "  --online         plan without knowing the step count (online schedules); the run\n"
    "                   then ends after --steps N steps and the cost at N is reported\n"
    "  --actions        print the action stream, one action per line, before the summary\n"
    "  --svg FILE       draw the schedule: time across, step up; first sweep, recomputation,\n"
    "                   adjoint, RAM and disk checkpoints in different colours\n"
    "  --pullback-from-states\n"
    "                   a step's pullback data is the two states it joins (PETSc's CN and\n"
    "                   backward Euler): 'endpoints' can plan it, and auto prices it; --ram\n"
    "                   counts states, and 'mixed' counts a step's stages as two of them\n"
    "  --list           list the registered schedules\n";

struct Options {
  rs::ScheduleParams params;
  std::string schedule = "auto";
  bool json = false;
  bool actions = false;
  bool online = false;
  std::string svg;
  bool list = false;
  bool have_steps = false;
  bool have_ram = false;
};

std::int64_t parse_int(std::string_view flag, std::string_view text, std::int64_t min) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  rwd::require(ec == std::errc() && end == text.data() + text.size() && value >= min,
               std::string(flag) + ": expected an integer >= " + std::to_string(min) + ", got '" +
                   std::string(text) + "'");
  return value;
}

double parse_cost(std::string_view flag, std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  rwd::require(ec == std::errc() && end == text.data() + text.size() && value >= 0.0,
               std::string(flag) + ": expected a number >= 0, got '" + std::string(text) + "'");
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string_view> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    const auto value = [&]() -> std::string_view {
      rwd::require(i + 1 < args.size(), std::string(a) + " needs a value");
      return args[++i];
    };
    if (a == "--steps") {
      o.params.steps = parse_int(a, value(), 1);
      o.have_steps = true;
    } else if (a == "--ram") {
      o.params.ram = parse_int(a, value(), 0);
      o.have_ram = true;
    } else if (a == "--disk") {
      const std::string_view v = value();
      o.params.disk = (v == "inf" || v == "unlimited") ? rs::kUnlimited : parse_int(a, v, 0);
    } else if (a == "--write-cost") {
      o.params.write_cost = parse_cost(a, value());
    } else if (a == "--read-cost") {
      o.params.read_cost = parse_cost(a, value());
    } else if (a == "--schedule") {
      o.schedule = std::string(value());
    } else if (a == "--period") {
      o.params.period = parse_int(a, value(), 1);
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--actions") {
      o.actions = true;
    } else if (a == "--online") {
      o.online = true;
    } else if (a == "--svg") {
      o.svg = std::string(value());
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--pullback-from-states") {
      o.params.pullback_from_states = true;
      o.params.restart_units = 1;   // the sizes that makes true: stages are two states,
      o.params.pullback_units = 2;  // the second of them the state the step ends in
      o.params.pullback_holds_next = true;
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else {
      throw rwd::Error(rwd::ErrorCode::InvalidArgument,
                       "unknown argument '" + std::string(a) + "' (see --help)");
    }
  }
  if (!o.list) {
    rwd::require(o.have_steps, "--steps N is required (the number of time steps)");
    rwd::require(o.have_ram, "--ram S is required (RAM checkpoint slots, including x_0)");
    rwd::require(rs::ScheduleRegistry::instance().contains(o.schedule),
                 "--schedule: unknown schedule '" + o.schedule +
                     "'; known: " + rs::ScheduleRegistry::instance().names());
    if (o.params.pullback_from_states) o.params.ram_units = o.params.ram;
  }
  return o;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

void print_list() {
  for (const auto& e : rs::ScheduleRegistry::instance().list()) {
    std::printf("%-14s %s%s\n", e.name.c_str(), e.summary.c_str(), e.online ? " [online]" : "");
  }
  std::printf("%-14s %s\n", "auto", "the cheapest registered schedule that fits the budget");
}

// --svg draws at most this many actions.
constexpr std::size_t kMaxDrawn = 200000;

int run(const Options& o) {
  if (o.list) {
    print_list();
    return 0;
  }
  const auto& registry = rs::ScheduleRegistry::instance();
  const auto start = std::chrono::steady_clock::now();
  // --online: the schedule is built without the step count; the run ends at --steps.
  rs::ScheduleParams build = o.params;
  if (o.online) build.steps = 0;
  const std::string chosen = o.schedule == "auto" ? registry.choose(build) : o.schedule;
  auto schedule = registry.create(chosen, build);
  rwd::require(!o.online || schedule->online(),
               "--online: schedule '" + chosen + "' needs the step count in advance; use an " +
                   "online schedule (online, disk-revolve with --disk inf) or drop --online");
  std::vector<rs::Action> drawn;
  rs::ActionObserver observer;
  if (o.actions || !o.svg.empty()) {
    observer = [&o, &drawn](const rs::Action& a) {
      if (o.actions) std::cout << rs::to_string(a) << '\n';
      if (!o.svg.empty()) {
        rwd::require(drawn.size() < kMaxDrawn, "--svg: the schedule has more than " +
                                                   std::to_string(kMaxDrawn) +
                                                   " actions; draw a run with fewer steps");
        drawn.push_back(a);
      }
    };
  }
  const rs::SimulationResult r = rs::simulate(*schedule, o.params, observer);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.svg.empty()) {
    std::ofstream out(o.svg);
    rwd::require(static_cast<bool>(out), "--svg: cannot write '" + o.svg + "'");
    out << rwd::plan::render_svg(drawn, o.params, chosen, r);
    rwd::require(static_cast<bool>(out), "--svg: cannot write '" + o.svg + "'");
    std::cerr << "rewind-plan: drew " << drawn.size() << " actions to " << o.svg << '\n';
  }
  const std::optional<double> lower = schedule->lower_bound();
  const auto& p = o.params;
  // Where a two-level schedule of intervals put its disk checkpoints: every `period` steps, or
  // (disk-mixed, period 0) by the recursion.
  const bool intervals = chosen == "disk-mixed" || chosen == "disk-revolve";
  const std::int64_t period = schedule->period();
  const std::string disk = p.disk == rs::kUnlimited ? "inf" : std::to_string(p.disk);
  if (o.json) {
    std::cout << "{\"schedule\": " << json_string(chosen)
              << ", \"requested\": " << json_string(o.schedule) << ", \"steps\": " << p.steps
              << ", \"ram\": " << p.ram
              << ", \"disk\": " << (p.disk == rs::kUnlimited ? std::string("\"inf\"") : disk)
              << ", \"write_cost\": " << number(p.write_cost)
              << ", \"read_cost\": " << number(p.read_cost) << ", \"fwd_total\": " << r.fwd_total
              << ", \"recomputed\": " << r.recomputed()
              << ", \"adjoint_steps\": " << r.adjoint_steps << ", \"ram_writes\": " << r.ram.writes
              << ", \"ram_reads\": " << r.ram.reads << ", \"disk_writes\": " << r.disk.writes
              << ", \"disk_reads\": " << r.disk.reads << ", \"peak_ram\": " << r.ram.peak
              << ", \"peak_disk\": " << r.disk.peak << ", \"cost\": " << number(r.cost);
    if (lower) std::cout << ", \"lower_bound\": " << number(*lower);
    if (intervals) std::cout << ", \"disk_period\": " << period;
    if (o.online) std::cout << ", \"online\": true";
    std::cout << ", \"actions\": " << r.actions << ", \"plan_seconds\": " << number(seconds)
              << "}\n";
    return 0;
  }
  std::printf("rewind-plan: %s%s%s for %lld steps, %lld RAM slots, %s disk slots (wd=%g, rd=%g)\n",
              chosen.c_str(), o.schedule == "auto" ? " (chosen by auto)" : "",
              o.online ? " (online: steps unknown while running)" : "",
              static_cast<long long>(p.steps), static_cast<long long>(p.ram), disk.c_str(),
              p.write_cost, p.read_cost);
  std::printf("  forward steps     %lld (%lld recomputed, %.3f evaluations per step)\n",
              static_cast<long long>(r.fwd_total), static_cast<long long>(r.recomputed()),
              static_cast<double>(r.fwd_total) / static_cast<double>(p.steps));
  std::printf("  adjoint steps     %lld\n", static_cast<long long>(r.adjoint_steps));
  std::printf("  RAM checkpoints   %lld written, %lld read, peak %lld live\n",
              static_cast<long long>(r.ram.writes), static_cast<long long>(r.ram.reads),
              static_cast<long long>(r.ram.peak));
  std::printf("  disk checkpoints  %lld written, %lld read, peak %lld live\n",
              static_cast<long long>(r.disk.writes), static_cast<long long>(r.disk.reads),
              static_cast<long long>(r.disk.peak));
  if (intervals && period == 0) {
    std::printf("  disk placement    by H-Revolve's recursion (slots used again)\n");
  } else if (intervals && period < p.steps) {
    std::printf("  disk placement    periodic, every %lld steps%s\n",
                static_cast<long long>(period),
                chosen == "disk-mixed" && o.params.period == 0
                    ? " (the run is too long for the recursion's table, or the table was cut "
                      "short and periodic is cheaper)"
                    : "");
  }
  std::printf("  weighted cost     %g (forward steps + wd*writes + rd*reads)\n", r.cost);
  if (lower) {
    std::printf(
        "  lower bound       %g (optimal cost in this schedule's model is at least this;"
        " gap %.3f%%)\n",
        *lower, r.cost > 0 ? 100.0 * (r.cost - *lower) / r.cost : 0.0);
  }
  std::printf("  planned in        %.3f s (%lld actions)\n", seconds,
              static_cast<long long>(r.actions));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const rwd::Error& e) {
    std::cerr << "rewind-plan: error: " << e.what() << '\n';
    return e.code() == rwd::ErrorCode::InvalidArgument ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "rewind-plan: error: " << e.what() << '\n';
    return 1;
  }
}
