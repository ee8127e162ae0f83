#pragma once
// RamStore ("ram"): checkpoints in this rank's memory. Private to storage: the layers above reach
// it through make_store("ram", ...) and Store (store.hpp).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io_thread.hpp"
#include "rewind/storage/store.hpp"

namespace rwd::storage {

/// Rank-local checkpoint store in RAM. Nothing is collective and no rank talks to another: each
/// rank keeps its own blocks. Each checkpoint occupies one slot, a buffer holding all its fields
/// back to back. StoreConfig::capacity slots of StoreConfig::slot_doubles doubles are allocated
/// and touched at construction (so the first write does not page-fault), reused after erase
/// (best fit), and more slots are added, or a slot enlarged, when a checkpoint does not fit.
/// Finding a free slot takes O(log n) in the number of free slots. put copies each field once
/// into the slot; get copies it once out. With a codec (StoreConfig::codec other than "none"),
/// put packs the fields into a buffer of their own (the one copy the caller waits for: its
/// buffers are free once put returns) and keeps the compressed block (codec.hpp) in a buffer of
/// its own size instead of a slot, and get decodes it back (its checksum checked first); the
/// stats count the blocks' bytes.
///
/// Where the codec runs. A checkpoint of more than StoreConfig::inline_io_bytes, with
/// StoreConfig::async_io on, is compressed on the process's I/O thread (io_thread.hpp) while the
/// caller goes on; its packed values are kept until the block is made and harvested (by a later
/// call of this store: put, get, erase, stored_bytes, stats), then freed. A get meanwhile
/// copies the packed values (lossless codecs: they are the bits a decode gives) or waits for
/// the block (lossy: a get gives what the block decodes to, never the values before loss). At
/// most kInFlight checkpoints are compressed behind: a put waits for the oldest beyond that.
/// prefetch() decodes a compressed checkpoint on the I/O thread ahead of its get, at most
/// kAhead at a time. Smaller checkpoints, and every one with async_io off or when the calling
/// thread may run on one CPU only (a rank mpirun bound to a core: the I/O thread would take
/// turns with it on that core), are compressed and decoded on the caller's thread. The packed
/// values in flight and the blocks decoded ahead are memory beside the blocks the stats count (at
/// most kInFlight + kAhead checkpoints' uncompressed bytes). Not thread-safe: one caller at a time.
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
  void prefetch(const Key& key) override;
  std::int64_t stored_bytes(const Key& key) override;
  std::string io_mode() const override;
  /// Waits for every compression in flight, so that the counts are of blocks made.
  StoreStats stats() const override;
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
  /// would (0: none). Reading such a block back is Error(Corrupt). While it is armed, blocks
  /// are made on the caller's thread, so that every get reads the damaged block.
  static void damage_next_blocks(int blocks);

  static constexpr std::size_t kInFlight = 2;  ///< checkpoints compressed behind at most
  static constexpr std::size_t kAhead = 2;     ///< checkpoints decoded ahead at most

 private:
  struct Slot {
    std::unique_ptr<double[]> data;
    std::size_t capacity = 0;
  };
  struct Entry;
  struct Coding;
  struct Decoding;

  std::size_t take_slot(std::size_t doubles);
  static Slot allocate(std::size_t doubles, bool touch);
  // With a codec: whether a checkpoint of `bytes` has its codec run on the I/O thread.
  bool behind(std::int64_t bytes) const;
  void put_coded(Entry& entry, const CheckpointView& checkpoint);
  void get_coded(const Key& key, Entry& entry, const CheckpointSpan& out);
  // Takes the block of `entry`'s compression once it is made (waiting for it if `wait`), and
  // counts it. Returns whether it was taken.
  bool harvest(Entry& entry, bool wait) const;
  void harvest_done(bool wait) const;  // every compression in flight that is made (or all)
  void forget_in_flight(const Entry& entry) const;
  void io_wait(const detail::Ticket& ticket) const;  // counted in StoreStats::wait_seconds
  // A buffer of `values` doubles for a checkpoint, reused from spare_ where one is left, and
  // back into spare_, which keeps at most kInFlight + kAhead of them.
  std::vector<double> take_buffer(std::int64_t values) const;
  void give_back(std::vector<double>&& buffer) const;
  [[noreturn]] void throw_corrupt(const Key& key, const std::string& what) const;

  int rank_ = -1;
  CodecSpec codec_;
  bool one_cpu_ = false;          // the thread that made the store may run on one CPU only
  bool config_async_ = false;     // StoreConfig::async_io
  std::int64_t behind_puts_ = 0;  // checkpoints compressed on the I/O thread
  std::int64_t inline_bytes_ = 0;
  std::vector<double> scratch_;  // with a codec, on the caller's thread: a checkpoint decoded
  std::shared_ptr<detail::IoThread> io_;  // the process's I/O thread, once a codec runs there
  mutable std::deque<Entry*> in_flight_;  // compressed behind, not harvested, oldest first
  mutable std::vector<std::vector<double>> spare_;  // packed values' buffers to reuse
  std::size_t ahead_ = 0;                           // checkpoints decoded ahead now
  std::vector<Slot> slots_;
  /// Unused slots, ordered by capacity (doubles) -> slot index: best fit is a lower_bound, the
  /// largest is the last.
  std::multimap<std::size_t, std::size_t> free_;
  std::map<Key, std::unique_ptr<Entry>> entries_;
  mutable StoreStats stats_;  // stats() counts the blocks made behind
  std::int64_t grow_count_ = 0;
};

}  // namespace rwd::storage
