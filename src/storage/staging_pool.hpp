#pragma once
// The staging pool of an asynchronous disk store: buffers that hold checkpoints copied by put()
// until the I/O thread has written them, and checkpoints read ahead by prefetch() until get()
// takes them. Bounded in bytes; buffers are kept and reused, so a long run does not pay page
// faults for every checkpoint.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "rewind/timing.hpp"

namespace rwd::storage::detail {

class StagingPool {
 public:
  /// What a buffer is for. Write buffers come back by themselves (when the I/O thread has
  /// written them); prefetch buffers only when the store's caller reads or erases the checkpoint.
  enum class Use { Write, Prefetch };

  /// A buffer on loan. Gives it back when destroyed, from whichever thread that happens on.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    /// The `doubles` values asked for (the buffer may be larger).
    std::span<double> span() const { return {data_.get(), doubles_}; }
    explicit operator bool() const { return data_ != nullptr; }

   private:
    friend class StagingPool;
    struct State;
    std::shared_ptr<State> pool_;
    std::unique_ptr<double[]> data_;
    std::size_t capacity_ = 0;  // doubles allocated
    std::size_t doubles_ = 0;   // doubles asked for
    Use use_ = Use::Write;
  };

  /// A time the caller spent blocked in acquire().
  struct Wait {
    SteadyClock::time_point from{}, to{};
  };

  struct Stats {
    std::int64_t allocated_bytes = 0;  ///< every buffer, in use or free
    std::int64_t in_use_bytes = 0;     ///< buffers on loan
    std::int64_t peak_in_use_bytes = 0;
    std::int64_t over_limit = 0;      ///< buffers allocated beyond the limit (see acquire)
    std::int64_t prefetch_bytes = 0;  ///< bytes asked for by prefetch leases now held
  };

  /// Throws Error(InvalidArgument) unless max_bytes > 0.
  explicit StagingPool(std::int64_t max_bytes);
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  /// A buffer of at least `doubles` values, reusing a free one when one is large enough. While
  /// buffers waiting to be written fill the pool, blocks until one comes back (they always do:
  /// the I/O thread needs no caller to finish a write). When nothing but prefetched data, or
  /// nothing at all, keeps a request out — one larger than the pool, say — allocates above the
  /// limit rather than wait for ever, and counts it in over_limit. `waited`, if given, receives
  /// the time blocked (from == to when it did not block).
  Lease acquire(std::size_t doubles, Use use, Wait* waited = nullptr);

  /// Whether a prefetch of `bytes` fits beside the prefetches held now. Counts the bytes asked
  /// for, not the buffers' sizes (which depend on which buffers happened to be free), so the
  /// answer depends only on the calls made: every rank of a collective store decides alike.
  bool prefetch_fits(std::int64_t bytes) const;

  Stats stats() const;
  std::int64_t max_bytes() const;

 private:
  std::shared_ptr<Lease::State> state_;
};

}  // namespace rwd::storage::detail
