#include "options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "rewind/comm/agree.hpp"
#include "rewind/engine/plan.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/storage/codec.hpp"

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
  n.give_steps = "-ts_trajectory_rewind_steps";
  n.online_schedule.clear();  // TS predicts a fixed step's count, and schedules are given it
  n.verify_tolerance = "-ts_trajectory_rewind_verify_tolerance";
  n.compress = "-ts_trajectory_rewind_compress";
  n.compress_ratio = "-ts_trajectory_rewind_compress_ratio";
  n.lossy_pullbacks = "-ts_trajectory_rewind_compress_lossy_pullbacks";
  n.compress_disk = "-ts_trajectory_rewind_compress_disk";
  n.compress_tolerance = "-ts_trajectory_rewind_compress_tolerance";
  n.compress_precision = "-ts_trajectory_rewind_compress_precision";
  n.compress_level = "-ts_trajectory_rewind_compress_level";
  n.verify = "-ts_trajectory_rewind_verify";
  n.pullback_data = "stages";
  n.directory = "-ts_trajectory_dirname";
  n.async_io = "-ts_trajectory_rewind_async";
  n.max_staged_bytes = "-ts_trajectory_rewind_max_staged_bytes";
  return n;
}

std::string bytes_text(PetscReal bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.0f", static_cast<double>(bytes));
  return text;
}

// PETSc's own trajectory options (TSTrajectorySetFromOptions; -ts_trajectory_view after
// TSAdjointSolve) and rewind's.
constexpr const char* kOptionNames[] = {"-ts_trajectory_type",
                                        "-ts_trajectory_view",
                                        "-ts_trajectory_monitor",
                                        "-ts_trajectory_dirname",
                                        "-ts_trajectory_keep_files",
                                        "-ts_trajectory_solution_only",
                                        "-ts_trajectory_adjointmode",
                                        "-ts_trajectory_use_history",
                                        "-ts_trajectory_max_cps_ram",
                                        "-ts_trajectory_max_cps_disk",
                                        "-ts_trajectory_rewind_schedule",
                                        "-ts_trajectory_rewind_write_cost",
                                        "-ts_trajectory_rewind_read_cost",
                                        "-ts_trajectory_rewind_async",
                                        "-ts_trajectory_rewind_max_staged_bytes",
                                        "-ts_trajectory_rewind_ram_bytes",
                                        "-ts_trajectory_rewind_steps",
                                        "-ts_trajectory_rewind_verify",
                                        "-ts_trajectory_rewind_verify_tolerance",
                                        "-ts_trajectory_rewind_resume",
                                        "-ts_trajectory_rewind_resume_interval",
                                        "-ts_trajectory_rewind_recompute_warning",
                                        "-ts_trajectory_rewind_recompute_solves",
                                        "-ts_trajectory_rewind_fsal_restart",
                                        "-ts_trajectory_rewind_compress",
                                        "-ts_trajectory_rewind_compress_tolerance",
                                        "-ts_trajectory_rewind_compress_ratio",
                                        "-ts_trajectory_rewind_compress_lossy_pullbacks",
                                        "-ts_trajectory_rewind_compress_precision",
                                        "-ts_trajectory_rewind_compress_level",
                                        "-ts_trajectory_rewind_compress_disk"};

PetscErrorCode mark_options_used(TSTrajectory tj) {
  // Options rewind ignores (-ts_trajectory_stride, ...) stay unused, and are reported.
  PetscOptions options = nullptr;
  const char* prefix = nullptr;
  PetscFunctionBegin;
  PetscCall(PetscObjectGetOptions((PetscObject)tj, &options));
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)tj, &prefix));
  // Finding an option marks it used (PetscOptionsFindPair).
  for (const char* name : kOptionNames) {
    PetscCall(PetscOptionsHasName(options, prefix, name, nullptr));
  }
  PetscFunctionReturn(0);
}

namespace {

// Whether all of `text` is a number (std::strtod reads it to the end); its value in *v.
bool is_number(const char* text, double* v) {
  char* end = nullptr;
  *v = std::strtod(text, &end);
  return end != text && *end == '\0';
}

// A byte count given as text (the default's text when not given): a whole number of bytes from
// `least` to 1e18, in any notation strtod reads ("1e8").
PetscErrorCode parse_bytes(MPI_Comm comm, const char* name, const char* text, PetscBool given,
                           int least, const char* zero, PetscReal& out) {
  PetscFunctionBegin;
  if (given) {
    double v = 0;
    const std::string meaning = zero ? std::string(" (") + zero + ")" : std::string();
    PetscCheck(is_number(text, &v), comm, PETSC_ERR_ARG_OUTOFRANGE,
               "%s must be a whole number of bytes from %d%s to 1e18, got '%s'", name, least,
               meaning.c_str(), text);
    out = v;
  }
  PetscCall(check_bytes(comm, name, out, least, zero));
  PetscFunctionReturn(0);
}

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

// The options read as text, and whether each was given.
struct Texts {
  char schedule[256] = "";
  char write_cost[64] = "", read_cost[64] = "";
  char staged[64] = "", ram_bytes[64] = "", recompute[64] = "";
  char tolerance[64] = "";
  char compress[64] = "", compress_tolerance[64] = "", compress_ratio[64] = "";
  PetscBool compress_set = PETSC_FALSE, compress_tolerance_set = PETSC_FALSE;
  PetscBool compress_ratio_set = PETSC_FALSE;
  PetscBool recompute_set = PETSC_FALSE, tolerance_set = PETSC_FALSE;
  PetscBool schedule_set = PETSC_FALSE, write_set = PETSC_FALSE, read_set = PETSC_FALSE;
  PetscBool staged_set = PETSC_FALSE, ram_bytes_set = PETSC_FALSE;
};

// A number given as text: "<name> must be a number (<meaning>), got '<text>'" otherwise.
PetscErrorCode parse_number(MPI_Comm comm, const char* name, const char* text, const char* meaning,
                            PetscReal& out) {
  double v = 0;
  PetscFunctionBegin;
  PetscCheck(is_number(text, &v), comm, PETSC_ERR_ARG_OUTOFRANGE,
             "%s must be a number (%s), got '%s'", name, meaning, text);
  out = v;
  PetscFunctionReturn(0);
}

// -ts_trajectory_rewind_compress and its tolerance, checked as the store checks a codec.
PetscErrorCode check_compress(Options& o, const Texts& t, MPI_Comm comm) {
  PetscFunctionBegin;
  if (t.compress_set) o.compress = t.compress;
  if (t.compress_tolerance_set) {
    PetscCall(parse_number(comm, "-ts_trajectory_rewind_compress_tolerance", t.compress_tolerance,
                           "the largest absolute error of a restored value, for zfp",
                           o.compress_tolerance));
  }
  if (t.compress_ratio_set) {
    PetscCall(parse_number(comm, "-ts_trajectory_rewind_compress_ratio", t.compress_ratio,
                           "0: measured on the initial state, 1: plan as uncompressed",
                           o.compress_ratio));
    try {
      engine::check_compress_ratio(static_cast<double>(o.compress_ratio),
                                   "-ts_trajectory_rewind_compress_ratio");
    } catch (const Error& e) {
      SETERRQ(comm, PETSC_ERR_ARG_OUTOFRANGE, "%s", e.what());
    }
  }
  try {
    storage::check_codec(
        {o.compress, static_cast<double>(o.compress_tolerance),
         static_cast<int>(o.compress_precision), static_cast<int>(o.compress_level)},
        "-ts_trajectory_rewind_compress", "-ts_trajectory_rewind_compress_tolerance",
        "-ts_trajectory_rewind_compress_precision", "-ts_trajectory_rewind_compress_level");
  } catch (const Error& e) {
    SETERRQ(comm, PETSC_ERR_ARG_OUTOFRANGE, "%s", e.what());
  }
  PetscCheck(!o.compress_lossy_pullbacks || storage::codec_is_lossy(o.compress), comm,
             PETSC_ERR_ARG_INCOMP,
             "-ts_trajectory_rewind_compress_lossy_pullbacks compresses stage values lossily, and "
             "-ts_trajectory_rewind_compress %s is not lossy; choose zfp or leave it false",
             o.compress.c_str());
  PetscFunctionReturn(0);
}

// The checks of the options read, each error naming the option and what to give.
PetscErrorCode check_options(Options& o, const Texts& t, MPI_Comm comm) {
  PetscFunctionBegin;
  if (t.schedule_set) {
    const auto& registry = schedule::ScheduleRegistry::instance();
    PetscCheck(registry.contains(t.schedule), comm, PETSC_ERR_ARG_UNKNOWN_TYPE,
               "-ts_trajectory_rewind_schedule %s is not a rewind schedule; choose one of: %s",
               t.schedule, registry.names().c_str());
    o.schedule = t.schedule;
  }
  PetscCheck(o.max_cps_ram == -1 || o.max_cps_ram >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_max_cps_ram must be >= 1 (it counts the checkpoint of the initial "
             "state), got %" PetscInt_FMT,
             o.max_cps_ram);
  PetscCheck(o.max_cps_disk >= -1, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_max_cps_disk must be >= 0, or -1 for unlimited, got %" PetscInt_FMT,
             o.max_cps_disk);
  for (auto [name, text, out, given] :
       {std::tuple{"-ts_trajectory_rewind_write_cost", t.write_cost, &o.write_cost, t.write_set},
        std::tuple{"-ts_trajectory_rewind_read_cost", t.read_cost, &o.read_cost, t.read_set}}) {
    if (!given) continue;
    double v = 0;
    const bool number = is_number(text, &v);
    if (std::string(text) == "auto") {
      *out = -1.0;
    } else {
      PetscCheck(number && std::isfinite(v) && v >= 0 && v <= 1e12, comm, PETSC_ERR_ARG_OUTOFRANGE,
                 "%s must be a number >= 0 (forward steps, at most 1e12) or auto, got %s", name,
                 text);
      *out = v;
    }
  }
  PetscCall(parse_bytes(comm, "-ts_trajectory_rewind_max_staged_bytes", t.staged, t.staged_set, 1,
                        nullptr, o.max_staged_bytes));
  PetscCall(parse_bytes(comm, "-ts_trajectory_rewind_ram_bytes", t.ram_bytes, t.ram_bytes_set, 0,
                        "no byte budget", o.ram_bytes));
  if (t.recompute_set) {
    double v = 0;
    PetscCheck(is_number(t.recompute, &v) && std::isfinite(v) && v >= 0, comm,
               PETSC_ERR_ARG_OUTOFRANGE,
               "-ts_trajectory_rewind_recompute_warning must be a number >= 0 (a multiple of the "
               "steps; 0: never warn), got '%s'",
               t.recompute);
    o.recompute_warning = v;
  }
  if (t.tolerance_set) {  // its range is checked when the run plans (with -..._verify)
    PetscCall(parse_number(comm, "-ts_trajectory_rewind_verify_tolerance", t.tolerance,
                           "relative to a state's norm; 0: the same bits", o.verify_tolerance));
  }
  PetscCall(check_compress(o, t, comm));
  PetscCheck(o.steps >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_rewind_steps must be >= 0 (0: count the steps), got %" PetscInt_FMT,
             o.steps);
  PetscCheck(o.resume_interval >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ts_trajectory_rewind_resume_interval must be >= 0 (0: from the disk budget), got "
             "%" PetscInt_FMT,
             o.resume_interval);
  PetscFunctionReturn(0);
}

// -ts_trajectory_rewind_compress and its tolerance, read as text (-help then shows 0, not 0.).
PetscErrorCode read_compress_options(Options& o, Texts& t, detail::OptionItems PetscOptionsObject) {
  PetscFunctionBegin;
  PetscCall(PetscStrncpy(t.compress, o.compress.c_str(), sizeof t.compress));
  std::string codecs;
  for (const auto& c : storage::codec_list()) codecs += (codecs.empty() ? "" : ", ") + c.name;
  const std::string compress_help =
      "Compress checkpoints: " + codecs +
      " (zstd and blosc keep every bit, and compress disk checkpoints too unless "
      "-ts_trajectory_rewind_compress_disk 0; zfp, lossy, RAM checkpoints only, restores states "
      "within -ts_trajectory_rewind_compress_tolerance and keeps stage values exact)";
  PetscCall(PetscOptionsString("-ts_trajectory_rewind_compress", compress_help.c_str(),
                               "TSTrajectoryRewindSetCompress", t.compress, t.compress,
                               sizeof t.compress, &t.compress_set));
  std::snprintf(t.compress_tolerance, sizeof t.compress_tolerance, "%g",
                (double)o.compress_tolerance);
  PetscCall(PetscOptionsString(
      "-ts_trajectory_rewind_compress_tolerance",
      "zfp: the largest absolute error of a restored value (lossy codecs only)",
      "TSTrajectoryRewindSetCompress", t.compress_tolerance, t.compress_tolerance,
      sizeof t.compress_tolerance, &t.compress_tolerance_set));
  std::snprintf(t.compress_ratio, sizeof t.compress_ratio, "%g", (double)o.compress_ratio);
  PetscCall(PetscOptionsString(
      "-ts_trajectory_rewind_compress_ratio",
      "The compression ratio the RAM budget is planned with (with -ts_trajectory_rewind_compress): "
      "1 plans as uncompressed; r > 1 makes -ts_trajectory_max_cps_ram N the bytes of N "
      "uncompressed checkpoints and fills them with checkpoints of 1/r their size; 0 measures r "
      "on the initial state (times 0.8). Checkpoints that compress worse than planned move to the "
      "disk budget's room, or stop the run",
      "TSTrajectoryRewindSetCompressRatio", t.compress_ratio, t.compress_ratio,
      sizeof t.compress_ratio, &t.compress_ratio_set));
  PetscCall(PetscOptionsInt("-ts_trajectory_rewind_compress_precision",
                            "zfp-precision: the bits kept of each block of four values (1 to 64)",
                            "TSTrajectoryRewindSetCompressPrecision", o.compress_precision,
                            &o.compress_precision, nullptr));
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_rewind_compress_level",
      "zstd (1 to 19) and blosc (1 to 9): the compression level, higher for smaller checkpoints "
      "at more time (0: zstd 1, blosc 5)",
      "TSTrajectoryRewindSetCompressLevel", o.compress_level, &o.compress_level, nullptr));
  PetscCall(PetscOptionsBool(
      "-ts_trajectory_rewind_compress_lossy_pullbacks",
      "With a lossy codec (zfp): compress the stage values adjoint steps read lossily too (more "
      "checkpoints, a larger gradient error); by default they keep their bits",
      "TSTrajectoryRewindSetCompressLossyPullbacks", o.compress_lossy_pullbacks,
      &o.compress_lossy_pullbacks, nullptr));
  PetscCall(PetscOptionsBool(
      "-ts_trajectory_rewind_compress_disk",
      "With a lossless codec: compress disk checkpoints too, on the I/O thread where they are "
      "written behind and read ahead (fewer bytes moved; the file keeps room for the values)",
      "TSTrajectoryRewindSetCompressDisk", o.compress_disk, &o.compress_disk, nullptr));
  PetscFunctionReturn(0);
}

PetscErrorCode agree_option_texts(detail::OptionItems items, MPI_Comm comm) {
  std::vector<comm::Setting> settings;
  PetscFunctionBegin;
  for (const char* name : kOptionNames) {
    if (std::string_view(name) == "-ts_trajectory_type") continue;  // not rewind on every rank
    char text[PETSC_MAX_PATH_LEN] = "";
    PetscBool set = PETSC_FALSE;
    PetscCall(PetscOptionsGetString(items->options, items->prefix, name, text, sizeof text, &set));
    // Unset, and set without a value, hash apart.
    settings.push_back({name, set ? comm::setting_hash(std::string_view(text)) + 1 : 0});
  }
  try {
    comm::agree_settings(comm, settings);
  } catch (const Error& e) {
    // On every rank, each printing it (a check on the trajectory's communicator prints on its
    // first rank only, and a rank that found nothing wrong would wait for the others).
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_INCOMP, "%s", e.what());
  }
  PetscFunctionReturn(0);
}

// The options' texts, before any value is read.
PetscErrorCode check_option_texts(detail::OptionItems PetscOptionsObject, MPI_Comm comm) {
  PetscFunctionBegin;
  // A value given on some ranks only, or unlike on others, is refused by name on every rank
  // before any value is checked: a value refused on one rank alone would stop that rank only.
  PetscCall(agree_option_texts(PetscOptionsObject, comm));
  for (const char* name :
       {"-ts_trajectory_max_cps_ram", "-ts_trajectory_max_cps_disk", "-ts_trajectory_rewind_steps",
        "-ts_trajectory_rewind_resume_interval"}) {
    PetscCall(check_integer_text(PetscOptionsObject, name, comm));
  }
  PetscFunctionReturn(0);
}

}  // namespace

PetscErrorCode read_options(Options& o, detail::OptionItems PetscOptionsObject, MPI_Comm comm) {
  Texts t;
  PetscFunctionBegin;
  PetscCall(check_option_texts(PetscOptionsObject, comm));
  PetscOptionsHeadBegin(PetscOptionsObject, "rewind trajectory options (adjoint checkpointing)");
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_max_cps_ram", "Checkpoints in RAM (-1: no budget, store every step)",
      "TSTrajectoryRewindSetMaxCheckpoints", o.max_cps_ram, &o.max_cps_ram, NULL));
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_max_cps_disk", "Checkpoints on disk in parallel HDF5 (-1: unlimited)",
      "TSTrajectoryRewindSetMaxCheckpoints", o.max_cps_disk, &o.max_cps_disk, NULL));
  PetscCall(PetscStrncpy(t.schedule, o.schedule.c_str(), sizeof t.schedule));
  const std::string help = "Checkpoint schedule: " + schedule::ScheduleRegistry::instance().names();
  PetscCall(PetscOptionsString("-ts_trajectory_rewind_schedule", help.c_str(),
                               "TSTrajectoryRewindSetSchedule", t.schedule, t.schedule,
                               sizeof t.schedule, &t.schedule_set));
  // std::snprintf, not PETSc's, which writes 1 as "1.".
  std::snprintf(t.write_cost, sizeof t.write_cost, "%g", (double)o.write_cost);
  std::snprintf(t.read_cost, sizeof t.read_cost, "%g", (double)o.read_cost);
  if (o.write_cost < 0) PetscCall(PetscStrncpy(t.write_cost, "auto", sizeof t.write_cost));
  if (o.read_cost < 0) PetscCall(PetscStrncpy(t.read_cost, "auto", sizeof t.read_cost));
  PetscCall(PetscOptionsString("-ts_trajectory_rewind_write_cost",
                               "Cost of one disk checkpoint write in forward steps, or auto "
                               "(measured against the second step, the default)",
                               "TSTrajectoryRewindSetCosts", t.write_cost, t.write_cost,
                               sizeof t.write_cost, &t.write_set));
  PetscCall(PetscOptionsString("-ts_trajectory_rewind_read_cost",
                               "Cost of one disk checkpoint read in forward steps, or auto "
                               "(measured against the second step, the default)",
                               "TSTrajectoryRewindSetCosts", t.read_cost, t.read_cost,
                               sizeof t.read_cost, &t.read_set));
  PetscCall(PetscOptionsBool("-ts_trajectory_rewind_async",
                             "Write and read disk checkpoints on a background thread",
                             "TSTrajectoryRewindSetAsync", o.async, &o.async, NULL));
  // Byte counts are read as text so that -help shows them whole (a real prints as 2.68435e+08).
  PetscCall(PetscStrncpy(t.staged, bytes_text(o.max_staged_bytes).c_str(), sizeof t.staged));
  PetscCall(PetscStrncpy(t.ram_bytes, bytes_text(o.ram_bytes).c_str(), sizeof t.ram_bytes));
  PetscCall(PetscOptionsString(
      "-ts_trajectory_rewind_max_staged_bytes",
      "Bytes a rank may hold in staging buffers for disk writes not yet done and reads done "
      "ahead (with -ts_trajectory_rewind_async; default 268435456, 256 MiB)",
      "TSTrajectoryRewindSetMaxStagedBytes", t.staged, t.staged, sizeof t.staged, &t.staged_set));
  PetscCall(PetscOptionsString("-ts_trajectory_rewind_ram_bytes",
                               "RAM budget for checkpoints in bytes (0: none)",
                               "TSTrajectoryRewindSetRAMBytes", t.ram_bytes, t.ram_bytes,
                               sizeof t.ram_bytes, &t.ram_bytes_set));
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_rewind_steps",
      "The step count, for fixed-step runs whose count TS cannot predict (0: count it)",
      "TSTrajectoryRewindSetSteps", o.steps, &o.steps, NULL));
  PetscCall(PetscOptionsBool(
      "-ts_trajectory_rewind_verify",
      "Check every recomputed state against the forward run (a hash a state; an error, not a "
      "wrong gradient, when they differ)",
      "TSTrajectoryRewindSetVerify", o.verify, &o.verify, NULL));
  // Read as text, as the byte counts below: -help then shows its default as 0, not 0.
  std::snprintf(t.tolerance, sizeof t.tolerance, "%g", (double)o.verify_tolerance);
  PetscCall(PetscOptionsString(
      "-ts_trajectory_rewind_verify_tolerance",
      "With the replay check: accept a recomputed state that differs from the forward run's by "
      "at most this much relative to its norm (0: the same bits)",
      "TSTrajectoryRewindSetVerifyTolerance", t.tolerance, t.tolerance, sizeof t.tolerance,
      &t.tolerance_set));
  PetscCall(PetscOptionsBool(
      "-ts_trajectory_rewind_resume",
      "Make the run survive a kill (durable checkpoints and a manifest in "
      "-ts_trajectory_dirname), and go on from those of a killed run with the same options",
      "TSTrajectoryRewindSetResume", o.resume, &o.resume, NULL));
  PetscCall(PetscOptionsInt(
      "-ts_trajectory_rewind_resume_interval",
      "Steps between durable states of a resumable run (0: the smallest the disk budget allows)",
      "TSTrajectoryRewindSetResume", o.resume_interval, &o.resume_interval, NULL));
  std::snprintf(t.recompute, sizeof t.recompute, "%g", (double)o.recompute_warning);
  PetscCall(PetscOptionsString(
      "-ts_trajectory_rewind_recompute_warning",
      "Warn (once, rank 0) when the plan recomputes more than this many times the steps it "
      "reverses, naming the RAM budget that would not (0: never)",
      "TSTrajectoryRewindSetRecomputeWarning", t.recompute, t.recompute, sizeof t.recompute,
      &t.recompute_set));
  PetscCall(PetscOptionsBool(
      "-ts_trajectory_rewind_recompute_solves",
      "Let a TSSolve continue a run whose earlier solves are not held whole: their steps are run "
      "again in the adjoint, right only if the program changes nothing between its TSSolve calls",
      "TSTrajectoryRewindSetRecomputeSolves", o.recompute_solves, &o.recompute_solves, NULL));
  PetscCall(PetscOptionsBool(
      "-ts_trajectory_rewind_fsal_restart",
      "A first-same-as-last RK method restarts the step after a restore, as PETSc's memory "
      "trajectory does (with the replay check); 0: keep its last stage with each restart "
      "checkpoint and rebuild the reused derivative exactly",
      "", o.fsal_restart, &o.fsal_restart, NULL));
  PetscCall(read_compress_options(o, t, PetscOptionsObject));
  PetscOptionsHeadEnd();
  PetscCall(check_options(o, t, comm));
  PetscFunctionReturn(0);
}

}  // namespace rwd::petsc
