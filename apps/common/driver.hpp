#pragma once
// The driver of rewind-heat and rewind-burgers: one solve of a Problem from u0, forward and,
// unless only the objective is asked for, adjoint, with the trajectory the options choose (or
// PETSc's store-all memory trajectory), and what the trajectory did.
#include <petscts.h>

#include <string>
#include <vector>

#include "adjoint_app.hpp"
#include "report.hpp"
#include "step_hooks.hpp"

namespace rwd::apps {

enum class Mode {
  User,         // forward + adjoint with the trajectory the options ask for (default rewind)
  StoreAll,     // forward + adjoint with PETSc's memory trajectory storing every step
  ForwardOnly,  // the objective only
};

/// What one solve gives.
struct SolveResult {
  PetscReal J = 0, J_terminal = 0, J_integral = 0;
  OwnedVec g_u0, g_p;
  StepHooks hooks;
  double forward_seconds = 0, adjoint_seconds = 0;
  PetscInt steps = 0;
  std::string ts_type;
  bool adaptive = false;
  PetscReal t_final = 0, dt = 0;
  TrajectoryReport trajectory;
};

/// The objective's pieces: J = 1/2 area |u(T) - u_obs|^2 + int 1/2 area (chi u, u) dt.
struct Objective {
  OwnedVec u_obs, chi, work;
  PetscReal area = 0;  // cell area: sums over cells approximate integrals
};

/// Solves a Problem (collective on its DM's communicator).
class Driver {
 public:
  Driver(Problem& problem, Progress& progress);

  /// One solve from u0 (and the problem's current parameter), with the adjoint unless
  /// ForwardOnly. `replay` fixes the step sizes (the Taylor test's frozen step sequence).
  SolveResult solve(Mode mode, Vec u0, const std::vector<PetscReal>* replay);

 private:
  // The pieces of solve(), in the order it calls them.
  void add_quadrature(TS ts, Mode mode, Vec u0, OwnedMat& drdu);
  TSTrajectory set_up(TS ts, Mode mode, const std::vector<PetscReal>* replay, StepHooks& h);
  static void describe_steps(TS ts, SolveResult& r);
  void forward(TS ts, Vec u, SolveResult& r);
  void adjoint(TS ts, Vec u, Vec lambda[1], Vec mu[1], SolveResult& r);
  static void add_integral(TS ts, SolveResult& r);

  Problem& pb_;
  Progress& progress_;
  Objective obj_;
};

}  // namespace rwd::apps
