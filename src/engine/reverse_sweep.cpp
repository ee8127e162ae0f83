#include "reverse_sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <variant>

#include "rewind/error.hpp"

namespace rwd::engine::detail {

namespace {

// What the replay check measured, into a run's statistics.
void copy_check(const ReplayCheck& check, RunStats& s) {
  s.verify_seconds = check.seconds();
  s.verify_tolerated = check.tolerated();
  s.verify_largest_tolerated = check.largest_tolerated();
  s.verify_lossy = check.lossy();
  s.verify_drifted = check.drifted();
  s.verify_largest_drift = check.largest_drift();
}

}  // namespace

void ReverseSweep::begin_reverse() {
  if (phase == Phase::Reversing) return;
  if (phase != Phase::Recorded && phase != Phase::Parked) {
    throw Error(ErrorCode::InvalidArgument, std::string("recording: the reverse sweep needs a "
                                                        "finished first sweep; the recording "
                                                        "is '") +
                                                to_string(phase) + "'");
  }
  require_buffers("the reverse sweep");
  io->settle();
  stores->collect();
  // The first sweep dropped checkpoints its plan counted on: the reverse is planned again, with
  // the ratio its checkpoints reached, from x_0 (what a plan that counts on compression without
  // a disk always holds), instead of recomputing each dropped one where the old plan needs it.
  if (!thinned && io->dropped_count() > 0) replan_measured();
  take_stepper();
  if (phase == Phase::Parked) {
    unpark();
  } else if (!thinned) {
    stores->claim(id, reverse_claim());  // a spilled recording needs its RAM again
  }
  phase = Phase::Reversing;
  if (work_lost && !thinned) rebuild();
}

void ReverseSweep::prepare_adjoint(Step i) {
  if (phase != Phase::Reversing) begin_reverse();
  require_buffers("prepare_adjoint()");
  if (i != next_adjoint()) {
    throw Error(ErrorCode::InvalidArgument,
                "the adjoint of step " + std::to_string(i) + " was requested, but step " +
                    std::to_string(next_adjoint()) + " is next (adjoint steps run n-1 down to 0)");
  }
  if (thinned) {
    if (i == steps - 1 && tail_kept) {
      reverse = schedule::Reverse{steps, i, true};
      // No step below it needs x_base again: the plan it was thinned from is over too (one
      // step, or the first restart checkpoint at n-1).
      if (i == base) replan(i);
    } else {
      replan(i + 1);
    }
  }
  if (i < served_below) reverse = schedule::Reverse{i + 1, i, true};  // its data was kept
  while (!reverse) {
    const Action a = next_action();
    if (const auto* f = std::get_if<schedule::Forward>(&a)) {
      recompute(*f);
      settle_check();
    } else if (const auto* r = std::get_if<schedule::Reverse>(&a)) {
      if (r->n1 != i + 1)
        broken("reverses from " + std::to_string(r->n1) + " while step " + std::to_string(i) +
               " is next");
      reverse = *r;
    } else if (!transfer_action(a)) {
      broken("ends before the adjoint of step " + std::to_string(i));
    }
  }
  if (reverse->from_states) compose_pullback(*reverse);
  if (io->record().work_pullback() != i) {
    const Key k = key(i, Kind::Pullback);
    const auto level = io->record().cheapest(k);
    if (level) {
      io->get(k, *level, stepper().pullback());
    } else if (io->dropped_anywhere(k)) {
      recompute_dropped(i + 1, true);
    } else {
      broken("reverses step " + std::to_string(i) + " without its pullback data");
    }
  }
}

void ReverseSweep::adjoint_done(Step i) {
  require_phase(Phase::Reversing, "adjoint_done()");
  if (!reverse || i != next_adjoint())
    broken("adjoint step " + std::to_string(i) + " was not prepared");
  if (i > reverse->n0 && io->prefetches()) {
    // The disk store reads kPrefetchSteps ahead; the RAM store decodes the next one or two
    // (RamStore::kAhead), the nearest first.
    io->prefetch(key(i - 1, Kind::Pullback));
    io->prefetch(key(i - detail::ActionStream::kPrefetchSteps, Kind::Pullback));
  }
  ++stats.adjoint_steps;
  if (reverse->clear_pullback) {
    const Key k = key(i, Kind::Pullback);
    for (Level l : {Level::Ram, Level::Disk}) {
      if (io->record().find(k, l)) io->erase(k, l);
    }
    io->forget_dropped(k);
    if (io->record().work_pullback() == i) io->record().set_work_pullback(std::nullopt);
  }
  adjoint_position = i;
  if (i == reverse->n0) {
    reverse.reset();
    position.reset();
  }
}

Step ReverseSweep::next_adjoint() const {
  return adjoint_position.value_or(steps) - 1;
}

void ReverseSweep::replan_measured() {
  reached_ratio = io->measured_ratio();
  char what[96];
  std::snprintf(what, sizeof what, "measured over the first sweep (%.3g)", reached_ratio);
  sizes.compress_ratio = std::isfinite(reached_ratio)
                             ? std::min(ratio_with_margin(reached_ratio), kMaxCompressRatio)
                             : 1.0;
  sizes.compress_source = what;
  first_plan = plan;
  // Keeping every step is what the ratio reached may no longer fit: the budget decides again.
  if (config.schedule == "storeall") config.schedule = "auto";
  thin(true);
}

RunStats ReverseSweep::finish() {
  require_phase(Phase::Reversing, "finish()");
  if (next_adjoint() != -1) broken("finished before the adjoint of step 0");
  while (true) {
    const Action a = next_action();
    if (std::holds_alternative<schedule::EndReverse>(a)) break;
    if (!transfer_action(a)) broken("acts after the last adjoint step");
  }
  io->release_anchor();
  if (!io->record().empty()) {
    broken("left " + std::to_string(io->record().held().size()) +
           " checkpoints stored after EndReverse");
  }
  phase = Phase::Done;
  stores->release(id);
  release_stepper();
  stats.io_overlap_seconds = stores->io_overlap_seconds() - overlap_at_start;
  const PrefetchStats p = stores->prefetch_stats();
  stats.prefetch = {p.hits - prefetch_at_start.hits, p.late - prefetch_at_start.late,
                    p.skipped - prefetch_at_start.skipped};
  const storage::StoreStats ram = stores->ram().stats();
  stats.ram_codec = {
      stores->config().store.codec.name.empty() ? "none" : stores->config().store.codec.name,
      ram.bytes_written - ram_at_start.bytes_written,
      ram.uncompressed_bytes_written - ram_at_start.uncompressed_bytes_written,
      ram.compress_seconds - ram_at_start.compress_seconds,
      ram.decompress_seconds - ram_at_start.decompress_seconds,
      ram.codec_io_thread_seconds - ram_at_start.codec_io_thread_seconds};
  stats.disk_codec = stores->disk_codec_stats().counts_since(disk_codec_at_start);
  CodecStats& c = stats.ram_codec;
  const Plan& first = first_plan ? *first_plan : plan;  // what the run was planned with
  c.planned_ratio = first.sizes.compress_ratio;
  c.ratio_source = first.sizes.compress_source;
  c.budget_bytes = first.compressed_budget;
  c.peak_stored_bytes = io->ram_stored_peak();
  c.moved_to_disk = io->over_budget_moves();
  c.restart_slots = first.restart_slots;
  c.uncompressed_restart_slots =
      first.compressed_budget > 0 ? first.uncompressed_restart_slots : first.restart_slots;
  c.forward_steps = first.forward_steps.value_or(-1);
  c.uncompressed_forward_steps =
      first.compressed_budget > 0 ? first.uncompressed_forward_steps.value_or(-1) : c.forward_steps;
  if (first_plan) {
    c.replanned_ratio = plan.sizes.compress_ratio;
    c.reached_ratio = reached_ratio;
    c.replanned_schedule = plan.schedule;
    c.replanned_forward_steps = plan.forward_steps.value_or(-1);
  }
  copy_check(check, stats);
  stats.total_seconds = seconds_since(started);
  return current_stats();
}

RunStats ReverseSweep::current_stats() const {
  RunStats out = stats;
  out.io_seconds = io->seconds();
  out.ram_codec.dropped = io->dropped_count();
  out.ram_codec.dropped_steps = dropped_steps;
  copy_check(check, out);
  out.ram = io->record().traffic(Level::Ram);
  out.disk = io->record().traffic(Level::Disk);
  return out;
}

}  // namespace rwd::engine::detail
