#include "checkpoint_io.hpp"

#include <utility>

#include "rewind/error.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine::detail {

namespace {

std::vector<storage::FieldView> views(const std::vector<Field>& fields) {
  std::vector<storage::FieldView> out;
  out.reserve(fields.size());
  for (const auto& f : fields) out.push_back({f.name, f.data, f.offset, f.global_size});
  return out;
}

}  // namespace

std::vector<FieldShape> shapes_of(const std::vector<Field>& fields) {
  std::vector<FieldShape> out;
  out.reserve(fields.size());
  for (const Field& f : fields) {
    out.push_back({std::string(f.name), f.data.size(), f.offset, f.global_size});
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
    source_(k, data);
    Source source = std::move(source_);
    put(k, level, where, data, std::move(variables));
    source_ = std::move(source);
    return;
  }
  const auto v = views(fields);
  stepper_->on_io(IoEvent::WriteBegin);
  const auto t0 = SteadyClock::now();
  store(where).put(k, {v, {}});
  seconds_ += seconds_since(t0);
  stepper_->on_io(IoEvent::WriteEnd);
  record_.stored(k, level, {where, bytes_of(fields), std::move(variables)});
}

void CheckpointIo::get(const Key& k, Level level, const std::vector<Field>& fields,
                       bool into_stepper) {
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
  const record::CheckpointRecord::Entry entry = record_.freed(k, level);
  const auto t0 = SteadyClock::now();
  store(entry.store).erase(k);
  seconds_ += seconds_since(t0);
}

std::vector<Field> CheckpointIo::scratch_fields(const std::vector<const FieldShape*>& like) {
  std::vector<Field> out;
  scratch_.resize(like.size());
  for (std::size_t j = 0; j < like.size(); ++j) {
    scratch_[j].assign(like[j]->size, 0.0);
    out.push_back({like[j]->name, scratch_[j], like[j]->offset, like[j]->global_size});
  }
  return out;
}

void CheckpointIo::copy(const Key& k, Level from, Level to) {
  const auto* entry = record_.find(k, from);
  const std::vector<std::size_t> variables = entry->variables;
  std::vector<const FieldShape*> like;
  for (std::size_t v : variables) like.push_back(&state_.at(v));
  const std::vector<Field> fields = scratch_fields(like);
  get(k, from, fields, false);
  copying_ = true;
  put(k, to, to, fields, variables);
  copying_ = false;
}

void CheckpointIo::prefetch(const Key& k) {
  const auto level = record_.cheapest(k);
  if (!level) return;
  const auto* entry = record_.find(k, *level);
  if (entry->store == Level::Disk && prefetched_.insert(k).second) stores_->disk().prefetch(k);
}

void CheckpointIo::drop() noexcept {
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
  std::int64_t moved = 0;
  for (const auto& [k, level] : record_.held()) {
    const auto* entry = record_.find(k, level);
    if (entry->store != Level::Ram) continue;
    if (moved++ == at_most) break;
    std::vector<const FieldShape*> like;
    if (k.kind == Kind::Pullback) {
      for (const FieldShape& sh : pullback_) like.push_back(&sh);
    } else {
      for (std::size_t v : entry->variables) like.push_back(&state_.at(v));
    }
    const std::vector<Field> copy = scratch_fields(like);
    stores_->ram().get(k, {copy, {}});
    record_.read(*entry);
    stores_->disk().put(k, {views(copy), {}});
    stores_->ram().erase(k);
    record_.relocate(k, level, Level::Disk);
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
