#include "segments.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "check.hpp"
#include "log_events.hpp"
#include "recompute_warning.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/engine/room.hpp"
#include "solve_run.hpp"

namespace rwd::petsc {

namespace {

bool same_stores(const engine::StoresConfig& a, const engine::StoresConfig& b) {
  return a.store.comm == b.store.comm && a.store.directory == b.store.directory &&
         a.store.keep_files == b.store.keep_files && a.store.label == b.store.label &&
         a.store.async_io == b.store.async_io &&
         a.store.max_staged_bytes == b.store.max_staged_bytes && a.ram == b.ram &&
         a.ram_bytes == b.ram_bytes && a.disk == b.disk;
}

// Whether `free` (less `extra`) still holds half of every limited level of `capacity`: a new
// segment planned with less would recompute far more than rerunning an earlier segment costs.
bool roomy(const engine::StoresConfig& capacity, const engine::Claim& free,
           const engine::Claim& extra) {
  using schedule::kUnlimited;
  if (capacity.ram != kUnlimited && 2 * (free.ram - extra.ram) < capacity.ram) return false;
  if (capacity.ram_bytes > 0 && 2 * (free.ram_bytes - extra.ram_bytes) < capacity.ram_bytes)
    return false;
  if (capacity.disk != kUnlimited && 2 * (free.disk - extra.disk) < capacity.disk) return false;
  return true;
}

const char kKeeps[] =
    "Until its adjoint, each segment keeps at least 2 checkpoints (its first state and its last "
    "step's data; a segment planned as store-all keeps all of them): raise "
    "-ts_trajectory_max_cps_ram";
const char kSpill[] =
    "or give disk checkpoints for ended segments to spill to (-ts_trajectory_max_cps_disk -1, or "
    "a count, with -ts_trajectory_dirname)";

}  // namespace

const std::string kRoomAdvice = std::string(kKeeps) + ", " + kSpill;

std::string room_advice(std::size_t ended) {
  return std::string(kKeeps) + " to at least 2k + 1 = " + std::to_string(2 * ended + 1) +
         " for the k = " + std::to_string(ended) +
         " segment(s) ended so far (each later event needs 2 more; a TSSolve that continues the "
         "run keeps its solves' steps whole, so more), " +
         kSpill;
}

std::string cause_of(const Error& e) {
  const std::string text = e.what();
  return text.substr(0, text.find("; "));
}

namespace {

std::string count(std::int64_t n) {
  return n == schedule::kUnlimited ? std::string("unlimited") : std::to_string(n);
}

// What parking `r` adds to its claim.
engine::Claim park_growth(const engine::Recording& r) {
  const engine::Claim held = r.claim();
  engine::Claim grows = r.park_claim();
  grows.ram -= held.ram;
  grows.ram_bytes -= held.ram_bytes;
  grows.disk -= held.disk;
  return grows;
}

}  // namespace

std::string not_whole(const Segment& previous, PetscInt from, bool solution_only,
                      std::int64_t held) {
  const engine::Recording& r = *previous.recording;
  const PetscInt n = r.steps();
  std::string why;
  if (r.thinned()) {
    why = "was thinned to make room for later segments";
  } else if (solution_only) {
    why =
        "holds states only (-ts_trajectory_solution_only), and each step is run again for its "
        "stages";
  } else {
    why = "is planned as " + r.plan().schedule + ", which runs steps again in the adjoint";
  }
  std::string advice;
  if (solution_only) {
    advice =
        "give -ts_trajectory_solution_only 0 and a budget that holds every step of each "
        "TSSolve";
  } else if (r.plan().params.steps > 0) {
    advice =
        "give a budget that holds every step of each TSSolve until the adjoint (a "
        "solve's steps + 1 each: " +
        std::to_string(held) +
        " checkpoints for the solves so far, and as many again for each solve to come; "
        "over -ts_trajectory_max_cps_ram and -ts_trajectory_max_cps_disk with "
        "-ts_trajectory_dirname)";
  } else {
    advice =
        "leave out -ts_trajectory_max_cps_ram and -ts_trajectory_max_cps_disk (every step is "
        "then stored in RAM: with events or adaptive steps no step count is known in advance, "
        "and only store-all keeps a solve whole)";
  }
  return "rewind: this TSSolve continues the run from step " + std::to_string(from) +
         ", and the program may have changed its model or its state since the last TSSolve; "
         "the segment that TSSolve ran (steps " +
         std::to_string(previous.first) + " to " + std::to_string(previous.first + n) + ") " + why +
         ", which would run them with the model as the program leaves it, not as that solve had "
         "it. To keep each TSSolve's steps whole, " +
         advice +
         "; or, if the program changes nothing between its TSSolve calls, give "
         "-ts_trajectory_rewind_recompute_solves (the replay check then stops a run whose "
         "recomputation differs)";
}

std::string Segments::plans(std::size_t at_most) const {
  std::string out;
  for (std::size_t j = 0; j < list_.size() && j < at_most; ++j) {
    const Segment& g = list_[j];
    if (!g.recording) continue;
    out += (out.empty() ? "steps " : ", ") + std::to_string(g.first) + "-" +
           std::to_string(g.first + g.recording->steps()) + " " + g.recording->plan().schedule;
  }
  if (list_.size() > at_most) out += ", ...";
  return out;
}

Segments::Segments(Carry& carry, TsStepper& stepper, const StepLog& log)
    : carry_(carry), stepper_(stepper), log_(log) {}

Segment& Segments::add(PetscInt first) {
  Segment segment;
  segment.first = first;
  list_.push_back(std::move(segment));
  return list_.back();
}

engine::Stores& Segments::stores_for(const engine::StoresConfig& config) {
  if (!carry_.shared_stores && (!carry_.stores || !same_stores(carry_.stores_config, config))) {
    carry_.stores = std::make_shared<engine::Stores>(config);
    carry_.stores_config = config;
  }
  return *carry_.stores;
}

void Segments::plan(Segment& segment, RunConfig config) {
  const bool first = &segment == &list_.front();
  // A segment is planned with what the segments before it leave of the budget (they keep what
  // their reverse needs; see docs/petsc.md, "Events and runs in segments").
  engine::Stores& stores = stores_for(config.stores);
  if (first && !carry_.shared_stores) {  // the peaks the view reports are this run's
    stores.ram().reset_peaks();
    if (storage::Store* disk = stores.disk_if_open()) disk->reset_peaks();
  }
  const engine::Claim free = stores.available(0);
  schedule::ScheduleParams& p = config.recording.params;
  if (free.ram != schedule::kUnlimited) p.ram = std::min(p.ram, free.ram);
  if (free.disk != schedule::kUnlimited) {
    p.disk = p.disk == schedule::kUnlimited ? free.disk : std::min(p.disk, free.disk);
  }
  if (free.ram_bytes > 0)
    config.recording.ram_bytes = std::min(config.recording.ram_bytes, free.ram_bytes);
  stepper_.set_first(segment.first);
  REWIND_PETSC(PetscLogEventBegin(log_events().plan, 0, 0, 0, 0));
  try {
    // A TSSolve's steps are kept whole when the budget holds them all: another TSSolve may
    // continue the run after the program changed its model, and a segment it ended is then
    // reversed from what it holds (SolveRun::before_step()). With the step count known, that
    // is store-all in RAM, else on the disk, in place of a plan that would run steps again; it
    // claims the slots it fills, no more (its claim comes back whole when it is reversed).
    const bool in_ram = p.ram >= p.steps;
    const bool on_disk = p.disk == schedule::kUnlimited || p.disk >= p.steps;
    if (config.recording.schedule == "auto" && p.steps > 0 && (in_ram || on_disk)) {
      engine::RecordingConfig whole = config.recording;
      whole.schedule = "storeall";
      whole.params.ram = in_ram ? p.steps : 0;
      whole.params.disk = in_ram ? 0 : p.steps;
      try {
        segment.recording = std::make_unique<engine::Recording>(stepper_, carry_.stores, whole);
        config.recording = whole;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::InvalidArgument) throw;  // it does not fit
      }
    }
    if (!segment.recording) {
      segment.recording =
          std::make_unique<engine::Recording>(stepper_, carry_.stores, config.recording);
    }
  } catch (const Error& e) {
    PetscLogEventEnd(log_events().plan, 0, 0, 0, 0);
    if (first || e.code() != ErrorCode::InvalidArgument) throw;
    // With nothing left, why no schedule fits adds nothing (and its advice is for the budget
    // as a whole, which the advice here replaces).
    const std::string why = p.ram == 0 && p.disk == 0 ? std::string() : " (" + cause_of(e) + ")";
    throw Error(e.code(), note(segment.first) + " is planned with what the " +
                              std::to_string(list_.size() - 1) +
                              " segment(s) before it leave of the budget: " + count(p.ram) +
                              " RAM and " + count(p.disk) + " disk checkpoints, too few. " +
                              room_advice(list_.size() - 1) + why);
  }
  REWIND_PETSC(PetscLogEventEnd(log_events().plan, 0, 0, 0, 0));
  // Said once a trajectory, on rank 0 (every rank plans the same; only one looks for a better
  // budget).
  if (!carry_.recompute_warned && comm::comm_rank(config.stores.store.comm) == 0) {
    const std::string warning =
        recompute_warning(segment.recording->plan(), config.recording, carry_.options);
    if (!warning.empty()) {
      carry_.recompute_warned = true;
      std::fputs(warning.c_str(), stderr);
    }
  }
  // Kept only once the recording exists, so a failed plan leaves the last run's report intact.
  if (first) {
    carry_.report.planned = true;
    carry_.report.plan = segment.recording->plan();
    carry_.report.config = config.recording;
    carry_.report.cost_note = config.cost_note;
    carry_.report.costs_measured = config.costs_measured;
  }
}

void Segments::end(PetscInt at, bool park) {
  Segment& s = list_.back();
  if (s.ended) return;
  s.ended = true;
  if (!s.recording) return;
  if (at == s.first) {  // no step of its own
    s.recording.reset();
    return;
  }
  s.recording->end_forward(at - s.first);
  if (!park) return;
  // Parked whole when that leaves half of the budget to the segments after it; otherwise thinned
  // first (x_0 and the last step's data kept, the rest planned again in its reverse), and room
  // made by thinning or spilling the segments before it.
  engine::Stores& stores = *carry_.stores;
  engine::Recording& r = *s.recording;
  if (!carry_.shared_stores && !roomy(stores.config(), stores.available(0), park_growth(r))) {
    std::vector<engine::HeldRecording> self = {{0, &r, 0, r.steps(), false}};
    engine::RoomHooks hooks;
    hooks.thinned = [this](std::int64_t) { ++thinned_; };
    static constexpr engine::RoomStep kThin[] = {engine::RoomStep::Thin};
    engine::make_room(
        stores, self, kThin,
        [&] { return roomy(stores.config(), stores.available(0), park_growth(r)); }, hooks);
    make_room(park_growth(r), &s);
  }
  try {
    r.park();
  } catch (const Error& e) {
    throw Error(e.code(), note(s.first) + " ends at step " + std::to_string(at) +
                              " (an event) and keeps its first state and its last step's data "
                              "until its adjoint, but the budget has no room left for them. " +
                              room_advice(list_.size()) + " (" + cause_of(e) + ")");
  }
}

std::string Segments::note(PetscInt first) const {
  const auto k = static_cast<std::size_t>(first);
  char t[32];
  std::snprintf(t, sizeof t, "%g", static_cast<double>(log_.times[k]));
  return "rewind: this run is planned in segments (an event or a continued TSSolve changes the "
         "model; docs/petsc.md, \"Events and runs in segments\"); the segment from step " +
         std::to_string(first) + " (t = " + t + ")";
}

void Segments::make_room(const engine::Claim& extra, const Segment* keep) {
  if (carry_.shared_stores) return;
  engine::Stores& stores = *carry_.stores;
  // The ended segments waiting for their reverse, oldest first: thinned first (a thinned segment
  // costs its steps once more in the reverse), then spilled to the disk where its budget has
  // room (engine/room.hpp).
  std::vector<engine::HeldRecording> held;
  for (std::size_t j = 0; j < list_.size(); ++j) {
    const Segment& s = list_[j];
    if (&s == keep || !s.recording || !s.ended || s.done) continue;
    const engine::Phase phase = s.recording->phase();
    if (phase != engine::Phase::Recorded && phase != engine::Phase::Parked) continue;
    const auto n = static_cast<std::int64_t>(j);
    held.push_back({n, s.recording.get(), n, s.recording->steps(), false, s.keep_whole});
  }
  engine::RoomHooks hooks;
  hooks.thinned = [this](std::int64_t) { ++thinned_; };
  static constexpr engine::RoomStep kSteps[] = {engine::RoomStep::Thin, engine::RoomStep::Spill};
  engine::make_room(
      stores, held, kSteps, [&] { return roomy(stores.config(), stores.available(0), extra); },
      hooks);
}

std::optional<std::size_t> Segments::find(PetscInt i) const {
  for (std::size_t j = list_.size(); j-- > 0;) {
    const Segment& s = list_[j];
    if (s.recording && i >= s.first && i < s.first + s.recording->steps()) return j;
  }
  return std::nullopt;
}

std::size_t Segments::of(PetscInt i) const {
  if (const std::optional<std::size_t> j = find(i)) return *j;
  throw Error(ErrorCode::Internal, "rewind: no segment holds step " + std::to_string(i));
}

}  // namespace rwd::petsc
