#pragma once
/// @file
/// The engine: executes a schedule against a Stepper, storing and loading checkpoints through
/// the stores and keeping the tape.

#include <memory>
#include <string>

#include "rewind/engine/stats.hpp"
#include "rewind/engine/stepper.hpp"
#include "rewind/schedule/schedule.hpp"
#include "rewind/storage/store.hpp"

namespace rwd::engine {

/// How to run.
struct EngineConfig {
  std::string schedule = "auto";    ///< a registered schedule name or "auto"
  schedule::ScheduleParams params;  ///< steps (0 = online), slots, costs
  std::string ram_store = "ram";    ///< store for RAM checkpoints
  std::string disk_store = "hdf5";  ///< store for disk checkpoints
  storage::StoreConfig store;       ///< communicator, directory, keep_files, label
  bool async_io = true;             ///< disk writes behind and reads ahead (StoreConfig::async_io)
};

/// Runs adjoints. Collective on config.store.comm: every rank constructs it and calls run()
/// together with the same configuration.
class Engine {
 public:
  Engine(Stepper& stepper, EngineConfig config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// One forward sweep and one reverse sweep. With params.steps = 0 the run is online: it
  /// lasts until stepper.finished(i). Afterwards the stepper holds the adjoint at x_0.
  /// Throws rwd::Error; every checkpoint is freed either way.
  RunStats run();

  /// Like run(), with a schedule the caller built (its parameters must match the config's).
  RunStats run(std::unique_ptr<schedule::Schedule> schedule);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rwd::engine
