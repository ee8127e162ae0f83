#pragma once
// The replay check (RecordingConfig::verify): a hash of every field of every state the first
// sweep reached, compared with the same state when a recomputation reaches it again. A
// recomputation that does not give the forward run's bits means the gradient would be wrong.
// Beside each hash a sketch of the field (its norm and one random ±1 projection of this rank's
// block) says how large a difference is: round-off in the last bits (an automatic-
// differentiation Jacobian that depends on the run's history) or a changed model.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/engine/stepper.hpp"
#include "rewind/error.hpp"

namespace rwd::engine::detail {

/// What the check remembers of one field of one state.
struct FieldPrint {
  std::uint64_t hash = 0;  ///< XXH3-64 of its bytes
  double sum_squares = 0;  ///< of this rank's block
  double projection = 0;   ///< onto ±1 signs drawn from the entries' global indices
  /// The same signs over the entries' bit patterns as integers (wrapping, so exact): two prints
  /// of values that differ in their last bits differ here by the units in the last place.
  std::uint64_t bit_projection = 0;
};

/// The size of the difference between two prints of one field, relative to the first's norm
/// (or absolute where that norm is 0): the larger of the differences of the norms and of the
/// projections. A lower bound that is exact for a difference in one entry; about 1e-16 times
/// the square root of the block's length is the floor of what it resolves.
double relative_difference(const FieldPrint& then, const FieldPrint& now);

/// The units in the last place by which two prints' bit projections differ, where that is a
/// last-bits difference (below 2^20), else -1.
std::int64_t ulps_apart(const FieldPrint& then, const FieldPrint& now);

class ReplayCheck {
 public:
  /// `rank`: this rank on the recording's communicator, for messages. `tolerance` > 0 accepts a
  /// recomputed field that differs by at most that much (relative_difference()); 0 asks for
  /// the forward run's bits. `tolerance_name`: the setting that sets it, for messages. `note`:
  /// appended to an error (RecordingConfig::verify_note). `lossy`: some restores come from a
  /// lossy codec, and a state recomputed from one cannot be the first sweep's bits (compare()).
  explicit ReplayCheck(int rank = 0, double tolerance = 0.0, std::string tolerance_name = {},
                       std::string note = {}, bool lossy = false)
      : rank_(rank),
        tolerance_(tolerance),
        tolerance_name_(std::move(tolerance_name)),
        note_(std::move(note)),
        lossy_(lossy) {}
  /// The first sweep reached x_step with `fields` (every state field). Rank-local.
  void remember(Step step, const std::vector<Field>& fields);
  /// A recomputation reached x_step again; the first difference beyond the tolerance found is
  /// kept. Under a lossy codec, a state that does not descend from exact data only
  /// (`exact_origin` false: CheckpointIo::working_exact()) is measured instead (drifted(),
  /// largest_drift()), never an error. Rank-local.
  void compare(Step step, const std::vector<Field>& fields, bool exact_origin = true);
  /// The first difference found since the last call, as an error naming the step, the field,
  /// this rank and the difference's size, with what usually causes it; clears it. Rank-local
  /// (the caller agrees on it).
  std::optional<Error> take_mismatch();
  /// What it remembers, as text (a durable tape carries it: Recording::make_durable), and back:
  /// load() replaces what it remembers. Throws Error(Corrupt) for text save() did not write.
  std::string save() const;
  void load(std::string_view text);
  /// Bytes hashed and seconds spent, for the statistics.
  std::int64_t bytes() const { return bytes_; }
  double seconds() const { return seconds_; }
  /// Recomputed fields that differed within the tolerance, and the largest such difference.
  std::int64_t tolerated() const { return tolerated_; }
  double largest_tolerated() const { return largest_tolerated_; }
  /// Under a lossy codec: recomputed fields that differed from the first sweep's, and the
  /// largest difference (relative_difference()).
  bool lossy() const { return lossy_; }
  std::int64_t drifted() const { return drifted_; }
  double largest_drift() const { return largest_drift_; }

 private:
  std::vector<FieldPrint> prints(const std::vector<Field>& fields);

  // The prints of step k, or nullptr if it was not remembered.
  const FieldPrint* stored(Step step, std::size_t& count) const;

  // One print per field, width_ fields a step, side by side (32 bytes a step for one field):
  // a vector per step cost about 56 more. A step whose field count differs goes to odd_.
  std::vector<FieldPrint> flat_;
  std::vector<bool> present_;  // per step: flat_ holds its prints
  std::size_t width_ = 0;      // fields of the first step remembered
  std::map<Step, std::vector<FieldPrint>> odd_;
  std::optional<Error> mismatch_;
  int rank_ = 0;
  double tolerance_ = 0.0;
  std::string tolerance_name_;
  std::string note_;
  std::int64_t bytes_ = 0;
  double seconds_ = 0.0;
  std::int64_t tolerated_ = 0;
  double largest_tolerated_ = 0.0;
  bool lossy_ = false;
  std::int64_t drifted_ = 0;
  double largest_drift_ = 0.0;
};

}  // namespace rwd::engine::detail
