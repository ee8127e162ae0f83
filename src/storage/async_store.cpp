#include "rewind/storage/async_store.hpp"
#include "rewind/timing.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "collective.hpp"
#include "layout.hpp"
#include "registry.hpp"
#include "rewind/error.hpp"

namespace rwd::storage {

using detail::agree;
using detail::capture;

namespace {

using Clock = SteadyClock;

struct Buffer {
  std::unique_ptr<double[]> data;
  std::size_t capacity = 0;  // doubles
  std::int64_t bytes() const { return static_cast<std::int64_t>(capacity * sizeof(double)); }
};

struct Done {
  bool finished = false;
  std::exception_ptr error;
};

// A checkpoint copied by put(), with views of the copy for the inner store.
struct Staged {
  Buffer buffer;
  detail::Layout layout;
  std::vector<FieldView> fields;
  std::vector<Scalar> scalars;
};

// A checkpoint being read ahead by prefetch().
struct Prefetch {
  Buffer buffer;
  detail::Layout layout;
  std::vector<FieldSpan> fields;
  std::vector<Scalar> scalars;
  Done done;
};

struct Op {
  enum class Type { Init, Put, Get, Prefetch, Erase, Flush, Call, Stop };
  Type type = Type::Stop;
  Key key;
  std::shared_ptr<Staged> staged;
  const CheckpointSpan* out = nullptr;
  std::shared_ptr<Prefetch> prefetch;
  const std::function<void(Store&)>* call = nullptr;
  std::function<std::unique_ptr<Store>()> make;
  std::shared_ptr<Done> done;
  bool abandon = false;
};

}  // namespace

struct AsyncStore::Impl {
  AsyncConfig config;
  bool synchronous = false;
  bool collective = false;
  std::string inner_name;
  std::string inner_path;
  MPI_Comm comm = MPI_COMM_NULL;  // for agreeing on the caller's thread
  int rank = -1;
  int uncaught = 0;
  bool abandoned = false;

  // Touched by the I/O thread only while it runs (by the caller before start and after join).
  std::unique_ptr<Store> inner;
  std::thread io;

  // Caller's thread only.
  std::map<Key, detail::Layout> held;
  std::map<Key, std::shared_ptr<Prefetch>> prefetched;
  StoreStats front;

  // Under `mutex`.
  std::mutex mutex;
  std::condition_variable io_ready;      // work for the I/O thread
  std::condition_variable caller_ready;  // an op finished or a buffer came back
  std::deque<Op> queue;
  std::exception_ptr sticky;  // first failure of a put or erase
  StoreStats inner_stats;
  AsyncStats stats;
  std::vector<Buffer> free_buffers;
  std::int64_t allocated = 0;        // bytes of every buffer, free or in use
  std::int64_t write_in_use = 0;     // bytes staged for writes: they come back by themselves
  std::int64_t prefetch_in_use = 0;  // bytes prefetched: they come back with get or erase

  std::string name() const { return "async(" + inner_name + ")"; }

  void enqueue(Op op) {
    {
      std::lock_guard lock(mutex);
      queue.push_back(std::move(op));
    }
    io_ready.notify_one();
  }

  // Waits for `done`, counting the time as waiting; rethrows its error.
  void wait(std::unique_lock<std::mutex>& lock, const Done& done) {
    const auto t0 = Clock::now();
    caller_ready.wait(lock, [&] { return done.finished; });
    stats.wait_seconds += seconds_since(t0);
    if (done.error) std::rethrow_exception(done.error);
  }

  void wait(const Done& done) {
    std::unique_lock lock(mutex);
    wait(lock, done);
  }

  // For a rank-local inner store a kept error is thrown at once. For a collective one it is
  // only thrown where every rank decides alike: in an agreement or after a queued op finished.
  void throw_sticky_if_local() {
    if (collective) return;
    std::lock_guard lock(mutex);
    if (sticky) std::rethrow_exception(sticky);
  }

  void throw_sticky() {
    std::lock_guard lock(mutex);
    if (sticky) std::rethrow_exception(sticky);
  }

  // A failure found on the caller's thread: thrown here, or agreed over the ranks first (only
  // get() of a prefetched checkpoint needs that).
  void settle(const std::optional<Error>& local) {
    if (collective) {
      agree(comm, local);
    } else if (local) {
      throw *local;
    }
  }

  // A staging buffer of at least `doubles`. Waits while staged writes fill the pool; when only
  // prefetched data fills it, a write allocates above the limit (a prefetch never gets here:
  // prefetch() checks the limit first, on state every rank shares).
  Buffer acquire(std::size_t doubles, bool for_prefetch) {
    const auto bytes = static_cast<std::int64_t>(doubles * sizeof(double));
    std::unique_lock lock(mutex);
    for (;;) {
      auto best = free_buffers.end();
      for (auto it = free_buffers.begin(); it != free_buffers.end(); ++it) {
        if (it->capacity >= doubles &&
            (best == free_buffers.end() || it->capacity < best->capacity))
          best = it;
      }
      Buffer buffer;
      if (best != free_buffers.end()) {
        buffer = std::move(*best);
        free_buffers.erase(best);
      } else if (allocated + bytes <= config.max_staged_bytes ||
                 (write_in_use == 0 && free_buffers.empty())) {
        if (allocated + bytes > config.max_staged_bytes) stats.over_limit += 1;
        buffer.data.reset(new double[std::max<std::size_t>(doubles, 1)]);
        buffer.capacity = doubles;
        allocated += buffer.bytes();
      } else if (!free_buffers.empty()) {
        allocated -= free_buffers.back().bytes();
        free_buffers.pop_back();
        continue;
      } else {
        const auto t0 = Clock::now();
        caller_ready.wait(lock);
        stats.wait_seconds += seconds_since(t0);
        continue;
      }
      (for_prefetch ? prefetch_in_use : write_in_use) += buffer.bytes();
      stats.peak_staged_bytes = std::max(stats.peak_staged_bytes, write_in_use + prefetch_in_use);
      return buffer;
    }
  }

  // Under `mutex`.
  void release(Buffer buffer, bool for_prefetch) {
    (for_prefetch ? prefetch_in_use : write_in_use) -= buffer.bytes();
    if (allocated <= config.max_staged_bytes) {
      free_buffers.push_back(std::move(buffer));
    } else {
      allocated -= buffer.bytes();
    }
  }

  void run(Op& op) {
    switch (op.type) {
      case Op::Type::Init:
        inner = op.make();
        break;
      case Op::Type::Put:
        inner->put(op.key, CheckpointView{op.staged->fields, op.staged->scalars});
        break;
      case Op::Type::Get:
        inner->get(op.key, *op.out);
        break;
      case Op::Type::Prefetch:
        inner->get(op.key, CheckpointSpan{op.prefetch->fields, op.prefetch->scalars});
        break;
      case Op::Type::Erase:
        inner->erase(op.key);
        break;
      case Op::Type::Flush:
        inner->flush();
        break;
      case Op::Type::Call:
        (*op.call)(*inner);
        break;
      case Op::Type::Stop:
        break;
    }
  }

  // The error of a queued put or erase, as later calls report it.
  std::exception_ptr kept(const std::exception_ptr& error, const char* call, const Key& key) const {
    std::string message = name() + ": the queued " + call + "(" + to_string(key) +
                          ") failed, so this store takes no more calls: ";
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      return std::make_exception_ptr(Error(e.code(), message + e.what()));
    } catch (const std::exception& e) {
      return std::make_exception_ptr(Error(ErrorCode::Internal, message + e.what()));
    } catch (...) {
      return std::make_exception_ptr(Error(ErrorCode::Internal, message + "unknown exception"));
    }
  }

  void io_loop() {
    for (;;) {
      Op op;
      {
        std::unique_lock lock(mutex);
        io_ready.wait(lock, [&] { return !queue.empty(); });
        op = std::move(queue.front());
        queue.pop_front();
      }
      if (op.type == Op::Type::Stop) {
        if (inner && (op.abandon || sticky)) inner->abandon();
        inner.reset();  // a collective destructor: every rank reaches it here, in order
        return;
      }
      std::exception_ptr error;
      {
        std::lock_guard lock(mutex);
        error = sticky;  // after a failed write, later ops are skipped, alike on every rank
      }
      if (!error) {
        const auto t0 = Clock::now();
        try {
          run(op);
        } catch (...) {
          error = std::current_exception();
        }
        const double dt = seconds_since(t0);
        std::lock_guard lock(mutex);
        stats.io_seconds += dt;
        if (inner) inner_stats = inner->stats();
      }
      {
        std::lock_guard lock(mutex);
        switch (op.type) {
          case Op::Type::Put:
            release(std::move(op.staged->buffer), false);
            if (error && !sticky) sticky = kept(error, "put", op.key);
            break;
          case Op::Type::Erase:
            if (error && !sticky) sticky = kept(error, "erase", op.key);
            break;
          case Op::Type::Prefetch:
            op.prefetch->done.error = error;
            op.prefetch->done.finished = true;
            break;
          default:
            op.done->error = error;
            op.done->finished = true;
            break;
        }
      }
      caller_ready.notify_all();
    }
  }

  void start(std::function<std::unique_ptr<Store>()> make) {
    io = std::thread([this] { io_loop(); });
    Op op;
    op.type = Op::Type::Init;
    op.make = std::move(make);
    op.done = std::make_shared<Done>();
    auto done = op.done;
    enqueue(std::move(op));
    try {
      wait(*done);
    } catch (...) {
      stop(false);
      throw;
    }
  }

  void stop(bool abandon) {
    if (!io.joinable()) return;
    Op op;
    op.type = Op::Type::Stop;
    op.abandon = abandon;
    enqueue(std::move(op));
    io.join();
  }

  // Decides, before anything starts, whether calls can run on an I/O thread.
  void choose_mode(bool is_collective) {
    collective = is_collective;
    if (config.synchronous) {
      synchronous = true;
      stats.synchronous_reason = "AsyncConfig::synchronous is set";
    } else if (collective) {
      int initialized = 0;
      detail::mpi_check(MPI_Initialized(&initialized), "MPI_Initialized");
      int provided = MPI_THREAD_SINGLE;
      if (initialized) detail::mpi_check(MPI_Query_thread(&provided), "MPI_Query_thread");
      if (initialized && provided < MPI_THREAD_MULTIPLE) {
        synchronous = true;
        stats.synchronous_reason =
            "the inner store is collective and MPI provides thread level " +
            std::to_string(provided) +
            ", not MPI_THREAD_MULTIPLE; initialise MPI with MPI_Init_thread(..., "
            "MPI_THREAD_MULTIPLE, ...) to overlap I/O";
      }
    }
    stats.synchronous = synchronous;
  }

  void finish_setup() {
    if (!inner) return;
    inner_name = inner->name();
    inner_path = inner->path();
    const MPI_Comm inner_comm = inner->collective_comm();
    if (inner_comm != MPI_COMM_NULL) {
      detail::mpi_check(MPI_Comm_dup(inner_comm, &comm), "MPI_Comm_dup");
      detail::mpi_check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
                        "MPI_Comm_set_errhandler");
      rank = detail::comm_rank(comm);
    } else {
      int initialized = 0;
      MPI_Initialized(&initialized);
      if (initialized) rank = detail::comm_rank(MPI_COMM_WORLD);  // only to name it in messages
    }
  }
};

AsyncStore::AsyncStore(std::unique_ptr<Store> inner, const AsyncConfig& config)
    : impl_(std::make_unique<Impl>()) {
  require(inner != nullptr, "async store: the inner store is null");
  Impl& s = *impl_;
  s.config = config;
  s.uncaught = std::uncaught_exceptions();
  require(config.max_staged_bytes > 0, "async store: max_staged_bytes must be > 0, got " +
                                           std::to_string(config.max_staged_bytes));
  s.choose_mode(inner->collective_comm() != MPI_COMM_NULL);
  s.inner = std::move(inner);
  s.finish_setup();
  if (!s.synchronous) {
    auto owned = std::make_shared<std::unique_ptr<Store>>(std::move(s.inner));
    s.start([owned] { return std::move(*owned); });
  }
}

AsyncStore::AsyncStore(std::function<std::unique_ptr<Store>()> make_inner, bool collective,
                       const AsyncConfig& config)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.config = config;
  s.uncaught = std::uncaught_exceptions();
  require(config.max_staged_bytes > 0, "async store: max_staged_bytes must be > 0, got " +
                                           std::to_string(config.max_staged_bytes));
  s.choose_mode(collective);
  if (s.synchronous) {
    s.inner = make_inner();
    s.finish_setup();
  } else {
    s.start(std::move(make_inner));
    // The I/O thread is idle until the next op: reading the inner store here is safe.
    s.finish_setup();
  }
}

AsyncStore::~AsyncStore() {
  Impl& s = *impl_;
  const bool unwinding = std::uncaught_exceptions() > s.uncaught;
  if (s.synchronous) {
    if (s.inner && (unwinding || s.abandoned)) s.inner->abandon();
    s.inner.reset();
  } else {
    s.stop(unwinding || s.abandoned);
  }
  if (s.comm != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&s.comm);
  }
}

std::string AsyncStore::name() const {
  return impl_->name();
}

void AsyncStore::put(const Key& key, const CheckpointView& checkpoint) {
  Impl& s = *impl_;
  const auto t0 = Clock::now();
  const std::string name = s.name();
  detail::Layout layout = detail::layout_of(checkpoint);
  if (s.synchronous) {
    s.inner->put(key, checkpoint);
  } else {
    // No MPI on this thread: an allreduce here competes with the I/O thread's collectives for
    // MPI's progress engine and can take milliseconds. A duplicate key is found alike on every
    // rank; bad arguments of a collective store are left to its own agreement on the I/O
    // thread and come back as a kept error.
    s.throw_sticky_if_local();
    if (s.held.count(key)) detail::throw_duplicate(name, key, s.rank);
    if (!s.collective) detail::validate_put(name, key, checkpoint, s.rank);
    auto staged = std::make_shared<Staged>();
    staged->layout = layout;
    staged->buffer = s.acquire(static_cast<std::size_t>(staged->layout.doubles()), false);
    double* dst = staged->buffer.data.get();
    for (std::size_t f = 0; f < checkpoint.fields.size(); ++f) {
      const auto& field = checkpoint.fields[f];
      if (!field.data.empty()) std::memcpy(dst, field.data.data(), field.data.size_bytes());
      staged->fields.push_back(FieldView{staged->layout.fields[f].name,
                                         std::span<const double>(dst, field.data.size()),
                                         field.offset, field.global_size});
      dst += field.data.size();
    }
    for (std::size_t i = 0; i < checkpoint.scalars.size(); ++i) {
      staged->scalars.push_back(
          Scalar{staged->layout.scalar_names[i], checkpoint.scalars[i].value});
    }
    Op op;
    op.type = Op::Type::Put;
    op.key = key;
    op.staged = std::move(staged);
    s.enqueue(std::move(op));
  }
  s.front.writes += 1;
  s.front.bytes_written += layout.doubles() * static_cast<std::int64_t>(sizeof(double));
  s.held[key] = std::move(layout);
  s.front.live = static_cast<std::int64_t>(s.held.size());
  s.front.peak_live = std::max(s.front.peak_live, s.front.live);
  std::lock_guard lock(s.mutex);
  s.stats.put_seconds += seconds_since(t0);
}

void AsyncStore::get(const Key& key, const CheckpointSpan& out) {
  Impl& s = *impl_;
  const std::string name = s.name();
  const auto counted = [&](std::int64_t doubles) {
    s.front.reads += 1;
    s.front.bytes_read += doubles * static_cast<std::int64_t>(sizeof(double));
  };
  if (s.synchronous) {
    s.inner->get(key, out);
    counted(s.held.count(key) ? s.held[key].doubles() : 0);
    return;
  }
  const auto pit = s.prefetched.find(key);
  if (pit != s.prefetched.end()) {
    const std::shared_ptr<Prefetch> p = pit->second;
    s.settle(capture([&] {
      s.throw_sticky();
      detail::validate_get(name, key, p->layout, out, s.rank);
    }));
    s.prefetched.erase(pit);
    std::unique_lock lock(s.mutex);
    const auto give_back = [&] { s.release(std::move(p->buffer), true); };
    try {
      s.wait(lock, p->done);
    } catch (...) {
      give_back();
      throw;
    }
    const double* src = p->buffer.data.get();
    for (const auto& f : out.fields) {
      if (!f.data.empty()) std::memcpy(f.data.data(), src, f.data.size_bytes());
      src += f.data.size();
    }
    for (std::size_t i = 0; i < p->scalars.size(); ++i) {
      p->layout.scalar_values[i] = p->scalars[i].value;  // as read back
    }
    detail::fill_scalars(p->layout, out);
    give_back();
    s.stats.prefetch_hits += 1;
    lock.unlock();
    counted(p->layout.doubles());
    return;
  }
  s.throw_sticky_if_local();
  const auto hit = s.held.find(key);
  if (hit == s.held.end()) detail::throw_missing(name, "get", key, s.rank);
  Op op;
  op.type = Op::Type::Get;
  op.key = key;
  op.out = &out;
  op.done = std::make_shared<Done>();
  auto done = op.done;
  s.enqueue(std::move(op));
  s.wait(*done);
  counted(hit->second.doubles());
}

void AsyncStore::prefetch(const Key& key) {
  Impl& s = *impl_;
  if (s.synchronous) {
    std::lock_guard lock(s.mutex);
    s.stats.prefetch_skipped += 1;
    return;
  }
  s.throw_sticky_if_local();
  const auto hit = s.held.find(key);
  if (hit == s.held.end()) detail::throw_missing(s.name(), "prefetch", key, s.rank);
  if (s.prefetched.count(key)) return;
  const detail::Layout& layout = hit->second;
  const auto bytes = layout.doubles() * static_cast<std::int64_t>(sizeof(double));
  {
    // Decided on what every rank shares (the calls made so far), never on timing.
    std::lock_guard lock(s.mutex);
    if (s.prefetch_in_use + bytes > s.config.max_staged_bytes) {
      s.stats.prefetch_skipped += 1;
      return;
    }
  }
  auto p = std::make_shared<Prefetch>();
  p->layout = layout;
  p->buffer = s.acquire(static_cast<std::size_t>(layout.doubles()), true);
  double* dst = p->buffer.data.get();
  for (const auto& f : p->layout.fields) {
    p->fields.push_back(FieldSpan{f.name, std::span<double>(dst, static_cast<std::size_t>(f.size)),
                                  f.offset, f.global_size});
    dst += f.size;
  }
  for (const auto& n : p->layout.scalar_names) p->scalars.push_back(Scalar{n, 0.0});
  s.prefetched[key] = p;
  Op op;
  op.type = Op::Type::Prefetch;
  op.key = key;
  op.prefetch = std::move(p);
  s.enqueue(std::move(op));
}

void AsyncStore::erase(const Key& key) {
  Impl& s = *impl_;
  if (s.synchronous) {
    s.inner->erase(key);
  } else {
    s.throw_sticky_if_local();
    if (!s.held.count(key)) detail::throw_missing(s.name(), "erase", key, s.rank);
    const auto pit = s.prefetched.find(key);
    if (pit != s.prefetched.end()) {
      const std::shared_ptr<Prefetch> p = pit->second;
      s.prefetched.erase(pit);
      std::unique_lock lock(s.mutex);
      const auto t0 = Clock::now();
      s.caller_ready.wait(lock, [&] { return p->done.finished; });
      s.stats.wait_seconds += seconds_since(t0);
      s.release(std::move(p->buffer), true);
    }
    Op op;
    op.type = Op::Type::Erase;
    op.key = key;
    s.enqueue(std::move(op));
  }
  s.held.erase(key);
  s.front.live = static_cast<std::int64_t>(s.held.size());
}

bool AsyncStore::contains(const Key& key) const {
  return impl_->held.count(key) != 0;
}

StoreStats AsyncStore::stats() const {
  Impl& s = *impl_;
  StoreStats out = s.front;
  if (s.synchronous) {
    const StoreStats inner = s.inner->stats();
    out.write_seconds = inner.write_seconds;
    out.read_seconds = inner.read_seconds;
  } else {
    std::lock_guard lock(s.mutex);
    out.write_seconds = s.inner_stats.write_seconds;
    out.read_seconds = s.inner_stats.read_seconds;
  }
  return out;
}

std::string AsyncStore::path() const {
  return impl_->inner_path;
}

MPI_Comm AsyncStore::collective_comm() const {
  return impl_->comm;
}

void AsyncStore::flush() {
  Impl& s = *impl_;
  if (s.synchronous) {
    s.inner->flush();
    return;
  }
  Op op;
  op.type = Op::Type::Flush;
  op.done = std::make_shared<Done>();
  auto done = op.done;
  s.enqueue(std::move(op));
  s.wait(*done);
}

void AsyncStore::drain() {
  call_inner([](Store&) {});  // skipped with the kept error, if there is one
}

void AsyncStore::abandon() noexcept {
  impl_->abandoned = true;
}

AsyncStats AsyncStore::async_stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

void AsyncStore::call_inner(const std::function<void(Store&)>& fn) {
  Impl& s = *impl_;
  if (s.synchronous) {
    fn(*s.inner);
    return;
  }
  Op op;
  op.type = Op::Type::Call;
  op.call = &fn;
  op.done = std::make_shared<Done>();
  auto done = op.done;
  s.enqueue(std::move(op));
  s.wait(*done);
}

std::unique_ptr<AsyncStore> make_async_store(std::string_view inner, const StoreConfig& config,
                                             const AsyncConfig& async) {
  const detail::StoreInfo& info = detail::find_store(inner);
  StoreConfig copy = config;
  auto factory = info.factory;
  return std::make_unique<AsyncStore>([factory, copy] { return factory(copy); }, info.collective,
                                      async);
}

}  // namespace rwd::storage
