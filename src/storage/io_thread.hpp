#pragma once
// The process's one I/O thread and the jobs it runs: raw bytes moved with POSIX pwrite, pread
// and fsync on file descriptors, hashed as they go. It never calls MPI or HDF5, so it works at
// any MPI thread level (MPI_THREAD_FUNNELED included) and never races the caller inside HDF5,
// whose Debian build is not thread-safe. Every store of the process shares it.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rewind/storage/codec.hpp"
#include "rewind/timing.hpp"

namespace rwd::storage::detail {

/// One contiguous piece of a job: `bytes` bytes at byte `file_offset` of the job's file, taken
/// from `memory` (Write; never modified) or put there (Read).
struct Segment {
  std::int64_t file_offset = 0;
  std::byte* memory = nullptr;
  std::size_t bytes = 0;
};

/// What moves: every segment written (pwrite, checksummed first), every segment read (pread,
/// checksummed after), or the file synced (fsync).
///
/// Compressed jobs (coded_job.cpp): a Write with `codec` compresses each segment's values into
/// a block (rewind/storage/codec.hpp) and writes the block at the segment's offset when it is
/// smaller than the values, the values otherwise, and records in `stored` what each segment
/// became (the block's bytes; 0: the values as they are). A Read with `stored` reads each
/// segment as recorded there and decompresses the blocks into the segment's memory. The
/// checksums are of the values in both (a compressed block's header holds a checksum of its
/// bytes, which decoding checks first). Both run on the job's thread, so the compression of a
/// checkpoint written behind, and the decompression of one read ahead, happen on the I/O thread.
///
/// A Compute job runs `compute` and moves no bytes: the RAM store's compression of a checkpoint
/// behind the caller and decompression ahead of it (ram_store.cpp). `compute` must not throw.
struct IoJob {
  enum class Kind { Write, Read, Sync, Compute };
  Kind kind = Kind::Write;
  int fd = -1;
  std::vector<Segment> segments;
  /// Owns what `segments` point into (a staging buffer) for as long as the job needs it; the
  /// runner drops its reference before it reports the job done.
  std::shared_ptr<void> keep_alive;
  /// Write: compress with this codec ("none": no compression, `stored` untouched).
  CodecSpec codec;
  /// Per segment, the bytes of its compressed block in the file (0: raw values). Written by a
  /// compressing Write, read by a Read. Shared by the jobs of one checkpoint, which run in
  /// order on one thread (a Read is queued after the Write of the same checkpoint).
  std::shared_ptr<std::vector<std::int64_t>> stored;
  /// Write with `codec`: each segment's grid (FieldView::grid; none: a plain array).
  std::vector<Grid> grids = {};
  /// Compute: the work (it owns, or shares, everything it touches).
  std::function<void()> compute = {};
};

/// What a job did.
struct JobResult {
  std::vector<std::uint64_t> checksums;  ///< XXH3-64 of each segment (Write, Read)
  int error = 0;                         ///< errno of the first failure, 0 if none
  std::string failed_call;               ///< "pwrite", "pread", "fsync"; empty if none failed
  std::size_t failed_segment = 0;
  bool cancelled = false;      ///< dropped from the queue before it ran
  double codec_seconds = 0.0;  ///< compressing (Write) or decompressing (Read), inside seconds()
  std::string decode_error;    ///< a block read back that did not decode (Read)
  SteadyClock::time_point started{}, finished{};
  double seconds() const { return std::chrono::duration<double>(finished - started).count(); }
};

/// Runs `job` on the calling thread: the synchronous mode, and the I/O thread's own runner.
/// SIGXFSZ is blocked around each pwrite (and a pending one consumed), so a write beyond
/// RLIMIT_FSIZE fails with EFBIG instead of killing the process.
JobResult run_job(const IoJob& job);
/// run_job() without compression: the bytes of every segment as they are.
JobResult run_raw_job(const IoJob& job);
/// run_job() of a compressing Write or a Read of compressed blocks (coded_job.cpp).
JobResult run_coded_job(const IoJob& job);

/// A submitted job: done() turns true once its result may be read.
class Ticket {
 public:
  bool done() const { return done_.load(std::memory_order_acquire); }
  /// Valid once done().
  const JobResult& result() const { return result_; }

 private:
  friend class IoThread;
  std::atomic<bool> done_{false};  // set after result_ is written
  JobResult result_;
};

/// The process's I/O thread: one FIFO queue, so the jobs of one store run in the order they
/// were submitted (a read queued after a write of the same bytes sees them).
class IoThread {
 public:
  /// The running thread, started if none runs. The thread stops (and is joined) when the last
  /// holder lets go, so no thread is left once every store is gone, whatever order statics,
  /// main's locals and MPI_Finalize go in. Thread-safe.
  static std::shared_ptr<IoThread> acquire();

  ~IoThread();
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  /// Queues `job` on behalf of `owner` (a tag for cancel()).
  std::shared_ptr<Ticket> submit(IoJob job, const void* owner);
  /// Blocks until `ticket` is done.
  void wait(const Ticket& ticket);
  /// Drops the queued jobs of `owner` (their tickets become done and cancelled) and waits for
  /// its running job, if any. Afterwards no job of `owner` touches its descriptor or buffers.
  void cancel(const void* owner);

  std::thread::id id() const { return thread_.get_id(); }

  /// Number of I/O threads running in the process now (0 or 1).
  static int running();

  /// Test hooks, process-wide. paused: jobs wait in the queue until unpaused. delay: each job
  /// sleeps this long before moving its bytes, inside its busy time, like a slow disk.
  static void set_paused(bool paused);
  static void set_delay(std::chrono::microseconds delay);
  /// The next `jobs` write jobs of this process, on whichever thread runs them, fail with
  /// `error` before writing anything, as from a disk that refuses them (0 jobs: none).
  static void set_write_failure(int error, int jobs);
  /// Jobs finished (run or cancelled) since the process started.
  static std::int64_t jobs_finished();

 private:
  struct Queued {
    IoJob job;
    const void* owner = nullptr;
    std::shared_ptr<Ticket> ticket;
  };

  IoThread();
  void loop();
  void finish(Queued& queued, JobResult result);

  mutable std::mutex mutex_;
  std::condition_variable work_;  // for the thread: a job, stop, or unpause
  std::condition_variable done_;  // for waiters: a job finished
  std::deque<Queued> queue_;
  const void* running_owner_ = nullptr;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace rwd::storage::detail
