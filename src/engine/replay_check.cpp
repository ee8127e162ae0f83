#include "replay_check.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "rewind/timing.hpp"

namespace rwd::engine::detail {

std::vector<std::uint64_t> ReplayCheck::hash(const std::vector<Field>& fields) {
  const auto t0 = SteadyClock::now();
  std::vector<std::uint64_t> out;
  out.reserve(fields.size());
  for (const auto& f : fields) {
    out.push_back(XXH3_64bits(f.data.data(), f.data.size_bytes()));
    bytes_ += static_cast<std::int64_t>(f.data.size_bytes());
  }
  seconds_ += seconds_since(t0);
  return out;
}

void ReplayCheck::remember(Step step, const std::vector<Field>& fields) {
  const auto k = static_cast<std::size_t>(step);
  if (hashes_.size() <= k) hashes_.resize(k + 1);
  hashes_[k] = hash(fields);
}

void ReplayCheck::compare(Step step, const std::vector<Field>& fields) {
  const auto k = static_cast<std::size_t>(step);
  if (mismatch_ || k >= hashes_.size() || hashes_[k].empty()) return;
  const std::vector<std::uint64_t> now = hash(fields);
  for (std::size_t f = 0; f < now.size() && f < hashes_[k].size(); ++f) {
    if (now[f] == hashes_[k][f]) continue;
    mismatch_.emplace(
        ErrorCode::InvalidArgument,
        "the recomputed state x_" + std::to_string(step) + " differs from the one the first " +
            "sweep reached (field '" + std::string(fields[f].name) + "', rank " +
            std::to_string(rank_) +
            "): the forward run cannot be reproduced from its checkpoints, and the gradient "
            "would be wrong. What usually causes it: state outside the stepper that the program "
            "changes (an event's post-event function, a parameter or model changed between "
            "solves, a hybrid mode) or a right-hand side that is not deterministic (threads, "
            "random numbers, uninitialised memory)");
    return;
  }
}

std::optional<Error> ReplayCheck::take_mismatch() {
  std::optional<Error> out;
  out.swap(mismatch_);
  return out;
}

}  // namespace rwd::engine::detail
