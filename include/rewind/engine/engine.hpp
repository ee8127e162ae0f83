#pragma once
/// @file
/// The engine: one adjoint run of a Stepper, forward and reverse in one call. A thin loop over
/// a Recording with stores of its own; use Recording and Stores directly to keep runs alive
/// between the sweeps or to share stores between runs.

#include <memory>

#include "rewind/engine/engine_config.hpp"
#include "rewind/engine/recording.hpp"
#include "rewind/engine/stats.hpp"
#include "rewind/engine/stepper.hpp"
#include "rewind/engine/stores.hpp"
#include "rewind/error.hpp"

namespace rwd::engine {

/// Runs adjoints of one stepper. Collective on config.store.comm: every rank constructs it and
/// calls run() together with the same configuration.
class Engine {
 public:
  /// Checks the configuration and plans the run: throws Error(InvalidArgument) naming the
  /// setting to change. A plan with disk slots opens the checkpoint file now (in
  /// config.store.directory), so a directory that cannot take it is an Error(Io) here rather
  /// than in the middle of run(). The stepper must hold x_0. Collective.
  Engine(Stepper& stepper, EngineConfig config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// The plan the runs follow.
  const Plan& plan() const;

  /// One forward sweep from the state the stepper holds and one reverse sweep. With
  /// params.steps = 0 the run is online: it lasts until stepper.finished(i). Afterwards the
  /// stepper holds the adjoint at x_0. Throws rwd::Error; every checkpoint is freed either way.
  RunStats run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rwd::engine
