#include "recording_state.hpp"

#include <mpi.h>

#include "agreed_plan.hpp"
#include "keeping.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/storage/codec.hpp"

namespace rwd::engine::detail {

RecordingState::RecordingState(Stepper& s, std::shared_ptr<Stores> st, const RecordingConfig& c)
    : stepper_ptr(&s),
      stores(std::move(st)),
      config(c),
      sets(
          detail::variables_of(s), [this](Step i) { return stepper().access(i); },
          record::Horizon{c.params.steps, c.max_steps, 64}) {
  require(stores != nullptr, "recording: the stores are null");
  stores->collect();
  sizes = detail::agreed_sizes(stepper(), sets, stores->comm(), config, &stores->config());
  plan = plan_recording(config, sizes);
  if (plan.params.disk != 0 && stores->config().store.directory.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "recording: the " + plan.schedule +
                    " schedule may place checkpoints on disk, and no directory is set; set "
                    "StoreConfig::directory (EngineConfig::store.directory, "
                    "StoresConfig::store.directory) to an existing writable directory, or "
                    "give no disk budget (params.disk = 0)");
  }
  stream.reset(schedule::make_schedule(plan.schedule, plan.params));
  steps = plan.params.steps;
  id = stores->next_recording_id();
  io.emplace(stores, id, stepper_ptr, detail::shapes_of(stepper().state()),
             detail::shapes_of(stepper().pullback()), &plan);
  stats.schedule = plan.schedule;
  stores->claim(id, full_claim());
  take_stepper();
  overlap_at_start = stores->io_overlap_seconds();
  prefetch_at_start = stores->prefetch_stats();
  ram_at_start = stores->ram().stats();
  disk_codec_at_start = stores->disk_codec_stats();
  check = detail::ReplayCheck(comm::comm_rank(stores->comm()), config.verify_tolerance,
                              config.names.verify_tolerance, config.verify_note,
                              storage::codec_is_lossy(stores->config().store.codec.name));
  remember(0);
}

void RecordingState::take_stepper() {
  stores->occupy(stepper_ptr, id, [this] { evicted(); });
}

void RecordingState::release_stepper() noexcept {
  stores->vacate(stepper_ptr, id);
}

void RecordingState::evicted() {
  const bool rebuildable = last_restart(*io, steps).has_value() ||
                           last_held_state(*io, steps, plan.params.pullback_holds_next);
  if (phase == Phase::Recorded && !work_lost && rebuildable) {
    work_lost = true;  // the reverse rebuilds x_n, checked against the first sweep
    position.reset();
  } else if (phase == Phase::Recorded || phase == Phase::Recording || phase == Phase::Reversing) {
    overwritten = true;
  }
}

void RecordingState::require_buffers(const char* call) const {
  if (!overwritten) return;
  throw Error(ErrorCode::InvalidArgument,
              std::string("recording ") + std::to_string(id) + ": " + call +
                  ": another recording used this recording's stepper while it was '" +
                  to_string(phase) +
                  "' and its working state could not be rebuilt; park() a recording before "
                  "making or reversing another on the same stepper");
}

void RecordingState::remember(Step step) {
  if (config.verify && !importing) check.remember(step, stepper().state());
}

void RecordingState::compare(Step step) {
  if (config.verify) check.compare(step, stepper().state(), io->working_exact());
}

void RecordingState::settle_check() {
  if (!config.verify) return;
  comm::agree(stores->comm(), check.take_mismatch());
}

Claim RecordingState::full_claim() const {
  return claim_of(plan);
}

Claim RecordingState::reverse_claim() const {
  Claim c = full_claim();
  if (c.disk == schedule::kUnlimited) return c;
  const std::int64_t spilled = io->spilled();
  if (spilled == 0) return c;
  // The checkpoints spilled to disk and what the schedule itself puts there at most: a plan
  // that keeps everything in RAM needs no more than the spilled ones, whatever its budget.
  c.disk = (plan.disk_peak ? std::min(c.disk, *plan.disk_peak) : c.disk) + spilled;
  return c;
}

Claim RecordingState::held_claim() const {
  return io->held(stored_sizes(sizes));  // as planned: compressed, when the plan counts on it
}

Key RecordingState::key(Step step, Kind kind) const {
  return io->key(step, kind);
}

void RecordingState::drop() noexcept {
  io->drop();
  stores->release(id);
  release_stepper();
}

void RecordingState::put_restart(Step b, Level level) {
  const auto& variables = sets.at(b);
  io->put(key(b, Kind::Restart), level, level, select(stepper().state(), variables), variables);
}

void RecordingState::broken(const std::string& what) const {
  throw Error(ErrorCode::Internal, "schedule '" + plan.schedule + "': " + what);
}

void RecordingState::require_phase(Phase wanted, const char* call) const {
  if (phase != wanted) {
    throw Error(ErrorCode::InvalidArgument, std::string("recording: ") + call + " needs phase '" +
                                                to_string(wanted) + "', the recording is '" +
                                                to_string(phase) + "'");
  }
}

Action RecordingState::next_action() {
  return stream.next(phase == Phase::Reversing, *io, plan.schedule);
}

void RecordingState::record_pullback(Step i, const schedule::Forward& f) {
  if (!f.write_pullback) return;
  if (f.level == Level::Work) {
    io->record().set_work_pullback(i);
  } else {
    io->put(key(i, Kind::Pullback), f.level, f.level, stepper().pullback());
  }
}

}  // namespace rwd::engine::detail
