#pragma once
/// @file
/// The schedule interface: an iterator of actions, and the parameters every schedule is built from.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

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
};

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

 protected:
  explicit Schedule(const ScheduleParams& params) : params_(params) {}
  ScheduleParams params_;
};

}  // namespace rwd::schedule
