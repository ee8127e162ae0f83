#pragma once
// What rewind-heat and rewind-burgers share: a PDE adjoint problem on a 2D periodic DMDA is
// described by a Problem; run_app() does the rest (options, forward and adjoint solves with the
// rewind trajectory, the summary, JSON, HDF5 output, the Taylor test and the store-all
// comparison).
//
// Every app solves u_t = G(u; p) on the periodic unit square, u(0) = u0, and differentiates
//   J(u0, p) = 1/2 sum_cells h^2 (u(T) - u_obs)^2 + int_0^T 1/2 sum_cells h^2 chi u^2 dt
// with respect to u0 and, if the problem has one, a distributed parameter field p.
#include <petscdmda.h>
#include <petscts.h>

#include <functional>
#include <memory>
#include <string>

#include "grid.hpp"
#include "handles.hpp"

namespace rwd::apps {

/// The checks and outputs every app offers: -taylor, -taylor_h, -taylor_points, -summary_json,
/// -gradient_out.
struct CheckOptions {
  PetscBool taylor = PETSC_FALSE;
  PetscReal taylor_h = 0.1;
  PetscInt taylor_points = 4;
  char json[PETSC_MAX_PATH_LEN] = "", gradient[PETSC_MAX_PATH_LEN] = "";
};

/// The type of a PetscOptionsBegin block's items (PetscOptionsObject) as this PETSc passes them:
/// a pointer to the struct before 3.23, the pointer type PetscOptionItems since. Read off the
/// public PetscOptionsEnd_Private, so that the version branches stay in src/petsc's one file.
template <class Fn>
struct FirstParameter;
template <class R, class A>
struct FirstParameter<R (*)(A)> {
  using type = A;
};
using OptionItems = FirstParameter<decltype(&PetscOptionsEnd_Private)>::type;
/// Reads the CheckOptions inside a PetscOptionsBegin/PetscOptionsEnd block (PETSc's option
/// macros refer to the block's PetscOptionsObject). Collective on the block's communicator.
PetscErrorCode read_check_options(OptionItems PetscOptionsObject, CheckOptions* o);
/// Throws rwd::Error naming the option if a CheckOptions value is out of range.
void validate(const CheckOptions& o);
/// Writes `text` to the file `path` (the -summary_json file). Not collective.
void write_summary(const char* path, const std::string& text);

/// One PDE adjoint problem on the grid make_grid() builds. Collective on PETSC_COMM_WORLD.
class Problem {
 public:
  /// An n x n grid unless the -da_ options say otherwise.
  explicit Problem(PetscInt n) : dm_(make_grid(n)) {}
  virtual ~Problem() = default;

  /// Program name ("rewind-heat").
  virtual const char* name() const = 0;
  /// Two or three lines for the summary: the equation, the method, the controls.
  virtual std::string describe() const = 0;
  /// The DMDA (one dof per cell).
  DM dm() const { return dm_; }

  /// Makes `ts` solve the forward model: DM, type, RHS function and Jacobian, parameter Jacobian,
  /// final time and step size. Called on a new TS before TSSetFromOptions, so options override.
  virtual void configure(TS ts) = 0;

  /// The initial condition u0 (the control the gradient is taken against first).
  virtual void initial_condition(Vec u0) const = 0;
  /// The observation u_obs of the final state, and the weight chi of the time-integrated term.
  virtual void observation(Vec u_obs) const = 0;
  virtual void sensor(Vec chi) const = 0;
  /// Directions for the Taylor test (dp is null when the problem has no parameter field).
  virtual void directions(Vec du0, Vec dp) const = 0;

  /// The distributed parameter p as the RHS callbacks read it (null if none), and its name.
  /// The driver perturbs it in place for the Taylor test.
  virtual Vec parameter() const { return nullptr; }
  virtual const char* parameter_name() const { return nullptr; }
  /// The driver changed parameter(): drop anything computed from it.
  virtual void parameter_changed() {}

 protected:
  /// rwd::apps::fill on this problem's grid.
  void fill(Vec v, const std::function<PetscReal(PetscReal, PetscReal)>& f) const {
    rwd::apps::fill(dm_, v, f);
  }

  OwnedDM dm_;
};

using ProblemFactory = std::function<std::unique_ptr<Problem>()>;

/// The whole program: PetscInitialize, build the problem with `make`, solve, report, check.
/// Returns the process exit code (non-zero when -taylor or -compare_storeall fails).
int run_app(int argc, char** argv, const char* help, const ProblemFactory& make);

}  // namespace rwd::apps
