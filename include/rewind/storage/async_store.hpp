#pragma once
/// @file
/// AsyncStore: write-behind and prefetch over any Store, on one I/O thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "rewind/storage/store.hpp"

namespace rwd::storage {

/// How an AsyncStore stages data.
struct AsyncConfig {
  /// Bytes the staging pool may hold: checkpoints copied by put() and not yet written, plus
  /// prefetched checkpoints not yet taken by get(). put() blocks while the pool is full.
  std::int64_t max_staged_bytes = std::int64_t{256} << 20;
  /// Run every call on the caller's thread, as the inner store would (for comparisons).
  bool synchronous = false;
};

/// What the asynchrony bought (this rank).
struct AsyncStats {
  double put_seconds = 0.0;   ///< caller time inside put(): copying and waiting for room
  double wait_seconds = 0.0;  ///< caller time blocked on the I/O thread (room, get, flush)
  double io_seconds = 0.0;    ///< I/O thread time spent in the inner store
  /// I/O time the caller did not wait for.
  double hidden_seconds() const { return io_seconds - wait_seconds; }
  std::int64_t peak_staged_bytes = 0;
  std::int64_t over_limit = 0;        ///< staging buffers allocated above the limit (see put)
  std::int64_t prefetch_hits = 0;     ///< get() served from a prefetched copy
  std::int64_t prefetch_skipped = 0;  ///< prefetch() ignored: prefetched data would exceed the pool
  bool synchronous = false;           ///< calls ran on the caller's thread
  std::string synchronous_reason;     ///< why, when synchronous
};

/// Decorator that runs every call of an inner store on one I/O thread, which owns the inner
/// store (and, for an HDF5 store, every HDF5 call: the installed HDF5 is not thread-safe, so the
/// application must not call HDF5 itself while an AsyncStore over an HDF5 store is live).
///
/// put() copies the checkpoint into a staging buffer and returns; the write happens behind.
/// get() waits for everything queued before it (so for pending writes of its key) and reads
/// straight into the caller's buffers, or copies from a prefetched buffer. Calls reach the inner
/// store in the order they were made, so a collective inner store sees the same sequence on
/// every rank. Results are bitwise identical to the inner store's.
///
/// Errors: a duplicate or missing key throws at the call, on every rank alike. Bad arguments
/// throw at the call for a rank-local inner store; for a collective one put() does not talk to
/// the other ranks (an allreduce on the caller's thread competes with the I/O thread's
/// collectives for MPI's progress engine), so the inner store's own agreement catches them on
/// the I/O thread. A failed put or erase on the I/O thread is kept: later queued calls are
/// skipped and the error is rethrown by the next get, flush or drain (and, for a rank-local
/// inner store, by any call), on every rank of a collective store alike; the store then takes no
/// more calls. Errors of a get, or of the prefetch it uses, are thrown by that get and not kept.
///
/// Threads: a collective inner store needs MPI_THREAD_MULTIPLE (the solver keeps calling MPI
/// while the I/O thread is in a collective). If MPI_Query_thread reports less, the AsyncStore
/// falls back to running every call synchronously on the caller's thread and says so in
/// async_stats().synchronous and synchronous_reason; it does not throw. A rank-local inner
/// store needs no MPI thread support. An AsyncStore itself must be called from one thread.
class AsyncStore final : public Store {
 public:
  /// Takes `inner`, which was built on this thread. Collective on inner->collective_comm() for
  /// a collective inner store.
  explicit AsyncStore(std::unique_ptr<Store> inner, const AsyncConfig& config = {});
  /// Builds the inner store with make_inner() on the I/O thread. `collective` says whether that
  /// store will be collective (then this constructor is collective on its communicator and
  /// MPI_THREAD_MULTIPLE is needed to run asynchronously). Rethrows what make_inner throws.
  AsyncStore(std::function<std::unique_ptr<Store>()> make_inner, bool collective,
             const AsyncConfig& config = {});
  /// Waits for every queued call, then destroys the inner store on the I/O thread. Collective
  /// like the inner store's destructor. Abandons the inner store (a disk store deletes its file)
  /// if a queued call failed or the destructor runs while an exception unwinds.
  ~AsyncStore() override;

  AsyncStore(const AsyncStore&) = delete;
  AsyncStore& operator=(const AsyncStore&) = delete;

  /// "async(<inner>)".
  std::string name() const override;
  /// Collective like the inner store's, but returns without waiting for the other ranks.
  /// Blocks only while the staging pool is full; if nothing but prefetched data fills it,
  /// allocates above the limit rather than wait for ever.
  void put(const Key& key, const CheckpointView& checkpoint) override;
  /// Collective like the inner store's.
  void get(const Key& key, const CheckpointSpan& out) override;
  /// Collective like the inner store's. Does not wait for the erase to happen.
  void erase(const Key& key) override;
  /// True once put() returned, false once erase() returned. Not collective.
  bool contains(const Key& key) const override;
  /// writes/reads/bytes count calls made; seconds are the inner store's (as of its last
  /// finished call).
  StoreStats stats() const override;
  std::string path() const override;
  /// A duplicate of the inner store's communicator, or MPI_COMM_NULL.
  MPI_Comm collective_comm() const override;
  /// Waits for everything queued, then flushes the inner store. Collective like the inner
  /// store's. Rethrows a kept error.
  void flush() override;
  void abandon() noexcept override;

  /// Waits until every queued call has run (without flushing the inner store); rethrows a kept
  /// error. Not itself collective, but it waits for the inner store's collective calls, so use
  /// it on every rank alike.
  void drain();

  /// Starts reading checkpoint `key` into a staging buffer, so that a later get() only copies.
  /// Collective like get(). Ignored (and counted) if the prefetched data would not fit in the
  /// pool, or in synchronous mode.
  void prefetch(const Key& key) override;

  AsyncStats async_stats() const;

  /// Runs fn(inner) on the I/O thread after everything queued and waits for it; rethrows what
  /// it throws. Collective if fn is.
  void call_inner(const std::function<void(Store&)>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Builds store `inner` ("ram", "hdf5") on the I/O thread of a new AsyncStore (so that thread
/// makes every HDF5 call, construction included). Collective on config.comm for a collective
/// inner store.
std::unique_ptr<AsyncStore> make_async_store(std::string_view inner, const StoreConfig& config,
                                             const AsyncConfig& async = {});

}  // namespace rwd::storage
