#include "checkpoint_io.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"
#include "rewind/storage/codec.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine::detail {

std::vector<storage::FieldView> views(const std::vector<Field>& fields) {
  std::vector<storage::FieldView> out;
  out.reserve(fields.size());
  for (const auto& f : fields) out.push_back({f.name, f.data, f.offset, f.global_size, f.grid});
  return out;
}

std::vector<FieldShape> shapes_of(const std::vector<Field>& fields) {
  std::vector<FieldShape> out;
  out.reserve(fields.size());
  for (const Field& f : fields) {
    out.push_back({std::string(f.name), f.data.size(), f.offset, f.global_size, f.grid});
  }
  return out;
}

std::vector<Field> select(const std::vector<Field>& all, const std::vector<std::size_t>& which) {
  std::vector<Field> out;
  out.reserve(which.size());
  for (std::size_t v : which) out.push_back(all[v]);
  return out;
}

std::int64_t bytes_of(const std::vector<Field>& fields) {
  std::int64_t n = 0;
  for (const auto& f : fields) n += static_cast<std::int64_t>(f.data.size_bytes());
  return n;
}

CheckpointIo::CheckpointIo(std::shared_ptr<Stores> stores, std::int64_t id, Stepper* stepper,
                           std::vector<FieldShape> state, std::vector<FieldShape> pullback,
                           const Plan* plan)
    : stores_(std::move(stores)),
      id_(id),
      stepper_(stepper),
      state_(std::move(state)),
      pullback_(std::move(pullback)),
      plan_(plan) {}

storage::Store& CheckpointIo::store(Level where) {
  if (where == Level::Ram) return stores_->ram();
  if (where == Level::Disk) return stores_->disk();
  throw Error(ErrorCode::Internal,
              "recording: no store at level " + std::string(schedule::to_string(where)));
}

void CheckpointIo::put(const Key& k, Level level, Level where, const std::vector<Field>& fields,
                       std::vector<std::size_t> variables) {
  settle();
  if (level == Level::Disk && plan_->params.disk == 0) {
    throw Error(ErrorCode::InvalidArgument,
                "schedule '" + plan_->schedule +
                    "' stores at level disk but the budget has no disk slots; give disk slots");
  }
  if (source_ && !copying_) {  // made again from a durable tape: the tape's data of k
    std::vector<const FieldShape*> like;
    std::vector<FieldShape> shapes = shapes_of(fields);
    for (const FieldShape& sh : shapes) like.push_back(&sh);
    const std::vector<Field> data = scratch_fields(like);
    if (!source_(k, data)) untaped_.insert({k, level});
    Source source = std::move(source_);
    copying_ = true;  // a tape's data, whose origin is not known here: counted as lossy
    copy_exact_ = false;
    from_tape_ = true;
    put(k, level, where, data, std::move(variables));
    from_tape_ = copying_ = false;
    source_ = std::move(source);
    return;
  }
  dropped_.erase({k, level});          // held again
  if (anchor_ == k) release_anchor();  // the schedule stores x_0 itself after all
  // Under a lossy codec only restart states may lose bits (and pullback data when the stores
  // allow it): a final state, and pullback data by default, are kept exactly.
  const bool exact =
      k.kind == Kind::Final || (k.kind == Kind::Pullback && !stores_->config().lossy_pullbacks);
  const bool lossy =
      where == Level::Ram && !exact && storage::codec_is_lossy(stores_->config().store.codec.name);
  const auto v = views(fields);
  stepper_->on_io(IoEvent::WriteBegin);
  const auto t0 = SteadyClock::now();
  store(where).put(k, {v, {}, exact});
  seconds_ += seconds_since(t0);
  stepper_->on_io(IoEvent::WriteEnd);
  const std::int64_t raw = bytes_of(fields);
  // Exact: a read gives back the first sweep's bits: stored without loss, from a working state
  // that descends from exact data only (a copy: from a source that holds them).
  const bool stored_exact = !lossy && (copying_ ? copy_exact_ : working_exact_);
  record_.stored(k, level, {where, raw, std::move(variables), stored_exact});
  if (where == Level::Ram && plan_->compressed_budget > 0) {
    if (from_tape_) {  // no agreement (keep_to_budget): nothing to defer
      keep_to_budget(k, level, stores_->ram().stored_bytes(k), raw);
    } else {
      unmeasured_ = Unmeasured{k, level, raw};
    }
  }
}

void CheckpointIo::settle() {
  if (!unmeasured_) return;
  const Unmeasured u = *unmeasured_;
  unmeasured_.reset();  // before: keep_to_budget's own calls (erase, move) find nothing to settle
  const auto t0 = SteadyClock::now();
  const std::int64_t bytes = stores_->ram().stored_bytes(u.k);  // waits for a block in flight
  seconds_ += seconds_since(t0);
  keep_to_budget(u.k, u.level, bytes, u.raw);
}

void CheckpointIo::get(const Key& k, Level level, const std::vector<Field>& fields,
                       bool into_stepper) {
  settle();
  const auto* entry = record_.find(k, level);
  if (!entry) {
    throw Error(ErrorCode::Internal, "schedule '" + plan_->schedule + "': reads " +
                                         storage::to_string(k) + " from " +
                                         schedule::to_string(level));
  }
  stepper_->on_io(IoEvent::ReadBegin);
  const auto t0 = SteadyClock::now();
  store(entry->store).get(k, {fields, {}});
  seconds_ += seconds_since(t0);
  stepper_->on_io(IoEvent::ReadEnd);
  record_.read(*entry);
  prefetched_.erase(k);
  if (into_stepper) stepper_->loaded(k.kind);
}

void CheckpointIo::erase(const Key& k, Level level) {
  settle();
  const record::CheckpointRecord::Entry entry = record_.freed(k, level);
  prefetched_.erase(k);  // a prefetch of it ends with it
  const auto t0 = SteadyClock::now();
  store(entry.store).erase(k);
  seconds_ += seconds_since(t0);
  if (entry.store == Level::Ram) left_ram(k, level);
}

std::vector<Field> CheckpointIo::scratch_fields(const std::vector<const FieldShape*>& like) {
  std::vector<Field> out;
  scratch_.resize(like.size());
  for (std::size_t j = 0; j < like.size(); ++j) {
    scratch_[j].assign(like[j]->size, 0.0);
    out.push_back(
        {like[j]->name, scratch_[j], like[j]->offset, like[j]->global_size, like[j]->grid});
  }
  return out;
}

void CheckpointIo::copy(const Key& k, Level from, Level to) {
  const auto* entry = record_.find(k, from);
  const std::vector<std::size_t> variables = entry->variables;
  std::vector<const FieldShape*> like;
  for (std::size_t v : variables) like.push_back(&state_.at(v));
  const std::vector<Field> fields = scratch_fields(like);
  copy_exact_ = entry->exact;
  get(k, from, fields, false);
  copying_ = true;
  put(k, to, to, fields, variables);
  copying_ = false;
}

void CheckpointIo::prefetch(const Key& k) {
  const auto level = record_.cheapest(k);
  if (!level) return;
  const auto* entry = record_.find(k, *level);
  if (!prefetched_.insert(k).second) return;
  if (entry->store == Level::Disk) {
    stores_->disk().prefetch(k);
  } else if (entry->store == Level::Ram) {
    stores_->ram().prefetch(k);
  }
}

bool CheckpointIo::prefetches() const {
  return stores_->disk_if_open() != nullptr || stores_->config().store.codec.name != "none";
}

void CheckpointIo::drop() noexcept {
  unmeasured_.reset();
  ram_stored_.clear();
  ram_stored_bytes_ = 0;
  for (const auto& [k, level] : record_.held()) {
    try {
      const auto entry = record_.freed(k, level);
      if (entry.store == Level::Ram) {
        stores_->ram().erase(k);
      } else {
        stores_->discard(k);
      }
    } catch (...) {
      // Freeing is best effort here: the stores report their own failures later.
    }
  }
}

void CheckpointIo::spill(std::int64_t at_most) {
  settle();
  std::int64_t moved = 0;
  for (const auto& [k, level] : record_.held()) {
    const auto* entry = record_.find(k, level);
    if (entry->store != Level::Ram) continue;
    if (moved++ == at_most) break;
    move_to_disk(k, level);
  }
}

Claim CheckpointIo::held(const CheckpointSizes& sizes) const {
  Claim c;
  for (const auto& [key, level] : record_.held()) {
    const auto* e = record_.find(key, level);
    const double bytes = static_cast<double>(key.kind == Kind::Pullback ? sizes.pullback
                                             : key.kind == Kind::Final  ? sizes.state
                                                                        : sizes.restart);
    if (e->store == Level::Ram) {
      ++c.ram;
      c.ram_bytes += bytes;
    } else {
      ++c.disk;
    }
  }
  // Compressed, they take at most the budget on every rank (keep_to_budget agreed on it).
  if (plan_->compressed_budget > 0) c.ram_bytes = std::min(c.ram_bytes, plan_->compressed_budget);
  c.ram = claimed_slots(*plan_, c.ram, c.ram_bytes);
  return c;
}

std::int64_t CheckpointIo::spilled() const {
  std::int64_t n = 0;
  for (const auto& [key, level] : record_.held()) {
    const auto* e = record_.find(key, level);
    if (level != Level::Disk && e->store == Level::Disk && key.kind != Kind::Final) ++n;
  }
  return n;
}

}  // namespace rwd::engine::detail
