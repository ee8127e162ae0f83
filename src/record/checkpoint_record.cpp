#include "rewind/record/checkpoint_record.hpp"

#include <algorithm>
#include <string>

#include "rewind/error.hpp"

namespace rwd::record {

namespace {
std::string at_level(const Key& key, Level level) {
  return storage::to_string(key) + " at " + schedule::to_string(level);
}
}  // namespace

LevelTraffic& CheckpointRecord::at(Level store) {
  if (store == Level::Ram) return ram_;
  if (store == Level::Disk) return disk_;
  throw Error(ErrorCode::Internal,
              "checkpoint record: checkpoints live only in RAM or on disk, "
              "not at " +
                  std::string(schedule::to_string(store)));
}

const LevelTraffic& CheckpointRecord::traffic(Level store) const {
  return const_cast<CheckpointRecord*>(this)->at(store);
}

void CheckpointRecord::add(Level store, std::int64_t bytes) {
  LevelTraffic& t = at(store);
  ++t.writes;
  t.bytes_written += bytes;
  ++t.live;
  t.live_bytes += bytes;
  t.peak = std::max(t.peak, t.live);
  t.peak_bytes = std::max(t.peak_bytes, t.live_bytes);
}

void CheckpointRecord::remove(Level store, std::int64_t bytes) {
  LevelTraffic& t = at(store);
  --t.live;
  t.live_bytes -= bytes;
}

void CheckpointRecord::stored(const Key& key, Level level, Entry entry) {
  add(entry.store, entry.bytes);
  if (!entries_.emplace(std::pair{key, level}, std::move(entry)).second) {
    throw Error(ErrorCode::Internal,
                "checkpoint record: " + at_level(key, level) + " is already recorded");
  }
}

CheckpointRecord::Entry CheckpointRecord::freed(const Key& key, Level level) {
  auto it = entries_.find({key, level});
  if (it == entries_.end()) {
    throw Error(ErrorCode::Internal,
                "checkpoint record: " + at_level(key, level) + " is not recorded");
  }
  Entry entry = std::move(it->second);
  entries_.erase(it);
  remove(entry.store, entry.bytes);
  return entry;
}

const CheckpointRecord::Entry* CheckpointRecord::find(const Key& key, Level level) const {
  auto it = entries_.find({key, level});
  return it == entries_.end() ? nullptr : &it->second;
}

std::optional<Level> CheckpointRecord::cheapest(const Key& key) const {
  for (Level l : {Level::Ram, Level::Disk}) {
    if (find(key, l)) return l;
  }
  return std::nullopt;
}

void CheckpointRecord::read(const Entry& entry) {
  LevelTraffic& t = at(entry.store);
  ++t.reads;
  t.bytes_read += entry.bytes;
}

void CheckpointRecord::relocate(const Key& key, Level level, Level store) {
  auto it = entries_.find({key, level});
  if (it == entries_.end()) {
    throw Error(ErrorCode::Internal,
                "checkpoint record: " + at_level(key, level) + " is not recorded");
  }
  Entry& e = it->second;
  if (e.store == store) return;
  remove(e.store, e.bytes);
  add(store, e.bytes);
  e.store = store;
}

std::vector<std::pair<Key, Level>> CheckpointRecord::held() const {
  std::vector<std::pair<Key, Level>> out;
  out.reserve(entries_.size());
  for (const auto& [k, e] : entries_) out.push_back(k);
  return out;
}

}  // namespace rwd::record
