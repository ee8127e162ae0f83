#include "staging_pool.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "rewind/error.hpp"

namespace rwd::storage::detail {

namespace {
constexpr auto kDouble = static_cast<std::int64_t>(sizeof(double));
}

// Shared by the pool and its leases, so a lease given back on the I/O thread after the store
// let go of the pool still finds it.
struct StagingPool::Lease::State {
  std::int64_t max_bytes = 0;
  std::mutex mutex;
  std::condition_variable returned;
  struct Free {
    std::unique_ptr<double[]> data;
    std::size_t capacity = 0;
  };
  std::vector<Free> free;
  std::int64_t write_in_use = 0;  // bytes of write buffers on loan
  Stats stats;

  void give_back(std::unique_ptr<double[]> data, std::size_t capacity, std::size_t doubles,
                 Use use) {
    const auto bytes = static_cast<std::int64_t>(capacity) * kDouble;
    {
      std::lock_guard lock(mutex);
      stats.in_use_bytes -= bytes;
      if (use == Use::Write) write_in_use -= bytes;
      if (use == Use::Prefetch)
        stats.prefetch_bytes -= static_cast<std::int64_t>(doubles) * kDouble;
      if (stats.allocated_bytes <= max_bytes) {
        free.push_back({std::move(data), capacity});
      } else {
        stats.allocated_bytes -= bytes;  // above the limit: let it go
      }
    }
    returned.notify_all();
  }
};

StagingPool::Lease::Lease(Lease&& other) noexcept
    : pool_(std::move(other.pool_)),
      data_(std::move(other.data_)),
      capacity_(std::exchange(other.capacity_, 0)),
      doubles_(std::exchange(other.doubles_, 0)),
      use_(other.use_) {}

StagingPool::Lease& StagingPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Lease gone(std::move(*this));
    pool_ = std::move(other.pool_);
    data_ = std::move(other.data_);
    capacity_ = std::exchange(other.capacity_, 0);
    doubles_ = std::exchange(other.doubles_, 0);
    use_ = other.use_;
  }
  return *this;
}

StagingPool::Lease::~Lease() {
  if (pool_ && data_) pool_->give_back(std::move(data_), capacity_, doubles_, use_);
}

StagingPool::StagingPool(std::int64_t max_bytes) : state_(std::make_shared<Lease::State>()) {
  require(max_bytes > 0, "staging pool: StoreConfig::max_staged_bytes must be > 0, got " +
                             std::to_string(max_bytes));
  state_->max_bytes = max_bytes;
}

StagingPool::~StagingPool() = default;

StagingPool::Lease StagingPool::acquire(std::size_t doubles, Use use, Wait* waited) {
  Lease::State& s = *state_;
  const std::int64_t bytes = static_cast<std::int64_t>(std::max<std::size_t>(doubles, 1)) * kDouble;
  Lease lease;
  std::unique_lock lock(s.mutex);
  std::optional<SteadyClock::time_point> blocked_since;
  for (;;) {
    auto best = s.free.end();
    for (auto it = s.free.begin(); it != s.free.end(); ++it) {
      if (it->capacity >= doubles && (best == s.free.end() || it->capacity < best->capacity)) {
        best = it;
      }
    }
    if (best != s.free.end()) {
      lease.data_ = std::move(best->data);
      lease.capacity_ = best->capacity;
      s.free.erase(best);
      break;
    }
    const bool room = s.stats.allocated_bytes + bytes <= s.max_bytes;
    if (room || (s.write_in_use == 0 && s.free.empty())) {
      if (!room) s.stats.over_limit += 1;
      lease.capacity_ = static_cast<std::size_t>(bytes / kDouble);
      lease.data_.reset(new double[lease.capacity_]);
      s.stats.allocated_bytes += bytes;
      break;
    }
    if (!s.free.empty()) {  // free buffers too small: drop one to make room for a larger one
      s.stats.allocated_bytes -= static_cast<std::int64_t>(s.free.back().capacity) * kDouble;
      s.free.pop_back();
      continue;
    }
    if (!blocked_since) blocked_since = SteadyClock::now();
    s.returned.wait(lock);  // write buffers fill the pool; one comes back when it is written
  }
  if (waited != nullptr) {
    const auto now = SteadyClock::now();
    *waited = {blocked_since.value_or(now), now};
  }
  const auto lent = static_cast<std::int64_t>(lease.capacity_) * kDouble;
  s.stats.in_use_bytes += lent;
  s.stats.peak_in_use_bytes = std::max(s.stats.peak_in_use_bytes, s.stats.in_use_bytes);
  if (use == Use::Write) s.write_in_use += lent;
  if (use == Use::Prefetch) s.stats.prefetch_bytes += static_cast<std::int64_t>(doubles) * kDouble;
  lease.pool_ = state_;
  lease.doubles_ = doubles;
  lease.use_ = use;
  return lease;
}

bool StagingPool::prefetch_fits(std::int64_t bytes) const {
  std::lock_guard lock(state_->mutex);
  return state_->stats.prefetch_bytes + bytes <= state_->max_bytes;
}

StagingPool::Stats StagingPool::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

std::int64_t StagingPool::max_bytes() const {
  return state_->max_bytes;
}

}  // namespace rwd::storage::detail
