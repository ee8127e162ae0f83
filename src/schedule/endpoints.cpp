// endpoints: the pullback data of step i is x_i and x_{i+1} (ScheduleParams::pullback_from_states),
// so the adjoint of step i runs once both are held, stored or working, with no re-run of the
// step; a step recorded in work (its stages in the stepper's buffers) holds both too. With x_a
// stored and s more units, T(n, s) is the fewest forward steps that reverse steps a..a+n-1 from
// x_a (as many as the first sweep of them takes, for the top level); S(j, u) the fewest that
// reverse steps a..a+j-1 with x_a stored, x_{a+j} stored in a unit of its own and u more units:
//   T(1, s) = 1
//   T(n, s) = min( n + T(n-1, s),                       record step a+n-1 in work
//                  min_{1<=j<n} j + T(n-j, s-1)          store x_{a+j}, reverse the right part,
//                               + min( S(j, s-1),          keep x_{a+j} for the left part
//                                      T(j, s) ) )         or free it
//   S(1, u) = 0
//   S(j, u) = min( j-1 + S(j-1, u),                     advance to x_{a+j-1}: it takes x_{a+j}'s
//                                                        unit once step a+j-1 is reversed
//                  min_{1<=i<j-1} i + S(j-i, u-1) + S(i, u) )  store x_{a+i}
// (the branches with s-1 or u-1 need s >= 1 or u >= 1). Run with U states (x_0 included) it takes
// T(n, U - 1). tests/unit/endpoints_test.cpp checks it against an exhaustive search of the
// machine and the simulator's replay; bench/theta_model.py is an independent copy in Python.

#include "rewind/schedule/endpoints.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "builtin.hpp"
#include "rewind/error.hpp"

namespace rwd::schedule {

namespace {

constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max() / 4;

// T and S with their choices, for n <= N steps and s <= smax units.
class EndpointsTable {
 public:
  EndpointsTable(Step n, std::int64_t smax)
      : n_(n),
        w_(smax + 1),
        t_(cells(), kInf),
        s_(cells(), kInf),
        tj_(cells(), 0),
        si_(cells(), 0) {
    for (Step j = 1; j <= n_; ++j) {
      for (std::int64_t u = 0; u < w_; ++u) fill_s(j, u);
    }
    for (Step m = 1; m <= n_; ++m) {
      for (std::int64_t s = 0; s < w_; ++s) fill_t(m, s);
    }
  }

  std::int64_t t(Step n, std::int64_t s) const { return t_[at(n, s)]; }
  std::int64_t s(Step j, std::int64_t u) const { return s_[at(j, u)]; }
  // T's first advance j; S's stored split i (0: advance to x_{a+j-1} and keep it).
  Step t_choice(Step n, std::int64_t s) const { return tj_[at(n, s)]; }
  Step s_choice(Step j, std::int64_t u) const { return si_[at(j, u)]; }

 private:
  std::size_t cells() const { return static_cast<std::size_t>((n_ + 1) * w_); }
  std::size_t at(Step n, std::int64_t s) const { return static_cast<std::size_t>(n * w_ + s); }

  void fill_s(Step j, std::int64_t u) {
    if (j == 1) {
      s_[at(1, u)] = 0;
      return;
    }
    std::int64_t best = (j - 1) + s(j - 1, u);
    Step arg = 0;
    if (u >= 1) {
      for (Step i = 1; i < j - 1; ++i) {
        const std::int64_t c = i + s(j - i, u - 1) + s(i, u);
        if (c < best) {
          best = c;
          arg = i;
        }
      }
    }
    s_[at(j, u)] = best;
    si_[at(j, u)] = arg;
  }

  // T's choice: j > 0 keeps x_{a+j} for an S left part, -j frees it for a T one, m records the
  // last step in work.
  void fill_t(Step m, std::int64_t s) {
    if (m == 1) {
      t_[at(1, s)] = 1;
      tj_[at(1, s)] = 1;
      return;
    }
    std::int64_t best = m + t(m - 1, s);
    Step arg = m;
    for (Step j = 1; s >= 1 && j < m; ++j) {
      const std::int64_t right = j + t(m - j, s - 1);
      const std::int64_t keep = this->s(j, s - 1), free = t(j, s);
      if (right + std::min(keep, free) < best) {
        best = right + std::min(keep, free);
        arg = keep <= free ? j : -j;
      }
    }
    t_[at(m, s)] = best;
    tj_[at(m, s)] = arg;
  }

  Step n_;
  std::int64_t w_;
  std::vector<std::int64_t> t_, s_;
  std::vector<Step> tj_, si_;
};

std::shared_ptr<const EndpointsTable> make_table(Step steps, std::int64_t states) {
  require(steps >= 1, "endpoints: the step count must be >= 1 (got " + std::to_string(steps) +
                          "); this schedule needs it in advance");
  require(states >= 1, "endpoints: needs room for at least 1 restart state (x_0's), got " +
                           std::to_string(states));
  const std::int64_t smax = std::min<std::int64_t>(states - 1, steps);
  const double work =
      static_cast<double>(steps) * static_cast<double>(steps) * static_cast<double>(smax + 1);
  require(work <= kEndpointsMaxWork,
          "endpoints: " + std::to_string(steps) + " steps with " + std::to_string(states) +
              " states is a table of steps^2 x states over " +
              std::to_string(static_cast<std::int64_t>(kEndpointsMaxWork)) +
              "; use mixed, or fewer steps a run (in PETSc, fewer per TSSolve)");
  return std::make_shared<const EndpointsTable>(steps, smax);
}

class EndpointsSchedule final : public Schedule {
 public:
  explicit EndpointsSchedule(const ScheduleParams& p) : Schedule(p) {
    detail::check_offline_params("endpoints", p, 0);
    require(p.pullback_from_states,
            "endpoints: the stepper's pullback data is not made of the states a step starts and "
            "ends in (Stepper::pullback_from_states(); in PETSc, a theta method in endpoint "
            "form: -ts_type cn, beuler, or theta with -ts_theta_endpoint, and no lossy codec "
            "unless its stages may be lossy too; rewind-plan: --pullback-from-states)");
    smax_ = std::min<std::int64_t>(endpoints_states(p) - 1, p.steps);
    table_ = make_table(p.steps, endpoints_states(p));
    tasks_.push_back({Kind::T, 0, p.steps, smax_});
  }

  std::string name() const override { return "endpoints"; }

  std::optional<double> lower_bound() const override {
    return static_cast<double>(table_->t(params_.steps, smax_));  // exact: the table's optimum
  }

  std::optional<Action> next() override {
    while (pending_.empty() && !tasks_.empty()) {
      const Task task = tasks_.back();
      tasks_.pop_back();
      expand(task);
      if (tasks_.empty() && !ended_) {
        pending_.push_back(Move{0, Level::Ram, Level::None});
        pending_.push_back(EndReverse{});
        ended_ = true;
      }
    }
    if (pending_.empty()) return std::nullopt;
    Action a = pending_.front();
    pending_.pop_front();
    return a;
  }

 private:
  enum class Kind { T, StoredT, S, Free };
  struct Task {
    Kind kind;  // T: x_a in work, not stored yet; StoredT: x_a stored; S: x_{a+n} stored too
    Step a;     // Free: frees x_a
    Step n;
    std::int64_t units;
  };

  void expand(const Task& task) {
    switch (task.kind) {
      case Kind::T:
      case Kind::StoredT:
        return expand_t(task);
      case Kind::S:
        return expand_s(task);
      case Kind::Free:
        pending_.push_back(Move{task.a, Level::Ram, Level::None});
        return;
    }
  }

  void restore(Step x) {
    if (work_ != x) pending_.push_back(Copy{x, Level::Ram, Level::Work});
    work_ = x;
  }

  void advance(Step from, Step to, bool store_from) {
    if (!store_from) restore(from);
    pending_.push_back(Forward{from, to, store_from, false, store_from ? Level::Ram : Level::None});
    work_ = to;
  }

  void reverse(const Reverse& r) {
    if (!forward_ended_) {
      pending_.push_back(EndForward{});
      forward_ended_ = true;
    }
    pending_.push_back(r);
    work_.reset();
  }

  void expand_t(const Task& task) {
    const Step a = task.a, n = task.n;
    const bool stored = task.kind == Kind::StoredT;
    const Step c = table_->t_choice(n, task.units);
    if (c == n) {  // record the last step in work (n = 1: the only step)
      if (!stored) pending_.push_back(Copy{a, Level::Work, Level::Ram});
      restore(a);
      pending_.push_back(Forward{a, a + n, false, true, Level::Work});
      reverse(Reverse{a + n, a + n - 1, true});
      if (n > 1) tasks_.push_back({Kind::StoredT, a, n - 1, task.units});
      return;
    }
    const Step j = c > 0 ? c : -c;
    advance(a, a + j, !stored);
    if (c > 0) {
      tasks_.push_back({Kind::S, a, j, task.units - 1});
    } else {
      tasks_.push_back({Kind::StoredT, a, j, task.units});
      tasks_.push_back({Kind::Free, a + j, 0, 0});
    }
    tasks_.push_back({Kind::T, a + j, n - j, task.units - 1});
  }

  void expand_s(const Task& task) {
    const Step a = task.a, j = task.n;
    if (j == 1) {
      reverse(Reverse{a + 1, a, true, true});
      pending_.push_back(Move{a + 1, Level::Ram, Level::None});
      return;
    }
    const Step i = table_->s_choice(j, task.units);
    if (i == 0) {
      advance(a, a + j - 1, false);
      reverse(Reverse{a + j, a + j - 1, true, true, true});
      tasks_.push_back({Kind::S, a, j - 1, task.units});
      return;
    }
    advance(a, a + i, false);
    pending_.push_back(Copy{a + i, Level::Work, Level::Ram});
    work_ = a + i;
    tasks_.push_back({Kind::S, a, i, task.units});
    tasks_.push_back({Kind::S, a + i, j - i, task.units - 1});
  }

  std::int64_t smax_ = 0;
  std::shared_ptr<const EndpointsTable> table_;
  std::vector<Task> tasks_;
  std::deque<Action> pending_;
  std::optional<Step> work_ = 0;
  bool forward_ended_ = false;
  bool ended_ = false;
};

}  // namespace

std::int64_t endpoints_states(const ScheduleParams& params) {
  if (params.ram_units > 0)
    return params.ram_units / std::max<std::int64_t>(params.restart_units, 1);
  return params.ram;
}

std::int64_t endpoints_forward_steps(Step steps, std::int64_t states) {
  const auto table = make_table(steps, states);
  return table->t(steps, std::min<std::int64_t>(states - 1, steps));
}

namespace detail {

void register_endpoints(ScheduleRegistry& registry) {
  registry.add(
      {.name = "endpoints",
       .summary = "for pullback data made of the states a step starts and ends in "
                  "(theta methods in endpoint form: CN, backward Euler): stored states "
                  "reverse their steps with no re-run, one unit a step",
       .online = false,
       .uses_disk = false,
       .factory = [](const ScheduleParams& p) { return std::make_unique<EndpointsSchedule>(p); },
       .restart_only = false,
       .sized = true,
       .composes_pullback = true});
}

}  // namespace detail

}  // namespace rwd::schedule
