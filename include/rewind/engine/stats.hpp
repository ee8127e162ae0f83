#pragma once
/// @file
/// What a recording did and where its time went.

#include <cstdint>
#include <string>

#include "rewind/record/checkpoint_record.hpp"

namespace rwd::engine {

using record::LevelTraffic;

/// Disk reads started ahead of the reverse sweep (prefetches), over a run's span.
struct PrefetchStats {
  std::int64_t hits = 0;     ///< disk reads served from a prefetch
  std::int64_t late = 0;     ///< of those, the read had not finished when it was needed
  std::int64_t skipped = 0;  ///< prefetches not started because the staging pool was full
};

/// Statistics of one recording, as seen by this rank. Times are wall-clock seconds.
/// What a store's codec did during a run (StoreConfig::codec; this rank's store, so recordings
/// that share it at the same time count each other's checkpoints too).
struct CodecStats {
  std::string codec = "none";
  std::int64_t stored_bytes = 0;        ///< compressed blocks written, headers included
  std::int64_t uncompressed_bytes = 0;  ///< what was given to the store before compression
  double compress_seconds = 0.0;        ///< on whichever thread did it
  double decompress_seconds = 0.0;      ///< likewise, checksums included
  /// Of compress_seconds and decompress_seconds, the time on the I/O thread (disk checkpoints
  /// written behind and read ahead; RAM checkpoints compressed behind and decoded ahead); the
  /// rest was on the caller's thread.
  double io_thread_seconds = 0.0;
  /// What the plan counted on (RecordingConfig::compress_ratio): 1 when it planned as if
  /// uncompressed; `ratio_source` says where a larger one came from.
  double planned_ratio = 1.0;
  std::string ratio_source = {};
  double budget_bytes = 0.0;           ///< the RAM bytes the compressed checkpoints could take
  std::int64_t peak_stored_bytes = 0;  ///< most of them this recording held at once (this rank)
  std::int64_t moved_to_disk = 0;      ///< stored in RAM, over the budget: moved to disk
  /// Stored in RAM over the budget with no disk room to move them to: dropped, and recomputed
  /// from the latest state held before them where the schedule needed them, in `dropped_steps`
  /// forward steps (counted in RunStats::forward_steps too).
  std::int64_t dropped = 0, dropped_steps = 0;
  /// When the first sweep dropped checkpoints, its reverse was planned again from x_0 (0 and
  /// empty otherwise): the ratio its RAM checkpoints reached on the rank where they compressed
  /// worst, the ratio the new plan counts on (that one with kCompressMargin; 1, as uncompressed,
  /// below kCompressMinRatio), its schedule and its forward steps (the first sweep's excluded).
  /// The new plan keeps to the first one's compressed budget (budget_bytes).
  double reached_ratio = 0.0, replanned_ratio = 0.0;
  std::string replanned_schedule = {};
  std::int64_t replanned_forward_steps = 0;
  /// RAM restart checkpoints the budget holds as planned (the first plan's), and without
  /// compression.
  std::int64_t restart_slots = 0, uncompressed_restart_slots = 0;
  /// Forward steps the plan takes, and without compression (-1: the step count was not known).
  std::int64_t forward_steps = -1, uncompressed_forward_steps = -1;
  /// uncompressed / stored, 1 when nothing was written.
  double ratio() const {
    return stored_bytes > 0 ? static_cast<double>(uncompressed_bytes) / stored_bytes : 1.0;
  }
  /// The counts as JSON members, no braces: codec, stored_bytes, uncompressed_bytes, ratio,
  /// compress_seconds, decompress_seconds, io_thread_seconds.
  std::string counts_json() const;
  /// Adds `s`'s counts (bytes and seconds) to these.
  void add_counts(const CodecStats& s);
  /// This codec with the counts since `before` (an earlier value of the same store's counts).
  CodecStats counts_since(const CodecStats& before) const;
};

struct RunStats {
  std::string schedule;
  std::int64_t steps = 0;          ///< n (a resumed run: the first-sweep steps it took)
  std::int64_t forward_steps = 0;  ///< every forward step evaluated
  std::int64_t adjoint_steps = 0;
  /// Adjoint steps whose pullback data was composed from two restart states (`endpoints`:
  /// Stepper::pullback_from_states()), neither stored nor recomputed.
  std::int64_t composed = 0;
  LevelTraffic ram;   ///< RAM checkpoints: traffic, peak count and peak bytes (this rank)
  LevelTraffic disk;  ///< disk checkpoints, likewise
  double forward_seconds = 0.0;     ///< the first sweep's steps (Engine and Recording::record())
  double recompute_seconds = 0.0;   ///< forward steps after the first sweep
  double adjoint_seconds = 0.0;     ///< adjoint steps (Engine and Recording::reverse())
  double io_seconds = 0.0;          ///< time spent in store calls (waiting on them)
  double io_overlap_seconds = 0.0;  ///< disk I/O in flight while this run computed
  PrefetchStats prefetch;           ///< this run's disk reads started ahead
  double total_seconds = 0.0;       ///< from the start of the first sweep to the end of the reverse
  std::int64_t parks = 0;           ///< times the recording was parked
  double verify_seconds = 0.0;  ///< hashing states for the replay check (RecordingConfig::verify)
  /// Recomputed fields that differed from the first sweep within RecordingConfig::
  /// verify_tolerance, and the largest such difference (relative to the field's norm).
  std::int64_t verify_tolerated = 0;
  double verify_largest_tolerated = 0.0;
  /// A lossy codec compressed checkpoints (StoreConfig::codec): states recomputed from a lossy
  /// restore are not the first sweep's bits, and the check measures them instead of stopping
  /// the run: the recomputed fields that differed, and the largest difference (relative to the
  /// field's norm, as above). What descends from an exact restore is still checked bit for bit.
  bool verify_lossy = false;
  std::int64_t verify_drifted = 0;
  double verify_largest_drift = 0.0;
  std::int64_t rebuilt_steps = 0;     ///< steps recomputed to rebuild a working state the host lost
  std::int64_t rerecorded_steps = 0;  ///< steps run again after Recording::thin()
  /// A resumed run (EngineConfig::resume): the step it went on from, in the first sweep or the
  /// reverse sweep; -1 for a run that started at x_0.
  std::int64_t resumed_at = -1;
  bool resumed_in_reverse = false;  ///< it went on from a durable adjoint state
  CodecStats ram_codec;             ///< the RAM store's compression (StoreConfig::codec)
  /// The disk store's compression (StoresConfig::compress_disk): codec, bytes and times only.
  CodecStats disk_codec;

  std::int64_t recomputed() const { return forward_steps - steps; }
  /// Adds what another recording of the same run did (a run in segments): counts, traffic and
  /// times add up, peaks are the larger; the schedule stays the first one's.
  void add(const RunStats& other);
  /// Adds disk traffic that no recording made (a resumable run's durable states and adjoint
  /// states, docs/resume.md): counts and bytes add up, peaks are the larger, and `seconds` adds
  /// to io_seconds.
  void add_durable(const LevelTraffic& traffic, double seconds);

  /// A few human lines.
  std::string summary() const;
  /// One JSON object.
  std::string json() const;
};

}  // namespace rwd::engine
