#pragma once
/// @file
/// The schedule interface: an iterator of actions, and the parameters every schedule is built from.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rewind/schedule/action.hpp"

namespace rwd::schedule {

/// Disk slot count meaning "as many as needed".
inline constexpr std::int64_t kUnlimited = -1;

/// What a schedule is planned for. Slot counts include the slot that holds x_0
/// (Griewank-Walther convention). Costs are in units of one forward step.
struct ScheduleParams {
  Step steps = 0;           ///< n, the number of time steps; 0 = not known in advance (online)
  std::int64_t ram = 0;     ///< RAM checkpoint slots
  std::int64_t disk = 0;    ///< disk checkpoint slots, or kUnlimited
  double write_cost = 0.0;  ///< cost of writing one checkpoint to disk (wd)
  double read_cost = 0.0;   ///< cost of reading one checkpoint from disk (rd)
  std::int64_t period = 0;  ///< `periodic`: checkpoint interval; 0 = choose the best for the budget

  /// Unequal steps (`dynamic`, and the simulator's weighted cost). step_cost[i]: cost of
  /// forward step i in units of an average step (missing entries: 1). state_bytes[i]: bytes of
  /// x_i, and of step i's pullback data (missing entries: 1).
  std::vector<double> step_cost;
  std::vector<double> state_bytes;
  /// > 0: a RAM budget in bytes that replaces the RAM slot count (live RAM checkpoints and
  /// pullback data, sized by state_bytes, may not exceed it).
  double ram_bytes = 0.0;

  /// Checkpoints of different sizes, for the schedules that plan with them (`mixed`): with
  /// ram_units > 0 the RAM budget is that many units, a restart checkpoint takes restart_units
  /// of them and one step's pullback data pullback_units (it replaces `ram` for those schedules,
  /// and the simulator counts units). The others are planned with `ram` slots.
  std::int64_t ram_units = 0;
  std::int64_t restart_units = 1;
  std::int64_t pullback_units = 1;
  /// Step i's pullback data holds the state it ends in, x_{i+1} (a stiffly accurate method's last
  /// stage, or a front end that stores the end state with the stages): x_{i+1} may be restored
  /// from it (a Copy from RAM), with no restart checkpoint of its own.
  bool pullback_holds_next = false;
  /// Step i's pullback data is made of x_i and x_{i+1} alone (a theta method in endpoint form:
  /// PETSc's CN and backward Euler): a Reverse `from_states` composes it from those restart
  /// states (`endpoints` plans with it).
  bool pullback_from_states = false;
};

/// Cost of forward step i under `params` (1 without step costs).
inline double step_cost(const ScheduleParams& params, Step i) {
  const auto k = static_cast<std::size_t>(i);
  return i >= 0 && k < params.step_cost.size() ? params.step_cost[k] : 1.0;
}

/// Bytes of x_i (and of step i's pullback data) under `params` (1 without sizes).
inline double state_bytes(const ScheduleParams& params, Step i) {
  const auto k = static_cast<std::size_t>(i);
  return i >= 0 && k < params.state_bytes.size() ? params.state_bytes[k] : 1.0;
}

/// "n=10 ram=2 disk=0 wd=0 rd=0" for messages.
std::string describe(const ScheduleParams& params);

/// An iterator over the actions of one adjoint run. Not thread-safe; no MPI: every rank that
/// builds a schedule from the same parameters gets the same stream.
class Schedule {
 public:
  virtual ~Schedule() = default;

  /// The next action, or nothing once EndReverse has been returned.
  virtual std::optional<Action> next() = 0;

  /// Registry name of the schedule ("revolve", ...).
  virtual std::string name() const = 0;

  /// True if the step count is learnt only at the end of the forward run. Such a schedule may
  /// emit Forward actions past the real end; the driver stops at n and calls finalize(n).
  virtual bool online() const { return false; }

  /// Online schedules: the forward run ended at x_n. Offline schedules reject the call unless
  /// n equals the planned step count.
  virtual void finalize(Step n);

  /// The parameters this schedule was built from.
  const ScheduleParams& params() const { return params_; }

  /// A proven lower bound on the cost (as the simulator counts it) of the best schedule in the
  /// model this schedule optimises, for its parameters; nothing if the schedule does not know
  /// one. When it equals the replayed cost, the schedule is optimal in that model.
  virtual std::optional<double> lower_bound() const { return std::nullopt; }

  /// The interval of the disk checkpoints it runs with, for a schedule that places them
  /// periodically (`disk-revolve`, `disk-mixed`), whether given (ScheduleParams::period) or
  /// chosen; 0 for the others. A priced schedule's parameters carry it (ScheduleRegistry::price).
  virtual std::int64_t period() const { return 0; }

  /// Engines call this as the first forward sweep runs: once with i = -1 before the first step
  /// (`bytes`: size of x_0), then after each first-sweep step i: it took `cost` (in any unit,
  /// the same for every step) and the state it produced, x_{i+1}, takes `bytes`. Schedules that
  /// adapt to unequal steps (`dynamic`) use it; the others ignore it. Not collective.
  virtual void observe_step(Step i, double cost, double bytes) {
    (void)i;
    (void)cost;
    (void)bytes;
  }

 protected:
  explicit Schedule(const ScheduleParams& params) : params_(params) {}
  ScheduleParams params_;
};

}  // namespace rwd::schedule
