#include "rewind/engine/stores.hpp"

#include "rewind/storage/codec.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "rewind/error.hpp"

namespace rwd::engine {

namespace {

using schedule::kUnlimited;

std::string count(std::int64_t n) {
  return n == kUnlimited ? std::string("unlimited") : std::to_string(n);
}

}  // namespace

Stores::Stores(StoresConfig config) : config_(std::move(config)) {
  const auto& c = config_;
  require(c.ram >= 0 || c.ram == kUnlimited,
          "stores: the RAM capacity must be >= 0 checkpoints or unlimited, got " +
              std::to_string(c.ram));
  require(c.disk >= 0 || c.disk == kUnlimited,
          "stores: the disk capacity must be >= 0 checkpoints or unlimited, got " +
              std::to_string(c.disk));
  require(c.ram_bytes >= 0, "stores: the RAM capacity in bytes must be >= 0 (0: none)");
  require(c.store.comm != MPI_COMM_NULL,
          "stores: StoreConfig::comm is not set (EngineConfig::store.comm, "
          "StoresConfig::store.comm); set it to the stepper's communicator (MPI_COMM_SELF for a "
          "stepper on one rank)");
  require(
      !c.lossy_pullbacks || storage::codec_is_lossy(c.store.codec.name),
      "stores: StoresConfig::lossy_pullbacks compresses pullback data lossily, and the codec '" +
          c.store.codec.name + "' is not lossy; choose zfp or leave it false");
  ram_ = storage::make_store(c.ram_store, c.store);
}

Stores::~Stores() = default;

storage::Store& Stores::disk() {
  if (!disk_) {
    require(!config_.store.directory.empty(),
            "stores: checkpoints are to go to disk, and no directory is set; set "
            "StoreConfig::directory (EngineConfig::store.directory, "
            "StoresConfig::store.directory) to an existing writable directory, or give no disk "
            "budget");
    // Every rank tries; the store's own error says why if the directory still cannot be used.
    std::error_code ec;
    if (config_.make_directory && !std::filesystem::exists(config_.store.directory, ec)) {
      std::filesystem::create_directories(config_.store.directory, ec);
    }
    storage::StoreConfig disk_config = config_.store;
    disk_config.codec = disk_codec();
    disk_ = storage::make_store(config_.disk_store, disk_config);
  }
  return *disk_;
}

namespace {

// The claims of every recording but `recording`.
Claim others_of(const std::map<std::int64_t, Claim>& claims, std::int64_t recording) {
  Claim others;
  for (const auto& [id, held] : claims) {
    if (id == recording) continue;
    others.ram += held.ram;
    others.ram_bytes += held.ram_bytes;
    others.disk =
        others.disk == kUnlimited || held.disk == kUnlimited ? kUnlimited : others.disk + held.disk;
  }
  return others;
}

}  // namespace

// The first level at which `c` does not fit next to `others`, or an empty string.
std::string Stores::overflow(const Claim& others, const Claim& c) const {
  if (config_.ram != kUnlimited && others.ram + c.ram > config_.ram) return "ram";
  if (config_.ram_bytes > 0 && others.ram_bytes + c.ram_bytes > config_.ram_bytes) return "bytes";
  if (config_.disk != kUnlimited &&
      (c.disk == kUnlimited || others.disk == kUnlimited || others.disk + c.disk > config_.disk)) {
    return "disk";
  }
  return {};
}

bool Stores::fits(std::int64_t recording, const Claim& c) const {
  return overflow(others_of(claims_, recording), c).empty();
}

void Stores::claim(std::int64_t recording, const Claim& c) {
  const Claim others = others_of(claims_, recording);
  const std::string level = overflow(others, c);
  const auto refuse = [&](const std::string& what, const std::string& capacity,
                          const std::string& held, const std::string& wanted) {
    throw Error(ErrorCode::InvalidArgument,
                "stores: recording " + std::to_string(recording) + " needs " + wanted + " " + what +
                    ", but the other recordings hold " + held + " of the capacity of " + capacity +
                    "; reverse, park or spill other recordings first, or raise the capacity");
  };
  if (level == "ram") {
    refuse("RAM checkpoints", count(config_.ram), std::to_string(others.ram),
           std::to_string(c.ram));
  } else if (level == "bytes") {
    refuse("bytes of RAM", std::to_string(static_cast<long long>(config_.ram_bytes)),
           std::to_string(static_cast<long long>(others.ram_bytes)),
           std::to_string(static_cast<long long>(c.ram_bytes)));
  } else if (level == "disk") {
    refuse("disk checkpoints", count(config_.disk), count(others.disk), count(c.disk));
  }
  claims_[recording] = c;
}

void Stores::occupy(const void* stepper, std::int64_t recording, std::function<void()> evicted) {
  auto it = occupants_.find(stepper);
  if (it != occupants_.end() && it->second.recording != recording) {
    Occupant previous = std::move(it->second);
    occupants_.erase(it);
    if (previous.evicted) previous.evicted();
  }
  occupants_[stepper] = Occupant{recording, std::move(evicted)};
}

void Stores::vacate(const void* stepper, std::int64_t recording) noexcept {
  auto it = occupants_.find(stepper);
  if (it != occupants_.end() && it->second.recording == recording) occupants_.erase(it);
}

Claim Stores::available(std::int64_t recording) const {
  const Claim others = others_of(claims_, recording);
  Claim free;
  free.ram =
      config_.ram == kUnlimited ? kUnlimited : std::max<std::int64_t>(config_.ram - others.ram, 0);
  free.ram_bytes =
      config_.ram_bytes > 0 ? std::max(config_.ram_bytes - others.ram_bytes, 0.0) : 0.0;
  free.disk = config_.disk == kUnlimited  ? kUnlimited
              : others.disk == kUnlimited ? 0
                                          : std::max<std::int64_t>(config_.disk - others.disk, 0);
  return free;
}

void Stores::release(std::int64_t recording) noexcept {
  claims_.erase(recording);
}

Claim Stores::claimed() const {
  Claim sum;
  for (const auto& [id, c] : claims_) {
    sum.ram += c.ram;
    sum.ram_bytes += c.ram_bytes;
    sum.disk = sum.disk == kUnlimited || c.disk == kUnlimited ? kUnlimited : sum.disk + c.disk;
  }
  return sum;
}

void Stores::discard(const storage::Key& key) {
  discarded_.push_back(key);
}

void Stores::collect() {
  if (discarded_.empty() || !disk_) {
    discarded_.clear();
    return;
  }
  std::vector<storage::Key> keys;
  keys.swap(discarded_);
  std::sort(keys.begin(), keys.end());  // every rank erases in the same order
  for (const auto& key : keys) {
    if (disk_->contains(key)) disk_->erase(key);
  }
}

void Stores::close() {
  collect();
  if (!disk_) return;
  closed_overlap_ = io_overlap_seconds();
  closed_prefetch_ = prefetch_stats();
  closed_codec_ = disk_codec_stats();
  std::unique_ptr<storage::Store> disk = std::move(disk_);
  disk->close();
}

double Stores::io_overlap_seconds() const {
  return closed_overlap_ + (disk_ ? disk_->stats().overlap_seconds : 0.0);
}

storage::CodecSpec Stores::disk_codec() const {
  const storage::CodecSpec& c = config_.store.codec;
  if (!config_.compress_disk || c.name.empty() || storage::codec_is_lossy(c.name)) return {};
  return c;
}

CodecStats Stores::disk_codec_stats() const {
  CodecStats c = closed_codec_;
  c.codec = disk_codec().name;
  if (disk_) {
    const storage::StoreStats s = disk_->stats();
    if (s.uncompressed_bytes_written > 0) c.stored_bytes += s.bytes_written;
    c.uncompressed_bytes += s.uncompressed_bytes_written;
    c.compress_seconds += s.compress_seconds;
    c.decompress_seconds += s.decompress_seconds;
    c.io_thread_seconds += s.codec_io_thread_seconds;
  }
  return c;
}

CodecStats Stores::ram_codec_stats() const {
  CodecStats c;
  if (!config_.store.codec.name.empty()) c.codec = config_.store.codec.name;
  if (!ram_) return c;
  const storage::StoreStats s = ram_->stats();
  if (s.uncompressed_bytes_written > 0) c.stored_bytes = s.bytes_written;
  c.uncompressed_bytes = s.uncompressed_bytes_written;
  c.compress_seconds = s.compress_seconds;
  c.decompress_seconds = s.decompress_seconds;
  c.io_thread_seconds = s.codec_io_thread_seconds;
  return c;
}

PrefetchStats Stores::prefetch_stats() const {
  PrefetchStats p = closed_prefetch_;
  if (disk_) {
    const storage::StoreStats s = disk_->stats();
    p.hits += s.prefetch_hits;
    p.late += s.prefetch_late;
    p.skipped += s.prefetch_skipped;
  }
  return p;
}

void Stores::abandon() noexcept {
  if (ram_) ram_->abandon();
  if (disk_) disk_->abandon();
}

}  // namespace rwd::engine
