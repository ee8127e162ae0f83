#include "ram_store.hpp"
#include "rewind/timing.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>

#include "layout.hpp"
#include "rewind/error.hpp"

namespace rwd::storage {

struct RamStore::Entry {
  std::size_t slot = 0;
  detail::Layout layout;
  std::vector<std::byte> block;  // with a codec: the compressed block (no slot)
  bool per_field = false;        // block: one block a field (zfp on grids), else one in all
  std::int64_t stored_bytes() const {
    return block.empty() ? layout.bytes() : static_cast<std::int64_t>(block.size());
  }
};

namespace {

std::atomic<int> blocks_to_damage{0};

}  // namespace

void RamStore::damage_next_blocks(int blocks) {
  blocks_to_damage.store(blocks);
}

RamStore::RamStore(const StoreConfig& config) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized && config.comm != MPI_COMM_NULL) MPI_Comm_rank(config.comm, &rank_);
  require(config.capacity >= 0 && config.slot_doubles >= 0,
          "ram store: capacity and slot_doubles must be >= 0, got " +
              std::to_string(config.capacity) + " and " + std::to_string(config.slot_doubles));
  check_codec(config.codec, "ram store codec");
  if (config.codec.name != "none") {
    codec_ = config.codec;
    return;  // blocks as large as they compress to: nothing to preallocate
  }
  if (config.slot_doubles > 0) {
    slots_.reserve(static_cast<std::size_t>(config.capacity));
    for (std::int64_t i = 0; i < config.capacity; ++i) {
      slots_.push_back(allocate(static_cast<std::size_t>(config.slot_doubles), true));
      free_.emplace(static_cast<std::size_t>(config.slot_doubles), slots_.size() - 1);
    }
  }
}

RamStore::~RamStore() = default;

RamStore::Slot RamStore::allocate(std::size_t doubles, bool touch) {
  Slot slot;
  slot.data.reset(new double[doubles]);  // uninitialised: touched below or by the first put
  slot.capacity = doubles;
  if (touch) std::memset(slot.data.get(), 0, doubles * sizeof(double));
  return slot;
}

std::int64_t RamStore::allocated_bytes() const {
  std::int64_t n = 0;
  for (const auto& s : slots_) n += static_cast<std::int64_t>(s.capacity * sizeof(double));
  return n;
}

std::size_t RamStore::take_slot(std::size_t doubles) {
  // Best fit among the free slots (the smallest that holds `doubles`); otherwise enlarge the
  // largest free one; otherwise add a new one. O(log n) in the free slots.
  if (const auto best = free_.lower_bound(doubles); best != free_.end()) {
    const std::size_t index = best->second;
    free_.erase(best);
    return index;
  }
  ++grow_count_;
  if (!free_.empty()) {
    const auto largest = std::prev(free_.end());
    const std::size_t index = largest->second;
    free_.erase(largest);
    slots_[index] = Slot{};  // release before allocating the larger buffer
    slots_[index] = allocate(doubles, false);
    return index;
  }
  slots_.push_back(allocate(doubles, false));
  return slots_.size() - 1;
}

void RamStore::put(const Key& key, const CheckpointView& checkpoint) {
  const auto t0 = SteadyClock::now();
  if (contains(key)) detail::throw_duplicate("ram store", key, rank_);
  detail::validate_put("ram store", key, checkpoint, rank_);
  auto entry = std::make_unique<Entry>(Entry{0, detail::layout_of(checkpoint), {}, false});
  const auto total = static_cast<std::size_t>(entry->layout.doubles());
  if (codec_.name != "none") {
    // One block of the fields back to back or, for a lossy codec and fields with grids, one
    // block a field, each compressed in its dimensions.
    const auto tc = SteadyClock::now();
    const CodecSpec spec = codec_for(codec_, checkpoint.exact);
    entry->per_field = codec_is_lossy(spec.name) &&
                       std::any_of(checkpoint.fields.begin(), checkpoint.fields.end(),
                                   [](const FieldView& f) { return !f.grid.empty(); });
    if (entry->per_field) {
      for (const FieldView& f : checkpoint.fields) {
        encode_block(spec, f.data, entry->block, f.grid);
      }
    } else {
      scratch_.resize(total);
      detail::pack(checkpoint, scratch_);
      encode_block(spec, scratch_, entry->block);
    }
    entry->block.shrink_to_fit();
    if (blocks_to_damage.load() > 0 && blocks_to_damage.fetch_sub(1) > 0) {
      entry->block.back() ^= std::byte{0x10};  // the last byte: a payload's (or an empty header's)
    }
    stats_.compress_seconds += seconds_since(tc);
  } else {
    entry->slot = take_slot(total);
    detail::pack(checkpoint, {slots_[entry->slot].data.get(), slots_[entry->slot].capacity});
  }
  const std::int64_t bytes = entry->stored_bytes();
  stats_.uncompressed_bytes_written += entry->layout.bytes();
  entries_.emplace(key, std::move(entry));
  detail::count_put(stats_, bytes, static_cast<std::int64_t>(entries_.size()));
  stats_.write_seconds += seconds_since(t0);
}

void RamStore::get(const Key& key, const CheckpointSpan& out) {
  const auto t0 = SteadyClock::now();
  const auto it = entries_.find(key);
  if (it == entries_.end()) detail::throw_missing("ram store", "get", key, rank_);
  const Entry& entry = *it->second;
  detail::validate_get("ram store", key, entry.layout, out, rank_);
  if (!entry.block.empty()) {
    const auto td = SteadyClock::now();
    try {
      if (entry.per_field) {
        std::span<const std::byte> rest = entry.block;
        for (const FieldSpan& f : out.fields) {  // in the order written (validate_get checked)
          const std::size_t bytes = read_block_header(rest).bytes();
          decode_block(rest.first(bytes), f.data);
          rest = rest.subspan(bytes);
        }
      } else {
        scratch_.resize(static_cast<std::size_t>(entry.layout.doubles()));
        decode_block(entry.block, scratch_);
        detail::unpack(scratch_, out);
      }
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Corrupt) throw;
      throw Error(ErrorCode::Corrupt, "ram store: " + to_string(key) + " on rank " +
                                          std::to_string(rank_) + ": " + e.what() +
                                          "; the memory holding it was overwritten or went bad");
    }
    stats_.decompress_seconds += seconds_since(td);
  } else {
    detail::unpack({slots_[entry.slot].data.get(), slots_[entry.slot].capacity}, out);
  }
  detail::fill_scalars(entry.layout, out);
  detail::count_get(stats_, entry.stored_bytes());
  stats_.read_seconds += seconds_since(t0);
}

void RamStore::erase(const Key& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) detail::throw_missing("ram store", "erase", key, rank_);
  if (it->second->block.empty()) {
    const std::size_t slot = it->second->slot;
    free_.emplace(slots_[slot].capacity, slot);
  }
  const std::int64_t bytes = it->second->stored_bytes();
  entries_.erase(it);
  detail::count_erase(stats_, bytes, static_cast<std::int64_t>(entries_.size()));
}

bool RamStore::contains(const Key& key) const {
  return entries_.count(key) != 0;
}

}  // namespace rwd::storage
