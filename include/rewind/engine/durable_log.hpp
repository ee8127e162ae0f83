#pragma once
/// @file
/// What a resumable run keeps durable (docs/resume.md): states and adjoint states written to the
/// HDF5 store, synced and sealed, and the manifest that lists them, replaced atomically; the link
/// that keeps the store's file through a kill; reading them back, checked; refusing the manifest
/// of another problem. The run's structure (which states, when) is the caller's: the engine's
/// resumable runs (EngineConfig::resume) and the PETSc trajectory's (-ts_trajectory_rewind_resume).

#include <memory>
#include <string>
#include <vector>

#include "rewind/engine/manifest.hpp"
#include "rewind/engine/stats.hpp"
#include "rewind/engine/stepper.hpp"
#include "rewind/engine/stores.hpp"

namespace rwd::engine {

/// Where a resumable run with this label keeps its manifest: `<directory>/rewind-<label>.resume`.
std::string resume_manifest_path(const std::string& directory, const std::string& label);
/// Whether a resumable run with this label is live in `directory` (another process holds its
/// lock), as opposed to one that was killed or failed, whose manifest stays for a resume.
/// Not collective.
bool resume_run_live(const std::string& directory, const std::string& label);

struct DurableSettings {
  std::string directory;  ///< where the manifest and the store's file are
  std::string label;      ///< the manifest is rewind-<label>.resume
  std::string identity;   ///< compared with a manifest's
  bool resume = false;    ///< take in a manifest there (else refuse one)
  bool verify = true;     ///< check_replay() compares
  Step steps = 0;
  Step interval = 0;
  /// How the user gives a run another place for its files, for messages ("give this run
  /// <elsewhere>"; PETSc: another -ts_trajectory_dirname).
  std::string elsewhere = "another label (StoreConfig::label) or directory";
};

/// Traffic of the durable states and adjoint states on this rank.
struct DurableTraffic : record::LevelTraffic {
  double seconds = 0.0;
};

class DurableLog {
 public:
  /// Agrees the fields' layout over the ranks (collective). `state` and `adjoint` give the
  /// names and blocks (their data is not read here); `adjoint` may be empty, and given later
  /// (set_adjoint_layout()).
  DurableLog(std::shared_ptr<Stores> stores, DurableSettings settings,
             const std::vector<Field>& state, const std::vector<Field>& adjoint);
  ~DurableLog();
  DurableLog(const DurableLog&) = delete;
  DurableLog& operator=(const DurableLog&) = delete;

  /// Reads the manifest there may be: none, a fresh start (rank 0 says so if `resume`); one, and
  /// no `resume`, Error(InvalidArgument); one of another problem, Error(InvalidArgument) naming
  /// the differences; a damaged one or one whose checkpoints fail their checksums,
  /// Error(Corrupt). Otherwise it is taken in: manifest() lists what is durable. Collective.
  void open();
  const Manifest& manifest() const;
  /// The adjoint state's fields, for a host that knows them only after open() (a PETSc program
  /// sets its cost gradients after TSSolve); construct with none. Agreed over the ranks and
  /// compared with the manifest's: another layout is refused (Error(InvalidArgument)) naming
  /// the difference. Before the first save() or load() of an adjoint state. Collective.
  void set_adjoint_layout(const std::vector<Field>& adjoint);
  /// Makes `fields` (the state at `step`, or the adjoint state there) durable and lists it; an
  /// adjoint state replaces the one listed and drops the states at `step` and above, whose room
  /// in the file is freed once the new manifest is in place. Collective.
  void save(bool adjoint, Step step, const std::vector<Field>& fields);
  /// Makes `fields` (the state the first sweep ended with, at step `step` = the step count)
  /// durable and lists it as the final state (Manifest::final_state), kept until finish().
  /// Collective.
  void save_final(Step step, const std::vector<Field>& fields);
  /// Reads a listed entry into `into` (this rank's blocks), checked. Collective.
  void load(const ManifestEntry& entry, const std::vector<Field>& into);
  /// The durable state at `step`.
  const ManifestEntry& state_at(Step step) const;
  /// With `verify`: `fields` (a state reached again at `step`) must have the checksums the
  /// durable state there had; else Error(Corrupt) is thrown on every rank naming the field, and
  /// what this run made durable, which cannot be trusted, goes: a resumed run puts the killed
  /// run's manifest back as it was, a fresh one removes its manifest and checkpoints (a run that
  /// made nothing durable leaves everything as it was). Collective.
  void check_replay(Step step, const std::vector<Field>& fields);
  /// With `verify`: a resumed run took the steps `from`..`step` before its durable state at
  /// `step` again, from the durable state at `from`, before making anything durable; `fields`
  /// must have the checksums the state at `step` had, else the program is not the killed run's:
  /// Error(InvalidArgument) on every rank, and the killed run's files are left. Collective.
  void check_resume_point(Step from, Step step, const std::vector<Field>& fields);
  /// The run ended: removes the manifest, then every generation's link. Collective.
  void finish();
  const DurableTraffic& traffic() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rwd::engine
