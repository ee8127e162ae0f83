#pragma once
/// @file
/// The manifest of a resumable run (docs/resume.md): what of a run is durable on disk, and what
/// problem it belongs to. A text file written atomically next to the checkpoint files (written
/// to a temporary, synced, renamed), so that after a kill it is either the last version or the
/// one before, never torn. Its last line is a checksum of the lines before it.
///
///   rewind resume manifest 2
///   identity <hex>                     the caller's identity text (program, options), hex
///   label <hex>                        the run's label as given (the file name sanitises it)
///   ranks <P>
///   steps <n>
///   interval <L>                       durable states at 0, L, 2L, ... < n
///   generation <g>                     the runs so far that wrote it (1, 2 after a resume, ...)
///   field <kind> <i> <name hex> <global size>          kind: state | adjoint
///   layout <kind> <rank> <i> <offset> <count>           every rank's block of every field
///   <kind> <step> <file name hex>      kind: state (durable, in the file), reached (a state
///                                      the first sweep reached, freed: its checksums only, the
///                                      file '-'), final (the state the first sweep ended with,
///                                      at step n, for a host that hands it back to its program
///                                      when it resumes), adjoint (the adjoint state the reverse
///                                      reached)
///   block <rank> <i> <byte offset> <count> <checksum hex> [<stored bytes>]   its blocks, after it
///                                        (stored bytes, version 3 only: a compressed block of
///                                        that size; the first line says version 3 when any
///                                        block is compressed, 2 otherwise)
///   end <checksum hex>
///
/// States are listed by increasing step, then at most one final state, then the states reached,
/// then at most one adjoint state (the reverse sweep went down to its step).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/schedule/action.hpp"
#include "rewind/storage/sealed_blocks.hpp"

namespace rwd::engine {

/// One distributed field: its name, global size and every rank's block.
struct ManifestField {
  std::string name;
  std::int64_t global_size = 0;
  std::vector<std::int64_t> offsets;  ///< by rank
  std::vector<std::int64_t> counts;   ///< by rank
  bool operator==(const ManifestField&) const = default;
};

/// A durable state or adjoint state: at which step, in which file (a name in the manifest's
/// directory) and where every rank's blocks are.
struct ManifestEntry {
  schedule::Step step = 0;
  std::string file;
  std::vector<std::vector<storage::SealedBlock>> blocks;  ///< [rank][field]
};

struct Manifest {
  std::string identity;
  std::string label;
  int ranks = 0;
  schedule::Step steps = 0;
  schedule::Step interval = 0;
  std::int64_t generation = 0;
  std::vector<ManifestField> state, adjoint;
  std::vector<ManifestEntry> states;  ///< by increasing step
  /// States the first sweep reached whose data was freed (the reverse went below them): their
  /// checksums, so that a recomputation reaching them again is checked. By increasing step.
  std::vector<ManifestEntry> reached;
  /// The state the first sweep ended with (step n), when the run keeps it: a host whose program
  /// reads x_n before its reverse sweep (PETSc's TSSolve) hands it back when it resumes.
  std::optional<ManifestEntry> final_state;
  std::optional<ManifestEntry> reverse;  ///< the adjoint state the reverse sweep reached
};

/// The manifest as text, its checksum line included.
std::string to_text(const Manifest& manifest);
/// Reads a manifest. Throws Error(Corrupt) naming `source` and the line for anything out of
/// place: a bad checksum, an unknown line, numbers out of range, blocks that do not match the
/// layout, states out of order or off the interval.
Manifest parse_manifest(std::string_view text, const std::string& source);
/// What differs between the problem a manifest was written for and `now` (label, identity, ranks,
/// steps, interval, fields and their layout), one phrase per difference; empty when they are
/// the same problem. An empty adjoint layout in `now` is not known yet and not compared.
std::vector<std::string> differences(const Manifest& saved, const Manifest& now);

}  // namespace rwd::engine
