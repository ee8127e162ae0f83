// A step's pullback data made of the states it starts and ends in
// (Stepper::pullback_from_states()), composed from restart checkpoints for a Reverse
// `from_states` of the `endpoints` schedule instead of being stored or recomputed.

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include "reverse_sweep.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"

namespace rwd::engine::detail {

namespace {

// The stepper's pullback fields that come from x_i (`end` false) or x_{i+1}, filled from the
// state variables in state().
void copy_sources(const std::vector<Field>& state, const std::vector<Field>& pull,
                  const std::vector<Stepper::StateSource>& from, bool end) {
  for (std::size_t k = 0; k < from.size(); ++k) {
    if (from[k].end != end) continue;
    const Field& src = state.at(from[k].variable);
    if (src.data.data() != pull[k].data.data())
      std::copy(src.data.begin(), src.data.end(), pull[k].data.begin());
  }
}

}  // namespace

// state() is asked for again after each transfer: a stepper may hand out new views of its
// state once a checkpoint has been loaded into it (PETSc's are VecGetArray's).
void ReverseSweep::compose_pullback(const schedule::Reverse& r) {
  const Step i = r.n0;
  const std::vector<Stepper::StateSource> from = stepper().pullback_from_states();
  const std::vector<Field> pull = stepper().pullback();
  if (!plan.params.pullback_from_states || from.size() != pull.size()) {
    broken("composes step " + std::to_string(i) +
           "'s pullback data from states, but the stepper does not say it is made of them");
  }
  const Key start = key(i, Kind::Restart), end = key(i + 1, Kind::Restart);
  if (r.keep_start && position != i) {
    broken("keeps x_" + std::to_string(i) + " from the working state, which is " +
           (position ? "x_" + std::to_string(*position) : std::string("not valid")));
  }
  const bool start_held = position == i || io->record().cheapest(start);
  if (!start_held || !io->record().cheapest(end)) {
    // Dropped over the compressed budget: step i is recorded from the latest state held before
    // x_{i+1} instead (with keep_start, x_i in work is stored first, where the schedule expects
    // it).
    if (r.keep_start) {
      io->forget_dropped(end);
      put_restart(i, Level::Ram);
      recompute(schedule::Forward{i, i + 1, false, true, Level::Work});
      settle_check();
    } else {
      recompute_dropped(i + 1, true);
    }
    return;
  }
  if (position != i) transfer(i, *io->record().cheapest(start), Level::Work, false);
  require_variables(i);
  require_variables(i + 1);
  copy_sources(stepper().state(), pull, from, false);
  const bool start_exact = io->working_exact();
  // With keep_start, x_i's restart variables that no stage holds are copied aside before x_{i+1}
  // is loaded over them.
  const auto& variables = sets.at(i);
  std::vector<std::vector<double>> aside(stepper().state().size());
  if (r.keep_start) {
    const std::vector<Field> state = stepper().state();
    for (std::size_t v : variables) {
      const bool in_stage = std::any_of(from.begin(), from.end(),
                                        [&](const auto& s) { return !s.end && s.variable == v; });
      if (!in_stage) aside[v].assign(state[v].data.begin(), state[v].data.end());
    }
  }
  transfer(i + 1, *io->record().cheapest(end), Level::Work, r.keep_start);
  copy_sources(stepper().state(), pull, from, true);
  if (r.keep_start) {
    // x_i from the pullback fields that hold it (and what was set aside), into the RAM unit
    // x_{i+1} left.
    std::vector<Field> held = stepper().state();
    for (std::size_t v = 0; v < held.size(); ++v) {
      if (!aside[v].empty()) held[v].data = aside[v];
    }
    for (std::size_t k = 0; k < from.size(); ++k) {
      if (!from[k].end) held[from[k].variable].data = pull[k].data;
    }
    const bool end_exact = io->working_exact();
    io->set_working_exact(start_exact);
    io->put(start, Level::Ram, Level::Ram, select(held, variables), variables);
    io->set_working_exact(end_exact);
  }
  io->record().set_work_pullback(i);
  stepper().loaded(Kind::Pullback);
  ++stats.composed;
}

std::vector<std::vector<double>> Sweeps::source_copies() {
  const std::vector<Field> state = stepper().state();
  std::vector<std::vector<double>> out(state.size());
  for (const Stepper::StateSource& s : stepper().pullback_from_states()) {
    if (s.end || s.variable >= state.size() || !out[s.variable].empty()) continue;
    out[s.variable].assign(state[s.variable].data.begin(), state[s.variable].data.end());
  }
  return out;
}

void Sweeps::check_sources(Step i, const std::vector<std::vector<double>>* start) {
  const std::vector<Stepper::StateSource> from = stepper().pullback_from_states();
  const std::vector<Field> pull = stepper().pullback(), state = stepper().state();
  std::string wrong;  // this rank's finding
  for (std::size_t k = 0; k < from.size() && k < pull.size() && wrong.empty(); ++k) {
    if (!from[k].end && start == nullptr) continue;
    const std::span<const double> want =
        from[k].end ? std::span<const double>(state.at(from[k].variable).data)
                    : std::span<const double>(start->at(from[k].variable));
    if (want.size() != pull[k].data.size() ||
        !std::equal(want.begin(), want.end(), pull[k].data.begin(),
                    [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; })) {
      wrong = "pullback field '" + std::string(pull[k].name) + "' does not hold the bits of " +
              (from[k].end ? "x_" + std::to_string(i + 1) : "x_" + std::to_string(i)) +
              "'s state variable '" + std::string(state.at(from[k].variable).name) + "'";
    }
  }
  int rank = 0, mine = wrong.empty() ? -1 : 0, first = -1;
  comm::mpi_check(MPI_Comm_rank(stores->comm(), &rank), "MPI_Comm_rank");
  if (!wrong.empty()) mine = rank;
  comm::mpi_check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MAX, stores->comm()),
                  "MPI_Allreduce (Stepper::pullback_from_states check)");
  if (first >= 0) {
    throw Error(ErrorCode::InvalidArgument,
                "Stepper::pullback_from_states() does not describe step " + std::to_string(i) +
                    " as recorded" +
                    (wrong.empty() ? " on rank " + std::to_string(first)
                                   : " on this rank (" + std::to_string(rank) + "): " + wrong) +
                    "; a composed pullback would give a wrong gradient. Return {} unless every "
                    "pullback field equals the state variable it names bit for bit");
  }
  end_sources_checked = true;
  if (start != nullptr) sources_checked = true;
}

// Every state variable a composed pullback field comes from is in x_b's restart data.
void ReverseSweep::require_variables(Step b) {
  const auto& variables = sets.at(b);
  for (const Stepper::StateSource& s : stepper().pullback_from_states()) {
    if (std::find(variables.begin(), variables.end(), s.variable) == variables.end()) {
      broken("composes pullback data from state variable " + std::to_string(s.variable) +
             ", which x_" + std::to_string(b) +
             "'s restart data does not hold (no step writes it, or Stepper::access() says no "
             "later step reads it)");
    }
  }
}

}  // namespace rwd::engine::detail
