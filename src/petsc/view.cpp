#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "private_access.hpp"
#include "rewind/engine/plan.hpp"
#include "rewind/schedule/registry.hpp"
#include "run_config.hpp"
#include "trajectory_state.hpp"

namespace rwd::petsc {

namespace {
// Two decimals, or three significant digits below 1 MiB (a small grid's checkpoints are a few
// KiB: "0.00610 MiB", not "0.00 MiB"; a unit of 0.0105 MiB is not rounded to 0.010).
std::string mib(double bytes) {
  const double m = bytes / (1024.0 * 1024.0);
  int decimals = 2;
  for (double below = 1.0; m > 0.0 && m < below && decimals < 10; below /= 10.0) ++decimals;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f MiB", decimals, m);
  return buf;
}
// "C (F forward steps, W disk writes, R reads)": a replay's cost in forward steps and its parts.
std::string priced(const schedule::SimulationResult& r) {
  char text[160];
  std::snprintf(text, sizeof text, "%.1f (%lld forward steps, %lld disk writes, %lld reads)",
                r.cost, (long long)r.fwd_total, (long long)r.disk.writes, (long long)r.disk.reads);
  return text;
}

// Which disk costs the plan used and what the other choice would have cost: with measured
// costs, the plan the given default (1, 1) would have made, priced at the measured costs.
PetscErrorCode view_other_costs(PetscViewer viewer, const RunReport& r) {
  PetscFunctionBegin;
  if (!r.costs_measured) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    (costs given; -ts_trajectory_rewind_write_cost auto and "
        "-ts_trajectory_rewind_read_cost auto, the defaults, would measure them)\n"));
    PetscFunctionReturn(0);
  }
  const double wd = r.plan.params.write_cost, rd = r.plan.params.read_cost;
  std::string mine, other;
  PetscCallCXX({
    mine = priced(engine::replay_plan(r.plan, wd, rd));
    engine::RecordingConfig given = r.config;
    given.params.write_cost = 1.0;
    given.params.read_cost = 1.0;
    const engine::Plan alt = engine::plan_recording(given, r.plan.sizes);
    other = alt.schedule + ", " + priced(engine::replay_plan(alt, wd, rd));
  });
  PetscCall(PetscViewerASCIIPrintf(
      viewer,
      "    at the measured costs this plan takes the time of %s forward steps; planned instead "
      "with costs of 1 and 1 (as -ts_trajectory_rewind_write_cost 1 "
      "-ts_trajectory_rewind_read_cost 1 would), it would have been %s\n",
      mine.c_str(), other.c_str()));
  PetscFunctionReturn(0);
}

// The plan: the disk costs and where they came from, what the RAM slots hold, and a disk
// budget the schedule does not use.
// How the RAM budget holds stages: in units of one vector when the plan knows checkpoint sizes
// (PETSc's CAMS counts the same units), else in slots of one step's stages.
PetscErrorCode view_stage_budget(PetscViewer viewer, const RunReport& r) {
  const auto& p = r.plan.params;
  PetscFunctionBegin;
  if (p.ram_units > 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    RAM budget in units of %s: %lld units, a solution checkpoint takes %lld, a step's "
        "stages %lld%s\n",
        mib((double)r.plan.unit_bytes).c_str(), (long long)p.ram_units, (long long)p.restart_units,
        (long long)p.pullback_units,
        p.pullback_holds_next ? " (they hold the solution the step ends in, restored from them)"
                              : ""));
  } else if (r.plan.slot_bytes > 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    RAM budget of stage checkpoints filled with solution checkpoints by bytes: %lld of "
        "%s each\n",
        (long long)p.ram, mib((double)r.plan.sizes.restart).c_str()));
  } else if (r.plan.stores_pullback) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "    RAM checkpoints hold one step's stages each (budget counted in those)\n"));
  }
  if (!r.fsal_note.empty()) {
    PetscCall(
        PetscViewerASCIIPrintf(viewer, "    first-same-as-last method: %s\n", r.fsal_note.c_str()));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode view_plan(PetscViewer viewer, const RunReport& r, const Options& o) {
  const auto& p = r.plan.params;
  PetscFunctionBegin;
  if (o.resume) {
    // The disk holds the durable states; each interval is planned in RAM alone, so no disk cost
    // enters a plan and no plan uses the disk budget.
    const std::string every =
        r.resume_interval > 0 ? " one every " + std::to_string(r.resume_interval) + " steps," : "";
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    resumable: the disk budget holds the durable states (x_0,%s x_n and the adjoint "
        "state; docs/resume.md, \"PETSc\"); each interval between them is planned in the RAM "
        "budget (%s), so disk costs are not used\n",
        every.c_str(), r.plan.schedule.c_str()));
    PetscCall(view_stage_budget(viewer, r));
    PetscFunctionReturn(0);
  }
  char costs[96];  // std::snprintf, not PETSc's, which writes 1 as "1."
  std::snprintf(costs, sizeof costs, "write %g, read %g", (double)p.write_cost,
                (double)p.read_cost);
  PetscCall(PetscViewerASCIIPrintf(viewer, "    disk costs in forward steps: %s (%s)\n", costs,
                                   r.cost_note.c_str()));
  if (p.disk != 0 && p.steps > 0) PetscCall(view_other_costs(viewer, r));
  PetscCall(view_stage_budget(viewer, r));
  if (o.max_cps_disk != 0) {
    // A schedule that never places a checkpoint on disk: auto chose it as the cheapest, or the
    // user named it, perhaps not knowing.
    const auto& all = schedule::ScheduleRegistry::instance().list();
    std::string disk_ones;
    bool ram_only = false;
    for (const auto& info : all) {
      if (info.name == r.plan.schedule) ram_only = !info.uses_disk;
      if (info.uses_disk) disk_ones += (disk_ones.empty() ? "" : ", ") + info.name;
    }
    if (ram_only) {
      const std::string why = o.schedule == "auto"
                                  ? " (the cheapest plan)"
                                  : " (schedules that use it: auto, " + disk_ones + ")";
      // Compressed checkpoints that did not fit their budget still went there (below).
      const bool moved = r.stats.ram_codec.moved_to_disk > 0;
      PetscCall(PetscViewerASCIIPrintf(
          viewer, "    %s keeps every checkpoint in RAM: the disk budget is not used%s%s\n",
          r.plan.schedule.c_str(), moved ? " by the plan" : "", why.c_str()));
    }
  }

  if (r.plan.schedule == "disk-mixed" && p.period == 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    disk checkpoints placed by H-Revolve's recursion, used again once the steps "
        "after them are reversed\n"));
  }
  if ((r.plan.schedule == "disk-mixed" || r.plan.schedule == "disk-revolve") && p.period > 0) {
    if (p.period < p.steps) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "    a disk checkpoint every %lld steps\n",
                                       (long long)p.period));
    } else {  // one interval: what mixed (or revolve) does alone
      PetscCall(PetscViewerASCIIPrintf(
          viewer, "    no disk checkpoint: the %s budget reverses the whole run in RAM, %s\n",
          p.disk == 0 ? "disk budget is 0 and the RAM" : "RAM",
          p.disk == 0 ? "as the RAM schedule alone would (give -ts_trajectory_max_cps_disk)"
                      : "more cheaply than through the disk"));
    }
  }
  PetscFunctionReturn(0);
}

// What the run did: steps, checkpoints per level, bytes, I/O and rewind's own time.
// A plan that counts on compression: what the ratio bought, and what did not fit as planned.
PetscErrorCode view_compressed_plan(PetscViewer viewer, const engine::Plan& plan,
                                    const engine::CodecStats& c) {
  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(
      viewer,
      "    planned with a compression ratio of %.3g (%s): %lld RAM checkpoints in the budget of "
      "%s, %lld without compression (%+lld)\n",
      plan.sizes.compress_ratio, plan.sizes.compress_source.c_str(), (long long)plan.restart_slots,
      mib(plan.compressed_budget).c_str(), (long long)plan.uncompressed_restart_slots,
      (long long)(plan.restart_slots - plan.uncompressed_restart_slots)));
  if (plan.forward_steps && plan.uncompressed_forward_steps) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "    forward steps planned: %lld, %lld without compression (%lld saved)%s\n",
        (long long)*plan.forward_steps, (long long)*plan.uncompressed_forward_steps,
        (long long)(*plan.uncompressed_forward_steps - *plan.forward_steps),
        c.replanned_ratio > 0.0 ? " at first (planned again below)" : ""));
  }
  PetscCall(PetscViewerASCIIPrintf(
      viewer,
      "    compressed RAM checkpoints took at most %s of the budget (this rank; the one stored "
      "last is measured in RAM, so it may hold one more for a moment); %lld compressed worse "
      "than planned and were moved to disk%s\n",
      mib((double)c.peak_stored_bytes).c_str(), (long long)c.moved_to_disk,
      c.moved_to_disk > 0 ? " (a write each, and a read where the reverse restores one: costs "
                            "the plan does not count)"
                          : ""));
  if (c.dropped > 0) {
    std::string how;
    if (c.replanned_ratio > 0.0) {
      char planned[64] = "as uncompressed (below 1.05 with the margin)";
      if (c.replanned_ratio > 1.0) {
        std::snprintf(planned, sizeof planned, "at %.3g with the margin", c.replanned_ratio);
      }
      char text[400];
      std::snprintf(text, sizeof text,
                    "; the first sweep's checkpoints reached a ratio of %.3g (the worst rank's), "
                    "so its reverse was planned again from x_0, %s, in the same budget: "
                    "schedule %s, %lld forward steps after the first sweep (later runs plan "
                    "with that ratio)",
                    c.reached_ratio, planned, c.replanned_schedule.c_str(),
                    (long long)c.replanned_forward_steps);
      how = text;
    }
    if (c.dropped_steps > 0) {
      how += "; " + std::to_string(c.dropped_steps) +
             " forward steps recomputed dropped ones where the plan needed them";
    }
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    %lld compressed worse than planned with no disk room to move to and were dropped%s\n",
        (long long)c.dropped, how.c_str()));
  }
  PetscFunctionReturn(0);
}

// What the RAM store's codec did and where it ran, and what the plan counted on.
PetscErrorCode view_ram_codec(PetscViewer viewer, const RunReport& r,
                              const engine::CodecStats& stats) {
  PetscFunctionBegin;
  if (r.codec != "none" && r.ram_store.uncompressed_bytes_written > 0) {
    const storage::StoreStats& c = r.ram_store;
    // An ensemble task's stores are its group's: their counts are the group's, not the task's.
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    %s compressed by %s: %s stored for %s (%.2fx), peak %s; "
        "compressing %.4f s, decompressing %.4f s, %.4f s of it on the I/O thread (this "
        "rank)\n",
        r.group_stores ? "the group's RAM checkpoints (every task of this ensemble group so far)"
                       : "RAM checkpoints",
        r.codec.c_str(), mib((double)c.bytes_written).c_str(),
        mib((double)c.uncompressed_bytes_written).c_str(),
        (double)c.uncompressed_bytes_written / (double)std::max<std::int64_t>(c.bytes_written, 1),
        mib((double)c.peak_bytes).c_str(), c.compress_seconds, c.decompress_seconds,
        c.codec_io_thread_seconds));
    PetscCall(PetscViewerASCIIPrintf(viewer, "    RAM checkpoints: %s\n", r.ram_io_mode.c_str()));
  }
  if (r.plan.compressed_budget > 0) {
    PetscCall(view_compressed_plan(viewer, r.plan, stats));
  } else if (r.codec != "none" && !r.plan.sizes.compress_source.empty() &&
             r.plan.sizes.compress_ratio <= 1.0) {
    // Asked for a measured ratio (a source, and a ratio that fell to 1; a given one is above 1)
    // that gave none worth counting on.
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    planned as uncompressed: the compression ratio %s, with its margin of %.2g, is "
        "below %.3g, so the budget counts uncompressed checkpoints\n",
        r.plan.sizes.compress_source.c_str(), engine::kCompressMargin, engine::kCompressMinRatio));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode view_traffic(PetscViewer viewer, const Trajectory& t, const RunReport& r,
                            const std::string& ram, const std::string& disk) {
  PetscFunctionBegin;
  const auto& s = r.stats;
  // A resumable run's disk checkpoints are its durable states (no interval plan uses the disk).
  const char* disk_holds = r.resume_interval > 0 ? " (durable states and adjoint states)" : "";
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "    steps %lld, forward steps %lld, recomputations %lld, adjoint steps %lld\n",
      (long long)s.steps, (long long)s.forward_steps, (long long)s.recomputed(),
      (long long)s.adjoint_steps));
  if (s.composed > 0) {
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "    stages composed from two solution checkpoints for %lld "
                                     "adjoint steps (neither stored nor run again)\n",
                                     (long long)s.composed));
  }
  const auto peak = (long long)r.ram_peak_slots();
  std::string count =
      peak == s.ram.peak ? "" : ", in " + std::to_string(s.ram.peak) + " checkpoints";
  // Compressed, more checkpoints than the budget counts fit in its bytes.
  const char* in_bytes = r.plan.compressed_budget > 0 ? " in the bytes of" : "";
  if (r.plan.compressed_budget > 0) count += "; peak bytes counted uncompressed: compressed below";
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "    RAM checkpoints: %lld written, %lld read, peak %lld (budget%s %s), peak %s%s\n",
      (long long)s.ram.writes, (long long)s.ram.reads, peak, in_bytes, ram.c_str(),
      mib((double)s.ram.peak_bytes).c_str(), count.c_str()));
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "    disk checkpoints%s: %lld written, %lld read, peak %lld (budget %s), peak %s\n",
      disk_holds, (long long)s.disk.writes, (long long)s.disk.reads, (long long)s.disk.peak,
      disk.c_str(), mib((double)s.disk.peak_bytes).c_str()));
  if (r.segments <= 1 && r.resume_interval == 0 && r.plan.disk_peak &&
      s.disk.peak > *r.plan.disk_peak + s.ram_codec.moved_to_disk) {
    // Parking at the end of the first sweep (solve_run.cpp) made room for the final state and
    // last stages by moving RAM checkpoints to the disk.
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    (%lld of the disk checkpoints were put there when the first sweep ended, RAM "
        "checkpoints moved to make room for its final state and last stages, kept for a TSSolve "
        "that may continue the run; the plan itself puts at most %lld there)\n",
        (long long)(s.disk.peak - *r.plan.disk_peak), (long long)*r.plan.disk_peak));
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "    bytes written: RAM %s, disk %s (this rank)\n",
                                   mib((double)s.ram.bytes_written).c_str(),
                                   mib((double)s.disk.bytes_written).c_str()));
  PetscCall(view_ram_codec(viewer, r, s.ram_codec));
  if (r.disk_codec.uncompressed_bytes > 0) {
    const engine::CodecStats& d = r.disk_codec;
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    %s compressed by %s: %s written for %s (%.2fx; the file keeps room "
        "for the values); compressing %.4f s, decompressing %.4f s, %.4f s of it on the I/O "
        "thread (this rank)\n",
        // (A group's: what its tasks wrote while this one was recorded.)
        r.group_stores ? "the group's disk checkpoints (its tasks' while this one ran)"
                       : "disk checkpoints",
        r.codec.c_str(),  // the run's codec, lossless here, with its level
        mib((double)d.stored_bytes).c_str(), mib((double)d.uncompressed_bytes).c_str(), d.ratio(),
        d.compress_seconds, d.decompress_seconds, d.io_thread_seconds));
  } else if (r.codec != "none" && s.disk.writes > 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    disk checkpoints not compressed (a lossy codec compresses RAM checkpoints only, a "
        "lossless one disk checkpoints too unless -ts_trajectory_rewind_compress_disk 0)\n"));
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "    disk I/O: %s\n", r.io_mode.c_str()));
  if (!r.kept_file.empty()) {
    PetscCall(
        PetscViewerASCIIPrintf(viewer, "    disk checkpoints kept in %s\n", r.kept_file.c_str()));
  }
  // rewind's own time on the caller's thread: the callbacks less the steps they recomputed
  // (the program's own solver).
  const double run_s = std::chrono::duration<double>(t.last_callback_end - t.run_started).count();
  const double own_s = std::max(0.0, t.callback_seconds - s.recompute_seconds);
  PetscCall(PetscViewerASCIIPrintf(
      viewer,
      "    time on the caller's thread: rewind %.4f s (%.2f %% of the %.3f s from TSSolve's first "
      "step to the adjoint's last; storing and restoring checkpoints, RAM copies and disk "
      "I/O, %.4f s of it), recomputed steps %.4f s; disk I/O "
      "overlapped with computing %.4f s\n",
      own_s, run_s > 0 ? 100.0 * own_s / run_s : 0.0, run_s, s.io_seconds, s.recompute_seconds,
      s.io_overlap_seconds));
  if (s.prefetch.hits + s.prefetch.skipped > 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    disk reads started ahead: %lld, of which %lld had not finished when needed; %lld "
        "not started (staging pool full)\n",
        (long long)s.prefetch.hits, (long long)s.prefetch.late, (long long)s.prefetch.skipped));
  }
  PetscFunctionReturn(0);
}

// How the run was shaped: resumable, in segments, rebuilt, checked, rejections repeated.
PetscErrorCode view_shape(PetscViewer viewer, const RunReport& r) {
  const auto& s = r.stats;
  PetscFunctionBegin;
  if (r.resume_interval > 0) {
    const std::string from = s.resumed_at < 0
                                 ? std::string("started at x_0")
                                 : std::string("resumed a killed run from its durable ") +
                                       (s.resumed_in_reverse ? "adjoint state" : "state") +
                                       " at step " + std::to_string(s.resumed_at);
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    resumable: a durable state every %lld steps and the adjoint at each (docs/resume.md, "
        "\"PETSc\"); %s\n",
        (long long)r.resume_interval, from.c_str()));
    if (r.resume_bound > 0) {
      // The interval was sized for -ts_max_steps; a run much shorter has few durable states.
      PetscCall(PetscViewerASCIIPrintf(
          viewer,
          "    adaptive steps: the interval is sized by -ts_max_steps %lld; this run took %lld "
          "steps%s\n",
          (long long)r.resume_bound, (long long)r.resume_steps,
          r.resume_bound > 4 * r.resume_steps
              ? " (give -ts_trajectory_rewind_resume_interval, or a tighter -ts_max_steps, for "
                "more durable states)"
              : ""));
    }
  } else if (r.segments > 1) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    run in %lld segments (%lld events, %lld continued TSSolve calls; docs/petsc.md, "
        "\"Events and runs in segments\"), %lld thinned, %lld steps run again for them; "
        "planned as: %s\n",
        (long long)r.segments, (long long)r.events,
        (long long)std::max<PetscInt>(0, r.segments - 1 - r.events), (long long)r.thinned,
        (long long)s.rerecorded_steps, r.segment_plans.c_str()));
  }
  if (s.rebuilt_steps > 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "    %lld steps recomputed to rebuild states a continued TSSolve moved past\n",
        (long long)s.rebuilt_steps));
  }
  if (r.verify && s.verify_lossy && s.verify_drifted > 0) {
    const std::string within = s.verify_tolerated > 0
                                   ? " (" + std::to_string(s.verify_tolerated) +
                                         " fields within -ts_trajectory_rewind_verify_tolerance)"
                                   : std::string();
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    replay check: restores are lossy, so recomputed states cannot be the forward run's "
        "bits; %lld recomputed fields differed from it, by at most %.1e relative to their norm "
        "(rank 0; measured, not checked); states recomputed from exact checkpoints matched it%s "
        "(hashing %.4f s)\n",
        static_cast<long long>(s.verify_drifted), s.verify_largest_drift, within.c_str(),
        s.verify_seconds));
  } else if (r.verify && s.verify_tolerated > 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    replay check: %lld recomputed fields differed from the forward run within "
        "-ts_trajectory_rewind_verify_tolerance (largest %.1e relative; rank 0), every other "
        "matched (hashing %.4f s)\n",
        static_cast<long long>(s.verify_tolerated), s.verify_largest_tolerated, s.verify_seconds));
  } else if (r.verify && s.recomputed() == 0 && s.rebuilt_steps == 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "    replay check: on, with nothing recomputed to check (hashing %.4f s)\n",
        s.verify_seconds));
  } else if (r.verify) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    replay check: every recomputed state matched the forward run (hashing %.4f s; "
        "-ts_trajectory_rewind_verify 0 turns it off)\n",
        s.verify_seconds));
  } else {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "    replay check: off (-ts_trajectory_rewind_verify 0): recomputed states are not "
        "compared with the forward run, so a model change rewind cannot see would give wrong "
        "sensitivities silently\n"));
  }
  if (r.replayed_rejections > 0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "    recomputations repeated %lld attempts the adapter had rejected\n",
        (long long)r.replayed_rejections));
  }
  PetscFunctionReturn(0);
}

}  // namespace

PetscErrorCode view(TSTrajectory tj, PetscViewer viewer) {
  PetscBool ascii = PETSC_FALSE;
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  Trajectory& t = trajectory(tj);
  PetscCallCXX(t.finish());
  const RunReport& r = t.carry.report;
  if (!r.planned) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  rewind: no run planned yet\n"));
    PetscFunctionReturn(0);
  }
  const auto& p = r.plan.params;
  // The budget as given (the plan of a run in segments has only part of it).
  const Options& o = t.carry.options;
  const std::string disk = o.max_cps_disk < 0 ? "unlimited" : std::to_string(o.max_cps_disk);
  const std::string ram = o.max_cps_ram >= 0       ? std::to_string(o.max_cps_ram)
                          : p.ram >= kUnlimitedRam ? "unlimited"
                          : o.ram_bytes > 0        ? std::to_string(p.ram)
                                                   : "unlimited";
  // A reverse planned again after drops (the codec line below says why) names its schedule too.
  const std::string again = r.finished ? r.stats.ram_codec.replanned_schedule : std::string();
  const std::string schedule =
      again.empty() ? r.plan.schedule : r.plan.schedule + ", its reverse planned again as " + again;
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "  rewind: schedule %s, budget %s RAM + %s disk checkpoints%s\n", schedule.c_str(),
      ram.c_str(), disk.c_str(), p.steps == 0 ? " (online: step count not known in advance)" : ""));
  PetscCall(view_plan(viewer, r, o));
  if (!r.finished) {
    if (t.run && t.run->adjoint_steps_done() > 0) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "    adjoint in progress: %lld of %lld steps done\n",
                                       (long long)t.run->adjoint_steps_done(),
                                       (long long)t.run->last_set()));
    } else {
      PetscCall(PetscViewerASCIIPrintf(viewer, "    no completed adjoint run yet\n"));
    }
    PetscFunctionReturn(0);
  }
  PetscCall(view_traffic(viewer, t, r, ram, disk));
  PetscCall(view_shape(viewer, r));
  PetscFunctionReturn(0);
}

}  // namespace rwd::petsc
