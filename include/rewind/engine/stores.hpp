#pragma once
/// @file
/// The checkpoint stores several recordings on one communicator share: one RAM store and one
/// parallel HDF5 file, and one budget over everything they hold.
/// Words (checkpoint, recording, run, segment, slot, row, tape, ...): docs/runtime.md#glossary.

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rewind/engine/stats.hpp"
#include "rewind/schedule/schedule.hpp"
#include "rewind/storage/store.hpp"

namespace rwd::engine {

/// What the stores are and how much they may hold over every recording at once.
struct StoresConfig {
  /// Communicator, directory, keep_files, label, async_io; `codec` compresses the RAM
  /// checkpoints (rewind/storage/codec.hpp) and, when lossless, the disk ones (compress_disk). A
  /// lossy codec (zfp) compresses restart states only, within its tolerance; pullback data and
  /// final states keep their bits (zstd) unless lossy_pullbacks is set. Gradients are then no
  /// longer store-all's bits: the replay check reports how far states recomputed from lossy
  /// restores drifted instead of stopping the run (RunStats::verify_lossy).
  storage::StoreConfig store;
  /// With a lossy codec: compress pullback data lossily too (more checkpoints in the budget,
  /// larger gradient error; docs/runtime.md gives measured errors).
  bool lossy_pullbacks = false;
  /// With a lossless codec: compress disk checkpoints too, on the I/O thread where they are
  /// written behind and read ahead (fewer bytes moved; the file keeps room for the values).
  bool compress_disk = true;
  std::string ram_store = "ram";             ///< a registered store name
  std::string disk_store = "hdf5";           ///< a registered store name
  std::int64_t ram = schedule::kUnlimited;   ///< RAM checkpoints held at once
  double ram_bytes = 0.0;                    ///< > 0: RAM bytes held at once (this rank)
  std::int64_t disk = schedule::kUnlimited;  ///< disk checkpoints held at once
  /// Make store.directory (and its parents) if it is missing when the disk store is first
  /// opened. The PETSc front end sets it: it makes -ts_trajectory_dirname and removes it, empty,
  /// when a run ends, which may be while another run in the same directory has not written yet.
  /// Otherwise a missing directory is the store's error.
  bool make_directory = false;
};

/// A share of the capacity, claimed by one recording.
struct Claim {
  std::int64_t ram = 0;    ///< RAM checkpoints
  double ram_bytes = 0.0;  ///< RAM bytes on the rank where they are most
  std::int64_t disk = 0;   ///< disk checkpoints, or kUnlimited
};

/// One RAM store, one disk store (opened when a recording first needs it) and the capacity
/// over both, for every recording made with them. Recordings hold a shared_ptr, so the stores
/// outlive the last recording that uses them.
///
/// Collective calls are marked; the others are rank-local. Every rank must create and use
/// recordings on the same Stores in the same order.
class Stores {
 public:
  /// Not collective: nothing is opened yet. Throws Error(InvalidArgument) for an unknown store
  /// name or a negative capacity.
  explicit Stores(StoresConfig config);
  /// Destroys the stores as their own destructors do: a disk store not closed is closed
  /// collectively, except while the stack unwinds, when every step is rank-local (a rank
  /// unwinding from an exception does not wait for ranks that are not) and its file is removed.
  ~Stores();
  Stores(const Stores&) = delete;
  Stores& operator=(const Stores&) = delete;

  const StoresConfig& config() const { return config_; }
  MPI_Comm comm() const { return config_.store.comm; }

  storage::Store& ram() { return *ram_; }
  /// Collective on the communicator the first time (it creates the file).
  storage::Store& disk();
  /// The disk store if it is open, else null.
  storage::Store* disk_if_open() { return disk_.get(); }

  /// A new recording id for checkpoint keys (storage::Key::recording: 1, 2, ...).
  std::int64_t next_recording_id() { return ++last_recording_; }

  /// Claims `claim` for recording `recording` (replacing its earlier claim). Throws
  /// Error(InvalidArgument) naming the level when the claims of every recording would exceed the
  /// capacity; the earlier
  /// claim then stands. Rank-local, but decided on values every rank shares.
  void claim(std::int64_t recording, const Claim& claim);
  /// Whether claim() would grant `claim` to recording `recording` now. Rank-local.
  bool fits(std::int64_t recording, const Claim& claim) const;
  /// Whether `claim` would fit with no other recording holding anything. Rank-local.
  bool fits_alone(const Claim& claim) const { return overflow(Claim{}, claim).empty(); }
  /// What claim() would grant recording `recording` at most now: the capacity less every other
  /// recording's claim
  /// (kUnlimited for an unlimited level, 0 bytes for no byte limit). Rank-local.
  Claim available(std::int64_t recording) const;
  /// Gives back recording `recording`'s claim.
  void release(std::int64_t recording) noexcept;
  /// The sum of every recording's claim.
  Claim claimed() const;

  /// Disk checkpoints to erase at the next collective point (recordings destroyed outside one
  /// call collect()). Rank-local.
  void discard(const storage::Key& key);
  /// Collective: erases what was discarded.
  void collect();

  /// Collective: erases what was discarded and closes the disk store, keeping its file with
  /// keep_files. A later disk() opens a new file.
  void close();

  /// Marks the stores failed: a disk file is then never kept. Rank-local.
  void abandon() noexcept;

  /// Which recording's working state a stepper's buffers hold. A recording takes `stepper` over
  /// (it is made on it, or reversed on it); the recording that held it before and had not
  /// parked is told through its `evicted` callback, so it never reverses from buffers another
  /// run overwrote. Rank-local.
  void occupy(const void* stepper, std::int64_t recording, std::function<void()> evicted);
  /// Recording `recording` no longer needs `stepper`'s buffers (it parked, finished or was
  /// destroyed).
  void vacate(const void* stepper, std::int64_t recording) noexcept;

  /// Seconds of disk I/O that ran while the caller computed, since the stores were made (every
  /// recording's). Rank-local.
  double io_overlap_seconds() const;
  /// The disk stores' prefetch counts so far (those closed before included).
  PrefetchStats prefetch_stats() const;
  /// What the disk stores' codec did so far (those closed before included); codec "none" when
  /// disk checkpoints are not compressed (disk_codec()).
  CodecStats disk_codec_stats() const;
  /// What the RAM store's codec did so far (every recording's); codec "none" without one.
  CodecStats ram_codec_stats() const;
  /// The codec of disk checkpoints: store.codec when it is lossless and compress_disk is set,
  /// otherwise none (a lossy codec compresses RAM checkpoints only: disk restores stay exact).
  storage::CodecSpec disk_codec() const;

 private:
  std::string overflow(const Claim& others, const Claim& claim) const;

  StoresConfig config_;
  std::unique_ptr<storage::Store> ram_;
  std::unique_ptr<storage::Store> disk_;
  std::int64_t last_recording_ = 0;
  std::map<std::int64_t, Claim> claims_;
  struct Occupant {
    std::int64_t recording = 0;
    std::function<void()> evicted;
  };
  std::map<const void*, Occupant> occupants_;
  std::vector<storage::Key> discarded_;
  double closed_overlap_ = 0.0;    // overlap of disk stores closed before
  PrefetchStats closed_prefetch_;  // prefetch counts of disk stores closed before
  CodecStats closed_codec_;        // codec counts of disk stores closed before
};

}  // namespace rwd::engine
