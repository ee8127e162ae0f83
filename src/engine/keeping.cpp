#include "keeping.hpp"

#include <algorithm>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"

namespace rwd::engine::detail {

std::optional<Key> first_restart(const CheckpointIo& io, Step steps) {
  std::optional<Key> first;
  for (const auto& [k, level] : io.record().held()) {
    if (k.kind == Kind::Restart && k.step < steps && (!first || k.step < first->step)) first = k;
  }
  return first;
}

std::optional<std::pair<Key, Level>> last_restart(const CheckpointIo& io, Step steps) {
  std::optional<std::pair<Key, Level>> last;
  for (const auto& [k, level] : io.record().held()) {
    if (k.kind != Kind::Restart || k.step >= steps) continue;
    if (!last || k.step > last->first.step) last = std::pair{k, level};
  }
  return last;
}

std::optional<std::pair<Key, Level>> last_held_state(const CheckpointIo& io, Step steps,
                                                     bool holds_next) {
  if (!holds_next) return std::nullopt;
  std::optional<std::pair<Key, Level>> last;
  for (const auto& [k, level] : io.record().held()) {
    if (k.kind != Kind::Pullback || k.step + 1 >= steps || level == Level::Work) continue;
    if (!last || k.step > last->first.step) last = std::pair{k, level};
  }
  return last;
}

std::optional<Step> state_held_by(const Key& k, bool holds_next) {
  if (k.kind == Kind::Restart) return k.step;
  if (k.kind == Kind::Pullback && holds_next) return k.step + 1;
  return std::nullopt;
}

std::optional<HeldState> latest_state(const CheckpointIo& io, Step m, bool holds_next) {
  std::optional<HeldState> latest;
  for (const auto& [k, level] : io.record().held()) {
    const std::optional<Step> j = state_held_by(k, holds_next);
    if (!j || *j > m || (latest && *j <= latest->step)) continue;
    latest = HeldState{*j, k, io.record().cheapest(k).value_or(level)};
  }
  return latest;
}

Thinned thin(CheckpointIo& io, Step steps, bool tail, bool keep_final, std::size_t variables,
             const std::string& schedule, bool holds_next) {
  const record::CheckpointRecord& r = io.record();
  const std::optional<Key> first = first_restart(io, steps);
  // The steps in a row from 0 whose pullback data is stored (none needed before a restart).
  Step row = 0;
  while (row < steps && r.cheapest(io.key(row, Kind::Pullback))) ++row;
  const bool held = !first && holds_next && row >= 1;
  const Step base = first ? first->step : row;
  if ((!first || row < base) && !held) {
    throw Error(ErrorCode::InvalidArgument,
                "recording: thin() keeps the first restart checkpoint (and the pullback data of "
                "the steps before it), and schedule '" +
                    schedule + "' kept no restart checkpoint to start from");
  }
  const Level first_level = first ? r.cheapest(*first).value_or(Level::None) : Level::None;
  const bool all =
      first && !keep_final && r.find(*first, first_level)->variables.size() == variables;
  for (const auto& [k, level] : r.held()) {
    const bool before = k.kind == Kind::Pullback && k.step < base && level == *r.cheapest(k);
    const bool keep = (first && k == *first && level == first_level) || before ||
                      (tail && k == io.key(steps - 1, Kind::Pullback) && level == Level::Work) ||
                      (!(tail && all) && k == io.key(steps, Kind::Final));
    if (!keep) io.erase(k, level);
  }
  if (!tail) io.record().set_work_pullback(std::nullopt);
  return {base, held, tail, tail && all};
}

RecordingConfig replan_config(RecordingConfig c, Step steps, const Claim& free, const Claim& held) {
  c.params.steps = steps;
  if (free.ram != schedule::kUnlimited) {
    c.params.ram = std::min(c.params.ram, std::max<std::int64_t>(free.ram - held.ram, 0));
  }
  if (free.disk != schedule::kUnlimited) {
    const std::int64_t disk = std::max<std::int64_t>(free.disk - held.disk, 0);
    c.params.disk = c.params.disk == schedule::kUnlimited ? disk : std::min(c.params.disk, disk);
  }
  if (free.ram_bytes > 0) {
    const double bytes = std::max(free.ram_bytes - held.ram_bytes, 0.0);
    c.ram_bytes = c.ram_bytes > 0 ? std::min(c.ram_bytes, bytes) : bytes;
  }
  for (const auto& e : schedule::ScheduleRegistry::instance().list()) {
    if (e.name == c.schedule && e.online) c.schedule = "auto";  // the count is known now
  }
  return c;
}

}  // namespace rwd::engine::detail
