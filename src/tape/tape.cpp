#include "rewind/tape/tape.hpp"

#include <algorithm>

#include "rewind/error.hpp"

namespace rwd::tape {

namespace {
std::uint8_t bit(Level level) {
  if (level == Level::Ram) return 1;
  if (level == Level::Disk) return 2;
  throw Error(ErrorCode::Internal, "tape: checkpoints live only in RAM or on disk, not at " +
                                       std::string(schedule::to_string(level)));
}
int index(Level level) {
  return level == Level::Ram ? 0 : 1;
}
bool contains(const std::vector<std::size_t>& list, std::size_t v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}
}  // namespace

Tape::Tape(std::size_t variables, AccessFn access, Step steps, Step lookahead)
    : variables_(variables), access_(std::move(access)), steps_(steps), lookahead_(lookahead) {
  require(static_cast<bool>(access_), "tape: an access function is required");
  require(steps >= 0, "tape: the step count must be >= 0 (0 = unknown)");
  require(lookahead >= 1, "tape: the lookahead must be >= 1");
  set_steps(steps);
}

void Tape::set_steps(Step n) {
  steps_ = n;
  restart_sets_.clear();
  last_write_.assign(variables_, -1);
  if (n <= 0) return;
  // One backward pass finds, per variable, the last step that writes it.
  std::size_t unresolved = variables_;
  for (Step j = n - 1; j >= 0 && unresolved > 0; --j) {
    for (std::size_t v : access_(j).writes) {
      require(v < variables_, "tape: step " + std::to_string(j) + " writes variable " +
                                  std::to_string(v) + " but only " + std::to_string(variables_) +
                                  " are declared");
      if (last_write_[v] < 0) {
        last_write_[v] = j;
        --unresolved;
      }
    }
  }
}

bool Tape::reads_before_write(std::size_t v, Step b, Step horizon) const {
  for (Step j = b; j < horizon; ++j) {
    const StepAccess a = access_(j);
    if (contains(a.reads, v)) return true;
    if (contains(a.writes, v)) return false;
  }
  return steps_ <= 0;  // unknown end: it may still be read
}

bool Tape::written_from(std::size_t v, Step b, Step /*horizon*/) const {
  if (steps_ > 0) return last_write_[v] >= b;
  for (Step j = b; j < b + lookahead_; ++j) {
    if (contains(access_(j).writes, v)) return true;
  }
  return true;  // unknown end: assume it is overwritten later (storing it is always safe)
}

const std::vector<std::size_t>& Tape::restart_set(Step b) {
  auto it = restart_sets_.find(b);
  if (it != restart_sets_.end()) return it->second;
  const Step horizon = steps_ > 0 ? steps_ : b + lookahead_;
  std::vector<std::size_t> set;
  for (std::size_t v = 0; v < variables_; ++v) {
    if (written_from(v, b, horizon) && reads_before_write(v, b, horizon)) set.push_back(v);
  }
  return restart_sets_.emplace(b, std::move(set)).first->second;
}

void Tape::stored(const Key& key, Level level) {
  auto& mask = where_[key];
  if (mask & bit(level)) {
    throw Error(ErrorCode::Internal, "tape: " + storage::to_string(key) + " is already at " +
                                         schedule::to_string(level));
  }
  mask |= bit(level);
  auto& live = live_[index(level)];
  ++live;
  peak_[index(level)] = std::max(peak_[index(level)], live);
}

void Tape::freed(const Key& key, Level level) {
  auto it = where_.find(key);
  if (it == where_.end() || !(it->second & bit(level))) {
    throw Error(ErrorCode::Internal,
                "tape: " + storage::to_string(key) + " is not at " + schedule::to_string(level));
  }
  it->second &= static_cast<std::uint8_t>(~bit(level));
  if (it->second == 0) where_.erase(it);
  --live_[index(level)];
}

bool Tape::holds(const Key& key, Level level) const {
  auto it = where_.find(key);
  return it != where_.end() && (it->second & bit(level));
}

std::optional<Level> Tape::find(const Key& key) const {
  if (holds(key, Level::Ram)) return Level::Ram;
  if (holds(key, Level::Disk)) return Level::Disk;
  return std::nullopt;
}

std::int64_t Tape::live(Level level) const {
  return live_[index(level)];
}
std::int64_t Tape::peak(Level level) const {
  return peak_[index(level)];
}

}  // namespace rwd::tape
