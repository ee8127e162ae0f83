#include "rewind/ensemble/stepper_tasks.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "rewind/error.hpp"

namespace rwd::ensemble {

StepperTasks::StepperTasks(MPI_Comm group, TaskFactory factory, StepperTasksConfig config)
    : group_(group), factory_(std::move(factory)), config_(std::move(config)) {
  require(static_cast<bool>(factory_), "ensemble: the task factory is empty");
  config_.stores.store.comm = group;
  stores_ = std::make_shared<engine::Stores>(config_.stores);
}

StepperTasks::~StepperTasks() = default;

engine::RecordingConfig StepperTasks::config_for(const Task& task) const {
  engine::RecordingConfig c = config_.recording;
  c.params.steps = task.steps();
  // No per-task budget given: every step is stored (store-all, no recomputation), as far as the
  // group's RAM capacity allows; a task longer than that capacity is planned within it.
  if (c.params.ram == 0 && c.params.disk == 0 && c.ram_bytes == 0 && c.params.steps > 0) {
    const std::int64_t capacity = stores_->config().ram;
    c.params.ram = capacity == schedule::kUnlimited ? c.params.steps + 1
                                                    : std::min(c.params.steps + 1, capacity);
  }
  return c;
}

std::vector<engine::HeldRecording> StepperTasks::held() const {
  std::vector<engine::HeldRecording> out;
  for (const auto& [k, t] : tapes_) {
    out.push_back({k, t.recording.get(), t.order, t.cost.steps, t.cost.spilled});
  }
  return out;
}

void StepperTasks::make_room(std::int64_t task, const engine::Claim& need, std::int64_t run) {
  std::vector<engine::HeldRecording> recordings = held();
  engine::RoomHooks hooks;
  hooks.spilled = [&](std::int64_t k) { tapes_.at(k).cost.spilled = true; };
  hooks.cut = [&](std::int64_t k) {
    Tape& t = tapes_.at(k);
    t.recording.reset();
    t.cost.cut = true;
    if (std::exchange(t.durable, false) && on_tape_lost) on_tape_lost(k);
  };
  make_room_for_task(*stores_, recordings, task, need, run, hooks);
}

void StepperTasks::record(std::int64_t k, Task& task, Tape& tape, bool again) {
  engine::RecordingConfig config = config_for(task);
  config.first_sweep_again = again;
  make_room(k, engine::claim_of(engine::plan_for(task.stepper(), group_, config)), 0);
  tape.recording = std::make_unique<engine::Recording>(task.stepper(), stores_, config);
  tape.recording->record();
}

void StepperTasks::account(Tape& tape, const engine::RunStats& stats) {
  TaskCost& c = tape.cost;
  c.steps = stats.steps;
  c.forward_steps += stats.forward_steps;
  c.adjoint_steps += stats.adjoint_steps;
  c.ram_peak_bytes = std::max(c.ram_peak_bytes, stats.ram.peak_bytes);
  c.disk_bytes_written += stats.disk.bytes_written;
}

std::vector<double> StepperTasks::forward(std::int64_t k) {
  std::unique_ptr<Task> task = factory_(k, group_);
  require(task != nullptr,
          "ensemble: the task factory returned no task for task " + std::to_string(k));
  Tape tape;
  tape.order = recorded_++;
  record(k, *task, tape, false);
  std::vector<double> y = task->output();
  tape.output = y;
  const engine::RunStats stats = tape.recording->stats();
  tape.cost.steps = stats.steps;
  tape.cost.forward_steps = stats.forward_steps;
  park(k, tape);
  tapes_[k] = std::move(tape);
  return y;
}

void StepperTasks::park(std::int64_t k, Tape& tape) {
  // Parking adds the final state and step n-1's pullback data to what the first sweep holds.
  // When the group's capacity cannot hold that even alone, the tape is cut at once (its
  // forward runs again just before its reverse, which needs only the plan's budget).
  const engine::Claim parked = tape.recording->park_claim();
  if (stores_->fits_alone(parked)) {
    make_room(k, parked, tape.recording->id());
    tape.recording->park();
  } else {
    tape.recording.reset();
    tape.cost.cut = true;
  }
}

std::string StepperTasks::make_durable(std::int64_t k, const std::string& link) {
  Tape& tape = tapes_.at(k);
  if (!tape.recording || tape.recording->phase() != engine::Phase::Parked) return {};
  // Every checkpoint on disk: room is made as for any claim (older tapes spilled, then cut);
  // a tape the disk cannot hold even alone stays as it is, not durable.
  const engine::Claim need = tape.recording->durable_claim();
  if (!stores_->fits_alone(need)) return {};
  if (no_second_name_) return {};
  make_room(k, need, tape.recording->id());
  std::string text = tape.recording->make_durable(link);
  if (text.empty()) {  // the file system cannot keep the store's file under the manifest's name
    no_second_name_ = true;
    int rank = 0;
    MPI_Comm_rank(group_, &rank);
    if (rank == 0) {
      std::fprintf(stderr,
                   "rewind ensemble: the group store's file (in %s) cannot be given a second "
                   "name in the resume directory (another file system, or no hard links): its "
                   "tapes are not durable, and after a kill they are recorded again; put "
                   "StoresConfig::store.directory on the resume directory's file system\n",
                   stores_->config().store.directory.c_str());
    }
    return {};
  }
  tape.durable = true;
  return text;
}

std::vector<std::int64_t> StepperTasks::backward_order(std::vector<std::int64_t>) {
  return engine::reverse_order(held());
}

std::vector<double> StepperTasks::backward(std::int64_t k, std::span<const double> ybar) {
  auto it = tapes_.find(k);
  require(it != tapes_.end(), "ensemble: no tape of task " + std::to_string(k) + " on this group");
  Tape& tape = it->second;
  std::unique_ptr<Task> task = factory_(k, group_);
  require(task != nullptr,
          "ensemble: the task factory returned no task for task " + std::to_string(k));
  if (!tape.recording) {  // cut: record it again (its steps reach the task as recomputations)
    record(k, *task, tape, true);
    tape.cost.forward_steps += tape.recording->stats().forward_steps;
    require_same_output(k, tape.output, task->output());
  } else {
    make_room(k, tape.recording->reverse_claim(), tape.recording->id());
    tape.recording->attach(task->stepper());
  }
  const engine::RunStats stats = tape.recording->reverse(ybar);
  std::vector<double> g = task->gradient();
  // The first sweep's steps were counted when it ran.
  engine::RunStats reverse_only = stats;
  reverse_only.forward_steps = stats.forward_steps - stats.steps;
  account(tape, reverse_only);
  done_[k] = tape.cost;
  tapes_.erase(it);
  return g;
}

void StepperTasks::adopt(std::int64_t k, std::span<const double> output, std::string_view text) {
  require(!tapes_.contains(k), "ensemble: task " + std::to_string(k) + " is held already");
  Tape tape;
  tape.order = recorded_++;
  tape.output.assign(output.begin(), output.end());
  if (text.empty()) {  // no durable tape: recorded again before its reverse, as a cut tape is
    tape.cost.cut = true;
    tapes_[k] = std::move(tape);
    return;
  }
  // Made again from the killed run's durable tape, without a step: then parked as after a
  // first sweep.
  std::unique_ptr<Task> task = factory_(k, group_);
  require(task != nullptr,
          "ensemble: the task factory returned no task for task " + std::to_string(k));
  const engine::RecordingConfig config = config_for(*task);
  make_room(k, engine::claim_of(engine::plan_for(task->stepper(), group_, config)), 0);
  tape.recording = engine::Recording::from_durable(task->stepper(), stores_, config, text);
  tape.cost.steps = tape.recording->steps();
  park(k, tape);
  tapes_[k] = std::move(tape);
}

double StepperTasks::estimate(std::int64_t k) const {
  return config_.estimate ? config_.estimate(k) : -1.0;
}

GroupCodecs StepperTasks::codecs() const {
  return {stores_->ram_codec_stats(), stores_->disk_codec_stats(), stores_->config().store.codec,
          stores_->config().lossy_pullbacks};
}

TaskCost StepperTasks::cost(std::int64_t k) const {
  if (auto d = done_.find(k); d != done_.end()) return d->second;
  if (auto t = tapes_.find(k); t != tapes_.end()) return t->second.cost;
  return {};
}

void StepperTasks::discard() noexcept {
  tapes_.clear();
}

}  // namespace rwd::ensemble
