// The `rewind` TSTrajectory type: PETSc's ops table, registration and the C API of
// include/rewind/petsc/trajectory.h. Each callback is thin; the work is in solve_run.cpp (one
// solve's recording), options.cpp, run_config.cpp, view.cpp and ts_stepper.cpp.
#include "rewind/petsc/trajectory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "log_events.hpp"
#include "made_dirs.hpp"
#include "private_access.hpp"
#include "rewind/engine/recording.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/storage/codec.hpp"
#include "rewind/timing.hpp"
#include "run_config.hpp"
#include "shared_stores.hpp"
#include "step_replay.hpp"
#include "trajectory_state.hpp"

namespace rwd::petsc {

Trajectory::~Trajectory() {
  drop_run();
  unhook_steps(ts);
}

void Trajectory::drop_run() {
  if (run) {
    try {
      run->abandon();
    } catch (const std::exception& e) {
      // A run the program left and whose files could not be removed: a later resume refuses or
      // checks them; say so rather than fail the program's teardown.
      std::fprintf(stderr, "rewind: %s\n", e.what());
    }
  }
  run.reset();
}

void Trajectory::finish() {
  if (run && run->finish()) run.reset();
}

Trajectory& trajectory(TSTrajectory tj) {
  return *static_cast<Trajectory*>(detail::data(tj));
}

namespace {

// Makes -ts_trajectory_dirname, and any parents missing (rank 0, remembering which it made), if
// the run may write to the disk, then agrees it is a writable directory. Collective: first the
// ranks agree whether there is a directory to make (a name, and a disk budget), so that ranks
// given different options are refused by name rather than left in different collectives.
PetscErrorCode make_dirname(TSTrajectory tj) {
  PetscFunctionBegin;
  const char* dir = detail::dirname(tj);
  const bool disk = trajectory(tj).carry.options.max_cps_disk != 0;
  MPI_Comm comm = PetscObjectComm((PetscObject)tj);
  // {named, disk} and their negations: one MIN gives each's minimum and maximum.
  int mine[4] = {dir != nullptr, disk, dir == nullptr, !disk}, all[4] = {};
  PetscCallMPI(MPI_Allreduce(mine, all, 4, MPI_INT, MPI_MIN, comm));
  // Every rank fails alike; PETSC_COMM_SELF so that each prints its own error (on the
  // communicator only rank 0's would be printed before MPI_Abort).
  PetscCheck(all[0] == 1 - all[2], PETSC_COMM_SELF, PETSC_ERR_ARG_INCOMP,
             "-ts_trajectory_dirname differs between ranks (given on some ranks only); every "
             "rank must give the same");
  PetscCheck(all[1] == 1 - all[3], PETSC_COMM_SELF, PETSC_ERR_ARG_INCOMP,
             "-ts_trajectory_max_cps_disk differs between ranks (0 on some ranks only); every "
             "rank must give the same");
  if (!dir || !disk) PetscFunctionReturn(0);
  PetscCall(make_dirs(comm, dir, "-ts_trajectory_dirname", trajectory(tj).made_dirs));
  PetscFunctionReturn(0);
}

void remove_empty_made_dirs(TSTrajectory tj) noexcept {
  if (auto* t = static_cast<Trajectory*>(detail::data(tj))) remove_empty(t->made_dirs);
}

// A rewind callback that failed: PETSc's error path usually ends the program with MPI_Abort,
// which runs no destructor, so the directories rewind made and left empty go now. (A run that
// goes on after the error gets them back at its next TSSolve.)
PetscErrorCode tidy_on_error(TSTrajectory tj, PetscErrorCode ierr) {
  if (ierr && !detail::keep_files(tj)) remove_empty_made_dirs(tj);
  return ierr;
}

// Runs `fn` (a step of `run`), marking the run failed if it throws.
template <class Fn>
void guarded(SolveRun& run, Fn&& fn) {
  try {
    fn();
  } catch (...) {
    run.failed();
    throw;
  }
}

PetscErrorCode set_step(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal time) {
  PetscFunctionBegin;
  Trajectory& t = trajectory(tj);
  if (stepnum == 0) {
    if (t.run && t.run->fresh()) PetscFunctionReturn(0);  // TSSolve repeats set(0)
    t.drop_run();
    t.ts = ts;
    PetscCall(make_dirname(tj));
    PetscCallCXX(t.run = std::make_unique<SolveRun>(tj, ts, time, t.carry));
    PetscFunctionReturn(0);
  }
  PetscCheck(t.run, PetscObjectComm((PetscObject)tj), PETSC_ERR_ORDER,
             "rewind: TSTrajectorySet for step %" PetscInt_FMT " before step 0", stepnum);
  PetscCallCXX(guarded(*t.run, [&] { t.run->set(stepnum, time); }));
  PetscFunctionReturn(0);
}

// Adds a callback's time to the run's time on the caller's thread (a new run starts at set(0)).
class CallbackClock {
 public:
  CallbackClock(Trajectory& t, bool new_run) : t_(t), started_(SteadyClock::now()) {
    if (new_run) {
      t_.callback_seconds = 0.0;
      t_.run_started = started_;
    }
  }
  ~CallbackClock() {
    t_.last_callback_end = SteadyClock::now();
    t_.callback_seconds += std::chrono::duration<double>(t_.last_callback_end - started_).count();
  }
  CallbackClock(const CallbackClock&) = delete;
  CallbackClock& operator=(const CallbackClock&) = delete;

 private:
  Trajectory& t_;
  SteadyClock::time_point started_;
};

PetscErrorCode set_op(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal time, Vec) {
  PetscFunctionBegin;
  Trajectory& t = trajectory(tj);
  const CallbackClock clock(t, stepnum == 0 && !(t.run && t.run->fresh()));
  PetscCall(tidy_on_error(tj, set_step(tj, ts, stepnum, time)));
  PetscFunctionReturn(0);
}

PetscErrorCode get_step(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal* time) {
  PetscFunctionBegin;
  Trajectory& t = trajectory(tj);
  TSConvergedReason reason = TS_CONVERGED_ITERATING;
  PetscCall(TSGetConvergedReason(ts, &reason));
  if (reason) {  // after TSAdjointSolve's loop: the adjoint of step 0 is done
    PetscCallCXX(t.finish());
    PetscCall(TSGetTime(ts, time));
    PetscFunctionReturn(0);
  }
  PetscCheck(t.run, PetscObjectComm((PetscObject)tj), PETSC_ERR_ORDER,
             "rewind: TSTrajectoryGet without a recorded forward run (call TSSolve first)");
  PetscCallCXX(guarded(*t.run, [&] { t.run->get(stepnum, time); }));
  PetscFunctionReturn(0);
}

PetscErrorCode get_op(TSTrajectory tj, TS ts, PetscInt stepnum, PetscReal* time) {
  PetscFunctionBegin;
  const CallbackClock clock(trajectory(tj), false);
  PetscCall(tidy_on_error(tj, get_step(tj, ts, stepnum, time)));
  PetscFunctionReturn(0);
}

PetscErrorCode reset_op(TSTrajectory tj) {
  PetscFunctionBegin;
  trajectory(tj).drop_run();
  PetscFunctionReturn(0);
}

// Never delete what rewind did not create: PETSc's TSTrajectoryDestroy removes the whole
// -ts_trajectory_dirname tree after this unless files are kept. rewind's checkpoint files are
// gone by now (its stores remove them when they close, unless kept); the directory goes only if
// rewind made it and it is empty. Then PETSc is told to keep the rest.
PetscErrorCode destroy_op(TSTrajectory tj) {
  PetscFunctionBegin;
  auto* t = static_cast<Trajectory*>(detail::data(tj));
  std::vector<MadeDir> made = t ? std::move(t->made_dirs) : std::vector<MadeDir>{};
  delete t;  // its run and stores: their files go first, so that the directories may be empty
  detail::set_data(tj, nullptr);
  if (detail::dirname(tj) && !detail::keep_files(tj)) {
    remove_empty(made);
    detail::set_keep_files(tj, true);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode setfromoptions_op(TSTrajectory tj, detail::OptionItems items) {
  PetscFunctionBegin;
  PetscCall(read_options(trajectory(tj).carry.options, items, PetscObjectComm((PetscObject)tj)));
  PetscFunctionReturn(0);
}

PetscErrorCode setup_op(TSTrajectory tj, TS) {
  PetscFunctionBegin;
  PetscCall(mark_options_used(tj));
  PetscCall(tidy_on_error(tj, make_dirname(tj)));
  PetscFunctionReturn(0);
}

PetscErrorCode create(TSTrajectory tj, TS) {
  PetscFunctionBegin;
  PetscCallCXX(detail::set_data(tj, new Trajectory()));
  detail::set_ops(tj, {set_op, get_op, view, reset_op, destroy_op, setfromoptions_op, setup_op});
  // Before any option is checked: an error then is not followed by "Option left" for them.
  PetscCall(mark_options_used(tj));
  PetscFunctionReturn(0);
}

bool is_rewind(TSTrajectory tj) {
  PetscBool same = PETSC_FALSE;
  return !PetscObjectTypeCompare((PetscObject)tj, TSTRAJECTORYREWIND, &same) && same;
}

Options& options(TSTrajectory tj) {
  return trajectory(tj).carry.options;
}

}  // namespace

void share_stores(TSTrajectory tj, std::shared_ptr<engine::Stores> stores) {
  rwd::require(is_rewind(tj),
               "the trajectory is not of type rewind; set -ts_trajectory_type rewind");
  Carry& carry = trajectory(tj).carry;
  carry.stores = std::move(stores);
  carry.stores_config = carry.stores->config();
  carry.shared_stores = true;
}

engine::Recording* current_recording(TSTrajectory tj) {
  if (!is_rewind(tj)) return nullptr;
  Trajectory& t = trajectory(tj);
  return t.run ? t.run->recording() : nullptr;
}
}  // namespace rwd::petsc

using rwd::petsc::is_rewind;
using rwd::petsc::options;
using rwd::petsc::trajectory;
namespace rs = rwd::schedule;

extern "C" {

PetscErrorCode TSTrajectoryRegisterRewind(void) {
  static PetscBool registered = PETSC_FALSE;
  PetscFunctionBegin;
  if (registered) PetscFunctionReturn(0);
  registered = PETSC_TRUE;
  PetscCall(TSTrajectoryRegister(TSTRAJECTORYREWIND, rwd::petsc::create));
  PetscCall(rwd::petsc::register_log_events(TSTRAJECTORY_CLASSID));
  PetscFunctionReturn(0);
}

PetscErrorCode PetscDLLibraryRegister_rewind(void) {
  return TSTrajectoryRegisterRewind();
}

PetscErrorCode TSTrajectoryRewindSetSchedule(TSTrajectory tj, const char name[]) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck(rs::ScheduleRegistry::instance().contains(name), PetscObjectComm((PetscObject)tj),
             PETSC_ERR_ARG_UNKNOWN_TYPE, "unknown rewind schedule %s; choose one of: %s", name,
             rs::ScheduleRegistry::instance().names().c_str());
  options(tj).schedule = name;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetCosts(TSTrajectory tj, PetscReal write_cost,
                                          PetscReal read_cost) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck((write_cost >= 0 || write_cost == PETSC_DETERMINE) &&
                 (read_cost >= 0 || read_cost == PETSC_DETERMINE),
             PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "disk write and read costs must be >= 0, or PETSC_DETERMINE to measure them");
  options(tj).write_cost = write_cost;
  options(tj).read_cost = read_cost;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetAsync(TSTrajectory tj, PetscBool async) {
  PetscFunctionBegin;
  if (is_rewind(tj)) options(tj).async = async;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetVerify(TSTrajectory tj, PetscBool verify) {
  PetscFunctionBegin;
  if (is_rewind(tj)) options(tj).verify = verify;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetRecomputeWarning(TSTrajectory tj, PetscReal multiple) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck(multiple >= 0 && multiple < PETSC_INFINITY, PetscObjectComm((PetscObject)tj),
             PETSC_ERR_ARG_OUTOFRANGE,
             "TSTrajectoryRewindSetRecomputeWarning: the multiple must be a number >= 0 (0: never "
             "warn), got %g",
             (double)multiple);
  options(tj).recompute_warning = multiple;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetCompress(TSTrajectory tj, const char codec[],
                                             PetscReal tolerance) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  const std::string name = codec ? codec : "";
  // zfp-precision takes the bits TSTrajectoryRewindSetCompressPrecision set before, zstd and
  // blosc the level TSTrajectoryRewindSetCompressLevel set.
  const int bits = name == "zfp-precision" ? static_cast<int>(options(tj).compress_precision) : 0;
  try {
    rwd::storage::check_codec(
        {name, static_cast<double>(tolerance), bits, static_cast<int>(options(tj).compress_level)},
        "TSTrajectoryRewindSetCompress", "its tolerance",
        "TSTrajectoryRewindSetCompressPrecision, called first",
        "TSTrajectoryRewindSetCompressLevel, called first");
  } catch (const rwd::Error& e) {
    SETERRQ(PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE, "%s", e.what());
  }
  options(tj).compress = codec;
  options(tj).compress_tolerance = tolerance;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetCompressLevel(TSTrajectory tj, PetscInt level) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck(level >= 0 && level <= 19, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "TSTrajectoryRewindSetCompressLevel: the level must be 1 to 19 for zstd, 1 to 9 for "
             "blosc, or 0 for the codec's default, got %" PetscInt_FMT,
             level);
  options(tj).compress_level = level;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetCompressPrecision(TSTrajectory tj, PetscInt bits) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck(bits >= 0 && bits <= 64, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "TSTrajectoryRewindSetCompressPrecision: the bits kept must be 1 to 64 (0: none), "
             "got %" PetscInt_FMT,
             bits);
  options(tj).compress_precision = bits;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetCompressLossyPullbacks(TSTrajectory tj, PetscBool lossy) {
  PetscFunctionBegin;
  if (is_rewind(tj)) options(tj).compress_lossy_pullbacks = lossy;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetCompressDisk(TSTrajectory tj, PetscBool compress) {
  PetscFunctionBegin;
  if (is_rewind(tj)) options(tj).compress_disk = compress;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetCompressRatio(TSTrajectory tj, PetscReal ratio) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  try {
    rwd::engine::check_compress_ratio(static_cast<double>(ratio),
                                      "TSTrajectoryRewindSetCompressRatio: the ratio");
  } catch (const rwd::Error& e) {
    SETERRQ(PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE, "%s", e.what());
  }
  options(tj).compress_ratio = ratio;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetVerifyTolerance(TSTrajectory tj, PetscReal tolerance) {
  PetscFunctionBegin;
  if (is_rewind(tj)) options(tj).verify_tolerance = tolerance;  // checked when the run plans
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetRecomputeSolves(TSTrajectory tj, PetscBool recompute) {
  PetscFunctionBegin;
  if (is_rewind(tj)) options(tj).recompute_solves = recompute;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetMaxCheckpoints(TSTrajectory tj, PetscInt ram, PetscInt disk) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck(ram == -1 || ram >= 1, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "RAM checkpoints must be >= 1 (or -1: store every step), got %" PetscInt_FMT, ram);
  PetscCheck(disk >= -1, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "disk checkpoints must be >= 0 (or -1: unlimited), got %" PetscInt_FMT, disk);
  options(tj).max_cps_ram = ram;
  options(tj).max_cps_disk = disk;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetRAMBytes(TSTrajectory tj, PetscReal bytes) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCall(rwd::petsc::check_bytes(PetscObjectComm((PetscObject)tj),
                                    "TSTrajectoryRewindSetRAMBytes: the RAM budget", bytes, 0,
                                    "none"));
  options(tj).ram_bytes = bytes;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetMaxStagedBytes(TSTrajectory tj, PetscReal bytes) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCall(rwd::petsc::check_bytes(PetscObjectComm((PetscObject)tj),
                                    "TSTrajectoryRewindSetMaxStagedBytes: the staging limit", bytes,
                                    1));
  options(tj).max_staged_bytes = bytes;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetSteps(TSTrajectory tj, PetscInt steps) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck(steps >= 0, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "TSTrajectoryRewindSetSteps: the step count must be >= 0 (0: count them), got "
             "%" PetscInt_FMT,
             steps);
  options(tj).steps = steps;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindSetResume(TSTrajectory tj, PetscBool resume, PetscInt interval) {
  PetscFunctionBegin;
  if (!is_rewind(tj)) PetscFunctionReturn(0);
  PetscCheck(interval >= 0, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_OUTOFRANGE,
             "TSTrajectoryRewindSetResume: the interval must be >= 0 steps (0: from the disk "
             "budget), got %" PetscInt_FMT,
             interval);
  options(tj).resume = resume;
  options(tj).resume_interval = interval;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindGetSchedule(TSTrajectory tj, TSTrajectoryRewindSchedule* out) {
  PetscFunctionBegin;
  PetscCheck(is_rewind(tj), PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_WRONG,
             "the trajectory is not of type rewind");
  PetscCheck(out, PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_NULL,
             "TSTrajectoryRewindGetSchedule: the output argument is NULL");
  const rwd::petsc::RunReport& r = trajectory(tj).carry.report;
  PetscCheck(r.planned, PetscObjectComm((PetscObject)tj), PETSC_ERR_ORDER,
             "the rewind trajectory has not planned a run yet; call "
             "TSTrajectoryRewindGetSchedule() after the second step of TSSolve() (the first with "
             "no disk budget or given disk costs)");
  const auto& p = r.plan.params;
  PetscCall(PetscStrncpy(out->schedule, r.plan.schedule.c_str(), sizeof out->schedule));
  out->steps = (PetscInt)p.steps;
  // Counts beyond PetscInt (a huge byte budget with 32-bit indices) are reported as unlimited.
  const auto count = [](std::int64_t c) {
    return c < 0 || c >= rwd::petsc::kUnlimitedRam || c > PETSC_MAX_INT ? PetscInt{-1}
                                                                        : (PetscInt)c;
  };
  // The budget's stage-checkpoint slots the plan claims (a restart-only plan may fill them with
  // more, smaller solution checkpoints).
  out->max_cps_ram = count(rwd::engine::claim_of(r.plan).ram);
  out->max_cps_disk = count(p.disk);
  out->write_cost = p.write_cost;
  out->read_cost = p.read_cost;
  out->online = p.steps == 0 ? PETSC_TRUE : PETSC_FALSE;
  out->stores_stages = r.plan.stores_pullback ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode TSTrajectoryRewindGetStats(TSTrajectory tj, TSTrajectoryRewindStats* out) {
  PetscFunctionBegin;
  PetscCheck(is_rewind(tj), PetscObjectComm((PetscObject)tj), PETSC_ERR_ARG_WRONG,
             "the trajectory is not of type rewind");
  PetscCallCXX(trajectory(tj).finish());
  const auto& s = trajectory(tj).carry.report.stats;
  out->steps = (PetscInt)s.steps;
  out->forward_steps = (PetscInt)s.forward_steps;
  out->recomputed = (PetscInt)s.recomputed();
  out->adjoint_steps = (PetscInt)s.adjoint_steps;
  out->ram_writes = (PetscInt)s.ram.writes;
  out->ram_reads = (PetscInt)s.ram.reads;
  out->ram_peak = (PetscInt)trajectory(tj).carry.report.ram_peak_slots();
  out->disk_writes = (PetscInt)s.disk.writes;
  out->disk_reads = (PetscInt)s.disk.reads;
  out->disk_peak = (PetscInt)s.disk.peak;
  out->bytes_written = (PetscReal)(s.ram.bytes_written + s.disk.bytes_written);
  out->io_seconds = s.io_seconds;
  out->io_hidden_seconds = s.io_overlap_seconds;
  out->recompute_seconds = s.recompute_seconds;
  const auto& r = trajectory(tj).carry.report;
  out->verify_seconds = s.verify_seconds;
  out->segments = r.segments;
  out->events = r.events;
  out->thinned = r.thinned;
  out->rerecorded = (PetscInt)s.rerecorded_steps;
  out->ram_peak_bytes = (PetscReal)s.ram.peak_bytes;
  out->ram_peak_checkpoints = (PetscInt)s.ram.peak;
  out->disk_peak_bytes = (PetscReal)s.disk.peak_bytes;
  out->ram_stored_bytes = (PetscReal)s.ram_codec.stored_bytes;
  out->ram_uncompressed_bytes = (PetscReal)s.ram_codec.uncompressed_bytes;
  out->compress_ratio = s.ram_codec.planned_ratio;
  out->ram_checkpoints_planned = (PetscInt)s.ram_codec.restart_slots;
  out->ram_checkpoints_uncompressed = (PetscInt)s.ram_codec.uncompressed_restart_slots;
  out->moved_to_disk = (PetscInt)s.ram_codec.moved_to_disk;
  out->disk_stored_bytes = (PetscReal)r.disk_codec.stored_bytes;
  out->disk_uncompressed_bytes = (PetscReal)r.disk_codec.uncompressed_bytes;
  out->dropped = (PetscInt)s.ram_codec.dropped;
  out->dropped_steps = (PetscInt)s.ram_codec.dropped_steps;
  out->reached_ratio = (PetscReal)s.ram_codec.reached_ratio;
  out->replanned_ratio = (PetscReal)s.ram_codec.replanned_ratio;
  PetscFunctionReturn(0);
}

}  // extern "C"
