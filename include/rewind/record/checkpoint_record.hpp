#pragma once
/// @file
/// The one record of a run's checkpoints: which checkpoint the schedule placed at which level,
/// which store really holds it, what it holds, and the traffic and occupancy per store.
/// Rank-local, not collective, no MPI.
/// Words (checkpoint, recording, run, segment, slot, row, tape, ...): docs/runtime.md#glossary.

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "rewind/schedule/action.hpp"
#include "rewind/storage/key.hpp"

namespace rwd::record {

using schedule::Level;
using schedule::Step;
using storage::Key;

/// Checkpoint traffic and occupancy at one store level (this rank).
struct LevelTraffic {
  std::int64_t writes = 0;
  std::int64_t reads = 0;
  std::int64_t bytes_written = 0;
  std::int64_t bytes_read = 0;
  std::int64_t live = 0;        ///< checkpoints held now
  std::int64_t peak = 0;        ///< most checkpoints held at once
  std::int64_t live_bytes = 0;  ///< bytes held now
  std::int64_t peak_bytes = 0;  ///< most bytes held at once
};

/// Where a run's checkpoints are. The schedule names a checkpoint by its key and the level it
/// placed it at (RAM or DISK; WORK for what a parked run took out of the stepper's buffers);
/// the record says which store holds it (normally that level; a parked run's RAM checkpoints
/// may have been moved to disk), its size and, for restart data, which state variables it
/// holds (it is read back with that set).
class CheckpointRecord {
 public:
  struct Entry {
    Level store = Level::None;           ///< RAM or DISK: where the data is
    std::int64_t bytes = 0;              ///< this rank's bytes
    std::vector<std::size_t> variables;  ///< restart data: the state variables it holds
    /// Reading it back gives the first sweep's bits: false where a lossy codec compressed it,
    /// where it was stored from a state recomputed from such a checkpoint or copied from one,
    /// or where its origin is not known.
    bool exact = false;
  };

  /// The schedule placed `key` at `level`; the data went to entry.store. Counts a write.
  /// Throws Error(Internal) if the key is already recorded at that level.
  void stored(const Key& key, Level level, Entry entry);
  /// The schedule freed `key` at `level`; returns its entry (the caller erases the data).
  Entry freed(const Key& key, Level level);
  /// The entry of `key` at `level`, or null.
  const Entry* find(const Key& key, Level level) const;
  /// The cheapest level the schedule placed `key` at (RAM before DISK), if any.
  std::optional<Level> cheapest(const Key& key) const;
  /// Counts a read of `entry`.
  void read(const Entry& entry);
  /// The data of `key` at `level` now lives in store `store` (a spill); counts a write there.
  void relocate(const Key& key, Level level, Level store);

  /// Traffic and occupancy of one store (RAM or DISK).
  const LevelTraffic& traffic(Level store) const;
  /// Every (key, level) still recorded.
  std::vector<std::pair<Key, Level>> held() const;
  bool empty() const { return entries_.empty(); }

  /// The step whose pullback data sits in the stepper's own buffers (level WORK), if any.
  std::optional<Step> work_pullback() const { return work_pullback_; }
  void set_work_pullback(std::optional<Step> step) { work_pullback_ = step; }

 private:
  LevelTraffic& at(Level store);
  void add(Level store, std::int64_t bytes);
  void remove(Level store, std::int64_t bytes);

  std::map<std::pair<Key, Level>, Entry> entries_;
  LevelTraffic ram_, disk_;
  std::optional<Step> work_pullback_;
};

}  // namespace rwd::record
