#include "options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "rewind/schedule/registry.hpp"

namespace rwd::petsc {

PetscErrorCode check_bytes(MPI_Comm comm, const char* what, PetscReal bytes, int least,
                           const char* zero) {
  PetscFunctionBegin;
  const auto v = static_cast<double>(bytes);
  char got[32];  // std::snprintf, not PETSc's, which writes 0 as "0."
  std::snprintf(got, sizeof got, "%.15g", v);
  const std::string meaning = zero ? std::string(" (") + zero + ")" : std::string();
  PetscCheck(std::isfinite(v) && v >= least && v <= 1e18 && std::floor(v) == v, comm,
             PETSC_ERR_ARG_OUTOFRANGE,
             "%s must be a whole number of bytes from %d%s to 1e18, got %s", what, least,
             meaning.c_str(), got);
  PetscFunctionReturn(0);
}

engine::SettingNames option_names() {
  engine::SettingNames n;
  n.schedule = "-ts_trajectory_rewind_schedule";
  n.ram = "-ts_trajectory_max_cps_ram";
  n.disk = "-ts_trajectory_max_cps_disk";
  n.ram_bytes = "-ts_trajectory_rewind_ram_bytes";
  n.no_pullback = "-ts_trajectory_solution_only";
  n.steps = "-ts_max_steps/-ts_max_time";
  n.verify_tolerance = "-ts_trajectory_rewind_verify_tolerance";
  n.verify = "-ts_trajectory_rewind_verify";
  n.pullback_data = "stages";
  n.directory = "-ts_trajectory_dirname";
  n.async_io = "-ts_trajectory_rewind_async";
  n.max_staged_bytes = "-ts_trajectory_rewind_max_staged_bytes";
  return n;
}

namespace {

// PETSc reads an integer option with atoll and a cast to PetscInt, so 4294967295 silently
// becomes -1 (here: unlimited). The text of each integer option is checked first.
PetscErrorCode check_integer_text(detail::OptionItems items, const char* name, MPI_Comm comm) {
  char text[256];
  PetscBool set = PETSC_FALSE;
  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(items->options, items->prefix, name, text, sizeof text, &set));
  if (!set) PetscFunctionReturn(0);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  PetscCheck(end != text && *end == '\0' && errno == 0 && v >= PETSC_MIN_INT && v <= PETSC_MAX_INT,
             comm, PETSC_ERR_ARG_OUTOFRANGE, "%s must be a whole number between %d and %d, got %s",
             name, (int)PETSC_MIN_INT, (int)PETSC_MAX_INT, text);
  PetscFunctionReturn(0);
}

}  // namespace

PetscErrorCode read_options(Options& o, detail::OptionItems PetscOptionsObject, MPI_Comm comm) {
  char schedule[256];
  PetscBool flg = PETSC_FALSE;
  PetscFunctionBegin;
  for (const char* name :
       {"-ts_trajectory_max_cps_ram", "-ts_trajectory_max_cps_disk", "-ts_trajectory_rewind_steps",
        "-ts_trajectory_rewind_resume_interval"}) {
    PetscCall(check_integer_text(PetscOptionsObject, name, comm));
  }
  PetscOptionsHeadBegin(PetscOptionsObject, "rewind trajectory options (adjoint checkpointing)");
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_max_cps_ram", "Checkpoints in RAM (default: store every step)",
      "TSTrajectoryRewindSetMaxCheckpoints", o.max_cps_ram, &o.max_cps_ram, NULL));
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_max_cps_disk", "Checkpoints on disk in parallel HDF5 (-1: unlimited)",
      "TSTrajectoryRewindSetMaxCheckpoints", o.max_cps_disk, &o.max_cps_disk, NULL));
  PetscCall(PetscStrncpy(schedule, o.schedule.c_str(), sizeof schedule));
  const std::string names = schedule::ScheduleRegistry::instance().names();
  const std::string help = "Checkpoint schedule: " + names;
  PetscCall(PetscOptionsString("-ts_trajectory_rewind_schedule", help.c_str(),
                               "TSTrajectoryRewindSetSchedule", schedule, schedule, sizeof schedule,
                               &flg));
  char write_cost[64], read_cost[64];
  PetscBool write_set = PETSC_FALSE, read_set = PETSC_FALSE;
  // std::snprintf, not PETSc's, which writes 1 as "1.".
  std::snprintf(write_cost, sizeof write_cost, "%g", (double)o.write_cost);
  std::snprintf(read_cost, sizeof read_cost, "%g", (double)o.read_cost);
  if (o.write_cost < 0) PetscCall(PetscStrncpy(write_cost, "auto", sizeof write_cost));
  if (o.read_cost < 0) PetscCall(PetscStrncpy(read_cost, "auto", sizeof read_cost));
  PetscCall(PetscOptionsString("-ts_trajectory_rewind_write_cost",
                               "Cost of one disk checkpoint write in forward steps, or auto "
                               "(measured against the second step, the default)",
                               "TSTrajectoryRewindSetCosts", write_cost, write_cost,
                               sizeof write_cost, &write_set));
  PetscCall(PetscOptionsString("-ts_trajectory_rewind_read_cost",
                               "Cost of one disk checkpoint read in forward steps, or auto "
                               "(measured against the second step, the default)",
                               "TSTrajectoryRewindSetCosts", read_cost, read_cost, sizeof read_cost,
                               &read_set));
  PetscCall(PetscOptionsBool("-ts_trajectory_rewind_async",
                             "Write and read disk checkpoints on a background thread",
                             "TSTrajectoryRewindSetAsync", o.async, &o.async, NULL));
  PetscCall(PetscOptionsReal(
      "-ts_trajectory_rewind_max_staged_bytes",
      "Bytes a rank may hold in staging buffers for disk writes not yet done and reads done "
      "ahead (with -ts_trajectory_rewind_async)",
      "TSTrajectoryRewindSetMaxStagedBytes", o.max_staged_bytes, &o.max_staged_bytes, NULL));
  PetscCall(PetscOptionsReal("-ts_trajectory_rewind_ram_bytes",
                             "RAM budget for checkpoints in bytes (0: none)",
                             "TSTrajectoryRewindSetRAMBytes", o.ram_bytes, &o.ram_bytes, NULL));
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_rewind_steps",
      "The step count, for fixed-step runs whose count TS cannot predict (0: count it)",
      "TSTrajectoryRewindSetSteps", o.steps, &o.steps, NULL));
  PetscCall(PetscOptionsBool(
      "-ts_trajectory_rewind_verify",
      "Check every recomputed state against the forward run (a hash a state; an error, not a "
      "wrong gradient, when they differ)",
      "TSTrajectoryRewindSetVerify", o.verify, &o.verify, NULL));
  PetscCall(PetscOptionsReal(
      "-ts_trajectory_rewind_verify_tolerance",
      "With the replay check: accept a recomputed state that differs from the forward run's by "
      "at most this much relative to its norm (0: the same bits)",
      "TSTrajectoryRewindSetVerifyTolerance", o.verify_tolerance, &o.verify_tolerance, NULL));
  PetscCall(PetscOptionsBool(
      "-ts_trajectory_rewind_resume",
      "Make the run survive a kill (durable checkpoints and a manifest in "
      "-ts_trajectory_dirname), and go on from those of a killed run with the same options",
      "TSTrajectoryRewindSetResume", o.resume, &o.resume, NULL));
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_rewind_resume_interval",
      "Steps between durable states of a resumable run (0: the smallest the disk budget allows)",
      "TSTrajectoryRewindSetResume", o.resume_interval, &o.resume_interval, NULL));
  PetscCall(PetscOptionsBool(
      "-ts_trajectory_rewind_recompute_solves",
      "Let a TSSolve continue a run whose earlier solves are not held whole: their steps are run "
      "again in the adjoint, right only if the program changes nothing between its TSSolve calls",
      "TSTrajectoryRewindSetRecomputeSolves", o.recompute_solves, &o.recompute_solves, NULL));
  PetscOptionsHeadEnd();
  if (flg) {
    PetscCheck(schedule::ScheduleRegistry::instance().contains(schedule), comm,
               PETSC_ERR_ARG_UNKNOWN_TYPE,
               "-ts_trajectory_rewind_schedule %s is not a rewind schedule; choose one of: %s",
               schedule, names.c_str());
    o.schedule = schedule;
  }
  PetscCheck(o.max_cps_ram == -1 || o.max_cps_ram >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_max_cps_ram must be >= 1 (it counts the checkpoint of the initial "
             "state), got %" PetscInt_FMT,
             o.max_cps_ram);
  PetscCheck(o.max_cps_disk >= -1, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_max_cps_disk must be >= 0, or -1 for unlimited, got %" PetscInt_FMT,
             o.max_cps_disk);
  for (auto [name, text, out, given] :
       {std::tuple{"-ts_trajectory_rewind_write_cost", write_cost, &o.write_cost, write_set},
        std::tuple{"-ts_trajectory_rewind_read_cost", read_cost, &o.read_cost, read_set}}) {
    if (!given) continue;
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (std::string(text) == "auto") {
      *out = -1.0;
    } else {
      PetscCheck(end != text && *end == '\0' && std::isfinite(v) && v >= 0 && v <= 1e12, comm,
                 PETSC_ERR_ARG_OUTOFRANGE,
                 "%s must be a number >= 0 (forward steps, at most 1e12) or auto, got %s", name,
                 text);
      *out = v;
    }
  }
  PetscCall(check_bytes(comm, "-ts_trajectory_rewind_max_staged_bytes", o.max_staged_bytes, 1));
  PetscCall(check_bytes(comm, "-ts_trajectory_rewind_ram_bytes", o.ram_bytes, 0, "no byte budget"));
  PetscCheck(o.steps >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_rewind_steps must be >= 0 (0: count the steps), got %" PetscInt_FMT,
             o.steps);
  PetscCheck(o.resume_interval >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_rewind_resume_interval must be >= 0 (0: from the disk budget), got "
             "%" PetscInt_FMT,
             o.resume_interval);
  PetscFunctionReturn(0);
}

}  // namespace rwd::petsc
