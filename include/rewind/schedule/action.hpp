#pragma once
/// @file
/// The action vocabulary every schedule speaks. Pure value types: no MPI, no files, no PETSc.
///
/// Steps are numbered so that step i advances the state from x_i to x_{i+1}; a run of n steps
/// goes from x_0 to x_n. Two kinds of data are checkpointed (the glossary is in docs/runtime.md):
/// the *restart data* of x_b, what a forward step from x_b needs, and the *pullback data* of
/// step i, what the adjoint of step i reads (for a Runge-Kutta method, its stage values; PETSc
/// calls them stages). checkpoint_schedules calls them "ics" and "adj deps".

#include <cstdint>
#include <string>
#include <variant>

namespace rwd::schedule {

using Step = std::int64_t;

/// Where a checkpoint lives. WORK is the stepper's own working state; NONE is "nowhere" (a Move
/// to NONE frees a checkpoint).
enum class Level : std::uint8_t { None = 0, Work = 1, Ram = 2, Disk = 3 };

/// "none", "work", "ram", "disk".
const char* to_string(Level level) noexcept;

/// Advance from x_{n0} to x_{n1}. If `write_restart`, first store the restart data of x_{n0} at
/// `level` (RAM or DISK). If `write_pullback`, store the pullback data of steps n0..n1-1 at
/// `level`; at WORK only the last step's pullback data is kept (the stepper's own buffers).
struct Forward {
  Step n0 = 0;
  Step n1 = 0;
  bool write_restart = false;
  bool write_pullback = false;
  Level level = Level::None;
  friend bool operator==(const Forward&, const Forward&) = default;
};

/// Run the adjoint of steps n1-1 down to n0 using their stored pullback data; if
/// `clear_pullback`, free that data afterwards. The working forward state is not valid after it.
///
/// With `from_states` (one step, n1 = n0 + 1; only where the pullback data is made of states,
/// ScheduleParams::pullback_from_states) the step's pullback data is composed from the restart
/// states x_{n0} and x_{n1}: x_{n1} stored (RAM or DISK), x_{n0} stored or the working state.
/// With `keep_start` as well, x_{n0} is the working state and x_{n1} is in RAM: x_{n1} is freed
/// and x_{n0} stored in RAM in its place (before the adjoint runs, so the budget is never
/// exceeded).
struct Reverse {
  Step n1 = 0;
  Step n0 = 0;
  bool clear_pullback = true;
  bool from_states = false;
  bool keep_start = false;
  friend bool operator==(const Reverse&, const Reverse&) = default;
};

/// Copy the restart state x_n from one level to another (to WORK = restore it).
struct Copy {
  Step n = 0;
  Level from = Level::None;
  Level to = Level::None;
  friend bool operator==(const Copy&, const Copy&) = default;
};

/// Like Copy, and the source is freed; a Move to NONE only frees.
struct Move {
  Step n = 0;
  Level from = Level::None;
  Level to = Level::None;
  friend bool operator==(const Move&, const Move&) = default;
};

/// The first forward sweep is over: x_n has been reached.
struct EndForward {
  friend bool operator==(const EndForward&, const EndForward&) = default;
};

/// The reverse sweep is over: every adjoint step has run and nothing is left stored.
struct EndReverse {
  friend bool operator==(const EndReverse&, const EndReverse&) = default;
};

using Action = std::variant<Forward, Reverse, Copy, Move, EndForward, EndReverse>;

/// One line, e.g. "Forward(0, 5, restart=ram, pullback=none)" or "Copy(3, disk -> work)".
std::string to_string(const Action& action);

}  // namespace rwd::schedule
