#include "io_thread.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <exception>
#include <optional>

#include "checksum.hpp"
#include "store_file.hpp"

namespace rwd::storage::detail {
namespace {

// Hashing a chunk right before writing it (or right after reading it) finds it in cache for the
// second pass. Measured on the development VM (1 MiB L2 per core, 32 MiB L3), 64 MiB into the
// page cache with rwd64: pwrite alone 6.2 GiB/s, checksum then pwrite 4.2, chunks of 256 KiB 4.1
// (the per-call cost shows), 1 MiB 4.5, 2-4 MiB 4.6. Reads, with XXH3's 80 GB/s
// (rewind-bench-store, 1 rank, 64 MiB checkpoints, HDF5 / pread): 2 MiB chunks 0.77, 256 KiB
// 0.84-0.95 (the chunk stays in L2 for the hash), 128 and 64 KiB no better.
constexpr std::size_t kWriteChunk = std::size_t{2} << 20;
constexpr std::size_t kReadChunk = std::size_t{256} << 10;

std::atomic<int> threads_running{0};
std::atomic<bool> paused_hook{false};
std::atomic<std::int64_t> delay_hook_us{0};
std::atomic<std::int64_t> finished_jobs{0};
std::atomic<int> failing_writes{0};
std::atomic<int> failing_error{0};

// The test hook of set_write_failure(): whether this write job is one that must fail.
bool take_write_failure() {
  int left = failing_writes.load();
  while (left > 0) {
    if (failing_writes.compare_exchange_weak(left, left - 1)) return true;
  }
  return false;
}

// The process's thread, if one runs. Leaked on purpose: stores destroyed during static
// destruction, after main returned, still find it intact.
struct Registry {
  std::mutex mutex;
  std::weak_ptr<IoThread> current;
};

Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

// Moves all of [memory, memory + bytes) at `offset`, retrying after EINTR and short transfers.
// Returns 0 or the errno of the failure (EIO for a read that meets the end of the file).
template <class Call>
int move_all(Call call, std::byte* memory, std::size_t bytes, std::int64_t offset) {
  while (bytes > 0) {
    const ssize_t n = call(memory, bytes, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // pread at the end of the file: the block is not all there
    memory += n;
    bytes -= static_cast<std::size_t>(n);
    offset += n;
  }
  return 0;
}

}  // namespace

JobResult run_job(const IoJob& job) {
  if (job.kind == IoJob::Kind::Compute) {
    JobResult r;
    r.started = SteadyClock::now();
    job.compute();
    r.finished = SteadyClock::now();
    return r;
  }
  const bool coded =
      job.kind == IoJob::Kind::Write ? job.codec.name != "none" : job.stored != nullptr;
  if (!coded || job.kind == IoJob::Kind::Sync) return run_raw_job(job);
  // A job must not throw (the I/O thread has no caller to throw to): codec buffers that cannot
  // be had fail the job, as a failed pwrite or pread does.
  try {
    return run_coded_job(job);
  } catch (const std::exception&) {
    JobResult r;
    r.started = r.finished = SteadyClock::now();
    r.error = ENOMEM;
    r.failed_call = job.kind == IoJob::Kind::Write ? "compressing" : "decompressing";
    return r;
  }
}

JobResult run_raw_job(const IoJob& job) {
  JobResult r;
  r.started = SteadyClock::now();
  const auto fail = [&r](int error, const char* call, std::size_t segment) {
    r.error = error;
    r.failed_call = call;
    r.failed_segment = segment;
  };
  if (job.kind == IoJob::Kind::Sync) {
    if (::fsync(job.fd) != 0) fail(errno, "fsync", 0);
  } else {
    const bool writing = job.kind == IoJob::Kind::Write;
    std::optional<BlockFileSizeSignal> blocked;
    if (writing) blocked.emplace();
    if (writing && !job.segments.empty() && take_write_failure()) {
      fail(failing_error.load(), "pwrite", 0);
    }
    const int fd = job.fd;
    const auto pwrite_call = [fd](std::byte* p, std::size_t n, off_t at) {
      return ::pwrite(fd, p, n, at);
    };
    const auto pread_call = [fd](std::byte* p, std::size_t n, off_t at) {
      return ::pread(fd, p, n, at);
    };
    for (std::size_t s = 0; s < job.segments.size() && r.error == 0; ++s) {
      const Segment& seg = job.segments[s];
      Checksum sum;
      const std::size_t step = writing ? kWriteChunk : kReadChunk;
      for (std::size_t done = 0; done < seg.bytes && r.error == 0; done += step) {
        std::byte* chunk = seg.memory + done;
        const std::size_t n = std::min(step, seg.bytes - done);
        const std::int64_t at = seg.file_offset + static_cast<std::int64_t>(done);
        if (writing) {
          sum.update({chunk, n});
          if (const int e = move_all(pwrite_call, chunk, n, at)) fail(e, "pwrite", s);
        } else {
          if (const int e = move_all(pread_call, chunk, n, at)) fail(e, "pread", s);
          sum.update({chunk, n});
        }
      }
      r.checksums.push_back(sum.value());
    }
  }
  r.finished = SteadyClock::now();
  return r;
}

std::shared_ptr<IoThread> IoThread::acquire() {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  if (auto running = reg.current.lock()) return running;
  std::shared_ptr<IoThread> fresh(new IoThread);
  reg.current = fresh;
  return fresh;
}

IoThread::IoThread() {
  thread_ = std::thread([this] { loop(); });
  threads_running.fetch_add(1);
}

IoThread::~IoThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
  threads_running.fetch_sub(1);
}

void IoThread::loop() {
  // Signals meant for the process go to the application's threads, never to this one.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    Queued queued;
    {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [this] { return stop_ || (!queue_.empty() && !paused_hook.load()); });
      if (queue_.empty()) break;  // stop_, and nothing left (stores drain or cancel first)
      queued = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      running_owner_ = queued.owner;
    }
    const auto started = SteadyClock::now();
    if (const auto us = delay_hook_us.load(); us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
    JobResult result = run_job(queued.job);
    result.started = started;
    queued.job.keep_alive.reset();  // before done: the owner may reuse what it pointed to
    std::lock_guard lock(mutex_);
    finish(queued, std::move(result));
    busy_ = false;
    running_owner_ = nullptr;
  }
}

void IoThread::finish(Queued& queued, JobResult result) {
  queued.ticket->result_ = std::move(result);
  queued.ticket->done_.store(true, std::memory_order_release);
  finished_jobs.fetch_add(1);
  done_.notify_all();
}

std::shared_ptr<Ticket> IoThread::submit(IoJob job, const void* owner) {
  auto ticket = std::make_shared<Ticket>();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(Queued{std::move(job), owner, ticket});
  }
  work_.notify_one();
  return ticket;
}

void IoThread::wait(const Ticket& ticket) {
  if (ticket.done()) return;
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&ticket] { return ticket.done(); });
}

void IoThread::cancel(const void* owner) {
  std::vector<Queued> dropped;
  {
    std::unique_lock lock(mutex_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->owner == owner) {
        dropped.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& q : dropped) {
      JobResult r;
      r.cancelled = true;
      finish(q, std::move(r));
    }
    done_.wait(lock, [&] { return !(busy_ && running_owner_ == owner); });
  }
  dropped.clear();  // staging buffers go back to their pools outside the lock
}

int IoThread::running() {
  return threads_running.load();
}

void IoThread::set_paused(bool paused) {
  std::shared_ptr<IoThread> current;
  {
    std::lock_guard lock(registry().mutex);
    current = registry().current.lock();
  }
  if (!current) {
    paused_hook.store(paused);
    return;
  }
  {
    std::lock_guard lock(current->mutex_);
    paused_hook.store(paused);
  }
  current->work_.notify_all();
}

void IoThread::set_delay(std::chrono::microseconds delay) {
  delay_hook_us.store(delay.count());
}

void IoThread::set_write_failure(int error, int jobs) {
  failing_error.store(error);
  failing_writes.store(jobs);
}

std::int64_t IoThread::jobs_finished() {
  return finished_jobs.load();
}

}  // namespace rwd::storage::detail
