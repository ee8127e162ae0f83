#pragma once
/// @file
/// The ensemble's generic C++ front end: each task is an rwd::engine::Stepper made by the
/// application's factory on its group's communicator, recorded with the engine's Recording and
/// parked in the group's stores until its reverse.

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "rewind/engine/recording.hpp"
#include "rewind/ensemble/ensemble.hpp"
#include "rewind/ensemble/group_room.hpp"

namespace rwd::ensemble {

/// One task, as the application's factory makes it.
class Task {
 public:
  virtual ~Task() = default;
  /// The stepper, holding the task's initial state x_0 when the factory returns.
  virtual engine::Stepper& stepper() = 0;
  /// The task's step count (0: not known; the stepper's finished() ends the first sweep).
  virtual schedule::Step steps() const = 0;
  /// After the first sweep (the stepper holds x_n): the task's output y_k, the same on every
  /// rank of the group.
  virtual std::vector<double> output() = 0;
  /// After the reverse sweep (Stepper::begin_adjoint received the cotangent of y_k): this
  /// rank's block of the task's contribution to dJ/dm.
  virtual std::vector<double> gradient() = 0;
};

/// Makes task `task` on `group`. Called once in the forward pass and again in the backward pass
/// (the task's tape is kept in the group's stores, not the Task object): it must set up the same
/// task both times. Collective on `group`.
using TaskFactory = std::function<std::unique_ptr<Task>(std::int64_t task, MPI_Comm group)>;

struct StepperTasksConfig {
  /// Every task's schedule and budget (the step count comes from Task::steps()). No budget
  /// (params.ram, params.disk and ram_bytes 0, the default): each task stores every step
  /// (store-all), within the group's RAM capacity (a longer task is planned within it); the
  /// group room policy spills and cuts tapes as for any budget. An online task (steps() 0)
  /// needs a budget.
  engine::RecordingConfig recording;
  /// The group's stores: directory, I/O, and the capacity all of the group's tapes share
  /// (StoresConfig::ram, ram_bytes, disk). The communicator is set to the group's.
  engine::StoresConfig stores;
  /// Optional: an estimate of task k's cost (its step count, say), the same on every rank, for
  /// claiming the costliest first (EnsembleConfig::claim_order); empty: unknown.
  std::function<double(std::int64_t)> estimate;
};

/// Runs the tasks of one group; its tapes are parked recordings in the group's stores, made room
/// for and reversed by the rule of group_room.hpp (spill the oldest, then cut the shortest).
class StepperTasks final : public TaskRunner {
 public:
  /// Collective on `group`.
  StepperTasks(MPI_Comm group, TaskFactory factory, StepperTasksConfig config);
  ~StepperTasks() override;

  std::vector<double> forward(std::int64_t task) override;
  std::vector<std::int64_t> backward_order(std::vector<std::int64_t> tasks) override;
  std::vector<double> backward(std::int64_t task, std::span<const double> ybar) override;
  TaskCost cost(std::int64_t task) const override;
  GroupCodecs codecs() const override;
  double estimate(std::int64_t task) const override;
  std::string make_durable(std::int64_t task, const std::string& link) override;
  void adopt(std::int64_t task, std::span<const double> output, std::string_view tape) override;
  void discard() noexcept override;

  engine::Stores& stores() { return *stores_; }

 private:
  struct Tape {
    std::unique_ptr<engine::Recording> recording;  // null once cut
    std::int64_t order = 0;                        // when it was recorded
    TaskCost cost;
    std::vector<double> output;  // what its first sweep gave: a sweep run again must give it
    bool durable = false;        // make_durable() made it durable (a cut tells on_tape_lost)
  };
  engine::RecordingConfig config_for(const Task& task) const;
  /// Records task k's first sweep into `tape`; `again`: it ran before (the tape was cut).
  void record(std::int64_t k, Task& task, Tape& tape, bool again);
  /// Parks task k's recorded tape, or cuts it where the group's capacity cannot hold it.
  void park(std::int64_t k, Tape& tape);
  std::vector<engine::HeldRecording> held() const;
  void make_room(std::int64_t task, const engine::Claim& need, std::int64_t run);
  void account(Tape& tape, const engine::RunStats& stats);

  MPI_Comm group_;
  TaskFactory factory_;
  StepperTasksConfig config_;
  std::shared_ptr<engine::Stores> stores_;
  std::map<std::int64_t, Tape> tapes_;
  std::map<std::int64_t, TaskCost> done_;
  std::int64_t recorded_ = 0;
  bool no_second_name_ = false;  // make_durable() found the stores' file cannot be linked
};

}  // namespace rwd::ensemble
