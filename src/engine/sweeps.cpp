#include "sweeps.hpp"

#include <mpi.h>

#include <algorithm>
#include <variant>

#include "keeping.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"

namespace rwd::engine::detail {

bool Sweeps::finished_everywhere(Step i) {
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

void Sweeps::refuse_restore_in_first_sweep() const {
  if (phase == Phase::Recording) {
    throw Error(ErrorCode::InvalidArgument,
                "schedule '" + plan.schedule +
                    "' restores a checkpoint during the first sweep, which a host that owns the "
                    "time loop cannot do; choose another schedule");
  }
}

void Sweeps::transfer(Step n, Level from, Level to, bool move) {
  const Key k = key(n, Kind::Restart);
  if (from == Level::Work) {
    if (position != n) broken("stores x_" + std::to_string(n) + " but it is not the working state");
    if (to == Level::Ram || to == Level::Disk) put_restart(n, to);
    if (move) position.reset();
    return;
  }
  const auto* entry = io->record().find(k, from);
  if (!entry && to == Level::Work && !move && plan.params.pullback_holds_next && n >= 1) {
    const Key held_by = key(n - 1, Kind::Pullback);
    if (io->record().find(held_by, from)) {
      restore_from_pullback(n, from);
      return;
    }
    if (io->dropped(held_by, from)) {
      recompute_dropped(n, false);
      return;
    }
  }
  if (!entry && io->dropped(k, from)) {
    const auto other = io->record().cheapest(k);  // a copy at the other level still holds it
    if (to == Level::Work && other) {
      transfer(n, *other, Level::Work, false);
    } else if (to == Level::Work) {
      recompute_dropped(n, false);
    } else if (to != Level::None) {
      broken("copies " + storage::to_string(k) + ", dropped over the compressed budget, to " +
             schedule::to_string(to));
    }
    if (move) io->forget_dropped(k);
    return;
  }
  if (!entry) {
    broken("reads " + storage::to_string(k) + " from " + schedule::to_string(from) +
           " where it is not held");
  }
  if (to == Level::Work) {
    refuse_restore_in_first_sweep();
    io->get(k, from, select(stepper().state(), entry->variables));
    io->set_working_exact(entry->exact);
    position = n;
  } else if (to == Level::Ram || to == Level::Disk) {
    io->copy(k, from, to);
  }
  if (move && n == 0 && from == Level::Ram && keeps_x0()) {
    io->set_anchor(k);  // kept until the reverse ends, where the schedule is done with it
  } else if (move) {
    io->erase(k, from);
  }
}

void Sweeps::put_forward_restart(const schedule::Forward& f) {
  if (f.write_restart) {
    put_restart(f.n0, f.level);
  } else if (f.n0 == 0 && keeps_x0() && !io->record().cheapest(key(0, Kind::Restart))) {
    // Nothing dropped over the compressed budget could be recomputed without a state before it:
    // x_0 is kept, outside the schedule (CheckpointIo::set_anchor).
    put_restart(0, Level::Ram);
    io->set_anchor(key(0, Kind::Restart));
  }
}

bool Sweeps::keeps_x0() const {
  return plan.compressed_budget > 0;
}

// x_n from step n-1's pullback data, which holds it (Stepper::next_state_in_pullback()): the
// data is read into the stepper's pullback buffers (the adjoint of step n-1 still reads it from
// the store later), and the fields that hold the state are copied into state().
void Sweeps::restore_from_pullback(Step n, Level from) {
  refuse_restore_in_first_sweep();
  const std::vector<Field> pull = stepper().pullback();
  const Key k = key(n - 1, Kind::Pullback);
  const auto* entry = io->record().find(k, from);
  io->set_working_exact(entry && entry->exact);
  io->get(k, from, pull, false);
  const std::vector<std::size_t> where = stepper().next_state_in_pullback();
  const std::vector<Field> state = stepper().state();
  if (where.size() != state.size()) {
    broken("restores x_" + std::to_string(n) + " from step " + std::to_string(n - 1) +
           "'s pullback data, which the stepper no longer says holds it");
  }
  for (std::size_t j = 0; j < state.size(); ++j) {
    const Field& src = pull.at(where[j]);
    if (src.data.size() != state[j].data.size()) {
      broken("restores state field '" + std::string(state[j].name) + "' from pullback field '" +
             std::string(src.name) + "' of another size");
    }
    if (src.data.data() != state[j].data.data())
      std::copy(src.data.begin(), src.data.end(), state[j].data.begin());
  }
  // The stepper's pullback buffers now hold step n-1's data, no longer a step recorded in work.
  if (io->record().work_pullback() != n - 1) io->record().set_work_pullback(std::nullopt);
  stepper().loaded(Kind::Pullback);
  stepper().loaded(Kind::Restart);
  position = n;
}

// Dropped over the compressed budget (CheckpointIo::drop): x_n, or with `pullback` step n-1's
// pullback data (kept in the stepper's buffers), recomputed from the latest state held before
// it, the replay check comparing each step with the first sweep's.
void Sweeps::recompute_dropped(Step n, bool pullback) {
  refuse_restore_in_first_sweep();
  const auto held = latest_state(*io, n - 1, plan.params.pullback_holds_next);
  if (!held) {
    broken("needs " +
           (pullback ? "step " + std::to_string(n - 1) + "'s pullback data"
                     : "x_" + std::to_string(n)) +
           ", dropped over the compressed budget, and holds no state before it to recompute it "
           "from");
  }
  if (held->key.kind == Kind::Restart) {
    transfer(held->step, held->level, Level::Work, false);
  } else {
    restore_from_pullback(held->step, held->level);
  }
  recompute(
      schedule::Forward{held->step, n, false, pullback, pullback ? Level::Work : Level::None});
  settle_check();
  dropped_steps += n - held->step;
}

bool Sweeps::transfer_action(const Action& a) {
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

void Sweeps::pull_first_sweep() {
  while (true) {
    const Action a = next_action();
    if (const auto* f = std::get_if<schedule::Forward>(&a)) {
      if (f->n0 != position) {
        broken("the first sweep jumps from x_" + std::to_string(position.value_or(-1)) + " to x_" +
               std::to_string(f->n0));
      }
      put_forward_restart(*f);
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

bool Sweeps::record_wanted(Step i) const {
  if (!forward || !forward->write_pullback) return false;
  return forward->level != Level::Work || i == forward->n1 - 1 || steps == 0;
}

void Sweeps::forward_step_done(Step i, bool last) {
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
    throw Error(ErrorCode::InvalidArgument, "schedule '" + plan.schedule + "' was planned for " +
                                                std::to_string(steps) + " steps, but step " +
                                                std::to_string(i + 1) + " was taken; " +
                                                step_count_advice(config.names));
  }
  if (forward->write_pullback && composes() && !end_sources_checked && record_wanted(i))
    check_sources(i, nullptr);
  record_pullback(i, *forward);
  ++stats.forward_steps;
  position = i + 1;
  remember(i + 1);
  stream.schedule().observe_step(i, schedule::step_cost(plan.params, i),
                                 schedule::state_bytes(plan.params, i + 1));
  if (*position == forward->n1) {
    forward.reset();
    // After the last step the schedule learns the step count first (end_forward), as an
    // online schedule needs; otherwise the next action is due now, while the host still holds
    // x_{i+1} (it may have to be stored).
    if (!last) pull_first_sweep();
  }
}

void Sweeps::end_forward(Step n) {
  require_phase(Phase::Recording, "end_forward()");
  if (position != n)
    broken("end of the first sweep at x_" + std::to_string(n) + " reported at x_" +
           std::to_string(position.value_or(-1)));
  if (steps == 0) {
    require(n >= 1, "an adjoint run needs at least one step");
    steps = n;
    sets.set_steps(n);
    stream.schedule().finalize(n);
    forward.reset();
    if (!end_forward_seen) pull_first_sweep();
  } else if (n != steps) {
    throw Error(ErrorCode::InvalidArgument,
                "schedule '" + plan.schedule + "' was planned for " + std::to_string(steps) +
                    " steps, but the forward run ended after " + std::to_string(n) + "; " +
                    step_count_advice(config.names));
  } else {
    // An online schedule used with a known step count still learns it here, as it would
    // from any driver (the simulator does the same).
    if (stream.schedule().online()) {
      stream.schedule().finalize(n);
      forward.reset();
    }
    if (!end_forward_seen && !forward) pull_first_sweep();
  }
  if (!end_forward_seen) broken("no EndForward at x_" + std::to_string(n));
  io->settle();  // the last RAM put measured before the claim counts what is held
  phase = Phase::Recorded;
  stats.steps = n;
  // Until its reverse, the recording needs only what it holds (the reverse claims its budget
  // again).
  stores->claim(id, held_claim());
}

void Sweeps::recompute(const schedule::Forward& f) {
  if (position != f.n0) {
    broken("forward from x_" + std::to_string(f.n0) + " but the working state is " +
           (position ? "x_" + std::to_string(*position) : std::string("not valid")));
  }
  put_forward_restart(f);
  for (Step i = f.n0; i < f.n1; ++i) {
    const bool want = f.write_pullback && (f.level != Level::Work || i == f.n1 - 1);
    const bool check_now = want && composes() && !sources_checked;
    const std::vector<std::vector<double>> start =
        check_now ? source_copies() : std::vector<std::vector<double>>{};
    const auto t0 = SteadyClock::now();
    stepper().forward(i, StepContext{.record = want, .recompute = true});
    stats.recompute_seconds += seconds_since(t0);
    ++stats.forward_steps;
    position = i + 1;
    compare(i + 1);
    if (check_now) check_sources(i, &start);
    if (want) record_pullback(i, f);
  }
}

}  // namespace rwd::engine::detail
