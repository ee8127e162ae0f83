#include "rewind/engine/recording.hpp"

#include <mpi.h>

#include <algorithm>
#include <deque>
#include <set>
#include <type_traits>

#include "replay_check.hpp"
#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/storage/collective.hpp"
#include "rewind/tape/checkpoint_record.hpp"
#include "rewind/tape/restart_sets.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine {

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

std::int64_t bytes_of(const std::vector<Field>& fields) {
  std::int64_t n = 0;
  for (const auto& f : fields) n += static_cast<std::int64_t>(f.data.size_bytes());
  return n;
}

std::vector<storage::FieldView> views(const std::vector<Field>& fields) {
  std::vector<storage::FieldView> out;
  out.reserve(fields.size());
  for (const auto& f : fields) out.push_back({f.name, f.data, f.offset, f.global_size});
  return out;
}

std::vector<Field> select(const std::vector<Field>& all, const std::vector<std::size_t>& which) {
  std::vector<Field> out;
  out.reserve(which.size());
  for (std::size_t v : which) out.push_back(all[v]);
  return out;
}

std::uint64_t hash_bytes(const void* data, std::size_t n,
                         std::uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;  // FNV-1a
  return h;
}

template <class T>
std::uint64_t hash_value(const T& v) {
  return hash_bytes(&v, sizeof v);
}

// The settings every rank must pass alike, each with its name for the message: the
// recording's, and its stores' when it has them.
std::vector<std::pair<std::string, std::uint64_t>> setting_hashes(const RecordingConfig& c,
                                                                  const StoresConfig* st) {
  const auto& p = c.params;
  const SettingNames& n = c.names;
  std::uint64_t costs = hash_value(p.step_cost.size());
  for (double v : p.step_cost) costs = hash_bytes(&v, sizeof v, costs);
  for (double v : p.state_bytes) costs = hash_bytes(&v, sizeof v, costs);
  std::vector<std::pair<std::string, std::uint64_t>> out = {
      {n.schedule, hash_bytes(c.schedule.data(), c.schedule.size())},
      {n.steps, hash_value(p.steps)},
      {n.ram, hash_value(p.ram)},
      {n.disk, hash_value(p.disk)},
      {"the disk write cost", hash_value(p.write_cost)},
      {"the disk read cost", hash_value(p.read_cost)},
      {"the period", hash_value(p.period)},
      {n.ram_bytes, hash_value(c.ram_bytes)},
      {"the slot size", hash_value(c.slot_size)},
      {n.no_pullback, hash_value(c.pullback_checkpoints)},
      {"RecordingConfig::max_steps", hash_value(c.max_steps)},
      {"RecordingConfig::verify", hash_value(c.verify)},
      {"the step costs and sizes", costs}};
  if (st) {
    const auto text = [](const std::string& v) { return hash_bytes(v.data(), v.size()); };
    out.insert(out.end(), {{"StoresConfig::ram", hash_value(st->ram)},
                           {"StoresConfig::ram_bytes", hash_value(st->ram_bytes)},
                           {"StoresConfig::disk", hash_value(st->disk)},
                           {n.directory, text(st->store.directory)},
                           {"StoreConfig::label", text(st->store.label)},
                           {"StoreConfig::keep_files", hash_value(st->store.keep_files)},
                           {n.async_io, hash_value(st->store.async_io)},
                           {n.max_staged_bytes, hash_value(st->store.max_staged_bytes)},
                           {"StoresConfig::ram_store", text(st->ram_store)},
                           {"StoresConfig::disk_store", text(st->disk_store)}});
  }
  return out;
}

// The sizes every rank plans with (each kind's largest over the ranks), agreed in the same
// allreduce that checks the ranks passed the same settings.
CheckpointSizes agreed_sizes(Stepper& stepper, tape::RestartSets& sets, MPI_Comm comm,
                             const RecordingConfig& config, const StoresConfig* stores) {
  const std::vector<Field> state = stepper.state();
  const auto settings = setting_hashes(config, stores);
  std::vector<std::uint64_t> local = {
      static_cast<std::uint64_t>(bytes_of(select(state, sets.written()))),
      static_cast<std::uint64_t>(bytes_of(stepper.pullback())),
      static_cast<std::uint64_t>(bytes_of(state))};
  for (const auto& [name, h] : settings) {
    local.push_back(h);
    local.push_back(~h);
  }
  std::vector<std::uint64_t> largest(local.size());
  const int rc = MPI_Allreduce(local.data(), largest.data(), static_cast<int>(local.size()),
                               MPI_UINT64_T, MPI_MAX, comm);
  if (rc != MPI_SUCCESS) throw Error(ErrorCode::Mpi, "MPI_Allreduce (checkpoint sizes) failed");
  for (std::size_t k = 0; k < settings.size(); ++k) {
    if (largest[3 + 2 * k] != ~largest[4 + 2 * k]) {
      throw Error(ErrorCode::InvalidArgument,
                  settings[k].first +
                      " differs between ranks; every rank must pass the same "
                      "recording settings");
    }
  }
  return {static_cast<std::int64_t>(largest[0]), static_cast<std::int64_t>(largest[1]),
          static_cast<std::int64_t>(largest[2])};
}

std::size_t variables_of(Stepper& s) {
  const std::size_t n = s.state().size();
  require(n > 0, "recording: the stepper declares no state variables (Stepper::state())");
  return n;
}

tape::RestartSets restart_sets(Stepper& s, const RecordingConfig& c) {
  return tape::RestartSets(
      variables_of(s), [&s](Step i) { return s.access(i); },
      tape::Horizon{c.params.steps, c.max_steps, 64});
}

// A schedule planned for steps 0..m-base-1, run on steps base..m-1.
class Shifted final : public schedule::Schedule {
 public:
  Shifted(std::unique_ptr<schedule::Schedule> inner, Step by)
      : Schedule(inner->params()), inner_(std::move(inner)), by_(by) {}
  std::optional<Action> next() override {
    std::optional<Action> a = inner_->next();
    if (!a) return a;
    std::visit(
        [this](auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, schedule::Forward> ||
                        std::is_same_v<T, schedule::Reverse>) {
            x.n0 += by_;
            x.n1 += by_;
          } else if constexpr (std::is_same_v<T, schedule::Copy> ||
                               std::is_same_v<T, schedule::Move>) {
            x.n += by_;
          }
        },
        *a);
    return a;
  }
  std::string name() const override { return inner_->name(); }

 private:
  std::unique_ptr<schedule::Schedule> inner_;
  Step by_;
};

// No step left to plan: the stream only ends.
class Served final : public schedule::Schedule {
 public:
  explicit Served(const schedule::ScheduleParams& p) : Schedule(p) {}
  std::optional<Action> next() override {
    if (done_) return std::nullopt;
    done_ = true;
    return schedule::EndReverse{};
  }
  std::string name() const override { return "served"; }

 private:
  bool done_ = false;
};

}  // namespace

Claim claim_of(const Plan& plan) {
  Claim c;
  c.ram = plan.params.ram;
  c.ram_bytes = plan.ram_bytes_bound;
  c.disk = plan.params.disk;
  return c;
}

Plan plan_for(Stepper& stepper, MPI_Comm comm, const RecordingConfig& config) {
  tape::RestartSets sets = restart_sets(stepper, config);
  return plan_recording(config, agreed_sizes(stepper, sets, comm, config, nullptr));
}

struct Recording::Impl {
  Impl(Stepper& s, std::shared_ptr<Stores> st, const RecordingConfig& c)
      : stepper_ptr(&s),
        stores(std::move(st)),
        config(c),
        sets(
            variables_of(s), [this](Step i) { return stepper().access(i); },
            tape::Horizon{c.params.steps, c.max_steps, 64}) {
    require(stores != nullptr, "recording: the stores are null");
    stores->collect();
    sizes = agreed_sizes(stepper(), sets, stores->comm(), config, &stores->config());
    state_shape = shapes_of(stepper().state());
    pullback_shape = shapes_of(stepper().pullback());
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
    run = stores->next_run_id();
    stats.schedule = plan.schedule;
    stores->claim(run, full_claim());
    take_stepper();
    overlap_at_start = stores->io_overlap_seconds();
    prefetch_at_start = stores->prefetch_stats();
    check = detail::ReplayCheck(storage::comm_rank(stores->comm()));
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
    storage::mpi_check(MPI_Allreduce(answers, extremes, 2, MPI_INT, MPI_MAX, stores->comm()),
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
    stores->occupy(stepper_ptr, run, [this] { evicted(); });
  }
  void release_stepper() noexcept { stores->vacate(stepper_ptr, run); }

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
                std::string("recording ") + std::to_string(run) + ": " + call +
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
    storage::agree(stores->comm(), check.take_mismatch());
  }

  // ---- budget ------------------------------------------------------------------------
  Claim full_claim() const { return claim_of(plan); }

  // The plan's budget, with the disk taken by checkpoints spilled there from RAM.
  Claim reverse_claim() const {
    Claim c = full_claim();
    if (c.disk == schedule::kUnlimited) return c;
    for (const auto& [key, level] : record.held()) {
      const auto* e = record.find(key, level);
      if (level != Level::Disk && e->store == Level::Disk && key.kind != Kind::Final) ++c.disk;
    }
    return c;
  }

  // What the recording holds now, in the sizes every rank agreed on.
  Claim held_claim() const {
    Claim c;
    for (const auto& [key, level] : record.held()) {
      const auto* e = record.find(key, level);
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
    return c;
  }

  // ---- stores ------------------------------------------------------------------------
  Key key(Step step, Kind kind) const { return Key{step, kind, run}; }

  // The store holding data that lives at `where` (RAM or DISK).
  storage::Store& store(Level where) {
    if (where == Level::Ram) return stores->ram();
    if (where == Level::Disk) return stores->disk();
    throw Error(ErrorCode::Internal,
                "recording: no store at level " + std::string(schedule::to_string(where)));
  }

  void put(const Key& k, Level level, Level where, const std::vector<Field>& fields,
           std::vector<std::size_t> variables = {}) {
    if (level == Level::Disk && plan.params.disk == 0) {
      throw Error(ErrorCode::InvalidArgument,
                  "schedule '" + plan.schedule +
                      "' stores at level disk but the budget has no disk slots; give disk slots");
    }
    const auto v = views(fields);
    stepper().on_io(IoEvent::WriteBegin);
    const auto t0 = Clock::now();
    store(where).put(k, {v, {}});
    stats.io_seconds += seconds_since(t0);
    stepper().on_io(IoEvent::WriteEnd);
    record.stored(k, level, {where, bytes_of(fields), std::move(variables)});
  }

  // Reads checkpoint `k` (placed at `level`) into `fields`; `into_stepper`: they are the
  // stepper's own buffers (not scratch space for a copy between stores), so it is told.
  void get(const Key& k, Level level, const std::vector<Field>& fields, bool into_stepper = true) {
    const auto* entry = record.find(k, level);
    if (!entry) broken("reads " + storage::to_string(k) + " from " + schedule::to_string(level));
    stepper().on_io(IoEvent::ReadBegin);
    const auto t0 = Clock::now();
    store(entry->store).get(k, {fields, {}});
    stats.io_seconds += seconds_since(t0);
    stepper().on_io(IoEvent::ReadEnd);
    record.read(*entry);
    prefetched.erase(k);
    if (into_stepper) stepper().loaded(k.kind);
  }

  void erase(const Key& k, Level level) {
    const tape::CheckpointRecord::Entry entry = record.freed(k, level);
    const auto t0 = Clock::now();
    store(entry.store).erase(k);
    stats.io_seconds += seconds_since(t0);
  }

  // Every checkpoint still recorded is erased: RAM ones at once, disk ones when the stores
  // next make a collective call. Never collective, so a destructor can call it.
  void drop() noexcept {
    for (const auto& [k, level] : record.held()) {
      try {
        const auto entry = record.freed(k, level);
        if (entry.store == Level::Ram) {
          stores->ram().erase(k);
        } else {
          stores->discard(k);
        }
      } catch (...) {
        // Freeing is best effort here: the stores report their own failures later.
      }
    }
    stores->release(run);
    release_stepper();
  }

  // The restart data of x_b as a checkpoint written now holds it.
  std::vector<Field> restart_fields(Step b) { return select(stepper().state(), sets.at(b)); }

  void put_restart(Step b, Level level) {
    const auto& variables = sets.at(b);
    put(key(b, Kind::Restart), level, level, select(stepper().state(), variables), variables);
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

  // Starts reading `k` ahead if the cheapest copy the schedule will read is on disk. Every
  // rank holds the same schedule and record, so the prefetches are collective.
  void prefetch(const Key& k) {
    const auto level = record.cheapest(k);
    if (!level) return;
    const auto* entry = record.find(k, *level);
    if (entry->store == Level::Disk && prefetched.insert(k).second) stores->disk().prefetch(k);
  }

  void prefetch_ahead() {
    if (!stores->disk_if_open()) return;
    for (const Action& a : ahead) {
      if (const auto* c = std::get_if<schedule::Copy>(&a); c && c->from != Level::Work) {
        prefetch(key(c->n, Kind::Restart));
      } else if (const auto* m = std::get_if<schedule::Move>(&a);
                 m && m->from != Level::Work && m->to != Level::None) {
        prefetch(key(m->n, Kind::Restart));
      } else if (const auto* r = std::get_if<schedule::Reverse>(&a)) {
        for (Step i = r->n1 - 1; i >= r->n0 && i > r->n1 - 1 - kPrefetchSteps; --i) {
          prefetch(key(i, Kind::Pullback));
        }
      }
    }
  }

  // ---- shared action pieces ----------------------------------------------------------
  void record_pullback(Step i, const schedule::Forward& f) {
    if (!f.write_pullback) return;
    if (f.level == Level::Work) {
      record.set_work_pullback(i);
    } else {
      put(key(i, Kind::Pullback), f.level, f.level, stepper().pullback());
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
    const auto* entry = record.find(k, from);
    if (!entry) {
      broken("reads " + storage::to_string(k) + " from " + schedule::to_string(from) +
             " where it is not held");
    }
    const std::vector<std::size_t> variables = entry->variables;
    const std::vector<Field> fields = select(stepper().state(), variables);
    if (to == Level::Work) {
      if (phase == Phase::Recording) {
        throw Error(ErrorCode::InvalidArgument,
                    "schedule '" + plan.schedule +
                        "' restores a checkpoint during the first sweep, which a host that owns "
                        "the time loop cannot do; choose another schedule");
      }
      get(k, from, fields);
      position = n;
    } else if (to == Level::Ram || to == Level::Disk) {
      std::vector<Field> copy = fields;
      scratch.resize(copy.size());
      for (std::size_t j = 0; j < copy.size(); ++j) {
        scratch[j].assign(copy[j].data.size(), 0.0);
        copy[j].data = scratch[j];
      }
      get(k, from, copy, false);
      put(k, to, to, copy, variables);
    }
    if (move) erase(k, from);
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
    stores->claim(run, held_claim());
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
    if (record.work_pullback() == steps - 1) {
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
    if (stores->fits(run, ram) || count == 0) return {ram, Level::Ram};
    Claim disk = held_claim();
    if (disk.disk != schedule::kUnlimited) disk.disk += count;
    if (stores->config().disk != 0 && stores->fits(run, disk)) return {disk, Level::Disk};
    return {ram, Level::Ram};
  }
  Claim park_claim() const { return park_plan().first; }

  bool can_rebuild() const {
    for (const auto& [k, level] : record.held()) {
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
    stores->claim(run, claim);  // a refused park leaves the recording as it was
    if (!thinned_without_final()) {
      const std::vector<Field> state = stepper().state();
      std::vector<std::size_t> all(state.size());
      for (std::size_t v = 0; v < all.size(); ++v) all[v] = v;
      put(key(steps, Kind::Final), Level::Work, where, state, all);
    }
    if (record.work_pullback() == steps - 1) {
      put(key(steps - 1, Kind::Pullback), Level::Work, where, stepper().pullback());
    }
    position.reset();
    phase = Phase::Parked;
    ++stats.parks;
    stores->claim(run, held_claim());
    release_stepper();
  }

  void unpark() {
    stores->claim(run, thinned ? held_claim() : reverse_claim());
    const Key final_key = key(steps, Kind::Final);
    const auto* entry = record.find(final_key, Level::Work);
    if (!entry && !thinned) broken("a parked recording lost its final state");
    if (entry) {
      get(final_key, Level::Work, select(stepper().state(), entry->variables));
      erase(final_key, Level::Work);
    }
    const Key work = key(steps - 1, Kind::Pullback);
    if (record.find(work, Level::Work)) {
      get(work, Level::Work, stepper().pullback());
      erase(work, Level::Work);
    }
    position = steps;
  }

  // The layout of the stepper's fields (names owned here), taken when the recording was made:
  // spill() runs on a parked recording whose stepper may be gone (an ensemble task's tape).
  struct Shape {
    std::string name;
    std::size_t size = 0;
    std::int64_t offset = 0;
    std::int64_t global_size = 0;
  };
  static std::vector<Shape> shapes_of(const std::vector<Field>& fields) {
    std::vector<Shape> out;
    out.reserve(fields.size());
    for (const Field& f : fields) {
      out.push_back({std::string(f.name), f.data.size(), f.offset, f.global_size});
    }
    return out;
  }

  void spill() {
    if (phase != Phase::Recorded && phase != Phase::Parked) require_phase(Phase::Parked, "spill()");
    for (const auto& [k, level] : record.held()) {
      const auto* entry = record.find(k, level);
      if (entry->store != Level::Ram) continue;
      std::vector<const Shape*> like;
      if (k.kind == Kind::Pullback) {
        for (const Shape& sh : pullback_shape) like.push_back(&sh);
      } else {
        for (std::size_t v : entry->variables) like.push_back(&state_shape.at(v));
      }
      std::vector<Field> copy;
      scratch.resize(like.size());
      for (std::size_t j = 0; j < like.size(); ++j) {
        scratch[j].assign(like[j]->size, 0.0);
        copy.push_back({like[j]->name, scratch[j], like[j]->offset, like[j]->global_size});
      }
      stores->ram().get(k, {copy, {}});
      record.read(*entry);
      stores->disk().put(k, {views(copy), {}});
      stores->ram().erase(k);
      record.relocate(k, level, Level::Disk);
    }
    stores->claim(run, held_claim());
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
    for (const auto& [k, level] : record.held()) {
      if (k.kind != Kind::Restart || k.step >= steps) continue;
      if (!last || k.step > last->first.step) last = std::pair{k, level};
    }
    if (!last) {
      throw Error(ErrorCode::InvalidArgument,
                  "recording: the host lost the state at the end of the first sweep and no "
                  "restart checkpoint is held to recompute it from");
    }
    const Key k = last->first;
    get(k, last->second, select(stepper().state(), record.find(k, last->second)->variables));
    position = k.step;
    const bool pullback = record.work_pullback().has_value();
    const Step before = stats.forward_steps;
    recompute(schedule::Forward{k.step, steps, false, pullback, Level::Work});
    stats.rebuilt_steps += stats.forward_steps - before;
    settle_check();
    work_lost = false;
  }

  // ---- thinning ----------------------------------------------------------------------
  bool tail_held() const { return record.find(key(steps - 1, Kind::Pullback), Level::Work); }

  // The earliest restart checkpoint held (x_0's for most schedules; some keep step 0's
  // pullback data instead and restart from x_1).
  std::optional<Key> first_restart() const {
    std::optional<Key> first;
    for (const auto& [k, level] : record.held()) {
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
      pullbacks_before = pullbacks_before && record.cheapest(key(i, Kind::Pullback)).has_value();
    }
    if (!first || !pullbacks_before) {
      throw Error(ErrorCode::InvalidArgument,
                  "recording: thin() keeps the first restart checkpoint (and the pullback data "
                  "of the steps before it), and schedule '" +
                      plan.schedule + "' kept no restart checkpoint to start from");
    }
    const auto first_level = record.cheapest(*first);
    // Step n-1's pullback data stays where the parked or recorded recording holds it.
    const bool tail =
        phase == Phase::Parked ? tail_held() : !work_lost && record.work_pullback() == steps - 1;
    const bool all =
        !keep_final && record.find(*first, *first_level)->variables.size() == sets.variables();
    for (const auto& [k, level] : record.held()) {
      const bool before =
          k.kind == Kind::Pullback && k.step < first->step && level == *record.cheapest(k);
      const bool keep = (k == *first && level == *first_level) || before ||
                        (tail && k == key(steps - 1, Kind::Pullback) && level == Level::Work) ||
                        (!(tail && all) && k == key(steps, Kind::Final));
      if (!keep) erase(k, level);
    }
    if (!tail) record.set_work_pullback(std::nullopt);
    thinned = true;
    tail_kept = tail;
    final_dropped = tail && all;
    base = first->step;
    stores->claim(run, held_claim());
    return held_claim();
  }

  // A thinned recording, before the adjoint of step m-1: plans steps base..m-1 again (m now
  // known) over what the stores grant now, next to what it holds, and runs their first sweep
  // again from x_base. The steps before base are served from the pullback data kept.
  void replan(Step m) {
    thinned = false;
    served_below = base;
    const Key first = key(base, Kind::Restart);
    const auto level = record.cheapest(first);
    if (!level) broken("a thinned recording lost x_" + std::to_string(base));
    if (m > base) {
      get(first, *level, select(stepper().state(), record.find(first, *level)->variables));
      position = base;
    }
    for (Level l : {Level::Ram, Level::Disk}) {
      if (record.find(first, l)) erase(first, l);
    }
    if (m <= base) {  // every step left has its pullback data kept
      sched = std::make_unique<Served>(plan.params);
      ahead.clear();
      return;
    }
    RecordingConfig c = config;
    c.params.steps = m - base;
    const Claim held = held_claim();
    Claim free = stores->available(run);
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
    sched = std::make_unique<Shifted>(schedule::make_schedule(plan.schedule, plan.params), base);
    Claim claim = full_claim();
    claim.ram += held.ram;
    claim.ram_bytes += held.ram_bytes;
    if (claim.disk != schedule::kUnlimited) claim.disk += held.disk;
    stores->claim(run, claim);
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
      stores->claim(run, reverse_claim());  // a spilled recording needs its RAM again
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
    if (record.work_pullback() != i) {
      const Key k = key(i, Kind::Pullback);
      const auto level = record.cheapest(k);
      if (!level) broken("reverses step " + std::to_string(i) + " without its pullback data");
      get(k, *level, stepper().pullback());
    }
  }

  void adjoint_done(Step i) {
    require_phase(Phase::Reversing, "adjoint_done()");
    if (!reverse || i != next_adjoint())
      broken("adjoint step " + std::to_string(i) + " was not prepared");
    if (i > reverse->n0 && stores->disk_if_open())
      prefetch(key(i - kPrefetchSteps, Kind::Pullback));
    ++stats.adjoint_steps;
    if (reverse->clear_pullback) {
      const Key k = key(i, Kind::Pullback);
      for (Level l : {Level::Ram, Level::Disk}) {
        if (record.find(k, l)) erase(k, l);
      }
      if (record.work_pullback() == i) record.set_work_pullback(std::nullopt);
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
    if (!record.empty()) {
      broken("left " + std::to_string(record.held().size()) +
             " checkpoints stored after EndReverse");
    }
    phase = Phase::Done;
    stores->release(run);
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
    out.verify_seconds = check.seconds();
    out.ram = record.traffic(Level::Ram);
    out.disk = record.traffic(Level::Disk);
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
  tape::RestartSets sets;
  CheckpointSizes sizes;
  Plan plan;
  std::unique_ptr<schedule::Schedule> sched;
  std::int64_t run = 0;
  tape::CheckpointRecord record;
  std::set<Key> prefetched;
  std::deque<Action> ahead;
  std::vector<std::vector<double>> scratch;
  std::vector<Shape> state_shape, pullback_shape;
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
  return impl_->run;
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
