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

namespace {

std::vector<storage::FieldView> views(const std::vector<Field>& fields) {
  std::vector<storage::FieldView> out;
  out.reserve(fields.size());
  for (const auto& f : fields) out.push_back({f.name, f.data, f.offset, f.global_size, f.grid});
  return out;
}

}  // namespace

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
    copying_ = true;  // a tape's data, whose origin is not known here: counted as lossy
    copy_exact_ = false;
    put(k, level, where, data, std::move(variables));
    copying_ = false;
    source_ = std::move(source);
    return;
  }
  // Under a lossy codec only restart states may lose bits (and pullback data when the stores
  // allow it): a final state, and pullback data by default, are kept exactly.
  const bool exact =
      k.kind == Kind::Final || (k.kind == Kind::Pullback && !stores_->config().lossy_pullbacks);
  const bool lossy =
      where == Level::Ram && !exact && storage::codec_is_lossy(stores_->config().store.codec.name);
  const auto v = views(fields);
  stepper_->on_io(IoEvent::WriteBegin);
  const auto t0 = SteadyClock::now();
  const bool metered = where == Level::Ram && plan_->compressed_budget > 0;
  const std::int64_t before = metered ? stores_->ram().stats().bytes_written : 0;
  store(where).put(k, {v, {}, exact});
  seconds_ += seconds_since(t0);
  stepper_->on_io(IoEvent::WriteEnd);
  const std::int64_t raw = bytes_of(fields);
  // Exact: a read gives back the first sweep's bits: stored without loss, from a working state
  // that descends from exact data only (a copy: from a source that holds them).
  const bool stored_exact = !lossy && (copying_ ? copy_exact_ : working_exact_);
  record_.stored(k, level, {where, raw, std::move(variables), stored_exact});
  if (metered) keep_to_budget(k, level, stores_->ram().stats().bytes_written - before, raw);
}

namespace {

// What a checkpoint key is, in the front end's words ("step 45's stages" in PETSc).
std::string described(const Key& k, const std::string& pullback_data) {
  const std::string step = std::to_string(k.step);
  switch (k.kind) {
    case Kind::Pullback:
      return "step " + step + "'s " + pullback_data;
    case Kind::Final:
      return "the final state x_" + step;
    default:
      return "the state x_" + step;
  }
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

}  // namespace

void CheckpointIo::keep_to_budget(const Key& k, Level level, std::int64_t bytes, std::int64_t raw) {
  ram_stored_[{k, level}] = bytes;
  ram_stored_bytes_ += bytes;
  ram_put_stored_ += bytes;
  ram_put_raw_ += raw;
  const MPI_Comm comm = stores_->comm();
  const int rank = comm::comm_rank(comm);
  // The highest rank over the budget, plus one (0: none).
  int over = static_cast<double>(ram_stored_bytes_) > plan_->compressed_budget ? rank + 1 : 0;
  comm::mpi_check(MPI_Allreduce(MPI_IN_PLACE, &over, 1, MPI_INT, MPI_MAX, comm),
                  "MPI_Allreduce (compressed RAM budget)");
  if (over == 0) {
    ram_stored_peak_ = std::max(ram_stored_peak_, ram_stored_bytes_);
    return;
  }
  // Disk room, in the recording's own disk budget and in the stores': beyond what the schedule
  // itself may hold there and what was moved there already.
  const StoresConfig& sc = stores_->config();
  const std::int64_t own = plan_->params.disk;
  const std::int64_t free = sc.disk == 0 ? 0 : stores_->available(id_).disk;
  const std::int64_t used = (plan_->disk_peak ? *plan_->disk_peak : own) + spilled();
  const auto room = [used](std::int64_t cap) {
    return cap == schedule::kUnlimited || cap - used > 0;
  };
  if (own != 0 && sc.disk != 0 && !sc.store.directory.empty() && room(own) && room(free)) {
    move_to_disk(k, level);
    ++over_budget_moves_;
    return;
  }
  // The over rank's numbers, for the same message on every rank.
  std::int64_t said[4] = {ram_stored_bytes_, bytes, ram_put_raw_, ram_put_stored_};
  comm::mpi_check(MPI_Bcast(said, 4, MPI_INT64_T, over - 1, comm),
                  "MPI_Bcast (compressed RAM budget)");
  const std::string disk =
      own == 0 ? "there is no disk budget to move it to"
               : "the disk budget has no room left to move it to (what the schedule puts there "
                 "and " +
                     std::to_string(spilled()) + " checkpoints moved before)";
  throw Error(ErrorCode::InvalidArgument,
              "compressed RAM checkpoints take more than their budget: on rank " +
                  std::to_string(over - 1) + " they would take " + std::to_string(said[0]) +
                  " bytes with " + described(k, plan_->pullback_data) + " (" +
                  std::to_string(said[1]) + " bytes), over the budget of " +
                  std::to_string(static_cast<long long>(plan_->compressed_budget)) +
                  " bytes planned with a compression ratio of " +
                  number(plan_->sizes.compress_ratio) + " (" + plan_->sizes.compress_source +
                  "), where that rank's checkpoints so far compressed " +
                  number(static_cast<double>(said[2]) /
                         static_cast<double>(std::max<std::int64_t>(said[3], 1))) +
                  " to 1 on average; " + disk + ". " + plan_->over_budget_advice);
}

void CheckpointIo::move_to_disk(const Key& k, Level level) {
  const auto* entry = record_.find(k, level);
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
  left_ram(k, level);
  record_.relocate(k, level, Level::Disk);
}

void CheckpointIo::left_ram(const Key& k, Level level) {
  const auto it = ram_stored_.find({k, level});
  if (it == ram_stored_.end()) return;
  ram_stored_bytes_ -= it->second;
  ram_stored_.erase(it);
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
  if (entry->store == Level::Disk && prefetched_.insert(k).second) stores_->disk().prefetch(k);
}

void CheckpointIo::drop() noexcept {
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
