// Programs whose model changes during the run, each solved twice — with PETSc's store-all
// trajectory as the reference and with the trajectory under test (the command line's
// -ts_trajectory_* options) — and compared bit for bit (lambda and mu at t = 0):
//
//   -scenario parameter  an event at a crossing of sum(x) whose post-event function changes the
//                        decay rate a of the right-hand side (and changes it back when the
//                        adjoint crosses the event)
//   -scenario hybrid     two events that switch the system between two modes and move the
//                        state (a jump), undone in the adjoint
//   -scenario segments   three TSSolve calls continuing the step numbering, the program
//                        changing a and the state between them, the adjoint in three segments
//                        (TSAdjointSetSteps) with a restored before each; -time_jump <dt>
//                        sets the time forth by dt between the solves (a new segment)
//   -scenario continued  the same three TSSolve calls and one TSAdjointSolve over them all,
//                        with the model as the last solve left it (PETSc's ex9busadj does so):
//                        a step of an earlier solve run again would differ, so rewind keeps
//                        each solve's steps whole or refuses the solve that continues the run
//
// and programs that change their model behind the trajectory's back, which no recomputation can
// reproduce: the replay check (-ts_trajectory_rewind_verify, on by default) must stop the
// candidate's TSAdjointSolve on every rank with an error naming the step and the field, and the
// same run unchecked (TSTrajectoryRewindSetVerify(tj, PETSC_FALSE)) must give a gradient that
// differs from store-all, while the forward solutions agree ("replay check test passed"):
//
//   -scenario noisy      a random forcing: the right-hand side adds a term drawn from a
//                        generator that advances on every call (seeded at each TSSolve); RK 4
//   -scenario poststep   a TSPostStep callback raises the decay rate a after every step
//   -scenario between    the program changes b between TSSolve and TSAdjointSolve
//
// dx_i/dt = -a_m x_i + b sin(x_i) + c_i (+ the forcing), with m the mode; parameter p = (b).
// Fixed or adaptive steps (-ts_adapt_type), any TS type; 1 or 2 ranks.
#include <petscts.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "all_ranks.hpp"
#include "rewind/petsc/trajectory.h"

namespace {

constexpr PetscInt kSize = 19;

struct Model {
  PetscReal a[2] = {1.0, 2.5};  // decay rate in mode 0 and mode 1
  PetscReal b = 0.3;
  int mode = 0;
  PetscReal threshold = 0.0;  // sum(x) at which the parameter event fires
  bool hybrid = false;
  std::vector<PetscReal> event_times;  // the forward run's, for the report
  bool noisy = false;                  // a random forcing, a new draw at every call
  std::uint64_t seed = 0;

  // The next draw in [-1, 1) of a 64-bit linear congruential generator; every rank draws the
  // same sequence, since every rank evaluates the right-hand side the same number of times.
  PetscReal draw() {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<PetscReal>(seed >> 11) * 0x1.0p-52 - 1.0;
  }
};

// The text of the error `ierr`. PetscErrorMessage's third argument became `const char**` in
// PETSc 3.25 (`char**` before): the type is read off the function.
template <class Code, class Text>
std::string error_text(PetscErrorCode (*message)(Code, const char*[], Text**),
                       PetscErrorCode ierr) {
  Text* specific = nullptr;
  if (message(ierr, nullptr, &specific)) return "";
  return specific ? specific : "";
}

PetscErrorCode rhs(TS, PetscReal, Vec x, Vec f, void* ctx) {
  Model& m = *static_cast<Model*>(ctx);
  const PetscScalar* xa;
  PetscScalar* fa;
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArray(f, &fa));
  const PetscReal forcing = m.noisy ? 1e-3 * m.draw() : 0.0;
  for (PetscInt i = 0; i < hi - lo; ++i)
    fa[i] = -m.a[m.mode] * xa[i] + m.b * PetscSinScalar(xa[i]) + 0.05 * (lo + i) + forcing;
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(VecRestoreArray(f, &fa));
  PetscFunctionReturn(0);
}

PetscErrorCode jacobian(TS, PetscReal, Vec x, Mat A, Mat, void* ctx) {
  const Model& m = *static_cast<Model*>(ctx);
  const PetscScalar* xa;
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArrayRead(x, &xa));
  for (PetscInt i = lo; i < hi; ++i) {
    PetscCall(MatSetValue(A, i, i, -m.a[m.mode] + m.b * PetscCosScalar(xa[i - lo]), INSERT_VALUES));
  }
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

// d f_i / d b = sin(x_i): one parameter column.
PetscErrorCode jacobian_p(TS, PetscReal, Vec x, Mat Jp, void*) {
  const PetscScalar* xa;
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArrayRead(x, &xa));
  for (PetscInt i = lo; i < hi; ++i)
    PetscCall(MatSetValue(Jp, i, 0, PetscSinScalar(xa[i - lo]), INSERT_VALUES));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(MatAssemblyBegin(Jp, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(Jp, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

// Parameter scenario: one event, sum(x) crossing the threshold downwards.
// Hybrid scenario: two events, sum(x) crossing the threshold either way, switching the mode.
PetscErrorCode event_function(TS, PetscReal, Vec x, PetscScalar* f, void* ctx) {
  const Model& m = *static_cast<Model*>(ctx);
  PetscScalar s;
  PetscFunctionBegin;
  PetscCall(VecSum(x, &s));
  f[0] = s - m.threshold;
  if (m.hybrid) f[1] = s - 0.5 * m.threshold;
  PetscFunctionReturn(0);
}

PetscErrorCode post_event(TS ts, PetscInt n, PetscInt events[], PetscReal t, Vec x,
                          PetscBool forward, void* ctx) {
  Model& m = *static_cast<Model*>(ctx);
  PetscFunctionBegin;
  (void)ts;
  for (PetscInt k = 0; k < n; ++k) {
    if (events[k] == 0) m.mode = forward ? 1 : 0;  // the rate changes, and back in the adjoint
    if (events[k] == 1) {
      m.mode = forward ? 0 : 1;
      if (forward) PetscCall(VecScale(x, 0.9));  // a jump of the state
    }
  }
  if (forward) m.event_times.push_back(t);
  PetscFunctionReturn(0);
}

// A post-step callback that changes the model after every step (-scenario poststep).
PetscErrorCode raise_rate(TS ts) {
  void* ctx = nullptr;
  PetscFunctionBegin;
  PetscCall(TSGetApplicationContext(ts, &ctx));
  static_cast<Model*>(ctx)->a[0] += 0.01;
  PetscFunctionReturn(0);
}

struct Run {
  std::vector<PetscScalar> lambda, mu, x;
  PetscInt steps = 0;
  std::size_t events = 0;
  // Only with Check::Expect: TSAdjointSolve failed on this rank, and what it said.
  bool failed = false;
  std::string message;
};

// How the candidate runs: as the options say; with the replay check on (-scenario noisy,
// poststep, between) and its error caught rather than fatal; or with the check turned off.
enum class Check { AsOptions, Expect, Off };

bool model_changes_unseen(const std::string& scenario) {
  return scenario == "noisy" || scenario == "poststep" || scenario == "between";
}

PetscErrorCode initial(Vec x) {
  PetscInt lo, hi;
  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  for (PetscInt i = lo; i < hi; ++i) PetscCall(VecSetValue(x, i, 1.0 + 0.1 * i, INSERT_VALUES));
  PetscCall(VecAssemblyBegin(x));
  PetscCall(VecAssemblyEnd(x));
  PetscFunctionReturn(0);
}

PetscErrorCode solve(const std::string& scenario, bool reference, Check check, Run& out) {
  Model m;
  m.hybrid = scenario == "hybrid";
  m.noisy = scenario == "noisy";
  TS ts;
  Vec x, lambda, mu;
  Mat A, Jp;
  PetscFunctionBegin;
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, kSize, &x));
  PetscCall(initial(x));
  PetscScalar s0;
  PetscCall(VecSum(x, &s0));
  m.threshold = 0.6 * s0;
  PetscCall(VecDuplicate(x, &lambda));
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, kSize, kSize, 1, NULL, 0,
                         NULL, &A));
  PetscCall(MatCreateDense(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, kSize, 1, NULL, &Jp));
  PetscCall(MatSetUp(Jp));
  PetscCall(MatCreateVecs(Jp, &mu, NULL));
  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  // An implicit method's Newton iterations cannot converge on a forcing that changes at every
  // evaluation: the random forcing runs with explicit RK 4.
  PetscCall(TSSetType(ts, m.noisy ? TSRK : TSCN));
  if (m.noisy) PetscCall(TSRKSetType(ts, TSRK4));
  PetscCall(TSSetRHSFunction(ts, NULL, rhs, &m));
  PetscCall(TSSetRHSJacobian(ts, A, A, jacobian, &m));
  PetscCall(TSSetRHSJacobianP(ts, Jp, jacobian_p, &m));
  PetscCall(TSSetTimeStep(ts, 0.05));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetSaveTrajectory(ts));
  PetscCall(TSSetApplicationContext(ts, &m));
  if (scenario == "poststep") PetscCall(TSSetPostStep(ts, raise_rate));
  const bool solves = scenario == "segments" || scenario == "continued";
  if (!solves && !model_changes_unseen(scenario)) {
    PetscInt direction[2] = {-1, 1};
    PetscBool terminate[2] = {PETSC_FALSE, PETSC_FALSE};
    PetscCall(TSSetEventHandler(ts, m.hybrid ? 2 : 1, direction, terminate, event_function,
                                post_event, &m));
  }
  PetscCall(TSSetMaxTime(ts, solves ? 0.6 : 1.5));
  PetscCall(TSSetFromOptions(ts));
  TSTrajectory tj;
  PetscCall(TSGetTrajectory(ts, &tj));
  if (reference) {  // the candidate keeps -ts_trajectory_solution_only as given
    PetscCall(TSTrajectorySetType(tj, ts, TSTRAJECTORYBASIC));
    PetscCall(TSTrajectorySetSolutionOnly(tj, PETSC_FALSE));
    PetscCall(TSTrajectorySetDirname(tj, "reference-trajectory"));
  } else if (check != Check::AsOptions) {
    PetscCall(TSTrajectoryRewindSetVerify(tj, check == Check::Expect ? PETSC_TRUE : PETSC_FALSE));
  }

  std::vector<PetscInt> segment_steps;
  PetscCall(TSSolve(ts, x));
  if (solves) {
    PetscInt before = 0, now = 0;
    PetscCall(TSGetStepNumber(ts, &now));
    segment_steps.push_back(now);
    before = now;
    for (int seg = 1; seg < 3; ++seg) {
      // The program changes its model and its state between the solves.
      m.mode = seg % 2;
      PetscCall(VecScale(x, 0.95));
      PetscReal t, jump = 0;
      PetscCall(TSGetTime(ts, &t));
      PetscCall(PetscOptionsGetReal(NULL, NULL, "-time_jump", &jump, NULL));
      PetscCall(TSSetTime(ts, t + jump));
      PetscCall(TSSetMaxTime(ts, 0.6 * (seg + 1) + seg * jump));
      PetscCall(TSSolve(ts, x));
      PetscCall(TSGetStepNumber(ts, &now));
      segment_steps.push_back(now - before);
      before = now;
    }
  }
  PetscCall(TSGetStepNumber(ts, &out.steps));
  out.events = m.event_times.size();
  {
    const PetscScalar* a;
    PetscInt n;
    PetscCall(VecGetLocalSize(x, &n));
    PetscCall(VecGetArrayRead(x, &a));
    out.x.assign(a, a + n);
    PetscCall(VecRestoreArrayRead(x, &a));
  }
  if (scenario == "between") m.b = 0.31;  // the adjoint sees another model than the forward run
  PetscCall(VecCopy(x, lambda));          // J = |x(T)|^2 / 2
  PetscCall(VecZeroEntries(mu));
  PetscCall(TSSetCostGradients(ts, 1, &lambda, &mu));
  if (scenario == "segments") {
    for (int seg = 2; seg >= 0; --seg) {
      m.mode = seg % 2;  // each segment's model, restored before its adjoint
      PetscCall(TSAdjointSetSteps(ts, segment_steps[static_cast<std::size_t>(seg)]));
      PetscCall(TSAdjointSolve(ts));
    }
  } else if (check == Check::Expect) {
    // The replay check must stop this on every rank: caught here, so each rank reports it.
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    const PetscErrorCode ierr = TSAdjointSolve(ts);
    PetscCall(PetscPopErrorHandler());
    if (ierr) {
      out.failed = true;
      out.message = error_text(PetscErrorMessage, ierr);
    }
  } else {
    PetscCall(TSAdjointSolve(ts));
  }
  const PetscScalar* a;
  PetscInt n;
  PetscCall(VecGetLocalSize(lambda, &n));
  PetscCall(VecGetArrayRead(lambda, &a));
  out.lambda.assign(a, a + n);
  PetscCall(VecRestoreArrayRead(lambda, &a));
  PetscCall(VecGetLocalSize(mu, &n));
  PetscCall(VecGetArrayRead(mu, &a));
  out.mu.assign(a, a + n);
  PetscCall(VecRestoreArrayRead(mu, &a));
  if (!reference && !out.failed) PetscCall(TSTrajectoryView(tj, PETSC_VIEWER_STDOUT_WORLD));
  PetscCall(TSDestroy(&ts));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Jp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&lambda));
  PetscCall(VecDestroy(&mu));
  PetscFunctionReturn(0);
}

bool same(const std::vector<PetscScalar>& a, const std::vector<PetscScalar>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(PetscScalar)) == 0);
}

bool all_ranks(bool local) {
  return rwd::testing::all_ranks(local, PETSC_COMM_WORLD);
}

// The replay check scenarios: the checked candidate stops on every rank with the check's error,
// and the unchecked one runs to a gradient that differs from store-all.
PetscErrorCode check_scenario(const std::string& scenario, const Run& reference, bool* passed) {
  PetscMPIInt rank;
  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  Run checked, unchecked;
  PetscCall(solve(scenario, false, Check::Expect, checked));
  const bool names_it =
      checked.message.find("differs from the one the first sweep reached") != std::string::npos &&
      checked.message.find("the recomputed state x_") != std::string::npos &&
      checked.message.find("(field 'X', rank ") != std::string::npos;
  PetscCall(PetscSynchronizedPrintf(PETSC_COMM_WORLD, "rank %d: checked TSAdjointSolve %s: %s\n",
                                    rank, checked.failed ? "stopped" : "DID NOT STOP",
                                    checked.failed ? checked.message.c_str() : ""));
  PetscCall(PetscSynchronizedFlush(PETSC_COMM_WORLD, PETSC_STDOUT));
  const bool stopped = all_ranks(checked.failed && names_it);
  PetscCall(solve(scenario, false, Check::Off, unchecked));
  const bool forward_same = all_ranks(same(reference.x, unchecked.x));
  const bool gradient_same =
      all_ranks(same(reference.lambda, unchecked.lambda) && same(reference.mu, unchecked.mu));
  *passed = stopped && forward_same && !gradient_same;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "scenario %s: the replay check %s on every rank; unchecked, the forward "
                        "solution %s store-all's and lambda and mu %s store-all's: replay check "
                        "test %s\n",
                        scenario.c_str(), stopped ? "stopped the adjoint" : "DID NOT STOP it",
                        forward_same ? "equals" : "DIFFERS from",
                        gradient_same ? "EQUAL" : "differ from", *passed ? "passed" : "FAILED"));
  PetscFunctionReturn(0);
}

}  // namespace

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(TSTrajectoryRegisterRewind());
  char scenario[32] = "parameter";
  PetscCall(PetscOptionsGetString(NULL, NULL, "-scenario", scenario, sizeof scenario, NULL));
  // PETSc's basic type refuses a directory that is not empty: a run killed earlier in this
  // test's own working directory may have left its reference trajectory there.
  PetscMPIInt rank = 0;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (rank == 0) {
    std::error_code ignored;
    std::filesystem::remove_all("reference-trajectory", ignored);
  }
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  Run reference, candidate;
  PetscCall(solve(scenario, true, Check::AsOptions, reference));
  if (model_changes_unseen(scenario)) {
    bool passed = false;
    PetscCall(check_scenario(scenario, reference, &passed));
    PetscCall(PetscFinalize());
    return passed ? 0 : 1;
  }
  PetscCall(solve(scenario, false, Check::AsOptions, candidate));
  const PetscBool ok = same(reference.lambda, candidate.lambda) && same(reference.mu, candidate.mu)
                           ? PETSC_TRUE
                           : PETSC_FALSE;
  const bool all = rwd::testing::all_ranks(ok, PETSC_COMM_WORLD);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "scenario %s: %" PetscInt_FMT " steps, %zu events; lambda and mu %s "
                        "store-all: events test %s\n",
                        scenario, candidate.steps, candidate.events,
                        all ? "bitwise equal to" : "DIFFER from", all ? "passed" : "FAILED"));
  PetscCall(PetscFinalize());
  return all ? 0 : 1;
}
