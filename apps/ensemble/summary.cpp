#include "summary.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "adjoint_app.hpp"
#include "field_file.hpp"

namespace rwd::apps::multisource {

namespace {

// A checkpoint budget option as the summary shows it (-1: unlimited).
std::string budget_option(const char* name, PetscInt unset) {
  PetscInt n = unset;
  REWIND_APP_CALL(PetscOptionsGetInt(nullptr, nullptr, name, &n, nullptr));
  return n >= 0 ? std::to_string(n) : std::string("unlimited");
}

// A string option's value, or `fallback` where it is not given.
std::string string_option(const char* name, const char* fallback) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s", fallback);
  REWIND_APP_CALL(PetscOptionsGetString(nullptr, nullptr, name, buf, sizeof buf, nullptr));
  return buf;
}

// What the group stores' codec did in the last pass, summed over the ranks; empty without one.
std::string compression_text(const RewindEnsembleStats& st) {
  if (st.ram_uncompressed_bytes <= 0 && st.disk_uncompressed_bytes <= 0) return "";
  const double MiB = 1024.0 * 1024.0;
  const auto ratio = [](PetscReal u, PetscReal c) { return c > 0 ? (double)(u / c) : 1.0; };
  std::string disk;
  if (st.disk_uncompressed_bytes > 0) {
    disk = format(", disk %.2f MiB written for %.2f MiB (%.2fx)", st.disk_stored_bytes / MiB,
                  st.disk_uncompressed_bytes / MiB,
                  ratio(st.disk_uncompressed_bytes, st.disk_stored_bytes));
  }
  const std::string codec = string_option("-rewind_ensemble_compress", "none");
  PetscReal tolerance = 0;
  REWIND_APP_CALL(PetscOptionsGetReal(nullptr, nullptr, "-rewind_ensemble_compress_tolerance",
                                      &tolerance, nullptr));
  const std::string lossy = codec == "zfp" ? format(", lossy within %g", (double)tolerance)
                            : codec == "zfp-precision" ? std::string(", lossy")
                                                       : std::string();
  return format(
      "  compression  group checkpoints by %s (-rewind_ensemble_compress%s): RAM %.2f MiB written "
      "for %.2f MiB (%.2fx)%s;\n"
      "               %.3f s compressing and decompressing (all ranks)\n",
      codec.c_str(), lossy.c_str(), st.ram_stored_bytes / MiB, st.ram_uncompressed_bytes / MiB,
      ratio(st.ram_uncompressed_bytes, st.ram_stored_bytes), disk.c_str(),
      (double)st.codec_seconds);
}

std::string assign_option() {
  return string_option("-rewind_ensemble_assign", "dynamic");
}

// The model, the tasks, their outputs, Phi, the gradient and the budgets.
std::string problem_text(const Run& r) {
  const Settings& s = r.settings;
  const Layout& l = r.layout;
  std::ostringstream os;
  long long total_steps = 0, fewest = -1, most = 0;
  for (PetscInt k = 0; k < s.tasks; ++k) {
    const long long n = source_of(k, s).steps;
    total_steps += n;
    fewest = fewest < 0 ? n : std::min(fewest, n);
    most = std::max(most, n);
  }
  os << format(
      "rewind-ensemble: one gradient from %lld adjoint solve%s, spread over %d group%s of %d "
      "rank%s (%d MPI rank%s)\n",
      (long long)s.tasks, s.tasks == 1 ? "" : "s", l.groups, l.groups == 1 ? "" : "s", l.group_size,
      l.group_size == 1 ? "" : "s", l.size, l.size == 1 ? "" : "s");
  os << format(
      "  model        u_t + v.grad(u) = div(kappa grad(u)) + s_k on the periodic unit square, "
      "cellular flow |v| <= %g,\n"
      "               %lld x %lld cells, Crank-Nicolson, dt = %g, u(0) = 0\n",
      (double)s.speed, (long long)r.mx, (long long)r.my, (double)s.dt);
  os << format(
      "  tasks        task k: the source s_k, a bump at its own place, on for its own T_k: %lld to "
      "%lld steps (%lld in all)\n",
      fewest, most, total_steps);
  os << format(
      "  outputs      y_k = u(T_k) at %d receiver cells (a 3 x 3 lattice); data d_k: the same "
      "for a true kappa\n"
      "               with a more diffusive blob at (0.7, 0.3); first guess kappa = %g "
      "everywhere\n",
      (int)kReceivers, (double)s.kappa0);
  os << format(
      "  objective    Phi = log(sum_k |y_k - d_k|^2 / sum_k |d_k|^2) = %.12e: it couples the "
      "tasks,\n"
      "               so the cotangents ybar_k = dPhi/dy_k are known only after every forward "
      "solve\n",
      (double)r.phi);
  os << format(
      "  gradient     dPhi/dkappa at every cell (the sum of the %lld adjoints): |dPhi/dkappa| = "
      "%.6e\n",
      (long long)s.tasks, (double)r.gradient_norm);
  os << "  checkpoints  each task: the rewind trajectory, " +
            budget_option("-ts_trajectory_max_cps_ram", -1) + " RAM + " +
            budget_option("-ts_trajectory_max_cps_disk", 0) +
            " disk checkpoints (-ts_trajectory_max_cps_*);\n"
            "               each group: its tapes share " +
            budget_option("-rewind_ensemble_max_cps_ram", -1) + " RAM + " +
            budget_option("-rewind_ensemble_max_cps_disk", -1) +
            " disk checkpoints (-rewind_ensemble_max_cps_*)\n";
  return os.str();
}

// One group's row of the mapping: its tasks in forward order (marked spilled, cut) and in
// backward order.
std::string group_rows(const Run& r, int q, int* spilled, int* cut) {
  const Layout& l = r.layout;
  std::vector<PetscInt> mine;  // in task order
  for (PetscInt k = 0; k < static_cast<PetscInt>(r.tasks.size()); ++k) {
    if (r.tasks[static_cast<std::size_t>(k)].group == q) mine.push_back(k);
  }
  const auto& at = [&](PetscInt k) -> const RewindEnsembleTaskRecord& {
    return r.tasks[static_cast<std::size_t>(k)];
  };
  long long steps = 0;
  std::string forward, backward;
  std::sort(mine.begin(), mine.end(),
            [&](PetscInt a, PetscInt b) { return at(a).position < at(b).position; });
  for (PetscInt k : mine) {
    const RewindEnsembleTaskRecord& t = at(k);
    steps += t.steps;
    forward += " " + std::to_string(k) + (t.spilled ? "*" : "") + (t.cut ? "+" : "");
    *spilled += t.spilled ? 1 : 0;
    *cut += t.cut ? 1 : 0;
  }
  std::sort(mine.begin(), mine.end(),
            [&](PetscInt a, PetscInt b) { return at(a).backward_begin < at(b).backward_begin; });
  for (PetscInt k : mine) backward += " " + std::to_string(k);
  const int first = q * l.group_size, last = first + l.group_size - 1;
  const std::string ranks =
      first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
  return format("  %5d  %-6s %6zu %6lld %s\n", q, ranks.c_str(), mine.size(), steps,
                forward.empty() ? " (none)" : forward.c_str()) +
         format("  %5s  %-6s %6s %6s %s\n", "", "", "", "", backward.c_str());
}

// Which group ran which task, the group budget's spills and cuts, the backward's bytes, the
// times.
std::string mapping_text(const Run& r) {
  std::ostringstream os;
  const std::string assign = assign_option();
  os << "\nThe mapping (" << assign
     << (assign != "dynamic" ? ": task k on group k mod G, whatever the tasks cost)\n"
         : r.stats.costliest_first
             ? ": a group that comes free claims the next task by a one-sided fetch-and-add on "
               "rank 0, the costliest first)\n"
             : ": a group that comes free claims the next task by a one-sided fetch-and-add on "
               "rank 0, in task order)\n");
  os << "  group  ranks   tasks  steps  forward order (* spilled to disk, + cut and run again)\n"
        "                               backward order (in RAM newest first, then spilled, then "
        "cut)\n";
  int spilled = 0, cut = 0;
  for (int q = 0; q < r.layout.groups; ++q) os << group_rows(r, q, &spilled, &cut);
  os << format(
      "  group budget %d tape%s spilled from RAM to disk, %d cut (checkpoints dropped, forward "
      "run again before the adjoint)\n",
      spilled, spilled == 1 ? "" : "s", cut);
  os << compression_text(r.stats);
  if (r.stats.resumed_generation > 0) {
    os << format(
        "  resumed      from a killed run's manifest (-rewind_ensemble_resume, generation %lld): "
        "%lld outputs taken from it\n"
        "               (not solved forward again; their tapes recorded again before their "
        "adjoints), %lld gradients already summed\n",
        (long long)r.stats.resumed_generation, (long long)r.stats.outputs_resumed,
        (long long)r.stats.gradients_resumed);
  }
  os << format(
      "  backward     each group got one message with the cotangents of its own tasks (%lld "
      "bytes in all);\n"
      "               the tapes never moved; the gradient was summed reproducibly across the "
      "groups (%lld bytes)\n",
      (long long)r.stats.cotangent_bytes, (long long)r.stats.reduction_bytes);
  os << format(
      "  time         data %.2f s, forward pass %.2f s, backward pass %.2f s (slowest rank)\n",
      r.times.data, r.times.forward, r.times.backward);
  return os.str();
}

}  // namespace

std::string start_text(const Settings& s, const Layout& l) {
  return format(
      "rewind-ensemble: %lld sources on %d group%s of %d rank%s; synthetic data, then the "
      "forward and backward passes\n",
      (long long)s.tasks, l.groups, l.groups == 1 ? "" : "s", l.group_size,
      l.group_size == 1 ? "" : "s");
}

std::string summary_text(const Run& r) {
  return problem_text(r) + mapping_text(r);
}

std::string compare_header(const Settings& s, const Layout& l) {
  return format(
      "\nSerial comparison: the same gradient by a plain loop over the %lld tasks on group 0 (%d "
      "rank%s), each\n  with PETSc's store-all memory trajectory, summed the same reproducible "
      "way; compared bit for bit on every rank\n",
      (long long)s.tasks, l.group_size, l.group_size == 1 ? "" : "s");
}

std::string compare_text(const CompareResult& c, const Layout& l, PetscInt tasks) {
  std::ostringstream os;
  os << format("  outputs y_k  %s\n", c.outputs_identical ? "bitwise identical" : "DIFFER");
  if (c.differing == 0) {
    os << format("  dPhi/dkappa  bitwise identical on all %d ranks (%lld values)\n", l.size,
                 c.values);
  } else {
    os << format("  dPhi/dkappa  %lld of %lld values differ, by up to %.3e (%.3e relative)\n",
                 c.differing, c.values, (double)c.max_abs_diff, (double)c.relative);
  }
  if (c.identical) {
    os << format(
        "Serial comparison passed: the ensemble's gradient is bitwise the serial loop's "
        "over the %lld task%s\n",
        (long long)tasks, tasks == 1 ? "" : "s");
  } else if (c.rtol > 0 && c.outputs_identical) {
    os << within_verdict("Serial comparison", c.passed, c.rtol, "-compare_serial_rtol");
  } else {
    os << "Serial comparison FAILED: the gradients differ (with lossy group checkpoints, "
          "-rewind_ensemble_compress zfp, -compare_serial_rtol accepts a relative difference)\n";
  }
  return os.str();
}

std::string taylor_header(const Settings& s) {
  return format(
      "\nTaylor test: Phi(kappa + h dkappa) for a smooth bump dkappa (%lld more forward passes "
      "over the tasks, task k on group k mod G);\n"
      "  with the adjoint gradient, |Phi(m + h dm) - Phi(m) - h dPhi.dm| must fall 4x each "
      "time h halves (order 2)\n",
      (long long)s.taylor_points);
}

std::string run_json(const Run& r) {
  const Settings& s = r.settings;
  std::string sources = "[";
  for (PetscInt k = 0; k < s.tasks; ++k) {
    const Source src = source_of(k, s);
    JsonObject o;
    o.integer("task", (long long)k).num("x", src.x).num("y", src.y);
    o.integer("steps", (long long)src.steps);
    sources += (k ? ", " : "") + o.done();
  }
  std::string receivers = "[";
  for (PetscInt q = 0; q < kReceivers; ++q) {
    PetscInt i = 0, j = 0;
    receiver_cell(q, r.mx, r.my, &i, &j);
    receivers += (q ? ", " : "") +
                 format("[%.17g, %.17g]", (i + 0.5) / (double)r.mx, (j + 0.5) / (double)r.my);
  }
  JsonObject grid, time, o;
  grid.integer("mx", (long long)r.mx).integer("my", (long long)r.my);
  time.num("data_seconds", r.times.data).num("forward_seconds", r.times.forward);
  time.num("backward_seconds", r.times.backward).num("compare_seconds", r.times.compare);
  time.num("taylor_seconds", r.times.taylor).num("total_seconds", r.times.total);
  o.str("app", "rewind-ensemble").integer("K", (long long)s.tasks);
  o.integer("g", r.layout.group_size).integer("G", r.layout.groups);
  o.integer("ranks", r.layout.size).str("assign", assign_option()).raw("grid", grid.done());
  o.num("dt", s.dt).num("kappa0", s.kappa0).num("phi", r.phi);
  o.num("gradient_norm", r.gradient_norm).raw("sources", sources + "]");
  o.raw("receivers", receivers + "]").raw("time", time.done());
  if (r.compare) {
    JsonObject c;
    c.boolean("identical", r.compare->identical);
    c.boolean("outputs_identical", r.compare->outputs_identical);
    c.integer("values", r.compare->values).integer("differing", r.compare->differing);
    c.num("max_abs_diff", r.compare->max_abs_diff).num("relative", r.compare->relative);
    c.num("rtol", r.compare->rtol).boolean("passed", r.compare->passed);
    o.raw("compare_serial", c.done());
  } else {
    o.raw("compare_serial", "null");
  }
  o.raw("taylor", r.taylor ? rwd::apps::taylor_json(*r.taylor) : "null");
  o.raw("ensemble", r.report_json);
  return o.done() + "\n";
}

void print0(const std::string& text) {
  REWIND_APP_CALL(PetscPrintf(PETSC_COMM_WORLD, "%s", text.c_str()));
}

void write_gradient(const char* file, const Run& r, const std::vector<PetscScalar>& g,
                    const std::vector<PetscScalar>& kappa) {
  const Layout& l = r.layout;
  if (l.index != 0) return;
  OwnedDM dm = make_grid(kGrid, l.group);
  OwnedVec gv, kv, tv;
  REWIND_APP_CALL(DMCreateGlobalVector(dm, gv.out()));
  REWIND_APP_CALL(DMCreateGlobalVector(dm, kv.out()));
  REWIND_APP_CALL(DMCreateGlobalVector(dm, tv.out()));
  copy_in(gv, g);
  copy_in(kv, kappa);
  copy_in(tv, field_block(l.group, r.settings, kappa_true));
  write_fields(file, dm, {{gv.get(), "grad_kappa"}, {kv.get(), "kappa"}, {tv.get(), "kappa_true"}},
               "rewind-ensemble", r.phi);
}

}  // namespace rwd::apps::multisource
