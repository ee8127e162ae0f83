#include "run_config.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "check.hpp"
#include "private_access.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/storage/probe.hpp"

namespace rwd::petsc {

bool adapts_step_size(TS ts) {
  TSAdapt adapt = nullptr;
  REWIND_PETSC(TSGetAdapt(ts, &adapt));
  PetscBool none = PETSC_FALSE;
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)adapt, TSADAPTNONE, &none));
  return !none;
}

PetscInt planned_steps(TS ts) {
  if (adapts_step_size(ts)) return 0;
  const detail::Clock c = detail::clock(ts);
  PetscReal t = c.time, dt = detail::proposed_step(ts);
  PetscInt k = c.steps;
  const PetscInt max_steps = detail::max_steps(ts);
  const PetscReal max_time = detail::max_time(ts);
  if (k >= max_steps || t >= max_time || !(dt > 0)) return 0;
  while (true) {
    t += dt;
    ++k;
    if (k >= max_steps || t >= max_time) break;
    if (detail::exact_final_time(ts) == TS_EXACTFINALTIME_MATCHSTEP && t + dt >= max_time) {
      const PetscReal rest = max_time - t;
      if (rest > PETSC_SMALL) {
        dt = rest;
      } else {
        break;
      }
    }
  }
  return k - c.steps;
}

// The options every rank must pass alike that the engine does not agree itself, refused by name
// on every rank when they differ.
static void agree_options(MPI_Comm comm, const Options& o, const std::string& dir) {
  using comm::setting_hash;
  const comm::Setting settings[] = {
      {"-ts_trajectory_rewind_write_cost", setting_hash(o.write_cost)},
      {"-ts_trajectory_rewind_read_cost", setting_hash(o.read_cost)},
      {"-ts_trajectory_dirname", setting_hash(dir)},
      {"-ts_trajectory_rewind_recompute_solves", setting_hash(o.recompute_solves)},
      {"-ts_trajectory_rewind_fsal_restart", setting_hash(o.fsal_restart)},
      {"-ts_trajectory_rewind_compress", setting_hash(o.compress)},
      {"-ts_trajectory_rewind_compress_ratio", setting_hash(o.compress_ratio)}};
  comm::agree_settings(comm, settings);
}

RunConfig make_run_config(TSTrajectory tj, TS ts, const Options& o, PetscInt steps,
                          const StepTime& step) {
  RunConfig out;
  engine::RecordingConfig& r = out.recording;
  schedule::ScheduleParams& p = r.params;
  const std::string dir = detail::dirname(tj) ? detail::dirname(tj) : ".";
  out.cost_note = "given";
  p.steps = steps;
  p.write_cost = o.write_cost;
  p.read_cost = o.read_cost;
  p.disk = o.max_cps_disk < 0 ? schedule::kUnlimited : o.max_cps_disk;
  // Measuring is collective (a probe file a rank, in the run's directory): every rank must agree
  // to measure, and where, before any does.
  const MPI_Comm ts_comm = PetscObjectComm((PetscObject)ts);
  agree_options(ts_comm, o, dir);
  if (o.auto_costs()) {
    if (p.disk == 0) {
      p.write_cost = std::max<PetscReal>(o.write_cost, 0);
      p.read_cost = std::max<PetscReal>(o.read_cost, 0);
      out.cost_note = "no disk budget: not measured";
    } else {
      PetscInt n = 0;
      REWIND_PETSC(VecGetLocalSize(detail::solution(ts), &n));
      storage::DiskCost cost;
      try {
        cost =
            storage::probe_disk(dir, static_cast<std::int64_t>(n) * sizeof(PetscScalar), ts_comm);
      } catch (const Error& e) {
        throw Error(e.code(), std::string("measuring disk costs for -ts_trajectory_rewind_"
                                          "write_cost/read_cost auto: ") +
                                  e.what() +
                                  "; give a writable -ts_trajectory_dirname or numeric costs");
      }
      // What a checkpoint costs the run: handing it to the page cache on the caller's thread,
      // and what of the device's time one step of computation does not hide (writes go behind,
      // reads are started ahead; the kernel writes a synchronous store's pages back on its own).
      const double step_s = std::max(step.seconds, 1e-9);
      const double write_s = cost.cached_write_seconds + std::max(0.0, cost.write_seconds - step_s);
      const double read_s = cost.cached_read_seconds + std::max(0.0, cost.read_seconds - step_s);
      if (o.write_cost < 0) p.write_cost = std::clamp(write_s / step_s, 1e-3, 1e6);
      if (o.read_cost < 0) p.read_cost = std::clamp(read_s / step_s, 1e-3, 1e6);
      char note[256];
      std::snprintf(note, sizeof note,
                    "measured: a write %.3g ms into the page cache, %.3g ms to the device; a "
                    "read %.3g ms from the cache, %.3g ms from the device; a step %.3g ms",
                    cost.cached_write_seconds * 1e3, cost.write_seconds * 1e3,
                    cost.cached_read_seconds * 1e3, cost.read_seconds * 1e3, step_s * 1e3);
      out.cost_note = std::string(note) + " (" + step.source + "); a checkpoint costs its cache " +
                      "time and what of its device time a step does not hide";
      out.costs_measured = true;
    }
  }
  // No budget at all: store everything (in RAM), as PETSc's memory trajectory does.
  const bool solution_only = detail::solution_only(tj);
  r.schedule = o.schedule == "auto" && !o.budget_given() && p.disk == 0 && !solution_only
                   ? "storeall"
                   : o.schedule;
  p.ram = o.max_cps_ram >= 0 ? o.max_cps_ram : (steps > 0 ? steps : kUnlimitedRam);
  r.ram_bytes = o.ram_bytes;
  r.slot_size = engine::SlotSize::Any;  // PETSc counts checkpoints, a stage checkpoint being one
  r.pullback_checkpoints = !solution_only;
  r.verify = o.verify == PETSC_TRUE;
  r.verify_tolerance = o.verify_tolerance;
  r.compress_ratio = static_cast<double>(o.compress_ratio);
  r.names = option_names();
  // Locating an event splits steps: no step count can be given (and schedules are online).
  // With adaptive steps, a step count given is the user's, and can be taken back.
  if (detail::has_events(ts)) {
    r.names.give_steps.clear();
  } else if (adapts_step_size(ts)) {
    r.names.online_schedule =
        "an online schedule with no count (-ts_trajectory_rewind_steps 0 and "
        "-ts_trajectory_rewind_schedule online, dynamic or auto)";
  }

  engine::StoresConfig& s = out.stores;
  s.store.comm = PetscObjectComm((PetscObject)ts);
  s.store.directory = dir;
  // A resumable run keeps nothing more (docs/resume.md): what a resume needs is what a killed
  // run leaves, and the run that ends removes its durable files, store file included.
  s.store.keep_files = detail::keep_files(tj) && !o.resume;
  s.store.label = "ts";
  s.store.async_io = o.async == PETSC_TRUE;
  s.store.max_staged_bytes = static_cast<std::int64_t>(o.max_staged_bytes);
  s.store.codec = {o.compress, static_cast<double>(o.compress_tolerance),
                   o.compress == "zfp-precision" ? static_cast<int>(o.compress_precision) : 0,
                   static_cast<int>(o.compress_level)};
  s.lossy_pullbacks = o.compress_lossy_pullbacks == PETSC_TRUE;
  s.compress_disk = o.compress_disk == PETSC_TRUE;
  // One budget over everything a run keeps, its segments included (a run is planned in several
  // recordings when events or continued solves split it; see solve_run.hpp).
  s.ram = o.max_cps_ram >= 0 ? o.max_cps_ram : schedule::kUnlimited;
  s.ram_bytes = o.ram_bytes;
  s.disk = p.disk;
  s.make_directory = true;  // see StoresConfig::make_directory
  return out;
}

}  // namespace rwd::petsc
