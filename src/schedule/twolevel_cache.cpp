// The process-wide cache of two-level plans. The engine builds a schedule per run and `auto`
// replays every schedule before building the one it picks, so the same request is planned again
// and again (seconds each for n = 10^5). A plan is immutable, so every schedule made for an equal
// request can share it. Bounded by count and bytes; the least recently used plan goes first.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <future>
#include <map>
#include <mutex>

#include "rewind/schedule/twolevel.hpp"
#include "twolevel_plan.hpp"

namespace rwd::schedule {

namespace detail {

namespace {

constexpr std::size_t kMaxPlans = 16;
constexpr std::size_t kMaxBytes = std::size_t{64} << 20;

using SharedPlan = std::shared_ptr<const TwoLevelDiskPlan>;

// Costs by their bits: requests are equal when they would plan alike, and -0.0 is not 0.0.
struct Key {
  Step steps;
  std::int64_t ram;
  std::int64_t disk;
  std::uint64_t write_cost;
  std::uint64_t read_cost;
  TwoLevelMethod method;
  std::int64_t table_entries;
  bool unlimited_shortcut;
  auto operator<=>(const Key&) const = default;
};

Key key_of(const TwoLevelRequest& r) {
  return {.steps = r.steps,
          .ram = r.ram,
          .disk = r.disk,
          .write_cost = std::bit_cast<std::uint64_t>(r.write_cost),
          .read_cost = std::bit_cast<std::uint64_t>(r.read_cost),
          .method = r.method,
          .table_entries = r.table_entries,
          .unlimited_shortcut = r.unlimited_shortcut};
}

class PlanCache {
 public:
  SharedPlan get(const TwoLevelRequest& request) {
    const Key key = key_of(request);
    std::promise<SharedPlan> promise;
    std::shared_future<SharedPlan> found;
    {
      const std::lock_guard lock(mutex_);
      if (const auto it = entries_.find(key); it != entries_.end()) {
        it->second.last_use = ++clock_;
        ++reused_;
        found = it->second.plan;
      } else {
        entries_.emplace(key, Entry{.plan = promise.get_future().share(),
                                    .last_use = ++clock_,
                                    .bytes = 0,
                                    .ready = false});
        ++planned_;
      }
    }
    // Waits if another thread is still planning it, and rethrows what that planning threw.
    if (found.valid()) return found.get();
    // Planned outside the lock: other requests go on meanwhile, equal ones wait for this one.
    SharedPlan plan;
    try {
      plan = std::make_shared<const TwoLevelDiskPlan>(plan_two_level(request));
    } catch (...) {
      promise.set_exception(std::current_exception());
      const std::lock_guard lock(mutex_);
      entries_.erase(key);
      throw;
    }
    promise.set_value(plan);
    const std::lock_guard lock(mutex_);
    Entry& entry = entries_.at(key);
    entry.bytes = plan->bytes();
    entry.ready = true;
    bytes_ += entry.bytes;
    evict();
    return plan;
  }

  void clear() {
    const std::lock_guard lock(mutex_);
    // A plan still being planned stays: its planner finds and completes its entry.
    std::erase_if(entries_, [this](const auto& e) {
      if (!e.second.ready) return false;
      bytes_ -= e.second.bytes;
      return true;
    });
  }

  TwoLevelCacheStats stats() const {
    const std::lock_guard lock(mutex_);
    return {.planned = planned_, .reused = reused_, .plans = entries_.size(), .bytes = bytes_};
  }

 private:
  struct Entry {
    std::shared_future<SharedPlan> plan;
    std::uint64_t last_use = 0;
    std::size_t bytes = 0;
    bool ready = false;
  };

  // Drops the least recently used plans that are ready until the bounds hold. Schedules that
  // hold a dropped plan keep it.
  void evict() {
    while (entries_.size() > kMaxPlans || bytes_ > kMaxBytes) {
      auto oldest = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->second.ready &&
            (oldest == entries_.end() || it->second.last_use < oldest->second.last_use)) {
          oldest = it;
        }
      }
      if (oldest == entries_.end()) return;
      bytes_ -= oldest->second.bytes;
      entries_.erase(oldest);
    }
  }

  mutable std::mutex mutex_;
  std::map<Key, Entry> entries_;
  std::uint64_t clock_ = 0;
  std::size_t bytes_ = 0;
  std::int64_t planned_ = 0;
  std::int64_t reused_ = 0;
};

PlanCache& cache() {
  static PlanCache instance;
  return instance;
}

}  // namespace

SharedPlan shared_two_level_plan(const TwoLevelRequest& request) {
  return cache().get(request);
}

TwoLevelCacheStats two_level_cache_stats() {
  return cache().stats();
}

}  // namespace detail

void clear_twolevel_plans() {
  detail::cache().clear();
}

}  // namespace rwd::schedule
