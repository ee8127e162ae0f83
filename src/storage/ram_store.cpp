#include "ram_store.hpp"
#include "rewind/timing.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>

#include "layout.hpp"
#include "rewind/error.hpp"

namespace rwd::storage {

// A checkpoint's compression: its fields packed back to back, and the block made of them, on the
// caller's thread or the I/O thread (run() never throws; a failure is made again by the caller).
struct RamStore::Coding {
  CodecSpec spec;
  bool per_field = false;          // one block a field (zfp on grids), else one in all
  std::vector<double> values;      // the fields back to back, as put() was given them
  std::vector<std::size_t> sizes;  // per_field: each field's values
  std::vector<Grid> grids;         // per_field: each field's grid
  std::vector<std::byte> block;    // made by make()
  bool failed = false;             // run() failed: harvest() makes it again and throws
  double seconds = 0.0;            // in run()

  void make() {
    block.clear();
    if (per_field) {
      std::size_t at = 0;
      for (std::size_t j = 0; j < sizes.size(); ++j) {
        encode_block(spec, std::span<const double>(values).subspan(at, sizes[j]), block, grids[j]);
        at += sizes[j];
      }
    } else {
      encode_block(spec, values, block);
    }
    block.shrink_to_fit();
  }
  void run() noexcept {
    const auto t0 = SteadyClock::now();
    try {
      make();
    } catch (...) {
      failed = true;
    }
    seconds = seconds_since(t0);
  }
};

// A compressed checkpoint decoded ahead of its get on the I/O thread (prefetch()).
struct RamStore::Decoding {
  std::vector<double> values;  // the fields back to back
  std::string error;           // the block did not decode (Corrupt): why
  double seconds = 0.0;
  std::shared_ptr<detail::Ticket> ticket;
};

struct RamStore::Entry {
  std::size_t slot = 0;
  detail::Layout layout;
  std::vector<std::byte> block;    // with a codec, once made: the compressed block (no slot)
  bool per_field = false;          // block: one block a field (zfp on grids), else one in all
  bool lossy = false;              // block: made by a lossy codec
  std::shared_ptr<Coding> coding;  // with a codec: the compression, until harvested
  std::shared_ptr<detail::Ticket> coded;  // coding's job on the I/O thread (none: made here)
  std::shared_ptr<Decoding> ahead;        // decoded ahead (prefetch)
  // Bytes counted as stored: the block's once harvested (0 before), the slot's values without
  // a codec.
  std::int64_t stored_bytes(bool codec) const {
    if (!codec) return layout.bytes();
    return coding ? 0 : static_cast<std::int64_t>(block.size());
  }
};

namespace {

std::atomic<int> blocks_to_damage{0};

// Decodes a checkpoint's block (one a field if `per_field`) into its fields back to back.
void decode_values(std::span<const std::byte> block, bool per_field, const detail::Layout& layout,
                   std::span<double> values) {
  if (!per_field) {
    decode_block(block, values);
    return;
  }
  std::size_t at = 0;
  for (const detail::FieldLayout& f : layout.fields) {
    const std::size_t bytes = read_block_header(block).bytes();
    const auto n = static_cast<std::size_t>(f.size);
    decode_block(block.first(bytes), values.subspan(at, n));
    block = block.subspan(bytes);
    at += n;
  }
}

// The CPUs the calling thread may run on (the I/O thread, made by a thread like it, inherits
// them): 1 when mpirun bound the rank to a core.
int cpus_allowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

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
  // On one CPU the I/O thread would take turns with the caller: the codec stays here.
  one_cpu_ = cpus_allowed() < 2;
  config_async_ = config.async_io;
  inline_bytes_ = config.inline_io_bytes;
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

RamStore::~RamStore() {
  // Jobs decoding ahead read the entries' blocks; jobs compressing own what they touch.
  if (io_) io_->cancel(this);
}

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

bool RamStore::behind(std::int64_t bytes) const {
  return config_async_ && !one_cpu_ && bytes > inline_bytes_;
}

std::vector<double> RamStore::take_buffer(std::int64_t values) const {
  std::vector<double> buffer;
  if (!spare_.empty()) {
    buffer = std::move(spare_.back());
    spare_.pop_back();
  }
  buffer.resize(static_cast<std::size_t>(values));
  return buffer;
}

void RamStore::give_back(std::vector<double>&& buffer) const {
  if (spare_.size() < kInFlight + kAhead) spare_.push_back(std::move(buffer));
}

void RamStore::io_wait(const detail::Ticket& ticket) const {
  if (ticket.done()) return;
  const auto t0 = SteadyClock::now();
  io_->wait(ticket);
  stats_.wait_seconds += seconds_since(t0);
}

void RamStore::throw_corrupt(const Key& key, const std::string& what) const {
  throw Error(ErrorCode::Corrupt, "ram store: " + to_string(key) + " on rank " +
                                      std::to_string(rank_) + ": " + what +
                                      "; the memory holding it was overwritten or went bad");
}

void RamStore::put(const Key& key, const CheckpointView& checkpoint) {
  const auto t0 = SteadyClock::now();
  if (contains(key)) detail::throw_duplicate("ram store", key, rank_);
  detail::validate_put("ram store", key, checkpoint, rank_);
  harvest_done(false);
  auto entry = std::make_unique<Entry>();
  entry->layout = detail::layout_of(checkpoint);
  Entry& e = *entry;
  if (codec_.name != "none") {
    put_coded(e, checkpoint);
  } else {
    e.slot = take_slot(static_cast<std::size_t>(e.layout.doubles()));
    detail::pack(checkpoint, {slots_[e.slot].data.get(), slots_[e.slot].capacity});
  }
  stats_.uncompressed_bytes_written += e.layout.bytes();
  // A block is counted when it is harvested (at once when made here).
  const std::int64_t bytes = codec_.name != "none" ? 0 : e.layout.bytes();
  entries_.emplace(key, std::move(entry));
  detail::count_put(stats_, bytes, static_cast<std::int64_t>(entries_.size()));
  if (e.coding && !e.coded) harvest(e, false);
  stats_.write_seconds += seconds_since(t0);
}

void RamStore::put_coded(Entry& e, const CheckpointView& checkpoint) {
  // One block of the fields back to back or, for a lossy codec and fields with grids, one
  // block a field, each compressed in its dimensions.
  auto c = std::make_shared<Coding>();
  c->spec = codec_for(codec_, checkpoint.exact);
  e.lossy = codec_is_lossy(c->spec.name);
  c->per_field = e.lossy && std::any_of(checkpoint.fields.begin(), checkpoint.fields.end(),
                                        [](const FieldView& f) { return !f.grid.empty(); });
  e.per_field = c->per_field;
  c->values = take_buffer(e.layout.doubles());
  detail::pack(checkpoint, c->values);
  for (const FieldView& f : checkpoint.fields) {
    if (!c->per_field) break;
    c->sizes.push_back(f.data.size());
    c->grids.push_back(f.grid);
  }
  e.coding = c;
  if (!behind(e.layout.bytes()) || blocks_to_damage.load() > 0) {
    const auto tc = SteadyClock::now();
    c->make();  // here (throws before the entry is held); put() harvests it once counted
    c->seconds = seconds_since(tc);
    return;
  }
  while (in_flight_.size() >= kInFlight) harvest(*in_flight_.front(), true);
  if (!io_) io_ = detail::IoThread::acquire();
  detail::IoJob job;
  job.kind = detail::IoJob::Kind::Compute;
  job.compute = [c] { c->run(); };
  e.coded = io_->submit(std::move(job), this);
  in_flight_.push_back(&e);
  ++behind_puts_;
}

bool RamStore::harvest(Entry& e, bool wait) const {
  if (!e.coding) return true;
  if (e.coded) {
    if (!e.coded->done() && !wait) return false;
    io_wait(*e.coded);
  }
  Coding& c = *e.coding;
  if (c.failed) c.make();  // again on this thread, to throw what failed (no memory, most likely)
  forget_in_flight(e);
  e.block = std::move(c.block);
  if (blocks_to_damage.load() > 0 && blocks_to_damage.fetch_sub(1) > 0) {
    e.block.back() ^= std::byte{0x10};  // the last byte: a payload's (or an empty header's)
  }
  stats_.compress_seconds += c.seconds;
  if (e.coded) stats_.codec_io_thread_seconds += c.seconds;
  const auto bytes = static_cast<std::int64_t>(e.block.size());
  stats_.bytes_written += bytes;
  stats_.live_bytes += bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.live_bytes);
  give_back(std::move(c.values));
  e.coding.reset();
  e.coded.reset();
  return true;
}

void RamStore::forget_in_flight(const Entry& e) const {
  const auto it = std::find(in_flight_.begin(), in_flight_.end(), &e);
  if (it != in_flight_.end()) in_flight_.erase(it);
}

void RamStore::harvest_done(bool wait) const {
  for (const auto in_flight = in_flight_; Entry * e : in_flight) harvest(*e, wait);
}

StoreStats RamStore::stats() const {
  harvest_done(true);
  return stats_;
}

std::int64_t RamStore::stored_bytes(const Key& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) detail::throw_missing("ram store", "stored_bytes", key, rank_);
  harvest(*it->second, true);
  return it->second->stored_bytes(codec_.name != "none");
}

void RamStore::get(const Key& key, const CheckpointSpan& out) {
  const auto t0 = SteadyClock::now();
  const auto it = entries_.find(key);
  if (it == entries_.end()) detail::throw_missing("ram store", "get", key, rank_);
  Entry& entry = *it->second;
  detail::validate_get("ram store", key, entry.layout, out, rank_);
  std::int64_t bytes = entry.layout.bytes();
  if (codec_.name != "none") {
    get_coded(key, entry, out);
    if (!entry.coding) bytes = entry.stored_bytes(true);
  } else {
    detail::unpack({slots_[entry.slot].data.get(), slots_[entry.slot].capacity}, out);
  }
  detail::fill_scalars(entry.layout, out);
  detail::count_get(stats_, bytes);
  stats_.read_seconds += seconds_since(t0);
}

void RamStore::get_coded(const Key& key, Entry& entry, const CheckpointSpan& out) {
  // Lossless and still compressing: the values packed at put() are the bits a decode gives.
  if (entry.coding && !entry.lossy) {
    detail::unpack(entry.coding->values, out);
    harvest(entry, false);
    return;
  }
  harvest(entry, true);  // lossy: what the block decodes to, never the values before loss
  if (const std::shared_ptr<Decoding> a = std::move(entry.ahead)) {
    --ahead_;
    ++stats_.prefetch_hits;
    if (!a->ticket->done()) ++stats_.prefetch_late;
    io_wait(*a->ticket);
    if (!a->error.empty()) throw_corrupt(key, a->error);
    stats_.decompress_seconds += a->seconds;
    stats_.codec_io_thread_seconds += a->seconds;
    detail::unpack(a->values, out);
    give_back(std::move(a->values));
    return;
  }
  const auto td = SteadyClock::now();
  scratch_.resize(static_cast<std::size_t>(entry.layout.doubles()));
  try {
    decode_values(entry.block, entry.per_field, entry.layout, scratch_);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Corrupt) throw;
    throw_corrupt(key, e.what());
  }
  stats_.decompress_seconds += seconds_since(td);
  detail::unpack(scratch_, out);
}

void RamStore::prefetch(const Key& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) detail::throw_missing("ram store", "prefetch", key, rank_);
  Entry& e = *it->second;
  if (codec_.name == "none" || e.ahead || !behind(e.layout.bytes())) return;
  if (e.coding && !harvest(e, false)) return;  // still compressing: get() has the values
  if (ahead_ >= kAhead) {
    ++stats_.prefetch_skipped;
    return;
  }
  auto d = std::make_shared<Decoding>();
  d->values = take_buffer(e.layout.doubles());
  if (!io_) io_ = detail::IoThread::acquire();
  detail::IoJob job;
  job.kind = detail::IoJob::Kind::Compute;
  // The block stays until the job is done: erase() and the destructor wait for it.
  job.compute = [d, block = std::span<const std::byte>(e.block), per_field = e.per_field,
                 layout = &e.layout] {
    const auto t0 = SteadyClock::now();
    try {
      decode_values(block, per_field, *layout, d->values);
    } catch (const std::exception& ex) {
      d->error = ex.what();
    }
    d->seconds = seconds_since(t0);
  };
  d->ticket = io_->submit(std::move(job), this);
  e.ahead = std::move(d);
  ++ahead_;
}

void RamStore::erase(const Key& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) detail::throw_missing("ram store", "erase", key, rank_);
  Entry& e = *it->second;
  if (e.ahead) {  // its job reads the block
    io_wait(*e.ahead->ticket);
    --ahead_;
  }
  forget_in_flight(e);  // a job still running owns what it touches: no wait
  if (codec_.name == "none") free_.emplace(slots_[e.slot].capacity, e.slot);
  const std::int64_t bytes = e.stored_bytes(codec_.name != "none");
  entries_.erase(it);
  detail::count_erase(stats_, bytes, static_cast<std::int64_t>(entries_.size()));
}

std::string RamStore::io_mode() const {
  if (codec_.name == "none") return "in memory";
  const std::string here = "in memory; compressed on the caller's thread";
  if (!config_async_) return here + " (StoreConfig::async_io is off)";
  if (one_cpu_) {
    return here + ": this rank may run on one CPU only, which the I/O thread would share";
  }
  const std::string above = std::to_string(inline_bytes_) + " bytes";
  if (behind_puts_ == 0) {
    return here + ": no checkpoint was above " + above +
           " (smaller ones cost less to compress than to hand over)";
  }
  return "in memory; compressed behind and decoded ahead on the process I/O thread (" +
         std::to_string(behind_puts_) + " checkpoints above " + above + ")";
}

bool RamStore::contains(const Key& key) const {
  return entries_.count(key) != 0;
}

}  // namespace rwd::storage
