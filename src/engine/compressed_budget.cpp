// A plan that counts on compression (Plan::compressed_budget): each RAM put is measured against
// the budget's bytes, agreed over the ranks; a checkpoint that does not fit moves to disk when
// there is room there, or is dropped and recomputed from an earlier one when it is needed
// (Sweeps::recompute_dropped); only what nothing can replace stops the run.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint_io.hpp"
#include "keeping.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"

namespace rwd::engine::detail {

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

std::atomic<std::int64_t> over_every{0}, over_count{0};

}  // namespace

void CheckpointIo::count_as_over_budget_every(std::int64_t n) {
  over_every.store(n);
  over_count.store(0);
}

void CheckpointIo::keep_to_budget(const Key& k, Level level, std::int64_t bytes, std::int64_t raw) {
  ram_stored_[{k, level}] = bytes;
  ram_stored_bytes_ += bytes;
  ram_put_stored_ += bytes;
  ram_put_raw_ += raw;
  // Made again from a durable tape: the run that made the tape kept to the budget, and what it
  // dropped is dropped again when the import ends (drop_untaped).
  if (from_tape_) return;
  const MPI_Comm comm = stores_->comm();
  const int rank = comm::comm_rank(comm);
  const std::int64_t every = over_every.load();
  bool forced = every > 0 && ++over_count % every == 0;
  while (true) {
    // The highest rank over the budget, plus one (0: none).
    int over =
        forced || static_cast<double>(ram_stored_bytes_) > plan_->compressed_budget ? rank + 1 : 0;
    forced = false;
    comm::mpi_check(MPI_Allreduce(MPI_IN_PLACE, &over, 1, MPI_INT, MPI_MAX, comm),
                    "MPI_Allreduce (compressed RAM budget)");
    if (over == 0) {
      ram_stored_peak_ = std::max(ram_stored_peak_, ram_stored_bytes_);
      return;
    }
    // Disk room, in the recording's own disk budget and in the stores': beyond what the
    // schedule itself may hold there and what was moved there already.
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
    // Drop a checkpoint that can be recomputed (every rank holds the same record, so every rank
    // drops the same one) and measure again. A plan with a disk may move restart checkpoints
    // between the levels, which a dropped one cannot be: it drops pullback data only.
    const std::optional<std::pair<Key, Level>> victim = droppable(own != 0);
    if (!victim) throw_over_budget(k, bytes, over - 1);
    drop(victim->first, victim->second);
  }
}

std::optional<std::pair<Key, Level>> CheckpointIo::droppable(bool pullback_only) const {
  // Each RAM checkpoint is recomputed, once dropped, from the latest state held before it (for
  // pullback data: at or before its step). The one dropped is the one whose loss merges the
  // shortest stretch of steps: the gap between the states before and after a restart
  // checkpoint (twice the gap before it if it is the latest), the steps to run again for
  // pullback data. Ties: the latest.
  const bool holds_next = plan_->params.pullback_holds_next;
  std::vector<Step> states;  // the steps of the states held
  for (const auto& [held, l] : record_.held()) {
    if (const auto j = state_held_by(held, holds_next)) states.push_back(*j);
  }
  std::sort(states.begin(), states.end());
  std::optional<std::pair<Key, Level>> best;
  Step best_cost = 0;
  for (const auto& [held, bytes] : ram_stored_) {
    const Key& c = held.first;
    if (c.kind == Kind::Final || (pullback_only && c.kind != Kind::Pullback)) continue;
    const Step m = c.kind == Kind::Pullback ? c.step : c.step - 1;
    const auto before = latest_state(*this, m, holds_next);
    if (!before) continue;
    Step cost = c.step + 1 - before->step;  // pullback data: the steps up to and including it
    if (c.kind == Kind::Restart) {
      const auto after = std::upper_bound(states.begin(), states.end(), c.step);
      cost = after == states.end() ? 2 * (c.step - before->step) : *after - before->step;
    }
    if (!best || cost < best_cost || (cost == best_cost && c.step > best->first.step)) {
      best = held;
      best_cost = cost;
    }
  }
  return best;
}

void CheckpointIo::drop(const Key& k, Level level) {
  erase(k, level);
  dropped_.insert({k, level});
  ++dropped_count_;
}

void CheckpointIo::drop_untaped() {
  settle();
  for (const auto& [k, level] : untaped_) {
    const auto* entry = record_.find(k, level);
    if (!entry) continue;  // freed by the schedule, as in the run that made the tape
    if (entry->store == Level::Ram) {
      drop(k, level);
    } else {  // moved to disk (the tape names every checkpoint the disk holds)
      broken_tape(k);
    }
  }
  untaped_.clear();
}

double CheckpointIo::measured_ratio() {
  settle();
  double smallest = ram_put_stored_ > 0
                        ? static_cast<double>(ram_put_raw_) / static_cast<double>(ram_put_stored_)
                        : std::numeric_limits<double>::infinity();
  comm::mpi_check(MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPI_DOUBLE, MPI_MIN, stores_->comm()),
                  "MPI_Allreduce (measured compression ratio)");
  return smallest;
}

void CheckpointIo::release_anchor() {
  settle();
  if (anchor_ && record_.find(*anchor_, Level::Ram)) erase(*anchor_, Level::Ram);
  anchor_.reset();
}

void CheckpointIo::forget_drops() {
  settle();
  dropped_.clear();
  anchor_.reset();
}

void CheckpointIo::broken_tape(const Key& k) const {
  throw Error(ErrorCode::Corrupt, "recording: the durable tape does not hold " +
                                      storage::to_string(k) +
                                      ", which its replay kept on disk; the tape is not the one "
                                      "this recording's first sweep made");
}

bool CheckpointIo::dropped(const Key& k, Level level) {
  settle();
  return dropped_.count({k, level}) != 0;
}

bool CheckpointIo::dropped_anywhere(const Key& k) {
  return dropped(k, Level::Ram) || dropped(k, Level::Disk) || dropped(k, Level::Work);
}

void CheckpointIo::forget_dropped(const Key& k) {
  for (Level l : {Level::Work, Level::Ram, Level::Disk}) dropped_.erase({k, l});
}

void CheckpointIo::throw_over_budget(const Key& k, std::int64_t bytes, int over_rank) {
  const MPI_Comm comm = stores_->comm();
  // The over rank's numbers, for the same message on every rank.
  std::int64_t said[4] = {ram_stored_bytes_, bytes, ram_put_raw_, ram_put_stored_};
  comm::mpi_check(MPI_Bcast(said, 4, MPI_INT64_T, over_rank, comm),
                  "MPI_Bcast (compressed RAM budget)");
  const std::string disk =
      plan_->params.disk == 0
          ? "there is no disk budget to move it to, and no RAM checkpoint held can be dropped "
            "and recomputed (the first restart checkpoint and the final state cannot)"
          : "the disk budget has no room left to move it to (what the schedule puts there and " +
                std::to_string(spilled()) +
                " checkpoints moved before), and no pullback data held in RAM can be dropped "
                "and recomputed (with a disk, restart checkpoints are not dropped)";
  // A group's communicator (an ensemble task's) numbers its ranks its own way: name the
  // world's rank too.
  std::string rank = std::to_string(over_rank);
  int same = MPI_UNEQUAL;
  comm::mpi_check(MPI_Comm_compare(comm, MPI_COMM_WORLD, &same), "MPI_Comm_compare");
  if (same != MPI_IDENT && same != MPI_CONGRUENT) {
    MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    int in_world = MPI_UNDEFINED;
    comm::mpi_check(MPI_Comm_group(comm, &mine), "MPI_Comm_group");
    comm::mpi_check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
    comm::mpi_check(MPI_Group_translate_ranks(mine, 1, &over_rank, world, &in_world),
                    "MPI_Group_translate_ranks");
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    rank += " of its communicator (rank " + std::to_string(in_world) + " of MPI_COMM_WORLD)";
  }
  throw Error(ErrorCode::InvalidArgument,
              "compressed RAM checkpoints take more than their budget: on rank " + rank +
                  " they would take " + std::to_string(said[0]) + " bytes with " +
                  described(k, plan_->pullback_data) + " (" + std::to_string(said[1]) +
                  " bytes), over the budget of " +
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

}  // namespace rwd::engine::detail
