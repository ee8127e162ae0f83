#pragma once
// The rewind trajectory's options: PETSc's trajectory option names where the meaning is the
// same, -ts_trajectory_rewind_* for what is new. Parsed and checked here; -help lists them.

#include <petscts.h>

#include <string>

#include "private_access.hpp"
#include "rewind/engine/plan.hpp"

namespace rwd::petsc {

struct Options {
  std::string schedule = "auto";
  PetscInt max_cps_ram = -1;    ///< -1: not given (store everything)
  PetscInt max_cps_disk = 0;    ///< -1: unlimited
  PetscReal write_cost = -1.0;  ///< < 0: measure ("auto", the default)
  PetscReal read_cost = -1.0;   ///< < 0: measure ("auto", the default)
  PetscBool async = PETSC_TRUE;
  /// StoreConfig::max_staged_bytes: staging buffers of the asynchronous disk store, per rank.
  PetscReal max_staged_bytes = 256.0 * 1024 * 1024;
  PetscReal ram_bytes = 0;         ///< 0: not given
  PetscInt steps = 0;              ///< the step count, when TS cannot predict it (0: count it)
  PetscBool verify = PETSC_TRUE;   ///< recomputed states are checked against the first sweep
  PetscReal verify_tolerance = 0;  ///< > 0: a recomputed state may differ by this much, relative
  /// The run survives a kill: durable states, adjoint states and a manifest on disk, and a run
  /// killed before goes on from them (docs/resume.md, "PETSc").
  PetscBool resume = PETSC_FALSE;
  PetscInt resume_interval = 0;  ///< steps between durable states (0: from the disk budget)
  /// A plan that recomputes more than this many times the steps it reverses is warned about,
  /// once, naming the RAM budget that would not (0: never warn).
  PetscReal recompute_warning = 10.0;
  /// A TSSolve may continue a run whose segments are not held whole: their steps are run again
  /// in the adjoint, which is right only if the program changes nothing between its TSSolve
  /// calls (the replay check stops a run whose recomputation differs).
  PetscBool recompute_solves = PETSC_FALSE;
  /// A first-same-as-last RK method restarts the step after a restore (its reused stage
  /// derivative evaluated at the restored solution, as PETSc's `memory` does) instead of keeping
  /// the last stage with each restart checkpoint and rebuilding it; with the replay check only.
  PetscBool fsal_restart = PETSC_TRUE;
  /// RAM checkpoints compressed (StoreConfig::codec): a codec's name and, for zfp, its tolerance.
  std::string compress = "none";
  PetscReal compress_tolerance = 0;
  /// With a lossy codec: pullback data (stage values) compressed lossily too
  /// (StoresConfig::lossy_pullbacks).
  PetscBool compress_lossy_pullbacks = PETSC_FALSE;
  PetscBool compress_disk = PETSC_TRUE;
  /// zfp-precision: the bits kept (CodecSpec::precision).
  PetscInt compress_precision = 0;
  /// zstd and blosc: the compression level, 0 for the codec's default (CodecSpec::level).
  PetscInt compress_level = 0;
  /// The ratio compressed RAM checkpoints are planned with (RecordingConfig::compress_ratio).
  PetscReal compress_ratio = 1;

  /// Fsal::Restart: asked for, and the replay check on to stop a run where it is not exact.
  bool fsal_restart_checked() const { return fsal_restart == PETSC_TRUE && verify == PETSC_TRUE; }
  bool auto_costs() const { return write_cost < 0 || read_cost < 0; }
  bool budget_given() const { return max_cps_ram >= 0 || ram_bytes > 0; }
};

/// Errors (on `comm`) unless `bytes` is a whole number of bytes from `least` (0 or 1) to 1e18, the
/// range of the byte options: "<what> must be a whole number of bytes from <least>[ (<zero>)] to
/// 1e18, got <bytes>". `zero`, if given, says what 0 means.
PetscErrorCode check_bytes(MPI_Comm comm, const char* what, PetscReal bytes, int least,
                           const char* zero = nullptr);

/// "268435456": a byte count as the whole number it is (PETSc prints reals as 2.68435e+08).
std::string bytes_text(PetscReal bytes);

/// Marks the trajectory options rewind reads (and PETSc's own -ts_trajectory_* ones) used in
/// the options database, so that an error raised before PETSc reads them (-ts_trajectory_view
/// is read only after TSAdjointSolve) is not followed by "Option left: -ts_trajectory_view",
/// which reads like a typo. Not collective.
PetscErrorCode mark_options_used(TSTrajectory tj);

/// Reads the options block of TSSetFromOptions into `options`; errors name the option and the
/// fix. Collective on `comm`.
PetscErrorCode read_options(Options& options, detail::OptionItems items, MPI_Comm comm);

/// The recording settings under their PETSc option names, for the engine's messages.
engine::SettingNames option_names();

}  // namespace rwd::petsc
