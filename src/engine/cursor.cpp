#include "rewind/engine/cursor.hpp"
#include "rewind/timing.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <set>

#include "rewind/error.hpp"
#include "rewind/schedule/registry.hpp"
#include "rewind/storage/store.hpp"
#include "rewind/tape/tape.hpp"

namespace rwd::engine {

using schedule::Action;
using schedule::Level;
using storage::Key;
using storage::Kind;

namespace {

using Clock = SteadyClock;

std::int64_t doubles(const std::vector<Field>& fields) {
  std::int64_t n = 0;
  for (const auto& f : fields) n += static_cast<std::int64_t>(f.data.size());
  return n;
}

std::vector<storage::FieldView> views(const std::vector<Field>& fields) {
  std::vector<storage::FieldView> out;
  out.reserve(fields.size());
  for (const auto& f : fields) out.push_back({f.name, f.data, f.offset, f.global_size});
  return out;
}

}  // namespace

struct Cursor::Impl {
  Impl(Stepper& s, const EngineConfig& c, std::unique_ptr<schedule::Schedule> given)
      : stepper(s), config(c) {
    const auto& p = config.params;
    require(p.steps >= 0, "the step count must be >= 0 (0 = not known in advance), got " +
                              std::to_string(p.steps));
    sched = given ? std::move(given) : schedule::make_schedule(config.schedule, p);
    name = sched->name();
    steps = p.steps;
    require(steps > 0 || sched->online(),
            "schedule '" + name +
                "' needs the step count in advance; give it or choose an online schedule");
    stats.schedule = name;
    const std::size_t variables = stepper.state().size();
    require(variables > 0, "the stepper declares no state variables");
    tape = std::make_unique<tape::Tape>(
        variables, [this](Step i) { return stepper.access(i); }, steps);
    open_stores();
    position = 0;
    pull_first_sweep();
  }

  // ---- stores ------------------------------------------------------------------------
  void open_stores() {
    storage::StoreConfig rc = config.store;
    // Preallocate what the run can use; an online run grows on demand past a modest start.
    const std::int64_t usable = config.params.steps > 0 ? config.params.steps + 1 : 64;
    rc.capacity = std::min(config.params.ram, usable);
    rc.slot_doubles = doubles(stepper.state());  // restart-sized; larger checkpoints grow
    ram = storage::make_store(config.ram_store, rc);
    if (config.params.disk != 0) {
      storage::StoreConfig dc = config.store;
      dc.async_io = config.async_io;
      disk = storage::make_store(config.disk_store, dc);
      if (config.async_io) async_disk = disk.get();
    }
  }

  storage::Store& store(Level level) {
    if (level == Level::Ram) return *ram;
    if (level == Level::Disk && disk) return *disk;
    throw Error(ErrorCode::InvalidArgument,
                "schedule '" + name + "' stores at level " + schedule::to_string(level) +
                    (level == Level::Disk ? " but the budget has no disk slots; give disk slots"
                                          : ", which is not a store"));
  }

  LevelTraffic& traffic(Level level) { return level == Level::Ram ? stats.ram : stats.disk; }

  // The restart fields of x_n. A checkpoint is read back with the set it was written with: an
  // online run's analysis is conservative until the step count is known.
  std::vector<Field> restart_fields(Step n) {
    const std::vector<Field> all = stepper.state();
    auto written = restart_written.find(n);
    const std::vector<std::size_t>& set =
        written != restart_written.end() ? written->second : tape->restart_set(n);
    std::vector<Field> out;
    for (std::size_t v : set) out.push_back(all[v]);
    return out;
  }

  void put(const Key& key, Level level, const std::vector<Field>& fields) {
    const auto v = views(fields);
    stepper.on_io(true, true);
    const auto t0 = Clock::now();
    store(level).put(key, {v, {}});
    stats.io_seconds += seconds_since(t0);
    stepper.on_io(true, false);
    tape->stored(key, level);
    if (key.kind == Kind::Restart)
      restart_written.try_emplace(key.step, tape->restart_set(key.step));
    auto& t = traffic(level);
    ++t.writes;
    t.bytes_written += doubles(fields) * static_cast<std::int64_t>(sizeof(double));
    t.peak = std::max(t.peak, tape->live(level));
  }

  // Reads checkpoint `key` into `fields`; `into_stepper`: they are the stepper's own buffers
  // (not scratch space for a copy between stores), so the stepper is told they changed.
  void get(const Key& key, Level level, const std::vector<Field>& fields,
           bool into_stepper = true) {
    stepper.on_io(false, true);
    const auto t0 = Clock::now();
    store(level).get(key, {fields, {}});
    stats.io_seconds += seconds_since(t0);
    stepper.on_io(false, false);
    prefetched.erase(key);
    if (into_stepper) stepper.loaded(key.kind == Kind::Restart);
    auto& t = traffic(level);
    ++t.reads;
    t.bytes_read += doubles(fields) * static_cast<std::int64_t>(sizeof(double));
  }

  void erase(const Key& key, Level level) {
    const auto t0 = Clock::now();
    store(level).erase(key);
    stats.io_seconds += seconds_since(t0);
    tape->freed(key, level);
    if (key.kind == Kind::Restart && !tape->find(key)) restart_written.erase(key.step);
  }

  [[noreturn]] void broken(const std::string& what) const {
    throw Error(ErrorCode::Internal, "schedule '" + name + "': " + what);
  }

  Action next_action() {
    if (phase == Phase::Reverse) {
      // Look ahead so that disk reads the schedule will soon need start early.
      while (ahead.size() < kLookahead) {
        auto a = sched->next();
        if (!a) break;
        ahead.push_back(*a);
        if (std::holds_alternative<schedule::EndReverse>(*a)) break;
      }
      if (async_disk) prefetch_ahead();
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

  void prefetch(const Key& key) {
    if (tape->holds(key, Level::Disk) && !tape->holds(key, Level::Ram) &&
        prefetched.insert(key).second) {
      async_disk->prefetch(key);
    }
  }

  // Every rank holds the same schedule and tape, so the prefetches are collective.
  void prefetch_ahead() {
    for (const Action& a : ahead) {
      if (const auto* c = std::get_if<schedule::Copy>(&a); c && c->from == Level::Disk) {
        prefetch({c->n, Kind::Restart});
      } else if (const auto* m = std::get_if<schedule::Move>(&a);
                 m && m->from == Level::Disk && m->to != Level::None) {
        prefetch({m->n, Kind::Restart});
      } else if (const auto* r = std::get_if<schedule::Reverse>(&a)) {
        for (Step i = r->n1 - 1; i >= r->n0 && i > r->n1 - 1 - kPrefetchSteps; --i) {
          prefetch({i, Kind::Pullback});
        }
      }
    }
  }

  // ---- shared action pieces ----------------------------------------------------------
  void record(Step i, const schedule::Forward& f) {
    if (!f.write_pullback) return;
    if (f.level == Level::Work) {
      tape->set_work_adjoint(i);
    } else {
      put({i, Kind::Pullback}, f.level, stepper.pullback());
    }
  }

  void transfer(Step n, Level from, Level to, bool move) {
    const Key key{n, Kind::Restart};
    if (from == Level::Work) {
      if (position != n)
        broken("stores x_" + std::to_string(n) + " but it is not the working state");
      if (to == Level::Ram || to == Level::Disk) put(key, to, restart_fields(n));
      if (move) position.reset();
      return;
    }
    if (!tape->holds(key, from)) {
      broken("reads " + storage::to_string(key) + " from " + schedule::to_string(from) +
             " where it is not held");
    }
    if (to == Level::Work) {
      if (phase == Phase::FirstSweep) {
        throw Error(ErrorCode::InvalidArgument,
                    "schedule '" + name +
                        "' restores a checkpoint during the first sweep, which a host that owns "
                        "the time loop cannot do; choose another schedule");
      }
      get(key, from, restart_fields(n));
      position = n;
    } else if (to == Level::Ram || to == Level::Disk) {
      std::vector<Field> fields = restart_fields(n);
      scratch.resize(fields.size());
      for (std::size_t k = 0; k < fields.size(); ++k) {
        scratch[k].assign(fields[k].data.size(), 0.0);
        fields[k].data = scratch[k];
      }
      get(key, from, fields, false);
      put(key, to, fields);
    }
    if (move) erase(key, from);
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
        if (f->write_restart) put({f->n0, Kind::Restart}, f->level, restart_fields(f->n0));
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
    if (phase != Phase::FirstSweep) broken("a forward step was reported after the first sweep");
    if (!forward || position != i) {
      throw Error(ErrorCode::InvalidArgument,
                  "schedule '" + name + "' was planned for " + std::to_string(steps) +
                      " steps, but step " + std::to_string(i + 1) +
                      " was taken; give the exact step count or use an online schedule");
    }
    record(i, *forward);
    ++stats.forward_steps;
    position = i + 1;
    if (*position == forward->n1) {
      forward.reset();
      // After the last step the schedule learns the step count first (end_forward), as an
      // online schedule needs; otherwise the next action is due now, while the host still holds
      // x_{i+1} (it may have to be stored).
      if (!last) pull_first_sweep();
    }
  }

  void end_forward(Step n) {
    if (phase != Phase::FirstSweep) broken("end of the first sweep reported twice");
    if (position != n)
      broken("end of the first sweep at x_" + std::to_string(n) + " reported at x_" +
             std::to_string(position.value_or(-1)));
    if (steps == 0) {
      require(n >= 1, "an adjoint run needs at least one step");
      steps = n;
      tape->set_steps(n);
      sched->finalize(n);
      forward.reset();
      if (!end_forward_seen) pull_first_sweep();
    } else if (n != steps) {
      throw Error(ErrorCode::InvalidArgument,
                  "schedule '" + name + "' was planned for " + std::to_string(steps) +
                      " steps, but the forward run ended after " + std::to_string(n) +
                      "; give the exact step count or use an online schedule");
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
    phase = Phase::Reverse;
    stats.steps = n;
  }

  // ---- reverse sweep -----------------------------------------------------------------
  void recompute(const schedule::Forward& f) {
    if (position != f.n0) {
      broken("forward from x_" + std::to_string(f.n0) + " but the working state is " +
             (position ? "x_" + std::to_string(*position) : std::string("not valid")));
    }
    if (f.write_restart) put({f.n0, Kind::Restart}, f.level, restart_fields(f.n0));
    for (Step i = f.n0; i < f.n1; ++i) {
      const bool want = f.write_pullback && (f.level != Level::Work || i == f.n1 - 1);
      const auto t0 = Clock::now();
      stepper.forward(i, want);
      stats.recompute_seconds += seconds_since(t0);
      ++stats.forward_steps;
      position = i + 1;
      if (want) record(i, f);
    }
  }

  void prepare_adjoint(Step i) {
    if (phase != Phase::Reverse) broken("adjoint step requested before the first sweep ended");
    if (i != next_adjoint()) {
      throw Error(ErrorCode::InvalidArgument, "the adjoint of step " + std::to_string(i) +
                                                  " was requested, but step " +
                                                  std::to_string(next_adjoint()) +
                                                  " is next (adjoint steps run n-1 down to 0)");
    }
    while (!reverse) {
      const Action a = next_action();
      if (const auto* f = std::get_if<schedule::Forward>(&a)) {
        recompute(*f);
      } else if (const auto* r = std::get_if<schedule::Reverse>(&a)) {
        if (r->n1 != i + 1)
          broken("reverses from " + std::to_string(r->n1) + " while step " + std::to_string(i) +
                 " is next");
        reverse = *r;
      } else if (!transfer_action(a)) {
        broken("ends before the adjoint of step " + std::to_string(i));
      }
    }
    const Key key{i, Kind::Pullback};
    if (tape->work_adjoint() != i) {
      const auto level = tape->find(key);
      if (!level) broken("reverses step " + std::to_string(i) + " without its pullback data");
      get(key, *level, stepper.pullback());
    }
  }

  void adjoint_done(Step i) {
    if (async_disk && reverse && i > reverse->n0) prefetch({i - kPrefetchSteps, Kind::Pullback});
    if (!reverse || i != next_adjoint())
      broken("adjoint step " + std::to_string(i) + " was not prepared");
    ++stats.adjoint_steps;
    const Key key{i, Kind::Pullback};
    if (reverse->clear_pullback) {
      for (Level l : {Level::Ram, Level::Disk}) {
        if (tape->holds(key, l)) erase(key, l);
      }
      if (tape->work_adjoint() == i) tape->set_work_adjoint(std::nullopt);
    }
    adjoint_position = i;
    if (i == reverse->n0) {
      reverse.reset();
      position.reset();
    }
  }

  Step next_adjoint() const { return adjoint_position.value_or(steps) - 1; }

  RunStats finish() {
    if (phase != Phase::Reverse || next_adjoint() != -1) {
      broken("finished before the adjoint of step 0");
    }
    while (true) {
      const Action a = next_action();
      if (std::holds_alternative<schedule::EndReverse>(a)) break;
      if (!transfer_action(a)) broken("acts after the last adjoint step");
    }
    if (!tape->entries().empty()) {
      broken("left " + std::to_string(tape->entries().size()) +
             " checkpoints stored after EndReverse");
    }
    phase = Phase::Done;
    if (async_disk) stats.io_hidden_seconds = async_disk->stats().overlap_seconds;
    return stats;
  }

  enum class Phase { FirstSweep, Reverse, Done };

  Stepper& stepper;
  EngineConfig config;
  std::unique_ptr<schedule::Schedule> sched;
  std::string name;
  std::unique_ptr<tape::Tape> tape;
  std::unique_ptr<storage::Store> ram;
  std::unique_ptr<storage::Store> disk;
  storage::Store* async_disk = nullptr;  // the disk store, if it is asynchronous
  std::set<Key> prefetched;
  std::map<Step, std::vector<std::size_t>> restart_written;  // restart sets as stored
  std::deque<Action> ahead;
  static constexpr std::size_t kLookahead = 16;  // actions
  static constexpr Step kPrefetchSteps = 16;     // adjoint steps
  std::vector<std::vector<double>> scratch;
  RunStats stats;
  Step steps = 0;
  Phase phase = Phase::FirstSweep;
  std::optional<Step> position;              // the stepper's working state x_position
  std::optional<schedule::Forward> forward;  // open Forward of the first sweep
  std::optional<schedule::Reverse> reverse;  // open Reverse of the reverse sweep
  std::optional<Step> adjoint_position;      // adjoint has run down to this step
  bool end_forward_seen = false;
};

Cursor::Cursor(Stepper& stepper, const EngineConfig& config,
               std::unique_ptr<schedule::Schedule> schedule)
    : impl_(std::make_unique<Impl>(stepper, config, std::move(schedule))) {}
Cursor::~Cursor() = default;
std::string Cursor::schedule_name() const {
  return impl_->name;
}
bool Cursor::record_wanted(Step i) const {
  return impl_->record_wanted(i);
}
void Cursor::forward_step_done(Step i, bool last) {
  impl_->forward_step_done(i, last);
}
void Cursor::end_forward(Step n) {
  impl_->end_forward(n);
}
void Cursor::prepare_adjoint(Step i) {
  impl_->prepare_adjoint(i);
}
void Cursor::adjoint_done(Step i) {
  impl_->adjoint_done(i);
}
RunStats Cursor::finish() {
  return impl_->finish();
}
const RunStats& Cursor::stats() const {
  return impl_->stats;
}

}  // namespace rwd::engine
