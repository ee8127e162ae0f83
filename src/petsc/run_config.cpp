#include "run_config.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "check.hpp"
#include "private_access.hpp"
#include "rewind/timing.hpp"

namespace rwd::petsc {

namespace {

bool adaptive(TS ts) {
  TSAdapt adapt = nullptr;
  REWIND_PETSC(TSGetAdapt(ts, &adapt));
  PetscBool none = PETSC_FALSE;
  REWIND_PETSC(PetscObjectTypeCompare((PetscObject)adapt, TSADAPTNONE, &none));
  return !none;
}

// Seconds to write (with fsync) and read back (with the page cache dropped) one checkpoint of
// this rank's state in the checkpoint directory; the largest over the ranks.
std::pair<double, double> probe_disk(const std::string& dir, TS ts) {
  using Clock = std::chrono::steady_clock;
  MPI_Comm comm = PetscObjectComm((PetscObject)ts);
  PetscMPIInt rank = 0;
  MPI_Comm_rank(comm, &rank);
  PetscInt n = 0;
  REWIND_PETSC(VecGetLocalSize(detail::solution(ts), &n));
  std::vector<char> bytes(
      std::max<std::size_t>(static_cast<std::size_t>(n) * sizeof(PetscScalar), 4096), 'r');
  const std::string path =
      dir + "/rewind-probe-" + std::to_string(getpid()) + "-" + std::to_string(rank) + ".tmp";
  double times[2] = {0.0, 0.0};
  int failed = 0;
  auto t0 = Clock::now();
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()) ||
      ::fsync(fd) != 0) {
    failed = 1;
  }
  if (fd >= 0) {
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  times[0] = seconds_since(t0);
  t0 = Clock::now();
  fd = failed ? -1 : ::open(path.c_str(), O_RDONLY);
  if (fd < 0 || ::read(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
    failed = 1;
  if (fd >= 0) ::close(fd);
  times[1] = seconds_since(t0);
  ::unlink(path.c_str());
  int any_failed = 0;
  double worst[2] = {0.0, 0.0};
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm);
  MPI_Allreduce(times, worst, 2, MPI_DOUBLE, MPI_MAX, comm);
  if (any_failed) {
    throw Error(ErrorCode::Io,
                "measuring disk costs: could not write and read a probe file in "
                "-ts_trajectory_dirname " +
                    dir +
                    "; give a writable directory or "
                    "numeric -ts_trajectory_rewind_write_cost/read_cost");
  }
  return {worst[0], worst[1]};
}

}  // namespace

PetscInt planned_steps(TS ts) {
  if (adaptive(ts)) return 0;
  const detail::Clock c = detail::clock(ts);
  PetscReal t = c.time, dt = detail::proposed_step(ts);
  PetscInt k = c.steps;
  const PetscInt max_steps = detail::max_steps(ts);
  const PetscReal max_time = detail::max_time(ts);
  if (k >= max_steps || t >= max_time) return 0;
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
  if (o.auto_costs()) {
    if (p.disk == 0) {
      p.write_cost = std::max<PetscReal>(o.write_cost, 0);
      p.read_cost = std::max<PetscReal>(o.read_cost, 0);
      out.cost_note = "auto: no disk budget, not measured";
    } else {
      const auto [write_s, read_s] = probe_disk(dir, ts);
      const double step_s = std::max(step.seconds, 1e-9);
      if (o.write_cost < 0) p.write_cost = std::clamp(write_s / step_s, 1e-3, 1e6);
      if (o.read_cost < 0) p.read_cost = std::clamp(read_s / step_s, 1e-3, 1e6);
      char note[128];
      std::snprintf(note, sizeof note, "auto: write %.3g ms, read %.3g ms, step %.3g ms",
                    write_s * 1e3, read_s * 1e3, step_s * 1e3);
      out.cost_note = std::string(note) + " (" + step.source + ")";
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
  r.names = option_names();

  engine::StoresConfig& s = out.stores;
  s.store.comm = PetscObjectComm((PetscObject)ts);
  s.store.directory = dir;
  s.store.keep_files = detail::keep_files(tj);
  s.store.label = "ts";
  s.store.async_io = o.async == PETSC_TRUE;
  return out;
}

}  // namespace rwd::petsc
