#pragma once
/// @file
/// What a C++ time-stepper implements to be driven by the engine.

#include <vector>

#include "rewind/schedule/action.hpp"
#include "rewind/storage/store.hpp"
#include "rewind/tape/tape.hpp"

namespace rwd::engine {

using schedule::Step;
using tape::StepAccess;

/// A named distributed array owned by the stepper: this rank's block.
using Field = storage::FieldSpan;

/// A time-stepper with a hand-written (or generated) adjoint. Each rank holds its own block of
/// every field; calls are made on every rank in the same order, so a stepper may communicate
/// inside forward() and adjoint().
class Stepper {
 public:
  virtual ~Stepper() = default;

  /// The state variables: the stepper's own buffers. Called before every store and load; the
  /// spans must stay valid until the next forward() or adjoint(). The restart data of a
  /// checkpoint is drawn from them (see access()).
  virtual std::vector<Field> state() = 0;

  /// The buffers a recorded step fills and its adjoint reads (its pullback data, e.g. the
  /// stage values of a Runge-Kutta step). Called like state().
  virtual std::vector<Field> pullback() = 0;

  /// Which state variables step i reads and writes (indices into state()). The default says
  /// every step reads and writes every variable. Declaring the truth lets the tape store only
  /// what a restart needs: a two-step method's previous state, not a parameter set before
  /// step 0 and never written again.
  virtual StepAccess access(Step i);

  /// Advances x_i -> x_{i+1}. If `record`, also fills pullback() for step i.
  virtual void forward(Step i, bool record) = 0;

  /// Called once when x_n is reached, before the first adjoint step: seed the adjoint.
  virtual void begin_adjoint() {}

  /// The adjoint of step i, with pullback() holding step i's recorded data.
  virtual void adjoint(Step i) = 0;

  /// Called after the engine loaded a checkpoint into state() (restart = true) or pullback()
  /// buffers, so a stepper whose buffers belong to another library can mark them changed.
  virtual void loaded(bool /*restart*/) {}

  /// Called around every checkpoint write (write = true) and read, for profiling hooks.
  virtual void on_io(bool /*write*/, bool /*begin*/) {}

  /// Online runs (step count not given): true once x_i is the final state. Must agree on all
  /// ranks.
  virtual bool finished(Step /*i*/) { return false; }
};

}  // namespace rwd::engine
