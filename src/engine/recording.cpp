#include "rewind/engine/recording.hpp"

#include <map>
#include <optional>

#include "durable_tape.hpp"
#include "resume/resume_files.hpp"
#include "reverse_sweep.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"
#include "rewind/storage/sealed_blocks.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine {

const char* to_string(Phase phase) noexcept {
  switch (phase) {
    case Phase::Recording:
      return "recording";
    case Phase::Recorded:
      return "recorded";
    case Phase::Parked:
      return "parked";
    case Phase::Reversing:
      return "reversing";
    case Phase::Done:
      return "done";
  }
  return "?";
}

// A recording: its state (recording_state.hpp) and its parts in layers (sweeps.hpp,
// parking.hpp, reverse_sweep.hpp). Made, it has taken the schedule's first actions, up to the
// first Forward the host's steps feed.
struct Recording::Impl : detail::ReverseSweep {
  Impl(Stepper& s, std::shared_ptr<Stores> st, const RecordingConfig& c)
      : detail::ReverseSweep(s, std::move(st), c) {
    try {
      position = 0;
      // Steps are reported as the schedule's model counts them (unit cost unless the plan gives
      // step costs): a measured time would differ between ranks, and every rank must build the
      // same schedule.
      stream.schedule().observe_step(-1, 0.0, schedule::state_bytes(plan.params, 0));
      pull_first_sweep();
    } catch (...) {
      drop();
      throw;
    }
  }
};

Recording::Recording(Stepper& stepper, std::shared_ptr<Stores> stores,
                     const RecordingConfig& config)
    : impl_(std::make_unique<Impl>(stepper, std::move(stores), config)) {}

Recording::~Recording() {
  if (impl_ && impl_->phase != Phase::Done) impl_->drop();
}

const Plan& Recording::plan() const {
  return impl_->plan;
}
Phase Recording::phase() const {
  return impl_->phase;
}
std::int64_t Recording::id() const {
  return impl_->id;
}
Step Recording::steps() const {
  return impl_->phase == Phase::Recording ? impl_->plan.params.steps : impl_->steps;
}

void Recording::record() {
  Impl& s = *impl_;
  s.require_phase(Phase::Recording, "record()");
  if (s.position != 0) {
    throw Error(ErrorCode::InvalidArgument,
                "recording: record() runs the whole first sweep, but steps were already reported");
  }
  const Step planned = s.importing ? s.import_steps : s.plan.params.steps;
  // An online run asks the stepper before its first step too: a run of no steps is refused,
  // never given a step it did not ask for.
  if (planned == 0 && s.finished_everywhere(0)) {
    throw Error(
        ErrorCode::InvalidArgument,
        "recording: Stepper::finished(0) says the run has no steps, and an adjoint needs at "
        "least one (a task of no steps: give it one, or leave it out)");
  }
  Step i = 0;
  while (true) {
    const auto t0 = SteadyClock::now();
    if (!s.importing) {  // made again from a tape: the steps' results come from it
      s.stepper().forward(
          i, StepContext{.record = s.record_wanted(i), .recompute = s.config.first_sweep_again});
    }
    s.stats.forward_seconds += seconds_since(t0);
    const bool last = planned > 0 ? i + 1 == planned : s.finished_everywhere(i + 1);
    s.forward_step_done(i, last);
    ++i;
    if (last) break;
  }
  s.end_forward(i);
}

RunStats Recording::reverse(std::span<const double> seed) {
  Impl& s = *impl_;
  s.begin_reverse();
  s.stepper().begin_adjoint(seed);
  for (Step k = s.steps - 1; k >= 0; --k) {
    s.prepare_adjoint(k);
    const auto t0 = SteadyClock::now();
    s.stepper().adjoint(k);
    s.stats.adjoint_seconds += seconds_since(t0);
    s.adjoint_done(k);
  }
  return s.finish();
}

void Recording::park() {
  Impl& s = *impl_;
  // What the tape's run dropped over a compressed budget (kept by the replay, which put zeros
  // for it), dropped again before parking moves anything.
  if (s.importing && s.phase == Phase::Recorded) s.io->drop_untaped();
  s.park();
  if (s.importing) {  // what it parked came from the tape: the recording is whole again
    s.io->set_source({});
    s.importing = false;
    s.check.load(s.import_check);
    s.import_check.clear();
  }
}

Claim Recording::durable_claim() const {
  Claim c = impl_->held_claim();
  if (c.disk != schedule::kUnlimited) c.disk += c.ram;
  c.ram = 0;
  c.ram_bytes = 0;
  return c;
}

std::string Recording::make_durable(const std::string& link) {
  Impl& s = *impl_;
  s.require_phase(Phase::Parked, "make_durable()");
  storage::Store& disk = s.stores->disk();
  require(disk.durable() != nullptr,
          "recording: make_durable() needs a disk store that keeps its checkpoints (hdf5)");
  s.spill(schedule::kUnlimited);
  disk.flush();  // synced and sealed
  comm::Verdict verdict;
  if (comm::comm_rank(s.stores->comm()) == 0) {
    verdict.local = comm::capture([&] { verdict.yes = detail::link_once(disk.path(), link); });
  }
  if (!comm::agree(s.stores->comm(), verdict)) return {};  // no second name possible there
  detail::TapeData t;
  t.steps = s.steps;
  t.file = link;
  for (const auto& [k, level] : s.io->record().held()) {
    const auto* e = s.io->record().find(k, level);
    t.keys.push_back({k.step, k.kind, level, e->variables, disk.durable()->sealed_blocks(k)});
  }
  t.check = s.check.save();
  return detail::to_text(t);
}

std::unique_ptr<Recording> Recording::from_durable(Stepper& stepper, std::shared_ptr<Stores> stores,
                                                   const RecordingConfig& config,
                                                   std::string_view text) {
  auto tape = std::make_shared<detail::TapeData>(detail::parse_tape(text));
  auto rec = std::make_unique<Recording>(stepper, std::move(stores), config);
  Impl& s = *rec->impl_;
  std::map<std::pair<Step, int>, const detail::TapeKey*> index;
  for (const detail::TapeKey& k : tape->keys) index[{k.step, static_cast<int>(k.kind)}] = &k;
  // A checkpoint the tape does not hold was freed before the tape was made: the replay frees it
  // too, unread (its data are left zero), or it was dropped over a compressed budget, and
  // park() drops it.
  s.io->set_source([tape, index](const storage::Key& k, const std::vector<Field>& out) {
    const auto it = index.find({k.step, static_cast<int>(k.kind)});
    if (it == index.end()) return false;
    storage::read_sealed_blocks(tape->file, it->second->blocks, out);
    return true;
  });
  s.importing = true;
  s.import_steps = tape->steps;
  s.import_check = tape->check;
  rec->record();
  return rec;
}
void Recording::lose_work() {
  impl_->lose_work();
}
void Recording::spill(std::int64_t at_most) {
  impl_->spill(at_most);
}
void Recording::attach(Stepper& stepper) {
  impl_->require_phase(Phase::Parked, "attach()");
  impl_->release_stepper();
  impl_->stepper_ptr = &stepper;
  impl_->io->set_stepper(&stepper);
}
Claim Recording::park_claim() const {
  impl_->require_phase(Phase::Recorded, "park_claim()");
  return impl_->park_claim();
}
bool Recording::whole() const {
  return impl_->whole();
}
bool Recording::can_rebuild() const {
  return impl_->can_rebuild();
}
Claim Recording::thin(bool keep_final) {
  return impl_->thin(keep_final);
}
bool Recording::thinned() const {
  return impl_->thinned;
}
Claim Recording::reverse_claim() const {
  return impl_->reverse_claim();
}
Claim Recording::claim() const {
  return impl_->phase == Phase::Parked || impl_->phase == Phase::Recorded ? impl_->held_claim()
                                                                          : impl_->full_claim();
}
bool Recording::record_wanted(Step i) const {
  return impl_->record_wanted(i);
}
void Recording::forward_step_done(Step i, bool last) {
  impl_->forward_step_done(i, last);
}
void Recording::end_forward(Step n) {
  impl_->end_forward(n);
}
void Recording::begin_reverse() {
  impl_->begin_reverse();
}
void Recording::prepare_adjoint(Step i) {
  impl_->prepare_adjoint(i);
}
void Recording::adjoint_done(Step i) {
  impl_->adjoint_done(i);
}
RunStats Recording::finish() {
  return impl_->finish();
}
RunStats Recording::stats() const {
  return impl_->current_stats();
}

}  // namespace rwd::engine
