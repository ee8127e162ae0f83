#pragma once
// The engine's view of a PETSc TS: the state is the solution vector (and, for a
// first-same-as-last Runge-Kutta method that keeps it, the previous step's last stage); a step's
// pullback data is its stages plus the solution at its end (an explicit RK method's: its stages
// alone); recomputing a step is TSStep with the attempts and the exact step size its first run
// used.

#include <petscts.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "exact_series.hpp"
#include "rewind/engine/stepper.hpp"
#include "step_replay.hpp"

namespace rwd::petsc {

/// What the first sweep saw of each step, so a recomputation repeats it. Indexed by the TS's
/// step numbers.
struct StepLog {
  static_assert(sizeof(PetscReal) == sizeof(double), "the step log holds PetscReal as double");
  ExactSeries times;     ///< t_k for k = 0 .. the last step set
  ExactSeries proposed;  ///< the step size TS proposed at set(k)
  ExactSeries dts;       ///< the exact size of step k (t_k -> t_{k+1})
  /// Every attempt at step k, for the steps that took more than one plain attempt (the adapter
  /// rejected sizes, or an event handler rolled attempts back); few steps have any.
  std::map<std::size_t, std::vector<Attempt>> attempts;
  PetscInt replayed_rejections = 0;  ///< rejected or rolled-back attempts repeated
  /// Where a TSSolve that continued the step numbering set the time back (or forth): step k-1
  /// of the last solve ended at ended_at[k], and times[k] is where the next solve started.
  std::map<std::size_t, PetscReal> ended_at;

  /// The time step k-1 ended at: times[k], unless a TSSolve restarted the clock at step k.
  PetscReal end_time(std::size_t k) const {
    const auto e = ended_at.find(k);
    return e == ended_at.end() ? times[k] : e->second;
  }
};

/// This rank's block of `v` as the engine sees it: a vector of the TS's communicator by its
/// ownership range; a vector of one process on a TS of several ranks (a quadrature's integral, a
/// parameter gradient) as each rank's copy side by side. `name` must outlive the field.
engine::Field vec_field(std::string_view name, Vec v, MPI_Comm comm);
/// `v`'s local block as a grid when it lives on a DMDA (dof, then the local corners' extents),
/// for the codecs (storage::Grid); none otherwise.
storage::Grid grid_of(Vec v, PetscInt n);

/// How a first-same-as-last Runge-Kutta method gets back the stage derivative its next step
/// reuses (f at the last stage, which PETSc keeps in the method's private data) after a restore.
enum class Fsal {
  None,  ///< not such a method
  /// The last stage is the solution the step ends in (bit for bit: the replay check stops a run
  /// where it is not), so a restart checkpoint is the solution alone, a step's stages hold the
  /// state it ends in, and the step after a restore restarts (f evaluated at the restored
  /// solution, as PETSc's `memory` trajectory does), or, where a TSSolve set the clock elsewhere
  /// since, is rebuilt by a zero-length step from the solution at the time the stage had.
  Restart,
  /// A restart checkpoint also keeps the last stage, and a zero-length step from it rebuilds the
  /// derivative as the forward run evaluated it (step number and time included).
  KeepStage,
};

/// Whether `ts` runs a first-same-as-last Runge-Kutta method.
bool first_same_as_last(TS ts);

/// What a replay-check error adds for a run in Fsal::Restart mode.
std::string fsal_restart_note();

class TsStepper final : public engine::Stepper {
 public:
  TsStepper(TS ts, StepLog& log, Fsal fsal);
  ~TsStepper() override;
  Fsal fsal() const { return fsal_; }
  /// Fsal::Restart: whether a restarted step was checked against a rebuilt one, and the answer.
  enum class RestartCheck { NotRun, Same, Differed, Skipped };
  /// The last stage is not the solution (restarts accepted within a tolerance): a rebuilt step
  /// would differ from a restarted one anyway, so the first restored step is not taken twice.
  void skip_restart_check() { restart_check_ = RestartCheck::Skipped; }
  RestartCheck restart_check() const { return restart_check_; }
  /// Before the first state or step data is taken: the mode decided after the first step.
  void set_fsal(Fsal fsal) { fsal_ = fsal; }
  /// After a step of a first-same-as-last method: whether its last stage is the solution it
  /// ended in, bit for bit, on this rank (the solution is computed with one term more).
  bool last_stage_is_solution();
  TsStepper(const TsStepper&) = delete;
  TsStepper& operator=(const TsStepper&) = delete;

  /// The TS step number of the recording's step 0 (a run in segments: each segment is a
  /// recording of its own, its steps counted from its first state).
  void set_first(PetscInt first) { first_ = first; }

  std::vector<engine::Field> state() override;
  std::vector<engine::Field> pullback() override;
  /// A step's pullback data holds the solution it ends in (a stage, or the X after the stages;
  /// not for an explicit RK method's stages alone), and a first-same-as-last method's reused
  /// stage is its last stage.
  std::vector<std::size_t> next_state_in_pullback() override;
  /// A theta method in endpoint form (CN, backward Euler): its stages are X0, the solution the
  /// step started from (TSStep_Theta copies it), and the solution itself.
  std::vector<StateSource> pullback_from_states() override;
  void loaded(engine::Kind kind) override;
  /// A restart state of step `i` was loaded for TSSolve itself to go on from (a resumed first
  /// sweep): a first-same-as-last method gets the stage it reuses rebuilt now.
  void resume_at(engine::Step i);
  void forward(engine::Step i, const engine::StepContext& context) override;
  void on_io(engine::IoEvent event) override;
  /// PETSc runs the adjoint steps itself; never called.
  void adjoint(engine::Step i) override;

 private:
  engine::Field field(const std::string& name, Vec v);
  bool stages_only() const;
  void rebuild_reused_stage(engine::Step i);
  void restore_reused_stage(engine::Step i);
  bool restarts(engine::Step i) const;
  void start_step(engine::Step i);
  void take_step(engine::Step i, const std::vector<Attempt>& attempts);
  void check_restart(engine::Step i, const std::vector<Attempt>& attempts);

  TS ts_;
  StepLog& log_;
  Fsal fsal_;
  RestartCheck restart_check_ = RestartCheck::NotRun;
  PetscInt first_ = 0;
  bool restored_ = false;        // a restart checkpoint was just loaded
  std::set<std::string> names_;  // stable storage for field names
  Vec integral_kept_ = nullptr;  // the quadrature's integral, kept across a recomputed step
};

}  // namespace rwd::petsc
