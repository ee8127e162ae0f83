#pragma once
// The engine's view of a PETSc TS: the state is the solution vector (and, for a
// first-same-as-last Runge-Kutta method, the previous step's last stage); a step's pullback
// data is its stages plus the solution at its end; recomputing a step is TSStep with the
// attempts and the exact step size its first run used.

#include <petscts.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "rewind/engine/stepper.hpp"

namespace rwd::petsc {

/// What the first sweep saw of each step, so a recomputation repeats it.
struct StepLog {
  std::vector<PetscReal> times;     ///< t_k for k = 0 .. the last step set
  std::vector<PetscReal> proposed;  ///< the step size TS proposed at set(k)
  std::vector<PetscReal> dts;       ///< the exact size of step k (t_k -> t_{k+1})
  /// The sizes of the attempts the adapter rejected before accepting step k (few steps have any).
  std::map<std::size_t, std::vector<PetscReal>> rejected;
  PetscInt replayed_rejections = 0;  ///< rejected attempts repeated while recomputing
};

class TsStepper final : public engine::Stepper {
 public:
  /// `fsal`: a first-same-as-last Runge-Kutta method (its restart data also holds the last stage).
  TsStepper(TS ts, StepLog& log, bool fsal);

  std::vector<engine::Field> state() override;
  std::vector<engine::Field> pullback() override;
  void loaded(engine::Kind kind) override;
  void forward(engine::Step i, const engine::StepContext& context) override;
  void on_io(engine::IoEvent event) override;
  /// PETSc runs the adjoint steps itself; never called.
  void adjoint(engine::Step i) override;

 private:
  engine::Field field(const std::string& name, Vec v);
  void rebuild_reused_stage(engine::Step i);

  TS ts_;
  StepLog& log_;
  bool fsal_;
  bool restored_ = false;        // a restart checkpoint was just loaded
  std::set<std::string> names_;  // stable storage for field names
};

}  // namespace rwd::petsc
