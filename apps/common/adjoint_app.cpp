// run_app(): the options, the solve, the summary and the checks of rewind-heat and
// rewind-burgers.
#include "adjoint_app.hpp"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "checks.hpp"
#include "driver.hpp"
#include "field_file.hpp"
#include "report.hpp"
#include "rewind/error.hpp"
#include "rewind/petsc/trajectory.h"

namespace rwd::apps {

PetscErrorCode read_check_options(OptionItems PetscOptionsObject, CheckOptions* o) {
  PetscFunctionBeginUser;
  PetscCall(PetscOptionsBool("-taylor", "Check the gradient with a Taylor test", "", o->taylor,
                             &o->taylor, nullptr));
  PetscCall(PetscOptionsReal("-taylor_h", "Largest Taylor test step h", "", o->taylor_h,
                             &o->taylor_h, nullptr));
  PetscCall(PetscOptionsInt("-taylor_points", "Taylor test steps h, h/2, ...", "", o->taylor_points,
                            &o->taylor_points, nullptr));
  PetscCall(PetscOptionsString("-summary_json", "Write the run summary as JSON", "", o->json,
                               o->json, sizeof o->json, nullptr));
  PetscCall(PetscOptionsString("-gradient_out", "Write the gradient fields to HDF5", "",
                               o->gradient, o->gradient, sizeof o->gradient, nullptr));
  PetscFunctionReturn(0);
}

void validate(const CheckOptions& o) {
  rwd::require(o.taylor_points >= 2,
               "-taylor_points must be >= 2, got " + std::to_string(o.taylor_points));
  rwd::require(o.taylor_h > 0, "-taylor_h must be > 0");
}

void write_summary(const char* path, const std::string& text) {
  FILE* f = std::fopen(path, "w");
  rwd::require(f != nullptr, std::string("-summary_json: cannot write ") + path);
  std::fputs(text.c_str(), f);
  rwd::require(std::fclose(f) == 0, std::string("-summary_json: cannot write ") + path);
}

namespace {

struct AppOptions : CheckOptions {
  PetscBool compare = PETSC_FALSE, progress = PETSC_TRUE;
  PetscReal compare_rtol = 0;
};

PetscErrorCode read_options(const char* app, AppOptions* o) {
  PetscFunctionBeginUser;
  PetscOptionsBegin(PETSC_COMM_WORLD, nullptr, "rewind application options", app);
  PetscCall(read_check_options(PetscOptionsObject, o));
  PetscCall(PetscOptionsBool("-compare_storeall",
                             "Re-run with a store-all trajectory; fail unless the gradients are "
                             "bitwise identical (or within -compare_storeall_rtol)",
                             "", o->compare, &o->compare, nullptr));
  PetscCall(PetscOptionsReal("-compare_storeall_rtol",
                             "With -compare_storeall: pass when each gradient is within this of "
                             "store-all's, relative to its largest entry (lossy checkpoints: "
                             "-ts_trajectory_rewind_compress zfp); 0: bitwise",
                             "", o->compare_rtol, &o->compare_rtol, nullptr));
  PetscCall(PetscOptionsBool("-progress", "Show progress of long runs", "", o->progress,
                             &o->progress, nullptr));
  PetscOptionsEnd();
  PetscFunctionReturn(0);
}

AppOptions read_options(const char* app) {
  AppOptions o;
  REWIND_APP_CALL(read_options(app, &o));
  validate(o);
  rwd::require(o.compare_rtol >= 0 && o.compare_rtol < 1,
               "-compare_storeall_rtol must be in [0, 1), got " + std::to_string(o.compare_rtol));
  rwd::require(o.compare_rtol == 0 || o.compare,
               "-compare_storeall_rtol is given without -compare_storeall, which it qualifies");
  return o;
}

void write_gradient(const char* file, Problem& pb, Vec u0, const SolveResult& r) {
  std::vector<std::pair<Vec, std::string>> fields = {{r.g_u0, "grad_u0"}, {u0, "u0"}};
  if (pb.parameter()) {
    fields.emplace_back(r.g_p, std::string("grad_") + pb.parameter_name());
    fields.emplace_back(pb.parameter(), pb.parameter_name());
  }
  write_fields(file, pb.dm(), fields, pb.name(), r.J);
}
void print0(const std::string& text) {
  REWIND_APP_CALL(PetscPrintf(PETSC_COMM_WORLD, "%s", text.c_str()));
}

int run(const ProblemFactory& make, const char* program) {
  REWIND_APP_CALL(TSTrajectoryRegisterRewind());
  PetscBool has = PETSC_FALSE;
  REWIND_APP_CALL(PetscOptionsHasName(nullptr, nullptr, "-ts_trajectory_type", &has));
  if (!has) REWIND_APP_CALL(PetscOptionsSetValue(nullptr, "-ts_trajectory_type", "rewind"));
  const AppOptions opt = read_options(program);
  std::unique_ptr<Problem> pb = make();
  PetscMPIInt ranks = 1;
  REWIND_APP_CALL(MPI_Comm_size(PETSC_COMM_WORLD, &ranks));
  PetscMPIInt rank = 0;
  REWIND_APP_CALL(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  DMDALocalInfo info;
  REWIND_APP_CALL(DMDAGetLocalInfo(pb->dm(), &info));

  Progress progress(opt.progress && rank == 0);
  Driver driver(*pb, progress);
  OwnedVec u0;
  REWIND_APP_CALL(DMCreateGlobalVector(pb->dm(), u0.out()));
  pb->initial_condition(u0);

  print0(std::string(pb->name()) + ": forward solve, then adjoint solve (" +
         std::to_string(info.mx) + " x " + std::to_string(info.my) + " grid, " +
         std::to_string(ranks) + " rank" + (ranks == 1 ? "" : "s") + ")\n");
  SolveResult main = driver.solve(Mode::User, u0, nullptr);

  Report rep;
  rep.app = pb->name();
  rep.description = pb->describe();
  rep.mx = info.mx;
  rep.my = info.my;
  rep.ranks = ranks;
  rep.ts_type = main.ts_type;
  rep.adaptive = main.adaptive;
  rep.steps = main.steps;
  rep.t_final = main.t_final;
  rep.dt = main.dt;
  rep.trajectory = main.trajectory;
  rep.forward_seconds = main.forward_seconds;
  rep.adjoint_seconds = main.adjoint_seconds;
  rep.J = main.J;
  rep.J_terminal = main.J_terminal;
  rep.J_integral = main.J_integral;
  rep.parameter = pb->parameter_name() ? pb->parameter_name() : "";
  REWIND_APP_CALL(VecNorm(main.g_u0, NORM_2, &rep.norm_u0));
  if (main.g_p) REWIND_APP_CALL(VecNorm(main.g_p, NORM_2, &rep.norm_p));
  rep.timeline = main.hooks.events;
  print0("\n" + summary_text(rep));
  if (opt.gradient[0]) {
    write_gradient(opt.gradient, *pb, u0, main);
    print0(std::string("  wrote        the gradient fields to ") + opt.gradient + "\n");
  }

  int code = 0;
  if (opt.compare) {
    print0("\n" + compare_header());
    SolveResult ref = driver.solve(Mode::StoreAll, u0, nullptr);
    CompareReport c;
    c.reference =
        "with PETSc's memory trajectory storing all " + std::to_string(ref.steps + 1) + " states";
    c.fields.push_back(compare_bits("dJ/du0", main.g_u0, ref.g_u0));
    if (main.g_p) c.fields.push_back(compare_bits("dJ/d" + rep.parameter, main.g_p, ref.g_p));
    c.identical = ref.steps == main.steps;
    c.rtol = opt.compare_rtol;
    c.passed = c.identical;
    for (const auto& f : c.fields) {
      c.identical = c.identical && f.differing == 0;
      c.passed = c.passed && (f.differing == 0 || f.relative_diff() <= c.rtol);
    }
    print0(compare_text(c));
    if (!c.passed) code = 1;
    rep.compare = c;
  }
  if (opt.taylor) {
    print0("\n" + taylor_header(rep.parameter, opt.taylor_points));
    TaylorReport t = taylor_test(driver, *pb, u0, main, opt);
    print0(taylor_text(t));
    if (!t.passed) code = 1;
    rep.taylor = t;
  }
  if (opt.json[0] && rank == 0) write_summary(opt.json, summary_json(rep));
  return code;
}

}  // namespace

int run_app(int argc, char** argv, const char* help, const ProblemFactory& make) {
  if (PetscInitialize(&argc, &argv, nullptr, help)) return 1;
  const char* program = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
  program = program ? program + 1 : (argc > 0 ? argv[0] : "rewind-app");
  int code = 0;
  try {
    code = run(make, program);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    std::fflush(stderr);
    MPI_Abort(PETSC_COMM_WORLD, 2);
  }
  if (PetscFinalize()) return 1;
  return code;
}

}  // namespace rwd::apps
