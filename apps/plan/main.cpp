// rewind-plan: what will an adjoint run cost with a given checkpoint budget, before anyone runs
// a solver? Every count comes from replaying the schedule in the simulator.
//
//   rewind-plan --steps 1000 --ram 10
//   rewind-plan --steps 1000 --ram 10 --schedule periodic --json
//   rewind-plan --steps 10 --ram 3 --schedule revolve --actions
//   rewind-plan --steps 50 --ram 2 --disk 5 --write-cost 0.5 --read-cost 0.5 --schedule twolevel
//   rewind-plan --steps 5000 --ram 8 --online                      # n unknown while running
//   rewind-plan --steps 40 --ram 3 --disk 4 --schedule twolevel --svg schedule.svg
//   rewind-plan --list
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rs = rwd::schedule;

namespace {

constexpr const char* kUsage =
    "usage: rewind-plan --steps N --ram S [--disk D|inf] [--write-cost W] [--read-cost R]\n"
    "                   [--schedule NAME] [--period K] [--online] [--json] [--actions]\n"
    "                   [--svg FILE]\n"
    "       rewind-plan --list\n"
    "\n"
    "  --steps N        number of time steps (>= 1)\n"
    "  --ram S          RAM checkpoint slots, counting the one holding x_0 (>= 0)\n"
    "  --disk D|inf     disk checkpoint slots (default 0)\n"
    "  --write-cost W   cost of one disk write, in forward steps (default 0)\n"
    "  --read-cost R    cost of one disk read, in forward steps (default 0)\n"
    "  --schedule NAME  a registered schedule or 'auto' (default auto: the cheapest that fits)\n"
    "  --period K       checkpoint interval for 'periodic' (default: best for the budget)\n"
    "  --json           print one JSON object instead of the summary\n"
    "  --online         plan without knowing the step count (online schedules); the run\n"
    "                   then ends after --steps N steps and the cost at N is reported\n"
    "  --actions        print the action stream, one action per line, before the summary\n"
    "  --svg FILE       draw the schedule: time across, step up; first sweep, recomputation,\n"
    "                   adjoint, RAM and disk checkpoints in different colours\n"
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

// --svg: one picture of a schedule. x is elapsed work (a forward or adjoint step takes 1, a disk
// write wd, a disk read rd), y the step index. Checkpoints are drawn as bars from the moment they
// are stored to the moment they are freed, at the height of their position.
constexpr std::size_t kMaxDrawn = 200000;

std::string render_svg(const std::vector<rs::Action>& actions, const rs::ScheduleParams& p,
                       const std::string& name, const rs::SimulationResult& result) {
  struct Segment {
    double x0, y0, x1, y1;
    const char* colour;
    double width;
  };
  struct Bar {
    double x0, x1, y;
    const char* colour;
  };
  const char* kFirst = "#1f77b4";      // first forward sweep
  const char* kRecompute = "#ff7f0e";  // recomputation
  const char* kRecord = "#9467bd";     // recording run (pullback data taken)
  const char* kAdjoint = "#d62728";    // adjoint steps
  const char* kRam = "#2ca02c";        // RAM checkpoint
  const char* kDisk = "#8c564b";       // disk checkpoint
  const char* kData = "#e377c2";       // pullback data kept in RAM or on disk
  std::vector<Segment> lines;
  std::vector<Bar> bars;
  std::map<std::pair<rs::Step, rs::Level>, double> since;  // live checkpoints -> store time
  std::map<rs::Step, double> data_since;                   // stored pullback data of a step
  double x = 0;
  bool first = true;
  const auto store = [&](rs::Step n, rs::Level level) {
    if (level == rs::Level::Disk) x += p.write_cost;
    since[{n, level}] = x;
  };
  const auto release = [&](rs::Step n, rs::Level level) {
    auto it = since.find({n, level});
    if (it == since.end()) return;
    bars.push_back(
        {it->second, x, static_cast<double>(n), level == rs::Level::Disk ? kDisk : kRam});
    since.erase(it);
  };
  for (const rs::Action& a : actions) {
    if (const auto* f = std::get_if<rs::Forward>(&a)) {
      if (f->write_restart) store(f->n0, f->level);
      const double d = static_cast<double>(f->n1 - f->n0);
      const char* colour = first ? kFirst : kRecompute;
      if (f->write_pullback && !first) colour = kRecord;
      lines.push_back(
          {x, static_cast<double>(f->n0), x + d, static_cast<double>(f->n1), colour, 2.0});
      if (f->write_pullback && (f->level == rs::Level::Ram || f->level == rs::Level::Disk)) {
        for (rs::Step i = f->n0; i < f->n1; ++i) {
          data_since[i] = x + static_cast<double>(i - f->n0 + 1);
        }
      }
      x += d;
    } else if (const auto* r = std::get_if<rs::Reverse>(&a)) {
      const double d = static_cast<double>(r->n1 - r->n0);
      lines.push_back(
          {x, static_cast<double>(r->n1), x + d, static_cast<double>(r->n0), kAdjoint, 2.5});
      x += d;
      for (rs::Step i = r->n0; i < r->n1; ++i) {
        if (auto it = data_since.find(i); it != data_since.end()) {
          bars.push_back({it->second, x, static_cast<double>(i) + 0.5, kData});
          data_since.erase(it);
        }
      }
    } else if (const auto* c = std::get_if<rs::Copy>(&a)) {
      if (c->from == rs::Level::Disk) x += p.read_cost;
      if (c->to == rs::Level::Ram || c->to == rs::Level::Disk) store(c->n, c->to);
    } else if (const auto* m = std::get_if<rs::Move>(&a)) {
      if (m->from == rs::Level::Disk && m->to != rs::Level::None) x += p.read_cost;
      if (m->from == rs::Level::Ram || m->from == rs::Level::Disk) release(m->n, m->from);
      if (m->to == rs::Level::Ram || m->to == rs::Level::Disk) store(m->n, m->to);
    } else if (std::holds_alternative<rs::EndForward>(a)) {
      first = false;
    }
  }
  const double total = std::max(x, 1.0);
  const double n = static_cast<double>(std::max<rs::Step>(p.steps, 1));
  const double W = 960, H = 480, left = 60, top = 40, right = 20, bottom = 90;
  const auto X = [&](double v) { return left + (W - left - right) * v / total; };
  const auto Y = [&](double v) { return top + (H - top - bottom) * (1.0 - v / n); };
  std::ostringstream svg;
  svg.precision(6);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
      << "\" viewBox=\"0 0 " << W << ' ' << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left << "\" y=\"22\" font-size=\"14\">" << name << ": n=" << p.steps
      << ", RAM " << p.ram << ", disk "
      << (p.disk == rs::kUnlimited ? std::string("inf") : std::to_string(p.disk))
      << ", wd=" << p.write_cost << ", rd=" << p.read_cost << "; cost " << result.cost << " ("
      << result.fwd_total << " forward steps)</text>\n";
  // axes
  svg << "<line x1=\"" << left << "\" y1=\"" << Y(0) << "\" x2=\"" << W - right << "\" y2=\""
      << Y(0) << "\" stroke=\"black\"/>\n<line x1=\"" << left << "\" y1=\"" << Y(0) << "\" x2=\""
      << left << "\" y2=\"" << Y(n) << "\" stroke=\"black\"/>\n"
      << "<text x=\"" << left - 8 << "\" y=\"" << Y(n) + 4 << "\" text-anchor=\"end\">" << p.steps
      << "</text>\n<text x=\"" << left - 8 << "\" y=\"" << Y(0) + 4
      << "\" text-anchor=\"end\">0</text>\n<text x=\"" << left - 40 << "\" y=\"" << Y(n / 2)
      << "\" transform=\"rotate(-90 " << left - 40 << ' ' << Y(n / 2)
      << ")\" text-anchor=\"middle\">step</text>\n<text x=\"" << (left + W - right) / 2 << "\" y=\""
      << Y(0) + 20 << "\" text-anchor=\"middle\">time (forward/adjoint steps + disk "
      << "I/O), total " << total << "</text>\n";
  for (const Bar& b : bars) {
    svg << "<line x1=\"" << X(b.x0) << "\" y1=\"" << Y(b.y) << "\" x2=\"" << X(b.x1) << "\" y2=\""
        << Y(b.y) << "\" stroke=\"" << b.colour
        << "\" stroke-width=\"3\" stroke-opacity=\"0.45\"/>\n";
  }
  for (const Segment& s : lines) {
    svg << "<line x1=\"" << X(s.x0) << "\" y1=\"" << Y(s.y0) << "\" x2=\"" << X(s.x1) << "\" y2=\""
        << Y(s.y1) << "\" stroke=\"" << s.colour << "\" stroke-width=\"" << s.width << "\"/>\n";
  }
  const std::pair<const char*, const char*> legend[] = {
      {kFirst, "first forward sweep"},     {kRecompute, "recomputation"},
      {kRecord, "recording run"},          {kAdjoint, "adjoint"},
      {kRam, "RAM checkpoint (lifetime)"}, {kDisk, "disk checkpoint (lifetime)"},
      {kData, "pullback data kept"}};
  // Legend in two rows.
  for (std::size_t i = 0; i < std::size(legend); ++i) {
    const double lx = left + 220.0 * static_cast<double>(i % 4);
    const double ly = H - 44 + 20.0 * static_cast<double>(i / 4);
    svg << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 18 << "\" y2=\"" << ly
        << "\" stroke=\"" << legend[i].first << "\" stroke-width=\"4\"/><text x=\"" << lx + 24
        << "\" y=\"" << ly + 4 << "\">" << legend[i].second << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

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
    out << render_svg(drawn, o.params, chosen, r);
    rwd::require(static_cast<bool>(out), "--svg: cannot write '" + o.svg + "'");
    std::cerr << "rewind-plan: drew " << drawn.size() << " actions to " << o.svg << '\n';
  }
  const std::optional<double> lower = schedule->lower_bound();
  const auto& p = o.params;
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
