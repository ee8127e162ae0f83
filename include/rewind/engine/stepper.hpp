#pragma once
/// @file
/// What a C++ time-stepper implements to be driven by a Recording (or the Engine).

#include <span>
#include <vector>

#include "rewind/record/restart_sets.hpp"
#include "rewind/schedule/action.hpp"
#include "rewind/storage/store.hpp"

namespace rwd::engine {

using record::StepAccess;
using schedule::Step;
using storage::Kind;

/// A named distributed array owned by the stepper: this rank's block. The name is copied when
/// the field is stored, so it needs to stay valid only until the call that returned it ends.
using Field = storage::FieldSpan;

/// How a forward step is taken.
struct StepContext {
  /// Fill pullback() for this step: its adjoint will read it.
  bool record = false;
  /// The step was taken before and is taken again from a restored state (a recomputation),
  /// rather than for the first time in the first sweep. A stepper that accumulates an
  /// objective or writes output along the way does it only when this is false. (A resumable
  /// run, EngineConfig::resume, restarts the first sweep from a durable state: an accumulator
  /// must then be part of state() to be restored, and updated on every step.)
  bool recompute = false;
};

/// Where checkpoint I/O is, for profiling hooks (Stepper::on_io).
enum class IoEvent { WriteBegin, WriteEnd, ReadBegin, ReadEnd };

/// A time-stepper with a hand-written (or generated) adjoint. Each rank holds its own block of
/// every field; calls are made on every rank in the same order, so a stepper may communicate
/// inside forward() and adjoint().
///
/// Call pattern, for one recording: access(i) for the steps the analysis looks at (offline: each
/// i in [0, n) once, backwards, when the recording is created; it may be called for steps not
/// yet taken); forward(i, {recompute = false}) for i = 0, 1, ... in the first sweep, with
/// finished(i + 1) after each step of an online run; begin_adjoint(seed) once; then adjoint(i)
/// for i = n-1 down to 0, with forward(j, {recompute = true}) from restored states in between.
/// state() and pullback() are called before every store and load and when the recording is
/// planned; loaded() after every load into them.
class Stepper {
 public:
  virtual ~Stepper() = default;

  /// The state variables: the stepper's own buffers. The spans must stay valid until the next
  /// forward(), adjoint() or state() call, and have the same sizes throughout a recording. A
  /// checkpoint's restart data is drawn from them (see access()).
  virtual std::vector<Field> state() = 0;

  /// The buffers a recorded step fills and its adjoint reads: its pullback data (for a
  /// Runge-Kutta method, the stage values). Called like state().
  virtual std::vector<Field> pullback() = 0;

  /// Whether a recorded step's pullback data holds the state the step ends in, x_{i+1} (a
  /// stiffly accurate Runge-Kutta method's last stage is it; a stepper may also keep the end
  /// state among its pullback data): for each state() variable, the index of the pullback()
  /// field that holds it after step i was recorded. Then a schedule may restore x_{i+1} from
  /// step i's pullback data, with no restart checkpoint of its own: the engine loads that data
  /// into pullback(), copies those fields into state() (nothing to copy where a field is the
  /// same buffer) and calls loaded(Kind::Pullback), then loaded(Kind::Restart). Empty (the
  /// default): it does not.
  virtual std::vector<std::size_t> next_state_in_pullback() { return {}; }

  /// Where a pullback() field comes from when step i's pullback data is made of states: state()
  /// variable `variable` of x_i (end = false) or of x_{i+1} (end = true).
  struct StateSource {
    bool end = false;
    std::size_t variable = 0;
  };
  /// Whether step i's pullback data is made of the states the step starts and ends in alone (a
  /// theta method in endpoint form, whose stages are x_i and x_{i+1}): for each pullback() field,
  /// the state variable whose bits it holds after step i was recorded. Then the `endpoints`
  /// schedule composes it from restart checkpoints of x_i and x_{i+1} instead of storing it or
  /// re-running the step: the engine copies x_i's variables into their pullback() fields, then
  /// loads x_{i+1} into state() and copies its variables (nothing to copy where a field is the
  /// same buffer), and calls loaded(Kind::Pullback). A field must equal its source bit for bit:
  /// gradients are then those of stored pullback data. Empty (the default): it is not.
  virtual std::vector<StateSource> pullback_from_states() { return {}; }

  /// Which state variables step i reads and writes (indices into state()). The default says
  /// every step reads and writes every variable. Declaring the truth lets a recording store
  /// only what a restart needs: a two-step method's previous state, not a parameter set before
  /// step 0 and never written again.
  virtual StepAccess access(Step i);

  /// Advances x_i -> x_{i+1}; with context.record, also fills pullback() for step i.
  virtual void forward(Step i, const StepContext& context) = 0;

  /// Called once when the reverse sweep starts, with the state x_n in state(): seed the
  /// adjoint. `seed` is what the caller passed to Recording::reverse() (a cotangent of the
  /// run's output, in whatever layout the stepper and its caller agree on); empty when the
  /// stepper computes its own (Engine::run()).
  virtual void begin_adjoint(std::span<const double> seed) { (void)seed; }

  /// The adjoint's own variables, for runs that survive a kill (EngineConfig::resume): every
  /// buffer the adjoint carries from one adjoint step to the next (the cotangent of the state,
  /// and the gradient accumulated for the parameters), as this rank's blocks of distributed
  /// arrays (a per-rank scalar is an array of one value per rank). A resumed reverse sweep loads
  /// them and goes on with adjoint() without calling begin_adjoint(). Called like state(). The
  /// default has none: such a stepper cannot be run resumable.
  virtual std::vector<Field> adjoint_state() { return {}; }
  /// The adjoint of step i, with pullback() holding step i's recorded data.
  virtual void adjoint(Step i) = 0;

  /// Called after a checkpoint of kind `kind` was loaded into state() (Kind::Restart) or
  /// pullback() (Kind::Pullback) buffers, so a stepper whose buffers belong to another library
  /// can mark them changed.
  virtual void loaded(Kind kind) { (void)kind; }

  /// Called around every checkpoint write and read, for profiling hooks.
  virtual void on_io(IoEvent event) { (void)event; }

  /// Online runs (the step count not given): called after each first-sweep step with the
  /// index of the state just reached; true once x_i is the final state. Must agree on all
  /// ranks. The default throws: an online run needs it.
  virtual bool finished(Step i);
};

}  // namespace rwd::engine
