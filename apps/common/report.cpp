#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <variant>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rwd::apps {

namespace {

std::string mib(double bytes) {
  return format("%.1f MiB", bytes / (1024.0 * 1024.0));
}

long long ll(PetscInt v) {
  return static_cast<long long>(v);
}

std::string compare_json(const CompareReport& c) {
  std::string fields = "[";
  for (std::size_t k = 0; k < c.fields.size(); ++k) {
    const auto& f = c.fields[k];
    JsonObject o;
    o.str("name", f.name).integer("size", ll(f.size)).integer("differing", ll(f.differing));
    o.num("max_abs_diff", f.max_abs_diff).num("relative_diff", f.relative_diff());
    fields += (k ? ", " : "") + o.done();
  }
  fields += "]";
  JsonObject o;
  o.str("reference", c.reference).raw("fields", fields).boolean("identical", c.identical);
  o.num("rtol", c.rtol).boolean("passed", c.passed);
  return o.done();
}

std::string timeline_json(const Report& r) {
  std::string seconds = "[", steps = "[", kinds;
  for (std::size_t k = 0; k < r.timeline.size(); ++k) {
    const auto& e = r.timeline[k];
    seconds += (k ? "," : "") + format("%.6f", e.seconds);
    steps += (k ? "," : "") + std::to_string(e.step);
    kinds += e.kind;
  }
  std::string cps = "[";
  for (std::size_t k = 0; k < r.trajectory.checkpoints.size(); ++k) {
    const auto& c = r.trajectory.checkpoints[k];
    JsonObject o;
    o.integer("forward_index", c.forward_index).integer("step", c.step).str("level", c.level);
    cps += (k ? ", " : "") + o.done();
  }
  JsonObject o;
  o.raw("seconds", seconds + "]").raw("step", steps + "]").str("kind", kinds);
  o.raw("checkpoints", cps + "]");
  return o.done();
}

}  // namespace

JsonObject& JsonObject::num(const char* key, double v) {
  if (!std::isfinite(v)) return raw(key, "null");
  return raw(key, format("%.17g", v));
}

JsonObject& JsonObject::raw(const char* key, const std::string& json) {
  os_ << (first_ ? "" : ", ") << quote(key) << ": " << json;
  first_ = false;
  return *this;
}

std::string JsonObject::quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  return out + "\"";
}

std::string taylor_json(const TaylorReport& t) {
  std::string rows = "[";
  for (std::size_t k = 0; k < t.rows.size(); ++k) {
    const auto& r = t.rows[k];
    JsonObject o;
    o.num("h", r.h).num("J", r.J).num("first_order_remainder", r.first);
    o.num("second_order_remainder", r.second);
    if (r.order) o.num("order", *r.order);
    rows += (k ? ", " : "") + o.done();
  }
  rows += "]";
  JsonObject o;
  o.num("J", t.J).num("dJ_dm", t.dJdm).raw("rows", rows);
  o.num("min_order", t.min_order).num("max_order", t.max_order).boolean("passed", t.passed);
  return o.done();
}

std::string summary_text(const Report& r) {
  std::ostringstream os;
  const auto& tr = r.trajectory;
  const auto& s = tr.stats;
  const PetscInt n = r.mx * r.my;
  os << r.app << ": the gradient of J by the discrete adjoint, with checkpoints kept by "
     << (tr.type == "rewind" ? "rewind" : "PETSc's " + tr.type + " trajectory") << "\n";
  std::istringstream lines(r.description);
  for (std::string line; std::getline(lines, line);) os << "  " << line << "\n";
  os << format("  grid         %lld x %lld cells (%lld unknowns) on %d MPI rank%s\n", ll(r.mx),
               ll(r.my), ll(n), r.ranks, r.ranks == 1 ? "" : "s");
  if (r.adaptive) {
    os << format(
        "  time steps   %lld adaptive steps to T = %g (TS %s): the count was unknown "
        "until the end\n",
        ll(r.steps), (double)r.t_final, r.ts_type.c_str());
  } else {
    os << format("  time steps   %lld steps of dt = %g to T = %g (TS %s)\n", ll(r.steps),
                 (double)r.dt, (double)r.t_final, r.ts_type.c_str());
  }
  os << format("  objective    J = %.9e (final misfit %.3e + time integral %.3e)\n", (double)r.J,
               (double)r.J_terminal, (double)r.J_integral);
  os << format("  gradient     |dJ/du0| = %.6e", (double)r.norm_u0);
  if (!r.parameter.empty()) {
    os << format("   |dJ/d%s| = %.6e", r.parameter.c_str(), (double)r.norm_p);
  }
  os << "\n";
  if (!tr.have_stats) {
    os << "  trajectory   " << tr.type << " (no rewind statistics for this type)\n";
    os << format("  time         forward sweep %.2f s, adjoint sweep %.2f s\n", r.forward_seconds,
                 r.adjoint_seconds);
    return os.str();
  }
  os << "  trajectory   rewind, schedule " << tr.schedule << ": budget " << tr.ram_budget
     << " RAM + " << tr.disk_budget << " disk checkpoints"
     << (tr.online ? " (online: planned without the step count)" : "") << "\n";
  os << format("  RAM          %lld checkpoints written, %lld read, at most %lld held\n",
               ll(s.ram_writes), ll(s.ram_reads), ll(s.ram_peak));
  if (s.disk_writes > 0 || tr.disk_budget != "0") {
    os << format("  disk         %lld checkpoints written, %lld read, at most %lld held",
                 ll(s.disk_writes), ll(s.disk_reads), ll(s.disk_peak));
    os << " (parallel HDF5 in " << (tr.dirname.empty() ? "." : tr.dirname) << ")\n";
  }
  os << format(
      "  recomputed   %lld steps: %lld forward steps for %lld adjoint steps (%.2f per "
      "step)\n",
      ll(s.recomputed), ll(s.forward_steps), ll(s.adjoint_steps),
      s.steps > 0 ? (double)s.forward_steps / (double)s.steps : 0.0);
  os << "  written      " << mib((double)s.bytes_written) << " of checkpoints (all ranks)\n";
  os << format(
      "  time         forward sweep %.2f s, adjoint sweep %.2f s (recomputation %.2f s "
      "of it)\n",
      r.forward_seconds, r.adjoint_seconds, (double)s.recompute_seconds);
  os << format("               checkpoint I/O wait %.3f s (%.3f s more overlapped with compute)\n",
               (double)s.io_seconds, (double)s.io_hidden_seconds);
  const double state_bytes = 8.0 * (double)n;
  const PetscInt held = s.ram_peak + s.disk_peak;
  os << format(
      "  in short     store-all would keep %lld states (%s); rewind held at most %lld "
      "(%lld in RAM, %lld on disk)\n"
      "               and paid for it with %lld recomputed steps (+%.0f%% forward "
      "work)\n",
      ll(r.steps + 1), mib(state_bytes * (double)(r.steps + 1)).c_str(), ll(held), ll(s.ram_peak),
      ll(s.disk_peak), ll(s.recomputed),
      s.steps > 0 ? 100.0 * (double)s.recomputed / (double)s.steps : 0.0);
  return os.str();
}

std::string taylor_header(const std::string& parameter, PetscInt points) {
  return "Taylor test: J(m + h dm) for a smooth direction dm in u0" +
         (parameter.empty() ? "" : " and " + parameter) + " (" + std::to_string(points + 1) +
         " more forward solves, with the run's step sizes);\n"
         "  with the adjoint gradient, |J(m + h dm) - J(m) - h dJ.dm| must fall 4x each time h "
         "halves (order 2)\n";
}

TaylorReport taylor_table(PetscReal J, PetscReal dJdm, PetscReal h0, PetscInt points,
                          const std::function<PetscReal(PetscReal h)>& J_at) {
  TaylorReport t;
  t.J = J;
  t.dJdm = dJdm;
  PetscReal h = h0;
  for (PetscInt k = 0; k < points; ++k, h /= 2) {
    TaylorRow row;
    row.h = h;
    row.J = J_at(h);
    row.first = std::abs(row.J - t.J);
    row.second = std::abs(row.J - t.J - h * t.dJdm);
    if (!t.rows.empty()) row.order = std::log2(t.rows.back().second / row.second);
    t.rows.push_back(row);
  }
  t.min_order = PETSC_MAX_REAL;
  t.max_order = -PETSC_MAX_REAL;
  for (const auto& row : t.rows) {
    if (!row.order) continue;
    const PetscReal q = std::isfinite(*row.order) ? *row.order : 0;
    t.min_order = std::min(t.min_order, q);
    t.max_order = std::max(t.max_order, q);
  }
  t.passed = t.min_order >= 1.8 && t.max_order <= 2.2;
  return t;
}

std::string taylor_text(const TaylorReport& t, const char* objective) {
  const std::string J = objective;
  const std::string first = "|" + J + "(m+h dm) - " + J + "(m)|";
  const std::string second = "|" + J + "(m+h dm) - " + J + "(m) - h d" + J + ".dm|";
  const int w1 = static_cast<int>(first.size()) - 2, w2 = static_cast<int>(second.size());
  std::ostringstream os;
  os << format("  %s(m) = %.12e, d%s.dm = %.6e\n", J.c_str(), (double)t.J, J.c_str(),
               (double)t.dJdm);
  os << "         h    " << first << "   " << second << "   order\n";
  for (const auto& r : t.rows) {
    os << format("  %8.2e    %*.6e   %*.6e   ", (double)r.h, w1, (double)r.first, w2,
                 (double)r.second);
    os << (r.order ? format("%5.2f", (double)*r.order) : std::string("    -")) << "\n";
  }
  if (t.passed) {
    os << format("Taylor test passed: observed order %.2f to %.2f\n", (double)t.min_order,
                 (double)t.max_order);
  } else {
    os << format("Taylor test FAILED: observed order %.2f to %.2f, expected about 2\n",
                 (double)t.min_order, (double)t.max_order);
  }
  return os.str();
}

std::string compare_header() {
  return "Store-all comparison: the same solve again, with PETSc's memory trajectory storing "
         "every state\n";
}

std::string within_verdict(const char* comparison, bool passed, PetscReal rtol,
                           const char* option) {
  return format("%s %s: the gradients differ, %s %.1e relative (%s)\n", comparison,
                passed ? "passed" : "FAILED", passed ? "within" : "by more than", (double)rtol,
                option);
}

std::string compare_text(const CompareReport& c) {
  std::ostringstream os;
  for (const auto& f : c.fields) {
    if (f.differing == 0) {
      os << format("  %-10s bitwise identical (%lld values)\n", f.name.c_str(), ll(f.size));
    } else {
      os << format("  %-10s %lld of %lld values differ, by up to %.3e (%.3e relative)\n",
                   f.name.c_str(), ll(f.differing), ll(f.size), (double)f.max_abs_diff,
                   (double)f.relative_diff());
    }
  }
  if (c.identical) {
    os << "Store-all comparison passed: the gradients are bitwise identical\n";
  } else if (c.rtol > 0) {
    os << within_verdict("Store-all comparison", c.passed, c.rtol, "-compare_storeall_rtol");
  } else {
    os << "Store-all comparison FAILED: the gradients differ (with lossy checkpoints, "
          "-compare_storeall_rtol accepts a relative difference)\n";
  }
  return os.str();
}

std::string summary_json(const Report& r) {
  const auto& tr = r.trajectory;
  const auto& s = tr.stats;
  JsonObject grid;
  grid.integer("mx", ll(r.mx)).integer("my", ll(r.my)).integer("unknowns", ll(r.mx * r.my));
  JsonObject time;
  time.num("forward_seconds", r.forward_seconds).num("adjoint_seconds", r.adjoint_seconds);
  JsonObject traj;
  traj.str("type", tr.type).boolean("have_stats", tr.have_stats);
  if (tr.have_stats) {
    traj.str("schedule", tr.schedule).str("ram_budget", tr.ram_budget);
    traj.str("disk_budget", tr.disk_budget).boolean("online", tr.online).str("dirname", tr.dirname);
    JsonObject ram, disk;
    ram.integer("writes", ll(s.ram_writes)).integer("reads", ll(s.ram_reads));
    ram.integer("peak", ll(s.ram_peak)).num("peak_bytes", s.ram_peak_bytes);
    disk.integer("writes", ll(s.disk_writes)).integer("reads", ll(s.disk_reads));
    disk.integer("peak", ll(s.disk_peak)).num("peak_bytes", s.disk_peak_bytes);
    traj.raw("ram", ram.done()).raw("disk", disk.done());
    traj.integer("forward_steps", ll(s.forward_steps)).integer("recomputed", ll(s.recomputed));
    traj.integer("adjoint_steps", ll(s.adjoint_steps)).num("bytes_written", s.bytes_written);
    time.num("recompute_seconds", s.recompute_seconds).num("io_seconds", s.io_seconds);
    time.num("io_hidden_seconds", s.io_hidden_seconds);
  }
  JsonObject grad;
  grad.num("u0", r.norm_u0);
  if (!r.parameter.empty()) grad.num(r.parameter.c_str(), r.norm_p);
  JsonObject o;
  o.str("app", r.app).str("description", r.description).raw("grid", grid.done());
  o.integer("ranks", r.ranks).str("ts_type", r.ts_type).boolean("adaptive", r.adaptive);
  o.integer("steps", ll(r.steps)).num("t_final", r.t_final).num("dt", r.dt);
  o.num("objective", r.J).num("objective_final_misfit", r.J_terminal);
  o.num("objective_time_integral", r.J_integral).raw("gradient_norm", grad.done());
  o.raw("trajectory", traj.done()).raw("time", time.done());
  o.raw("taylor", r.taylor ? taylor_json(*r.taylor) : "null");
  o.raw("compare_storeall", r.compare ? compare_json(*r.compare) : "null");
  o.raw("timeline", timeline_json(r));
  return o.done() + "\n";
}

std::vector<CheckpointEvent> replay_checkpoints(const std::string& name, std::int64_t steps,
                                                std::int64_t n, std::int64_t ram, std::int64_t disk,
                                                double write_cost, double read_cost,
                                                std::int64_t forward_steps) {
  namespace rs = rwd::schedule;
  std::vector<CheckpointEvent> out;
  try {
    rs::ScheduleParams p;
    p.steps = steps;
    p.ram = ram;
    p.disk = disk;
    p.write_cost = write_cost;
    p.read_cost = read_cost;
    auto schedule = rs::make_schedule(name, p);
    rs::ScheduleParams limits = p;
    limits.steps = n;
    std::int64_t forward = 0;
    const auto stored = [](rs::Level l) { return l == rs::Level::Ram || l == rs::Level::Disk; };
    rs::simulate(*schedule, limits, [&](const rs::Action& a) {
      if (const auto* f = std::get_if<rs::Forward>(&a)) {
        if (f->write_restart && stored(f->level)) {
          out.push_back({forward, f->n0, rs::to_string(f->level)});
        }
        forward += f->n1 - f->n0;
        return;
      }
      // A state stored from the working copy, or moved or copied between RAM and disk: the
      // latter keep the place and time the state was first stored.
      const auto* c = std::get_if<rs::Copy>(&a);
      const auto* m = std::get_if<rs::Move>(&a);
      if (c == nullptr && m == nullptr) return;
      const rs::Step at = c ? c->n : m->n;
      const rs::Level from = c ? c->from : m->from, to = c ? c->to : m->to;
      if (!stored(to)) return;
      if (from == rs::Level::Work) {
        out.push_back({forward, at, rs::to_string(to)});
        return;
      }
      for (auto it = out.rbegin(); it != out.rend(); ++it) {
        if (it->step != at || it->level != rs::to_string(from)) continue;
        if (m) {
          it->level = rs::to_string(to);
        } else {
          out.push_back({it->forward_index, at, rs::to_string(to)});
        }
        break;
      }
    });
    if (forward != forward_steps) out.clear();
  } catch (const rwd::Error&) {
    out.clear();
  }
  return out;
}

Progress::Progress(bool enabled) : enabled_(enabled) {}

void Progress::start(const char* phase) {
  phase_ = phase;
  start_ = last_ = MPI_Wtime();
  printed_ = false;
}

void Progress::update(const std::string& text) {
  if (!enabled_) return;
  last_text_ = text;
  // Plain lines: under mpirun, stdout is a pseudo-terminal even when piped, so in-place
  // updates would garble logs.
  const double now = MPI_Wtime();
  if (now - start_ < 2.0 || now - last_ < 2.0) return;
  std::printf("  %s: %s\n", phase_, text.c_str());
  std::fflush(stdout);
  printed_ = true;
  last_ = now;
}

void Progress::finish() {
  if (!enabled_ || !printed_) return;
  std::printf("  %s: %s, done\n", phase_, last_text_.c_str());
  std::fflush(stdout);
  printed_ = false;
}

}  // namespace rwd::apps
