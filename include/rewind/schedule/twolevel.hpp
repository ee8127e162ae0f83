#pragma once
/// @file
/// Two-level (RAM + disk) checkpointing: the optimal offline schedule of H-Revolve (Herrmann &
/// Pallez, ACM TOMS 2020) for two levels, and periodic disk checkpointing (Disk-Revolve's
/// periodic variant) with Revolve in RAM between disk checkpoints. Pure C++: no MPI, no files.
///
/// Model (the simulator's): a forward step costs 1, including the recording re-run of a step
/// just before its adjoint; adjoint steps are not charged; a disk write costs `write_cost`, a
/// disk read `read_cost`; RAM copies are free. x_0 sits in a RAM slot for free or is written to
/// disk at `write_cost`. A disk checkpoint may be read many times; it is freed as soon as the
/// reverse sweep no longer needs it, so live disk checkpoints never exceed the disk budget.

#include <cstdint>
#include <memory>

#include "rewind/schedule/schedule.hpp"

namespace rwd::schedule {

/// How `twolevel` searches its table of sub-problems (segment length x free disk slots).
enum class TwoLevelMethod : std::uint8_t {
  Auto,      ///< Exact while the full table is cheap (about 6e7 split evaluations), else Windowed
  Exact,     ///< every split of every entry: the optimum when every disk-slot layer fits in the
             ///< table; O(n^2) work per layer
  Windowed,  ///< only splits near those of neighbouring entries; O(n) per layer, and a proven
             ///< lower bound from a convex relaxation of the same recursion is reported
};

/// Entries of `twolevel`'s choice table (4 bytes each): n+1 per tabulated disk-slot layer. When
/// the budget's layers do not all fit, the top segment is planned as a chain of disk checkpoints
/// above the layers that do, and where that leaves more than 1 % to the proven lower bound (which
/// is reported) it is planned again with half the table in short layers (see docs/schedules.md);
/// planning then holds two tables at once.
inline constexpr std::int64_t kTwoLevelTableEntries = 30'000'000;

/// What the two-level planner found.
struct TwoLevelPlan {
  double cost = 0.0;         ///< cost of the planned schedule (what the simulator counts)
  double lower_bound = 0.0;  ///< proven lower bound on the optimal two-level cost
  bool exact = false;        ///< every layer was searched exhaustively: cost is the optimum
  bool x0_on_disk = false;   ///< x_0 is written to disk (else it stays in a RAM slot)
  std::int64_t layers = 0;   ///< disk-slot layers tabulated (1 when one layer serves all counts)
  std::int64_t chain = 0;    ///< disk checkpoints chained above the tabulated layers (0: none)
};

/// Plans `twolevel` for params.steps >= 1 steps, params.ram RAM slots and params.disk disk
/// slots (or kUnlimited), both counting x_0's slot, with a choice table of at most
/// `table_entries` entries (at least one layer is always tabulated). Throws
/// Error(InvalidArgument) if the budget cannot reverse the run (no slot at all for n >= 2) or
/// the costs are negative. The plan is shared as make_twolevel() shares it. Not collective.
TwoLevelPlan plan_twolevel(const ScheduleParams& params,
                           TwoLevelMethod method = TwoLevelMethod::Auto,
                           std::int64_t table_entries = kTwoLevelTableEntries);

/// The `twolevel` schedule planned with a given method and table size (the registry uses Auto
/// and the default size). Plans are immutable and shared: schedules made for the same steps,
/// slots, costs, method and table size (ScheduleParams::period and the step costs and sizes play
/// no part) reuse one plan while it is among the 16 most recently used (at most 64 MiB of plans
/// are kept; a plan keeps only the decisions its action stream asks for, typically a few hundred).
/// Thread-safe: a plan requested from several threads at once is planned once. Not collective:
/// every rank that asks plans (or reuses) the same plan. Throws like plan_twolevel().
std::unique_ptr<Schedule> make_twolevel(const ScheduleParams& params, TwoLevelMethod method,
                                        std::int64_t table_entries = kTwoLevelTableEntries);

/// Drops every `twolevel` plan kept for reuse (to time planning, or to return the memory);
/// schedules already made keep theirs. Thread-safe, not collective.
void clear_twolevel_plans();

/// Periodic disk checkpointing: x_0, x_P, x_2P, ... go to disk in the first sweep; each interval
/// is reversed by reading its start back into RAM and running Revolve with every RAM slot; the
/// last interval is reversed in RAM directly. The best period for the budget, when
/// params.period is 0: the cheapest within the disk slots for a known step count, else the one
/// with the least cost per step for an unbounded run.
std::int64_t disk_revolve_period(const ScheduleParams& params);

/// The cost `disk-revolve` has with period `period` for params.steps steps (closed form; the
/// tests check it against the simulator).
double disk_revolve_cost(const ScheduleParams& params, std::int64_t period);

}  // namespace rwd::schedule
