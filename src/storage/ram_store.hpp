#pragma once
// RamStore ("ram"): checkpoints in this rank's memory. Private to storage: the layers above reach
// it through make_store("ram", ...) and Store (store.hpp).

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rewind/storage/store.hpp"

namespace rwd::storage {

/// Rank-local checkpoint store in RAM. Nothing is collective and no rank talks to another: each
/// rank keeps its own blocks. Each checkpoint occupies one slot, a buffer holding all its fields
/// back to back. StoreConfig::capacity slots of StoreConfig::slot_doubles doubles are allocated
/// and touched at construction (so the first write does not page-fault), reused after erase
/// (best fit), and more slots are added, or a slot enlarged, when a checkpoint does not fit.
/// Finding a free slot takes O(log n) in the number of free slots. put copies each field once
/// into the slot; get copies it once out. With a codec (StoreConfig::codec other than "none"),
/// put packs the fields into a scratch buffer and keeps the compressed block (codec.hpp) in a
/// buffer of its own size instead of a slot, and get decodes it back (its checksum checked
/// first); the stats count the blocks' bytes. Not thread-safe.
class RamStore final : public Store {
 public:
  /// Not collective. config.comm is only used to name the rank in error messages.
  explicit RamStore(const StoreConfig& config);
  ~RamStore() override;

  std::string name() const override { return "ram"; }
  void put(const Key& key, const CheckpointView& checkpoint) override;
  void get(const Key& key, const CheckpointSpan& out) override;
  void erase(const Key& key) override;
  bool contains(const Key& key) const override;
  StoreStats stats() const override { return stats_; }
  void reset_peaks() override {
    stats_.peak_live = stats_.live;
    stats_.peak_bytes = stats_.live_bytes;
  }

  /// Slots allocated so far (held or free).
  std::int64_t slots() const { return static_cast<std::int64_t>(slots_.size()); }
  /// Slots allocated and not holding a checkpoint.
  std::int64_t free_slots() const { return static_cast<std::int64_t>(free_.size()); }
  /// Bytes allocated for slots so far.
  std::int64_t allocated_bytes() const;
  /// Times a slot had to be allocated or enlarged after construction.
  std::int64_t grow_count() const { return grow_count_; }

  /// Test hook, process-wide: the next `blocks` compressed blocks this process's RAM stores
  /// make have one payload byte flipped after their checksum was taken, as memory that went bad
  /// would (0: none). Reading such a block back is Error(Corrupt).
  static void damage_next_blocks(int blocks);

 private:
  struct Slot {
    std::unique_ptr<double[]> data;
    std::size_t capacity = 0;
  };
  struct Entry;

  std::size_t take_slot(std::size_t doubles);
  static Slot allocate(std::size_t doubles, bool touch);

  int rank_ = -1;
  CodecSpec codec_;
  std::vector<double> scratch_;  // with a codec: a checkpoint's fields back to back
  std::vector<Slot> slots_;
  /// Unused slots, ordered by capacity (doubles) -> slot index: best fit is a lower_bound, the
  /// largest is the last.
  std::multimap<std::size_t, std::size_t> free_;
  std::map<Key, std::unique_ptr<Entry>> entries_;
  StoreStats stats_;
  std::int64_t grow_count_ = 0;
};

}  // namespace rwd::storage
