#pragma once
/// @file
/// How an Engine runs (engine.hpp): the recording's schedule and budget, its stores, and
/// whether it survives being killed.

#include <string>

#include "rewind/engine/plan.hpp"
#include "rewind/storage/store.hpp"

namespace rwd::engine {

/// Runs that survive being killed (docs/resume.md). A resumable run makes x_0 and every
/// interval-th state durable in the disk store as the first sweep reaches them (synced, sealed,
/// listed in a manifest in store.directory) and runs each interval on its own with the RAM
/// budget; in the reverse sweep it makes the adjoint state durable at the same steps. A run
/// killed in either sweep and started again with `resume` goes on from the last durable state
/// (forward) or adjoint state (reverse) and gives the same bits as a run never killed. What the
/// forward sweep accumulates must be in Stepper::state(), what the adjoint carries in
/// Stepper::adjoint_state(): nothing else is restored.
struct ResumeConfig {
  /// Run resumable. Needs the step count (params.steps), a directory (store.directory), the
  /// "hdf5" disk store and a stepper with an adjoint_state().
  bool enabled = false;
  /// Continue the run the manifest in store.directory describes (with this label), if there is
  /// one; with none, start at x_0. A manifest of another problem is refused, naming what
  /// differs; without `resume`, a manifest there is refused rather than overwritten.
  bool resume = false;
  /// Steps between durable states. 0: the fewest the disk budget allows (params.disk slots hold
  /// the durable states and one adjoint state), which needs a finite disk budget. Each interval
  /// is planned with `schedule` and the RAM budget alone.
  schedule::Step interval = 0;
  /// Whatever else makes two runs the same problem (the program, the options that change
  /// results): a resumed run must give the same text.
  std::string identity;
};

/// How to run: the recording's schedule and budget, and the stores'.
struct EngineConfig : RecordingConfig {
  /// Communicator, directory, keep_files, label, async_io; `codec` compresses the RAM
  /// checkpoints (rewind/storage/codec.hpp) and, when lossless, the disk ones (compress_disk;
  /// a lossy one as StoresConfig::store says).
  storage::StoreConfig store;
  std::string ram_store = "ram";    ///< store for RAM checkpoints
  std::string disk_store = "hdf5";  ///< store for disk checkpoints
  bool lossy_pullbacks = false;     ///< StoresConfig::lossy_pullbacks
  bool compress_disk = true;        ///< StoresConfig::compress_disk
  ResumeConfig resume;              ///< runs that survive a kill
};

}  // namespace rwd::engine
