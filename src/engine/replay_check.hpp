#pragma once
// The replay check (RecordingConfig::verify): a hash of every field of every state the first
// sweep reached, compared with the same state when a recomputation reaches it again. A
// recomputation that does not give the forward run's bits means the gradient would be wrong.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rewind/engine/stepper.hpp"
#include "rewind/error.hpp"

namespace rwd::engine::detail {

class ReplayCheck {
 public:
  /// `rank`: this rank on the recording's communicator, for messages.
  explicit ReplayCheck(int rank = 0) : rank_(rank) {}
  /// The first sweep reached x_step with `fields` (every state field). Rank-local.
  void remember(Step step, const std::vector<Field>& fields);
  /// A recomputation reached x_step again; the first difference found is kept. Rank-local.
  void compare(Step step, const std::vector<Field>& fields);
  /// The first difference found since the last call, as an error naming the step, the field and
  /// this rank, with what usually causes it; clears it. Rank-local (the caller agrees on it).
  std::optional<Error> take_mismatch();
  /// Bytes hashed and seconds spent, for the statistics.
  std::int64_t bytes() const { return bytes_; }
  double seconds() const { return seconds_; }

 private:
  std::vector<std::uint64_t> hash(const std::vector<Field>& fields);

  // The hashes of step k, or nullptr if it was not remembered.
  const std::uint64_t* stored(Step step, std::size_t& count) const;

  // One hash per field, width_ fields a step, side by side (8 bytes a step for one field):
  // a vector per step cost about 56. A step whose field count differs goes to odd_.
  std::vector<std::uint64_t> flat_;
  std::vector<bool> present_;  // per step: flat_ holds its hashes
  std::size_t width_ = 0;      // fields of the first step remembered
  std::map<Step, std::vector<std::uint64_t>> odd_;
  std::optional<Error> mismatch_;
  int rank_ = 0;
  std::int64_t bytes_ = 0;
  double seconds_ = 0.0;
};

}  // namespace rwd::engine::detail
