#include "replay_check.hpp"

#include <algorithm>

#include "rewind/storage/sealed_blocks.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine::detail {

std::vector<std::uint64_t> ReplayCheck::hash(const std::vector<Field>& fields) {
  const auto t0 = SteadyClock::now();
  std::vector<std::uint64_t> out;
  out.reserve(fields.size());
  for (const auto& f : fields) {
    // The stores' checksum: the same XXH3-64, with the widest vector code the CPU has.
    out.push_back(storage::block_checksum(f.data));
    bytes_ += static_cast<std::int64_t>(f.data.size_bytes());
  }
  seconds_ += seconds_since(t0);
  return out;
}

void ReplayCheck::remember(Step step, const std::vector<Field>& fields) {
  const auto k = static_cast<std::size_t>(step);
  std::vector<std::uint64_t> h = hash(fields);
  if (present_.empty() && odd_.empty()) width_ = h.size();
  if (present_.size() <= k) present_.resize(k + 1, false);
  if (h.size() == width_) {
    if (flat_.size() < (k + 1) * width_) flat_.resize((k + 1) * width_);
    std::copy(h.begin(), h.end(), flat_.begin() + static_cast<std::ptrdiff_t>(k * width_));
    present_[k] = true;
    odd_.erase(step);
  } else {
    present_[k] = false;
    odd_[step] = std::move(h);
  }
}

const std::uint64_t* ReplayCheck::stored(Step step, std::size_t& count) const {
  const auto k = static_cast<std::size_t>(step);
  if (k < present_.size() && present_[k]) {
    count = width_;
    return flat_.data() + k * width_;
  }
  const auto it = odd_.find(step);
  if (it == odd_.end()) return nullptr;
  count = it->second.size();
  return it->second.data();
}

void ReplayCheck::compare(Step step, const std::vector<Field>& fields) {
  std::size_t count = 0;
  const std::uint64_t* then = mismatch_ ? nullptr : stored(step, count);
  if (then == nullptr || count == 0) return;
  const std::vector<std::uint64_t> now = hash(fields);
  for (std::size_t f = 0; f < now.size() && f < count; ++f) {
    if (now[f] == then[f]) continue;
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
