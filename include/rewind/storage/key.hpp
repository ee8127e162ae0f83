#pragma once
/// @file
/// The name of a checkpoint in a store. No MPI: layers that only name checkpoints include this.
/// Words (checkpoint, recording, run, segment, slot, row, tape, ...): docs/runtime.md#glossary.

#include <compare>
#include <cstdint>
#include <string>

namespace rwd::storage {

/// What a checkpoint holds (glossary in docs/runtime.md): the restart data of the state x_step,
/// the pullback data of step `step` (what its adjoint reads, e.g. Runge-Kutta stage values), or
/// the whole state x_step at the end of a first sweep, kept while its recording is parked.
enum class Kind : std::uint8_t { Restart = 0, Pullback = 1, Final = 2 };

/// Identifies a checkpoint. Several recordings may share one store; `recording` (the
/// recording's id, engine::Stores::next_recording_id()) keeps their checkpoints apart (0 for a
/// store that serves one). The HDF5 file keeps it in its per-row attribute `run` (file format 5).
struct Key {
  std::int64_t step = 0;
  Kind kind = Kind::Restart;
  std::int64_t recording = 0;
  friend auto operator<=>(const Key&, const Key&) = default;
};

/// "restart 12", "pullback 12", "final 12", with " of recording 3" when recording != 0, for
/// messages.
std::string to_string(const Key& key);

}  // namespace rwd::storage
