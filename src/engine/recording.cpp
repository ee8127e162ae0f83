#include "rewind/engine/recording.hpp"

#include <mpi.h>

#include <algorithm>
#include <deque>
#include <set>

#include "checkpoint_io.hpp"
#include "replay_check.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"
#include "rewind/record/checkpoint_record.hpp"
#include "rewind/record/restart_sets.hpp"
#include "rewind/schedule/adaptors.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine {

using detail::bytes_of;
using detail::select;
using schedule::Action;
using schedule::Level;
using storage::Key;

const char* to_string(Phase phase) noexcept {
  switch (phase) {
    case Phase::Recording:
      return "recording";
    case Phase::Recorded:
      return "recorded";
    case Phase::Parked:
      return "parked";
    case Phase::Reversing:
      return "reversing";
    case Phase::Done:
      return "done";
  }
  return "?";
}

namespace {

using Clock = SteadyClock;

// The settings every rank must pass alike, each with its name for the message: the
// recording's, and its stores' when it has them.
std::vector<comm::Setting> settings_of(const RecordingConfig& c, const StoresConfig* st) {
  using comm::setting_hash;
  const auto& p = c.params;
  const SettingNames& n = c.names;
  std::uint64_t costs = setting_hash(p.step_cost.size());
  for (double v : p.step_cost) costs = comm::setting_hash(&v, sizeof v, costs);
  for (double v : p.state_bytes) costs = comm::setting_hash(&v, sizeof v, costs);
  std::vector<comm::Setting> out = {{n.schedule, setting_hash(c.schedule)},
                                    {n.steps, setting_hash(p.steps)},
                                    {n.ram, setting_hash(p.ram)},
                                    {n.disk, setting_hash(p.disk)},
                                    {"the disk write cost", setting_hash(p.write_cost)},
                                    {"the disk read cost", setting_hash(p.read_cost)},
                                    {"the period", setting_hash(p.period)},
                                    {n.ram_bytes, setting_hash(c.ram_bytes)},
                                    {"the slot size", setting_hash(c.slot_size)},
                                    {n.no_pullback, setting_hash(c.pullback_checkpoints)},
                                    {"RecordingConfig::max_steps", setting_hash(c.max_steps)},
                                    {"RecordingConfig::verify", setting_hash(c.verify)},
                                    {"the step costs and sizes", costs}};
  if (st) {
    out.insert(out.end(), {{"StoresConfig::ram", setting_hash(st->ram)},
                           {"StoresConfig::ram_bytes", setting_hash(st->ram_bytes)},
                           {"StoresConfig::disk", setting_hash(st->disk)},
                           {n.directory, setting_hash(st->store.directory)},
                           {"StoreConfig::label", setting_hash(st->store.label)},
                           {"StoreConfig::keep_files", setting_hash(st->store.keep_files)},
                           {n.async_io, setting_hash(st->store.async_io)},
                           {n.max_staged_bytes, setting_hash(st->store.max_staged_bytes)},
                           {"StoresConfig::ram_store", setting_hash(st->ram_store)},
                           {"StoresConfig::disk_store", setting_hash(st->disk_store)}});
  }
  return out;
}

// The sizes every rank plans with (each kind's largest over the ranks), once the ranks agreed
// they passed the same settings.
CheckpointSizes agreed_sizes(Stepper& stepper, record::RestartSets& sets, MPI_Comm comm,
                             const RecordingConfig& config, const StoresConfig* stores) {
  comm::agree_settings(comm, settings_of(config, stores));
  const std::vector<Field> state = stepper.state();
  const std::uint64_t local[3] = {
      static_cast<std::uint64_t>(bytes_of(select(state, sets.written()))),
      static_cast<std::uint64_t>(bytes_of(stepper.pullback())),
      static_cast<std::uint64_t>(bytes_of(state))};
  std::uint64_t largest[3] = {0, 0, 0};
  comm::mpi_check(MPI_Allreduce(local, largest, 3, MPI_UINT64_T, MPI_MAX, comm),
                  "MPI_Allreduce (checkpoint sizes)");
  return {static_cast<std::int64_t>(largest[0]), static_cast<std::int64_t>(largest[1]),
          static_cast<std::int64_t>(largest[2])};
}

std::size_t variables_of(Stepper& s) {
  const std::size_t n = s.state().size();
  require(n > 0, "recording: the stepper declares no state variables (Stepper::state())");
  return n;
}

record::RestartSets restart_sets(Stepper& s, const RecordingConfig& c) {
  return record::RestartSets(
      variables_of(s), [&s](Step i) { return s.access(i); },
      record::Horizon{c.params.steps, c.max_steps, 64});
}

}  // namespace

Claim claim_of(const Plan& plan) {
  Claim c;
  c.ram = plan.params.ram;
  c.ram_bytes = plan.ram_bytes_bound;
  c.disk = plan.params.disk;
  return c;
}

Plan plan_for(Stepper& stepper, MPI_Comm comm, const RecordingConfig& config) {
  record::RestartSets sets = restart_sets(stepper, config);
  return plan_recording(config, agreed_sizes(stepper, sets, comm, config, nullptr));
}

struct Recording::Impl {
  Impl(Stepper& s, std::shared_ptr<Stores> st, const RecordingConfig& c)
      : stepper_ptr(&s),
        stores(std::move(st)),
        config(c),
        sets(
            variables_of(s), [this](Step i) { return stepper().access(i); },
            record::Horizon{c.params.steps, c.max_steps, 64}) {
    require(stores != nullptr, "recording: the stores are null");
    stores->collect();
    sizes = agreed_sizes(stepper(), sets, stores->comm(), config, &stores->config());
    plan = plan_recording(config, sizes);
    if (plan.params.disk != 0 && stores->config().store.directory.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "recording: the " + plan.schedule +
                      " schedule may place checkpoints on disk, and no directory is set; set "
                      "StoreConfig::directory (EngineConfig::store.directory, "
                      "StoresConfig::store.directory) to an existing writable directory, or "
                      "give no disk budget (params.disk = 0)");
    }
    sched = schedule::make_schedule(plan.schedule, plan.params);
    steps = plan.params.steps;
    id = stores->next_recording_id();
    io.emplace(stores, id, stepper_ptr, detail::shapes_of(stepper().state()),
               detail::shapes_of(stepper().pullback()), &plan);
    stats.schedule = plan.schedule;
    stores->claim(id, full_claim());
    take_stepper();
    overlap_at_start = stores->io_overlap_seconds();
    prefetch_at_start = stores->prefetch_stats();
    check = detail::ReplayCheck(comm::comm_rank(stores->comm()));
    remember(0);
    try {
      position = 0;
      // Steps are reported as the schedule's model counts them (unit cost unless the plan gives
      // step costs): a measured time would differ between ranks, and every rank must build the
      // same schedule.
      sched->observe_step(-1, 0.0, schedule::state_bytes(plan.params, 0));
      pull_first_sweep();
    } catch (...) {
      drop();
      throw;
    }
  }

  // An online run's end, agreed: every rank must say the same (a rank that stopped alone would
  // leave the others waiting in the next collective call).
  bool finished_everywhere(Step i) {
    const int mine = stepper().finished(i) ? 1 : 0;
    int answers[2] = {mine, -mine}, extremes[2] = {0, 0};
    comm::mpi_check(MPI_Allreduce(answers, extremes, 2, MPI_INT, MPI_MAX, stores->comm()),
                    "MPI_Allreduce (Stepper::finished)");
    if (extremes[0] != -extremes[1]) {
      throw Error(ErrorCode::InvalidArgument,
                  "Stepper::finished(" + std::to_string(i) +
                      ") answered differently on different ranks; every rank must give the same "
                      "answer (decide it from values every rank shares)");
    }
    return mine == 1;
  }

  // ---- the stepper's buffers -----------------------------------------------------------
  void take_stepper() {
    stores->occupy(stepper_ptr, id, [this] { evicted(); });
  }
  void release_stepper() noexcept { stores->vacate(stepper_ptr, id); }

  // Another recording took the stepper over while this one still needed its buffers.
  void evicted() {
    if (phase == Phase::Recorded && !work_lost && can_rebuild()) {
      work_lost = true;  // the reverse rebuilds x_n, checked against the first sweep
      position.reset();
    } else if (phase == Phase::Recorded || phase == Phase::Recording || phase == Phase::Reversing) {
      overwritten = true;
    }
  }

  void require_buffers(const char* call) const {
    if (!overwritten) return;
    throw Error(ErrorCode::InvalidArgument,
                std::string("recording ") + std::to_string(id) + ": " + call +
                    ": another recording used this recording's stepper while it was '" +
                    to_string(phase) +
                    "' and its working state could not be rebuilt; park() a recording before "
                    "making or reversing another on the same stepper");
  }

  // ---- the replay check -------------------------------------------------------------
  void remember(Step step) {
    if (config.verify) check.remember(step, stepper().state());
  }
  void compare(Step step) {
    if (config.verify) check.compare(step, stepper().state());
  }
  // Collective: every rank throws if a recomputation on some rank missed the first sweep's bits.
  void settle_check() {
    if (!config.verify) return;
    comm::agree(stores->comm(), check.take_mismatch());
  }

  // ---- budget ------------------------------------------------------------------------
  Claim full_claim() const { return claim_of(plan); }

  // The plan's budget, with the disk taken by checkpoints spilled there from RAM.
  Claim reverse_claim() const {
    Claim c = full_claim();
    if (c.disk != schedule::kUnlimited) c.disk += io->spilled();
    return c;
  }

  // What the recording holds now, in the sizes every rank agreed on.
  Claim held_claim() const { return io->held(sizes); }

  // ---- checkpoints ------------------------------------------------------------------
  Key key(Step step, Kind kind) const { return io->key(step, kind); }

  // Every checkpoint still recorded is erased (RAM ones at once, disk ones at the stores' next
  // collective call) and the budget given back. Never collective, so a destructor can call it.
  void drop() noexcept {
    io->drop();
    stores->release(id);
    release_stepper();
  }

  // The restart data of x_b as a checkpoint written now holds it.
  std::vector<Field> restart_fields(Step b) { return select(stepper().state(), sets.at(b)); }

  void put_restart(Step b, Level level) {
    const auto& variables = sets.at(b);
    io->put(key(b, Kind::Restart), level, level, select(stepper().state(), variables), variables);
  }

  [[noreturn]] void broken(const std::string& what) const {
    throw Error(ErrorCode::Internal, "schedule '" + plan.schedule + "': " + what);
  }

  void require_phase(Phase wanted, const char* call) const {
    if (phase != wanted) {
      throw Error(ErrorCode::InvalidArgument, std::string("recording: ") + call + " needs phase '" +
                                                  to_string(wanted) + "', the recording is '" +
                                                  to_string(phase) + "'");
    }
  }

  // ---- the action stream -------------------------------------------------------------
  Action next_action() {
    if (phase == Phase::Reversing) {
      // Look ahead so that disk reads the schedule will soon need start early.
      while (ahead.size() < kLookahead) {
        auto a = sched->next();
        if (!a) break;
        ahead.push_back(*a);
        if (std::holds_alternative<schedule::EndReverse>(*a)) break;
      }
      prefetch_ahead();
      if (!ahead.empty()) {
        const Action a = ahead.front();
        ahead.pop_front();
        return a;
      }
    }
    auto a = sched->next();
    if (!a) broken("the action stream ended before EndReverse");
    return *a;
  }

  void prefetch_ahead() {
    if (!stores->disk_if_open()) return;
    for (const Action& a : ahead) {
      if (const auto* c = std::get_if<schedule::Copy>(&a); c && c->from != Level::Work) {
        io->prefetch(key(c->n, Kind::Restart));
      } else if (const auto* m = std::get_if<schedule::Move>(&a);
                 m && m->from != Level::Work && m->to != Level::None) {
        io->prefetch(key(m->n, Kind::Restart));
      } else if (const auto* r = std::get_if<schedule::Reverse>(&a)) {
        for (Step i = r->n1 - 1; i >= r->n0 && i > r->n1 - 1 - kPrefetchSteps; --i) {
          io->prefetch(key(i, Kind::Pullback));
        }
      }
    }
  }

  // ---- shared action pieces ----------------------------------------------------------
  void record_pullback(Step i, const schedule::Forward& f) {
    if (!f.write_pullback) return;
    if (f.level == Level::Work) {
      io->record().set_work_pullback(i);
    } else {
      io->put(key(i, Kind::Pullback), f.level, f.level, stepper().pullback());
    }
  }

  void transfer(Step n, Level from, Level to, bool move) {
    const Key k = key(n, Kind::Restart);
    if (from == Level::Work) {
      if (position != n)
        broken("stores x_" + std::to_string(n) + " but it is not the working state");
      if (to == Level::Ram || to == Level::Disk) put_restart(n, to);
      if (move) position.reset();
      return;
    }
    const auto* entry = io->record().find(k, from);
    if (!entry) {
      broken("reads " + storage::to_string(k) + " from " + schedule::to_string(from) +
             " where it is not held");
    }
    if (to == Level::Work) {
      if (phase == Phase::Recording) {
        throw Error(ErrorCode::InvalidArgument,
                    "schedule '" + plan.schedule +
                        "' restores a checkpoint during the first sweep, which a host that owns "
                        "the time loop cannot do; choose another schedule");
      }
      io->get(k, from, select(stepper().state(), entry->variables));
      position = n;
    } else if (to == Level::Ram || to == Level::Disk) {
      io->copy(k, from, to);
    }
    if (move) io->erase(k, from);
  }

  bool transfer_action(const Action& a) {
    if (const auto* c = std::get_if<schedule::Copy>(&a)) {
      transfer(c->n, c->from, c->to, false);
      return true;
    }
    if (const auto* m = std::get_if<schedule::Move>(&a)) {
      transfer(m->n, m->from, m->to, true);
      return true;
    }
    return false;
  }

  // ---- first sweep -------------------------------------------------------------------
  // Pulls actions until a Forward from the current position is open, or EndForward.
  void pull_first_sweep() {
    while (true) {
      const Action a = next_action();
      if (const auto* f = std::get_if<schedule::Forward>(&a)) {
        if (f->n0 != position) {
          broken("the first sweep jumps from x_" + std::to_string(position.value_or(-1)) +
                 " to x_" + std::to_string(f->n0));
        }
        if (f->write_restart) put_restart(f->n0, f->level);
        forward = *f;
        return;
      }
      if (std::holds_alternative<schedule::EndForward>(a)) {
        end_forward_seen = true;
        return;
      }
      if (!transfer_action(a)) broken("reverses before the first sweep ended");
    }
  }

  bool record_wanted(Step i) const {
    if (!forward || !forward->write_pullback) return false;
    return forward->level != Level::Work || i == forward->n1 - 1 || steps == 0;
  }

  void forward_step_done(Step i, bool last) {
    require_phase(Phase::Recording, "forward_step_done()");
    require_buffers("forward_step_done()");
    if (config.max_steps > 0 && i + 1 > config.max_steps) {
      throw Error(ErrorCode::InvalidArgument,
                  "recording: step " + std::to_string(i) +
                      " was taken, but RecordingConfig::"
                      "max_steps says the run cannot pass " +
                      std::to_string(config.max_steps) +
                      " steps (its restart sets were computed for that bound); raise max_steps or "
                      "leave it 0");
    }
    if (!forward || position != i) {
      throw Error(ErrorCode::InvalidArgument,
                  "schedule '" + plan.schedule + "' was planned for " + std::to_string(steps) +
                      " steps, but step " + std::to_string(i + 1) +
                      " was taken; give the exact step count (" + config.names.steps +
                      ") or use an online schedule");
    }
    record_pullback(i, *forward);
    ++stats.forward_steps;
    position = i + 1;
    remember(i + 1);
    sched->observe_step(i, schedule::step_cost(plan.params, i),
                        schedule::state_bytes(plan.params, i + 1));
    if (*position == forward->n1) {
      forward.reset();
      // After the last step the schedule learns the step count first (end_forward), as an
      // online schedule needs; otherwise the next action is due now, while the host still holds
      // x_{i+1} (it may have to be stored).
      if (!last) pull_first_sweep();
    }
  }

  void end_forward(Step n) {
    require_phase(Phase::Recording, "end_forward()");
    if (position != n)
      broken("end of the first sweep at x_" + std::to_string(n) + " reported at x_" +
             std::to_string(position.value_or(-1)));
    if (steps == 0) {
      require(n >= 1, "an adjoint run needs at least one step");
      steps = n;
      sets.set_steps(n);
      sched->finalize(n);
      forward.reset();
      if (!end_forward_seen) pull_first_sweep();
    } else if (n != steps) {
      throw Error(ErrorCode::InvalidArgument,
                  "schedule '" + plan.schedule + "' was planned for " + std::to_string(steps) +
                      " steps, but the forward run ended after " + std::to_string(n) +
                      "; give the exact step count (" + config.names.steps +
                      ") or use an online schedule");
    } else {
      // An online schedule used with a known step count still learns it here, as it would
      // from any driver (the simulator does the same).
      if (sched->online()) {
        sched->finalize(n);
        forward.reset();
      }
      if (!end_forward_seen && !forward) pull_first_sweep();
    }
    if (!end_forward_seen) broken("no EndForward at x_" + std::to_string(n));
    phase = Phase::Recorded;
    stats.steps = n;
    // Until its reverse, the recording needs only what it holds (the reverse claims its budget
    // again).
    stores->claim(id, held_claim());
  }

  // ---- parking -----------------------------------------------------------------------
  // What park() will add: the final state (not for a thinned recording that kept step n-1's
  // data, which stands for it) and step n-1's pullback data if the stepper holds it.
  std::pair<int, double> park_adds() const {
    int count = 0;
    double bytes = 0.0;
    if (!thinned_without_final()) {
      ++count;
      bytes += static_cast<double>(sizes.state);
    }
    if (io->record().work_pullback() == steps - 1) {
      ++count;
      bytes += static_cast<double>(sizes.pullback);
    }
    return {count, bytes};
  }

  // What park() will hold: the added checkpoints in RAM, or on disk if the stores cannot grant
  // them in RAM but can on disk.
  std::pair<Claim, Level> park_plan() const {
    const auto [count, bytes] = park_adds();
    Claim ram = held_claim();
    ram.ram += count;
    ram.ram_bytes += bytes;
    if (stores->fits(id, ram) || count == 0) return {ram, Level::Ram};
    Claim disk = held_claim();
    if (disk.disk != schedule::kUnlimited) disk.disk += count;
    if (stores->config().disk != 0 && stores->fits(id, disk)) return {disk, Level::Disk};
    return {ram, Level::Ram};
  }
  Claim park_claim() const { return park_plan().first; }

  bool can_rebuild() const {
    for (const auto& [k, level] : io->record().held()) {
      if (k.kind == Kind::Restart && k.step < steps) return true;
    }
    return false;
  }

  void park() {
    require_phase(Phase::Recorded, "park()");
    require_buffers("park()");
    if (work_lost) {
      throw Error(ErrorCode::InvalidArgument,
                  "recording: park() after lose_work(): the stepper no longer holds x_n (the "
                  "reverse rebuilds it; a recording with lost work needs no parking)");
    }
    if (position != steps) broken("parks with the working state not at x_n");
    const auto [claim, where] = park_plan();
    stores->claim(id, claim);  // a refused park leaves the recording as it was
    if (!thinned_without_final()) {
      const std::vector<Field> state = stepper().state();
      std::vector<std::size_t> all(state.size());
      for (std::size_t v = 0; v < all.size(); ++v) all[v] = v;
      io->put(key(steps, Kind::Final), Level::Work, where, state, all);
    }
    if (io->record().work_pullback() == steps - 1) {
      io->put(key(steps - 1, Kind::Pullback), Level::Work, where, stepper().pullback());
    }
    position.reset();
    phase = Phase::Parked;
    ++stats.parks;
    stores->claim(id, held_claim());
    release_stepper();
  }

  void unpark() {
    stores->claim(id, thinned ? held_claim() : reverse_claim());
    const Key final_key = key(steps, Kind::Final);
    const auto* entry = io->record().find(final_key, Level::Work);
    if (!entry && !thinned) broken("a parked recording lost its final state");
    if (entry) {
      io->get(final_key, Level::Work, select(stepper().state(), entry->variables));
      io->erase(final_key, Level::Work);
    }
    const Key work = key(steps - 1, Kind::Pullback);
    if (io->record().find(work, Level::Work)) {
      io->get(work, Level::Work, stepper().pullback());
      io->erase(work, Level::Work);
    }
    position = steps;
  }

  void spill() {
    if (phase != Phase::Recorded && phase != Phase::Parked) require_phase(Phase::Parked, "spill()");
    io->spill();
    stores->claim(id, held_claim());
  }

  // ---- a working state the host lost -----------------------------------------------
  void lose_work() {
    require_phase(Phase::Recorded, "lose_work()");
    work_lost = true;
    position.reset();
    release_stepper();
  }

  // Recomputes the end of the first sweep from the last restart checkpoint held: the state x_n
  // and the pullback data the schedule left in the stepper's buffers, which the host lost.
  void rebuild() {
    std::optional<std::pair<Key, Level>> last;
    for (const auto& [k, level] : io->record().held()) {
      if (k.kind != Kind::Restart || k.step >= steps) continue;
      if (!last || k.step > last->first.step) last = std::pair{k, level};
    }
    if (!last) {
      throw Error(ErrorCode::InvalidArgument,
                  "recording: the host lost the state at the end of the first sweep and no "
                  "restart checkpoint is held to recompute it from");
    }
    const Key k = last->first;
    io->get(k, last->second,
            select(stepper().state(), io->record().find(k, last->second)->variables));
    position = k.step;
    const bool pullback = io->record().work_pullback().has_value();
    const Step before = stats.forward_steps;
    recompute(schedule::Forward{k.step, steps, false, pullback, Level::Work});
    stats.rebuilt_steps += stats.forward_steps - before;
    settle_check();
    work_lost = false;
  }

  // ---- thinning ----------------------------------------------------------------------
  bool tail_held() const { return io->record().find(key(steps - 1, Kind::Pullback), Level::Work); }

  // The earliest restart checkpoint held (x_0's for most schedules; some keep step 0's
  // pullback data instead and restart from x_1).
  std::optional<Key> first_restart() const {
    std::optional<Key> first;
    for (const auto& [k, level] : io->record().held()) {
      if (k.kind == Kind::Restart && k.step < steps && (!first || k.step < first->step)) first = k;
    }
    return first;
  }

  // A thinned recording that kept step n-1's data may drop its final state when its first
  // restart checkpoint holds every state variable (none stays in the stepper's memory unstored)
  // and the host seeds its own adjoint (thin(false)).
  bool thinned_without_final() const { return thinned && final_dropped; }

  Claim thin(bool keep_final) {
    if (phase != Phase::Recorded && phase != Phase::Parked) require_phase(Phase::Parked, "thin()");
    const std::optional<Key> first = first_restart();
    bool pullbacks_before = first.has_value();
    for (Step i = 0; first && i < first->step; ++i) {
      pullbacks_before =
          pullbacks_before && io->record().cheapest(key(i, Kind::Pullback)).has_value();
    }
    if (!first || !pullbacks_before) {
      throw Error(ErrorCode::InvalidArgument,
                  "recording: thin() keeps the first restart checkpoint (and the pullback data "
                  "of the steps before it), and schedule '" +
                      plan.schedule + "' kept no restart checkpoint to start from");
    }
    const auto first_level = io->record().cheapest(*first);
    // Step n-1's pullback data stays where the parked or recorded recording holds it.
    const bool tail = phase == Phase::Parked
                          ? tail_held()
                          : !work_lost && io->record().work_pullback() == steps - 1;
    const bool all = !keep_final &&
                     io->record().find(*first, *first_level)->variables.size() == sets.variables();
    for (const auto& [k, level] : io->record().held()) {
      const bool before =
          k.kind == Kind::Pullback && k.step < first->step && level == *io->record().cheapest(k);
      const bool keep = (k == *first && level == *first_level) || before ||
                        (tail && k == key(steps - 1, Kind::Pullback) && level == Level::Work) ||
                        (!(tail && all) && k == key(steps, Kind::Final));
      if (!keep) io->erase(k, level);
    }
    if (!tail) io->record().set_work_pullback(std::nullopt);
    thinned = true;
    tail_kept = tail;
    final_dropped = tail && all;
    base = first->step;
    stores->claim(id, held_claim());
    return held_claim();
  }

  // A thinned recording, before the adjoint of step m-1: plans steps base..m-1 again (m now
  // known) over what the stores grant now, next to what it holds, and runs their first sweep
  // again from x_base. The steps before base are served from the pullback data kept.
  void replan(Step m) {
    thinned = false;
    served_below = base;
    const Key first = key(base, Kind::Restart);
    const auto level = io->record().cheapest(first);
    if (!level) broken("a thinned recording lost x_" + std::to_string(base));
    if (m > base) {
      io->get(first, *level,
              select(stepper().state(), io->record().find(first, *level)->variables));
      position = base;
    }
    for (Level l : {Level::Ram, Level::Disk}) {
      if (io->record().find(first, l)) io->erase(first, l);
    }
    if (m <= base) {  // every step left has its pullback data kept
      sched = std::make_unique<schedule::EndOnlySchedule>(plan.params);
      ahead.clear();
      return;
    }
    RecordingConfig c = config;
    c.params.steps = m - base;
    const Claim held = held_claim();
    Claim free = stores->available(id);
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
      if (e.name == c.schedule && e.online) c.schedule = "auto";  // m is known now
    }
    plan = plan_recording(c, sizes);
    sched = std::make_unique<schedule::ShiftedSchedule>(
        schedule::make_schedule(plan.schedule, plan.params), base);
    Claim claim = full_claim();
    claim.ram += held.ram;
    claim.ram_bytes += held.ram_bytes;
    if (claim.disk != schedule::kUnlimited) claim.disk += held.disk;
    stores->claim(id, claim);
    ahead.clear();
    const Step before = stats.forward_steps;
    while (true) {
      const Action a = next_action();
      if (const auto* f = std::get_if<schedule::Forward>(&a)) {
        recompute(*f);
      } else if (std::holds_alternative<schedule::EndForward>(a)) {
        break;
      } else if (!transfer_action(a)) {
        broken("reverses before the first sweep ended");
      }
    }
    if (position != m) {
      broken("the first sweep planned again ended at x_" + std::to_string(position.value_or(-1)));
    }
    stats.rerecorded_steps += stats.forward_steps - before;
    settle_check();
  }

  // ---- reverse sweep -----------------------------------------------------------------
  void begin_reverse() {
    if (phase == Phase::Reversing) return;
    if (phase != Phase::Recorded && phase != Phase::Parked) {
      throw Error(ErrorCode::InvalidArgument, std::string("recording: the reverse sweep needs a "
                                                          "finished first sweep; the recording "
                                                          "is '") +
                                                  to_string(phase) + "'");
    }
    require_buffers("the reverse sweep");
    stores->collect();
    take_stepper();
    if (phase == Phase::Parked) {
      unpark();
    } else if (!thinned) {
      stores->claim(id, reverse_claim());  // a spilled recording needs its RAM again
    }
    phase = Phase::Reversing;
    if (work_lost && !thinned) rebuild();
  }

  void recompute(const schedule::Forward& f) {
    if (position != f.n0) {
      broken("forward from x_" + std::to_string(f.n0) + " but the working state is " +
             (position ? "x_" + std::to_string(*position) : std::string("not valid")));
    }
    if (f.write_restart) put_restart(f.n0, f.level);
    for (Step i = f.n0; i < f.n1; ++i) {
      const bool want = f.write_pullback && (f.level != Level::Work || i == f.n1 - 1);
      const auto t0 = Clock::now();
      stepper().forward(i, StepContext{.record = want, .recompute = true});
      stats.recompute_seconds += seconds_since(t0);
      ++stats.forward_steps;
      position = i + 1;
      compare(i + 1);
      if (want) record_pullback(i, f);
    }
  }

  void prepare_adjoint(Step i) {
    if (phase != Phase::Reversing) begin_reverse();
    require_buffers("prepare_adjoint()");
    if (i != next_adjoint()) {
      throw Error(ErrorCode::InvalidArgument, "the adjoint of step " + std::to_string(i) +
                                                  " was requested, but step " +
                                                  std::to_string(next_adjoint()) +
                                                  " is next (adjoint steps run n-1 down to 0)");
    }
    if (thinned) {
      if (i == steps - 1 && tail_kept) {
        reverse = schedule::Reverse{steps, i, true};
      } else {
        replan(i + 1);
      }
    }
    if (i < served_below) reverse = schedule::Reverse{i + 1, i, true};  // its data was kept
    while (!reverse) {
      const Action a = next_action();
      if (const auto* f = std::get_if<schedule::Forward>(&a)) {
        recompute(*f);
        settle_check();
      } else if (const auto* r = std::get_if<schedule::Reverse>(&a)) {
        if (r->n1 != i + 1)
          broken("reverses from " + std::to_string(r->n1) + " while step " + std::to_string(i) +
                 " is next");
        reverse = *r;
      } else if (!transfer_action(a)) {
        broken("ends before the adjoint of step " + std::to_string(i));
      }
    }
    if (io->record().work_pullback() != i) {
      const Key k = key(i, Kind::Pullback);
      const auto level = io->record().cheapest(k);
      if (!level) broken("reverses step " + std::to_string(i) + " without its pullback data");
      io->get(k, *level, stepper().pullback());
    }
  }

  void adjoint_done(Step i) {
    require_phase(Phase::Reversing, "adjoint_done()");
    if (!reverse || i != next_adjoint())
      broken("adjoint step " + std::to_string(i) + " was not prepared");
    if (i > reverse->n0 && stores->disk_if_open())
      io->prefetch(key(i - kPrefetchSteps, Kind::Pullback));
    ++stats.adjoint_steps;
    if (reverse->clear_pullback) {
      const Key k = key(i, Kind::Pullback);
      for (Level l : {Level::Ram, Level::Disk}) {
        if (io->record().find(k, l)) io->erase(k, l);
      }
      if (io->record().work_pullback() == i) io->record().set_work_pullback(std::nullopt);
    }
    adjoint_position = i;
    if (i == reverse->n0) {
      reverse.reset();
      position.reset();
    }
  }

  Step next_adjoint() const { return adjoint_position.value_or(steps) - 1; }

  RunStats finish() {
    require_phase(Phase::Reversing, "finish()");
    if (next_adjoint() != -1) broken("finished before the adjoint of step 0");
    while (true) {
      const Action a = next_action();
      if (std::holds_alternative<schedule::EndReverse>(a)) break;
      if (!transfer_action(a)) broken("acts after the last adjoint step");
    }
    if (!io->record().empty()) {
      broken("left " + std::to_string(io->record().held().size()) +
             " checkpoints stored after EndReverse");
    }
    phase = Phase::Done;
    stores->release(id);
    release_stepper();
    stats.io_overlap_seconds = stores->io_overlap_seconds() - overlap_at_start;
    const PrefetchStats p = stores->prefetch_stats();
    stats.prefetch = {p.hits - prefetch_at_start.hits, p.late - prefetch_at_start.late,
                      p.skipped - prefetch_at_start.skipped};
    stats.verify_seconds = check.seconds();
    stats.total_seconds = seconds_since(started);
    return current_stats();
  }

  RunStats current_stats() const {
    RunStats out = stats;
    out.io_seconds = io->seconds();
    out.verify_seconds = check.seconds();
    out.ram = io->record().traffic(Level::Ram);
    out.disk = io->record().traffic(Level::Disk);
    return out;
  }

  static constexpr std::size_t kLookahead = 16;  // actions
  // Pullback data is read this many adjoint steps ahead. The process has one I/O thread, which
  // reads one checkpoint at a time: a deeper queue does not read faster, it only holds more
  // staging buffers (16 held 4 MiB more per rank than 4 in PETSc's ex5adj, 300 checkpoints of
  // 256 KiB on disk, with no read late at either depth; RunStats::prefetch counts late ones).
  static constexpr Step kPrefetchSteps = 4;  // adjoint steps

  Stepper& stepper() { return *stepper_ptr; }

  Stepper* stepper_ptr;  // the stepper the recording drives (attach() changes it while parked)
  std::shared_ptr<Stores> stores;
  RecordingConfig config;
  record::RestartSets sets;
  CheckpointSizes sizes;
  Plan plan;
  std::unique_ptr<schedule::Schedule> sched;
  std::int64_t id = 0;  // storage::Key::recording
  std::optional<detail::CheckpointIo> io;
  std::deque<Action> ahead;
  RunStats stats;
  Phase phase = Phase::Recording;
  Step steps = 0;                            // n (0 while an online run has not ended)
  std::optional<Step> position;              // the stepper's working state x_position
  std::optional<schedule::Forward> forward;  // open Forward of the first sweep
  std::optional<schedule::Reverse> reverse;  // open Reverse of the reverse sweep
  std::optional<Step> adjoint_position;      // the adjoint has run down to this step
  bool end_forward_seen = false;
  bool work_lost = false;      // the host's buffers no longer hold x_n (lose_work())
  bool thinned = false;        // thin() was called and the reverse has not planned again
  bool overwritten = false;    // another recording took the stepper before this one parked
  bool tail_kept = false;      // thin() kept step n-1's pullback data
  bool final_dropped = false;  // thin(false) dropped the final state
  Step base = 0;               // thin() kept the restart checkpoint of x_base
  Step served_below = 0;       // after replan(): the steps below this one reverse from kept data
  detail::ReplayCheck check;
  const SteadyClock::time_point started = Clock::now();
  double overlap_at_start = 0.0;
  PrefetchStats prefetch_at_start;
};

Recording::Recording(Stepper& stepper, std::shared_ptr<Stores> stores,
                     const RecordingConfig& config)
    : impl_(std::make_unique<Impl>(stepper, std::move(stores), config)) {}

Recording::~Recording() {
  if (impl_ && impl_->phase != Phase::Done) impl_->drop();
}

const Plan& Recording::plan() const {
  return impl_->plan;
}
Phase Recording::phase() const {
  return impl_->phase;
}
std::int64_t Recording::id() const {
  return impl_->id;
}
Step Recording::steps() const {
  return impl_->phase == Phase::Recording ? impl_->plan.params.steps : impl_->steps;
}

void Recording::record() {
  Impl& s = *impl_;
  s.require_phase(Phase::Recording, "record()");
  if (s.position != 0) {
    throw Error(ErrorCode::InvalidArgument,
                "recording: record() runs the whole first sweep, but steps were already reported");
  }
  const Step planned = s.plan.params.steps;
  Step i = 0;
  while (true) {
    const auto t0 = Clock::now();
    s.stepper().forward(i, StepContext{.record = s.record_wanted(i), .recompute = false});
    s.stats.forward_seconds += seconds_since(t0);
    const bool last = planned > 0 ? i + 1 == planned : s.finished_everywhere(i + 1);
    s.forward_step_done(i, last);
    ++i;
    if (last) break;
  }
  s.end_forward(i);
}

RunStats Recording::reverse(std::span<const double> seed) {
  Impl& s = *impl_;
  s.begin_reverse();
  s.stepper().begin_adjoint(seed);
  for (Step k = s.steps - 1; k >= 0; --k) {
    s.prepare_adjoint(k);
    const auto t0 = Clock::now();
    s.stepper().adjoint(k);
    s.stats.adjoint_seconds += seconds_since(t0);
    s.adjoint_done(k);
  }
  return s.finish();
}

void Recording::park() {
  impl_->park();
}
void Recording::lose_work() {
  impl_->lose_work();
}
void Recording::spill() {
  impl_->spill();
}
void Recording::attach(Stepper& stepper) {
  impl_->require_phase(Phase::Parked, "attach()");
  impl_->release_stepper();
  impl_->stepper_ptr = &stepper;
  impl_->io->set_stepper(&stepper);
}
Claim Recording::park_claim() const {
  impl_->require_phase(Phase::Recorded, "park_claim()");
  return impl_->park_claim();
}
bool Recording::can_rebuild() const {
  return impl_->can_rebuild();
}
Claim Recording::thin(bool keep_final) {
  return impl_->thin(keep_final);
}
bool Recording::thinned() const {
  return impl_->thinned;
}
Claim Recording::reverse_claim() const {
  return impl_->reverse_claim();
}
Claim Recording::claim() const {
  return impl_->phase == Phase::Parked || impl_->phase == Phase::Recorded ? impl_->held_claim()
                                                                          : impl_->full_claim();
}
bool Recording::record_wanted(Step i) const {
  return impl_->record_wanted(i);
}
void Recording::forward_step_done(Step i, bool last) {
  impl_->forward_step_done(i, last);
}
void Recording::end_forward(Step n) {
  impl_->end_forward(n);
}
void Recording::begin_reverse() {
  impl_->begin_reverse();
}
void Recording::prepare_adjoint(Step i) {
  impl_->prepare_adjoint(i);
}
void Recording::adjoint_done(Step i) {
  impl_->adjoint_done(i);
}
RunStats Recording::finish() {
  return impl_->finish();
}
RunStats Recording::stats() const {
  return impl_->current_stats();
}

}  // namespace rwd::engine
