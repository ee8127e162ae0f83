#include "schedule_svg.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>
#include <variant>

namespace rwd::plan {

namespace rs = rwd::schedule;

namespace {

constexpr const char* kFirst = "#1f77b4";      // first forward sweep
constexpr const char* kRecompute = "#ff7f0e";  // recomputation
constexpr const char* kRecord = "#9467bd";     // recording run (pullback data taken)
constexpr const char* kAdjoint = "#d62728";    // adjoint steps
constexpr const char* kRam = "#2ca02c";        // RAM checkpoint
constexpr const char* kDisk = "#8c564b";       // disk checkpoint
constexpr const char* kData = "#e377c2";       // pullback data kept in RAM or on disk

// The lines (steps run) and bars (checkpoint lifetimes) of a schedule, in units of work.
struct Segment {
  double x0, y0, x1, y1;
  const char* colour;
  double width;
};
struct Bar {
  double x0, x1, y;
  const char* colour;
};
struct Drawing {
  std::vector<Segment> lines;
  std::vector<Bar> bars;
  double total = 1;  ///< the work of the whole schedule, at least 1
};

// Walks the actions, advancing the clock by each one's work.
Drawing trace(const std::vector<rs::Action>& actions, const rs::ScheduleParams& p) {
  Drawing out;
  std::vector<Segment>& lines = out.lines;
  std::vector<Bar>& bars = out.bars;
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
  out.total = std::max(x, 1.0);
  return out;
}

// The picture: axes, bars, lines and a legend.
std::string draw(const Drawing& d, const rs::ScheduleParams& p, const std::string& name,
                 const rs::SimulationResult& result) {
  const double total = d.total;
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
  for (const Bar& b : d.bars) {
    svg << "<line x1=\"" << X(b.x0) << "\" y1=\"" << Y(b.y) << "\" x2=\"" << X(b.x1) << "\" y2=\""
        << Y(b.y) << "\" stroke=\"" << b.colour
        << "\" stroke-width=\"3\" stroke-opacity=\"0.45\"/>\n";
  }
  for (const Segment& s : d.lines) {
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

}  // namespace

std::string render_svg(const std::vector<rs::Action>& actions, const rs::ScheduleParams& p,
                       const std::string& name, const rs::SimulationResult& result) {
  return draw(trace(actions, p), p, name, result);
}

}  // namespace rwd::plan
