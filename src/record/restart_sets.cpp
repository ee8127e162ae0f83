#include "rewind/record/restart_sets.hpp"

#include <algorithm>

#include "rewind/error.hpp"

namespace rwd::record {

namespace {
bool contains(const std::vector<std::size_t>& list, std::size_t v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}
}  // namespace

RestartSets::RestartSets(std::size_t variables, AccessFn access, Horizon horizon)
    : variables_(variables), access_(std::move(access)), horizon_(horizon) {
  require(static_cast<bool>(access_), "restart sets: an access function is required");
  require(horizon.steps >= 0, "restart sets: the step count must be >= 0 (0 = unknown)");
  require(horizon.max_steps >= 0, "restart sets: the step bound must be >= 0 (0 = none)");
  require(horizon.lookahead >= 1, "restart sets: the lookahead must be >= 1");
  set_steps(horizon.steps);
}

Step RestartSets::end() const {
  return horizon_.steps > 0 ? horizon_.steps : horizon_.max_steps;
}

void RestartSets::set_steps(Step n) {
  horizon_.steps = n;
  cache_.clear();
  last_write_.assign(variables_, -1);
  // One backward pass finds, per variable, the last step that writes it.
  std::size_t unresolved = variables_;
  for (Step j = end() - 1; j >= 0 && unresolved > 0; --j) {
    for (std::size_t v : access_(j).writes) {
      require(v < variables_, "restart sets: step " + std::to_string(j) + " writes variable " +
                                  std::to_string(v) + " but only " + std::to_string(variables_) +
                                  " are declared");
      if (last_write_[v] < 0) {
        last_write_[v] = j;
        --unresolved;
      }
    }
  }
}

bool RestartSets::live(std::size_t v, Step b) const {
  const Step stop = end() > 0 ? end() : b + horizon_.lookahead;
  for (Step j = b; j < stop; ++j) {
    const StepAccess a = access_(j);
    if (contains(a.reads, v)) return true;
    if (contains(a.writes, v)) return false;
  }
  return end() <= 0;  // unknown end: it may still be read
}

bool RestartSets::overwritten_from(std::size_t v, Step b) const {
  if (end() > 0) return last_write_[v] >= b;
  for (Step j = b; j < b + horizon_.lookahead; ++j) {
    if (contains(access_(j).writes, v)) return true;
  }
  return true;  // unknown end: assume it is overwritten later (storing it is always safe)
}

std::vector<std::size_t> RestartSets::written() const {
  std::vector<std::size_t> out;
  for (std::size_t v = 0; v < variables_; ++v) {
    if (end() <= 0 || last_write_[v] >= 0) out.push_back(v);
  }
  return out;
}

const std::vector<std::size_t>& RestartSets::at(Step b) {
  auto it = cache_.find(b);
  if (it != cache_.end()) return *it->second;
  std::vector<std::size_t> set;
  for (std::size_t v = 0; v < variables_; ++v) {
    if (overwritten_from(v, b) && live(v, b)) set.push_back(v);
  }
  const std::vector<std::size_t>& kept = *distinct_.insert(std::move(set)).first;
  if (cache_.size() >= kCachedBoundaries) cache_.clear();  // the sets stay in distinct_
  cache_.emplace(b, &kept);
  return kept;
}

}  // namespace rwd::record
