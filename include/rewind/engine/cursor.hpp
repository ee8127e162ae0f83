#pragma once
/// @file
/// The engine as a cursor, for hosts that own the time loop (PETSc's TSSolve and
/// TSAdjointSolve). The host reports each forward step as it takes it and asks, before each
/// adjoint step, for that step's data; the cursor walks the schedule in between, storing,
/// restoring and recomputing through the Stepper. Engine::run() drives the same cursor itself.

#include <memory>
#include <string>

#include "rewind/engine/engine.hpp"

namespace rwd::engine {

/// One adjoint run. Collective on config.store.comm: every rank makes the same calls.
class Cursor {
 public:
  /// Builds the schedule named in `config` (or uses `schedule` if given) and opens the stores.
  Cursor(Stepper& stepper, const EngineConfig& config,
         std::unique_ptr<schedule::Schedule> schedule = nullptr);
  ~Cursor();
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;

  /// The schedule's name (after "auto" resolved).
  std::string schedule_name() const;

  /// Whether the host should record step i's pullback data while taking it in the first sweep
  /// (a host whose buffers always hold it may ignore this).
  bool record_wanted(Step i) const;

  /// The host has taken forward step i (x_i -> x_{i+1}) in the first sweep; its state and, if
  /// recorded, its pullback data are in the stepper's buffers.
  /// `last`: the host knows x_{i+1} ends the run (end_forward(i + 1) follows); an online
  /// schedule must learn that before it plans past x_{i+1}.
  void forward_step_done(Step i, bool last = false);

  /// The first sweep ended at x_n (online runs learn n here; offline runs must match the plan).
  void end_forward(Step n);

  /// Before the adjoint of step i (i = n-1 down to 0): restores and recomputes as the schedule
  /// says, then leaves step i's pullback data in the stepper's pullback buffers.
  void prepare_adjoint(Step i);

  /// The host has run the adjoint of step i.
  void adjoint_done(Step i);

  /// After the adjoint of step 0: checks that nothing is left stored and returns the
  /// statistics (host-side forward and adjoint times are the host's to add).
  RunStats finish();

  /// Statistics so far.
  const RunStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rwd::engine
