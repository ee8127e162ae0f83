#pragma once
// A run's recordings, one a segment, in one budget (docs/petsc.md, "Events and runs in
// segments"). A run is split where the program may change its model: at an event (its
// post-event function may change the model, and the adjoint changes it back only after it has
// been given that step's data) and where a TSSolve continues the step numbering of the last one
// (the program may have changed its model and its state between the calls); no recomputation
// crosses such a point. Each segment is planned with what the segments before it leave of the
// budget; an ended segment is parked, thinned first when parking it whole would leave less than
// half of the budget to the segments after it, and ended segments are thinned, then spilled to
// the disk, to make room (engine/room.hpp).

#include <petscts.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rewind/engine/recording.hpp"
#include "run_config.hpp"
#include "ts_stepper.hpp"

namespace rwd::petsc {

struct Carry;

/// What a user can do when segments fill the budget.
extern const std::string kRoomAdvice;
/// kRoomAdvice with the RAM budget `ended` ended segments need at least (2 each, and 1 for the
/// segment after them).
std::string room_advice(std::size_t ended);
/// What an engine error says happened, without its advice (engine messages read "<what>; <what
/// to change>", in the terms of the C++ API), for a message whose advice is the PETSc user's.
std::string cause_of(const Error& e);

struct Segment {
  PetscInt first = 0;  ///< the TS step number of the recording's x_0
  std::unique_ptr<engine::Recording> recording;
  bool ended = false;  ///< its first sweep ended
  bool done = false;   ///< its reverse sweep ended
  bool again = false;  ///< a resumable run's interval, recomputed from its durable state
  /// Ended by a TSSolve that another continued: the program may have changed its model since,
  /// so it is reversed from what it holds, running no step again (spilled, never thinned).
  bool keep_whole = false;
};

/// The refusal of a TSSolve that continues the run from step `from` after `previous`, which is
/// not whole (its reverse would run steps again, under the model as the program leaves it): why,
/// and what holds each solve whole, or the option for programs that change nothing.
/// `held`: the checkpoints that hold the solves so far whole (their steps + 1 each).
std::string not_whole(const Segment& previous, PetscInt from, bool solution_only,
                      std::int64_t held);

class Segments {
 public:
  /// `carry`: the trajectory's stores and report; `stepper`: the TS as the recordings see it;
  /// `log`: the run's step log (the times in messages).
  Segments(Carry& carry, TsStepper& stepper, const StepLog& log);

  bool empty() const { return list_.empty(); }
  std::size_t size() const { return list_.size(); }
  /// "steps 0-100 storeall, 100-120 mixed, ...": the first `at_most` segments' plans.
  std::string plans(std::size_t at_most) const;
  Segment& front() { return list_.front(); }
  Segment& back() { return list_.back(); }
  Segment& operator[](std::size_t j) { return list_[j]; }
  const Segment& operator[](std::size_t j) const { return list_[j]; }
  /// A new segment from step `first`, not planned yet.
  Segment& add(PetscInt first);
  void drop_last() { list_.pop_back(); }

  /// The run's stores for `config` (made anew when the settings changed since the last run,
  /// unless they belong to an ensemble's group).
  engine::Stores& stores_for(const engine::StoresConfig& config);
  /// Plans `segment` with `config` within what the segments before it leave of the budget, and
  /// makes its recording; the first segment's plan goes into the trajectory's report.
  /// Collective on the TS's communicator.
  void plan(Segment& segment, RunConfig config);
  /// Ends the running segment's first sweep at state `at`; `park`: keep what the stepper holds
  /// until its reverse. Collective.
  void end(PetscInt at, bool park);
  /// Thins ended segments (oldest first, not `keep`), then spills them, until the stores could
  /// grant `extra` and still hold half of every limited level free. Collective.
  void make_room(const engine::Claim& extra, const Segment* keep);
  /// The segment whose recording holds step i's data.
  std::size_t of(PetscInt i) const;
  std::optional<std::size_t> find(PetscInt i) const;
  /// Segments thinned to make room for later ones.
  PetscInt thinned() const { return thinned_; }
  /// "rewind: this run is planned in segments ...; the segment from step `first` (t = ...)".
  std::string note(PetscInt first) const;

 private:
  Carry& carry_;
  TsStepper& stepper_;
  const StepLog& log_;
  std::vector<Segment> list_;
  PetscInt thinned_ = 0;
};

}  // namespace rwd::petsc
