#pragma once
/// @file
/// A Recording is one adjoint run: its schedule, the record of its checkpoints and its
/// statistics. It is fed the first sweep, may be parked (everything it needs later is then in
/// the stores, so the stepper is free for other work), and is reversed later with a cotangent
/// the caller supplies. Hosts that own the time loop (PETSc) report steps to it (pull); the
/// Engine and the ensemble let it drive the stepper (push).
/// Words (checkpoint, recording, run, segment, slot, row, tape, ...): docs/runtime.md#glossary.

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "rewind/engine/plan.hpp"
#include "rewind/engine/stats.hpp"
#include "rewind/engine/stepper.hpp"
#include "rewind/engine/stores.hpp"
#include "rewind/error.hpp"

namespace rwd::engine {

/// Where a recording is in its life.
enum class Phase {
  Recording,  ///< the first sweep is running
  Recorded,   ///< the first sweep ended; the stepper holds x_n (and maybe step n-1's pullback data)
  Parked,     ///< the first sweep ended and what the stepper held is in the stores
  Reversing,  ///< the reverse sweep is running
  Done,       ///< every adjoint step ran and every checkpoint is freed
};

/// "recording", "recorded", "parked", "reversing", "done".
const char* to_string(Phase phase) noexcept;

/// What a recording with `plan` claims from its stores while it runs.
Claim claim_of(const Plan& plan);

/// The plan a Recording of `stepper` with `config` would follow, without recording anything.
/// Collective on `comm` (the checkpoint sizes are agreed over the ranks). Throws like the
/// Recording constructor.
Plan plan_for(Stepper& stepper, MPI_Comm comm, const RecordingConfig& config);

/// One adjoint run. Collective on stores->comm(): every rank makes the same calls in the same
/// order (except where a call says otherwise). Errors are rwd::Error; a failed collective call
/// fails on every rank. A failed recording cannot be continued; destroy it.
class Recording {
 public:
  /// Plans the run (collective: the checkpoint sizes are agreed over the ranks) and claims its
  /// budget in `stores`. The stepper must hold x_0. Throws Error(InvalidArgument) naming the
  /// setting to change for a budget no schedule accepts, a schedule that needs the step count
  /// when none is given, a stepper with no state, or a budget the stores cannot grant next to
  /// the recordings already there.
  Recording(Stepper& stepper, std::shared_ptr<Stores> stores, const RecordingConfig& config);
  /// Frees this recording's checkpoints: RAM at once; disk ones at the stores' next collective
  /// call (the destructor is never collective).
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  const Plan& plan() const;
  Phase phase() const;
  /// This recording's id in the checkpoint keys of the shared stores.
  std::int64_t id() const;
  /// n, once the first sweep ended (0 before, for an online run).
  Step steps() const;

  // ---- push: the recording drives the stepper ------------------------------------------
  /// Runs the first sweep: n steps, or until Stepper::finished() for an online run.
  void record();
  /// Runs the reverse sweep: un-parks if parked, calls Stepper::begin_adjoint(seed), runs the
  /// adjoint steps n-1 down to 0 with the recomputations the schedule needs, frees every
  /// checkpoint and returns the statistics. Afterwards the stepper holds the adjoint at x_0.
  RunStats reverse(std::span<const double> seed = {});

  // ---- parking --------------------------------------------------------------------------
  /// After the first sweep: stores what only the stepper holds — its whole state at x_n and,
  /// if the schedule kept it there, step n-1's pullback data — in the RAM store, so the stepper
  /// may run other work before this recording is reversed; on disk when the stores' RAM
  /// capacity has no room for them but their disk capacity has. The claim on the stores becomes
  /// what the recording holds, park_claim(): more than after the first sweep (it adds the final
  /// state and step n-1's data), less than the plan's budget or more, depending on the
  /// schedule. Throws Error(InvalidArgument) and changes nothing if the stores cannot grant it.
  /// Collective.
  void park();
  /// What park() would claim (phase Recorded).
  Claim park_claim() const;
  /// After the first sweep: the host's buffers no longer hold the final state (a host that ran
  /// other work on them and could not park first, e.g. a PETSc TS that continued with another
  /// TSSolve). The reverse then recomputes the end of the first sweep from the last restart
  /// checkpoint held (checked against the first sweep with RecordingConfig::verify).
  /// Rank-local.
  void lose_work();
  /// Whether lose_work() can be recovered from: a restart checkpoint before x_n is held (not so
  /// for schedules that store every step's pullback data, e.g. storeall; park those instead).
  bool can_rebuild() const;
  /// After the first sweep: whether the reverse runs no step again, every step's pullback data
  /// being held (step n-1's in the stepper, parked, or stored) and the recording not thinned. A
  /// host that may change its model before the reverse needs a whole recording. Rank-local.
  bool whole() const;
  /// Moves the RAM checkpoints of a recorded or parked recording (at most `at_most` of them, in
  /// the order of their keys) to the disk store (the recording keeps running from there when
  /// reversed) and gives their RAM claim back. Collective: the stores open their disk file if
  /// they have not yet.
  void spill(std::int64_t at_most = schedule::kUnlimited);
  /// After the first sweep, when its budget is wanted elsewhere for a while: frees every
  /// checkpoint but the first restart checkpoint (x_0's, or x_b's for a schedule that kept the
  /// pullback data of steps 0..b-1 instead, which stay too), the final state and, if the
  /// stepper still holds it or it was parked, step n-1's pullback data. The reverse then serves
  /// step n-1's adjoint from what was kept and, before the next adjoint step, plans the
  /// remaining steps again (the count now known, so an offline schedule; over what its stores
  /// grant then, at least what this recording had) and runs them again from the restart
  /// checkpoint, checked against the first sweep (RecordingConfig::verify). Costs those steps
  /// once more. `keep_final` = false, for a host that seeds its own adjoint (pull): the final
  /// state is dropped where step n-1's data and the restart checkpoint stand for it, and the
  /// stepper then does not hold x_n when the reverse starts. Returns the claim it holds
  /// afterwards. Throws Error(InvalidArgument) if the schedule kept no restart checkpoint (store
  /// all). Collective (disk checkpoints are erased).
  Claim thin(bool keep_final = true);
  /// Whether thin() was called and the reverse has not planned again yet.
  bool thinned() const;
  /// A parked recording is reversed with `stepper` instead of the one it was made with (a new
  /// object for the same task, with fields of the same names and sizes). Rank-local.
  void attach(Stepper& stepper);
  /// What the recording claims from its stores now.
  Claim claim() const;
  /// What it will claim while it is reversed: its plan's budget, and the disk its spilled
  /// checkpoints take.
  Claim reverse_claim() const;

  // ---- durable tapes (a resumable ensemble, docs/ensemble.md) ---------------------------
  /// What a parked recording would claim with every checkpoint on disk (make_durable()).
  Claim durable_claim() const;
  /// A parked recording: moves every checkpoint it holds to the disk store, syncs and seals
  /// them, gives the store's file the second name `link` (a hard link, made by the stores'
  /// rank 0 if it is not that file's already) so that the data outlives this process, and
  /// returns this rank's description of the tape, for from_durable(). Returns an empty string
  /// (the tape stays on disk, not durable) where the file system cannot give the store's file
  /// that name: `link` on another file system than the store's directory, or no hard links
  /// there. The stores must grant durable_claim(). Throws Error(InvalidArgument) if the disk
  /// store keeps nothing durable. Collective.
  std::string make_durable(const std::string& link);
  /// The recording make_durable() described (`tape`, this rank's description), made again in
  /// phase Recorded without taking a step: the first sweep is replayed with each checkpoint's
  /// data read from the tape's file (checked against its checksums, Error(Corrupt) otherwise)
  /// instead of the stepper, and the replay check gets the first sweep's prints. park() it next
  /// (what it parks comes from the tape too); the stepper then holds nothing of the run, but is
  /// attached as by attach(). `stepper` is the task made again (its fields named and sized as
  /// the first one's) and `config` the first recording's. Collective.
  static std::unique_ptr<Recording> from_durable(Stepper& stepper, std::shared_ptr<Stores> stores,
                                                 const RecordingConfig& config,
                                                 std::string_view tape);

  // ---- pull: the host owns the time loop -------------------------------------------------
  /// Whether the host should record step i's pullback data while taking it in the first sweep
  /// (a host whose buffers always hold it may ignore this). Rank-local.
  bool record_wanted(Step i) const;
  /// The host took first-sweep step i (x_i -> x_{i+1}); state() and, if recorded, pullback()
  /// hold its results. `last`: the host knows x_{i+1} ends the run (end_forward(i + 1)
  /// follows); an online schedule must learn that before it plans past x_{i+1}.
  void forward_step_done(Step i, bool last = false);
  /// The first sweep ended at x_n (online runs learn n here; offline runs must match the plan).
  void end_forward(Step n);
  /// Starts the reverse sweep without seeding the stepper (the host seeds its own adjoint):
  /// un-parks if parked. prepare_adjoint() calls it if the host did not.
  void begin_reverse();
  /// Before the adjoint of step i (i = n-1 down to 0): restores and recomputes as the schedule
  /// says, then leaves step i's pullback data in the stepper's pullback() buffers.
  void prepare_adjoint(Step i);
  /// The host ran the adjoint of step i.
  void adjoint_done(Step i);
  /// After the adjoint of step 0: frees what the schedule still holds, checks nothing is left,
  /// gives back the claim and returns the statistics (phase Done).
  RunStats finish();

  /// Statistics so far. Rank-local.
  RunStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rwd::engine
