// The rewind trajectory never leaves PETSc's thread slower (tests/support/caller_state.hpp): a
// plain SSE2 loop, as PETSc's own vector kernels are, timed in the code PETSc runs right after
// each trajectory call — TSPostStep follows TSTrajectorySet in TSSolve, the adjoint monitor
// follows TSTrajectoryGet in TSAdjointSolve — against the same loop right after clearing the
// upper vector state. Store-all, a RAM budget that recomputes and a RAM + disk budget, each with
// the replay check on; PETSc's own `memory` trajectory first, as the control. Each configuration's
// adjoint must also be store-all's bits. Run at 1 and 2 ranks.
#include <petscts.h>

#include <string>
#include <vector>

#include "../support/caller_state.hpp"
#include "all_ranks.hpp"
#include "decay_problem.hpp"
#include "rewind/petsc/trajectory.h"

namespace {

using rwd::testing::DecayProblem;
using rwd::testing::same_bits;

rwd::testing::CallbackWatch* watch = nullptr;

PetscErrorCode after_set(TS) {
  PetscFunctionBegin;
  if (watch) watch->look("TSPostStep, after TSTrajectorySet");
  PetscFunctionReturn(0);
}

PetscErrorCode after_get(TS, PetscInt, PetscReal, Vec, PetscInt, Vec*, Vec*, void*) {
  PetscFunctionBegin;
  if (watch) watch->look("the adjoint monitor, after TSTrajectoryGet");
  PetscFunctionReturn(0);
}

}  // namespace

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(TSTrajectoryRegisterRewind());
  PetscMPIInt rank = 0, size = 1;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  DecayProblem p;
  // A few thousand values a rank: XXH3 hashes inputs under 240 bytes without vector code.
  PetscCall(rwd::testing::create_decay_problem(PETSC_COMM_WORLD, 4096 * size, 30, 1.0, p));
  PetscCall(TSSetPostStep(p.ts, after_set));
  PetscCall(TSAdjointMonitorSet(p.ts, after_get, NULL, NULL));
  PetscCall(TSSetFromOptions(p.ts));
  TSTrajectory tj;
  PetscCall(TSGetTrajectory(p.ts, &tj));

  struct Case {
    const char* name;
    const char* type;
    PetscInt ram, disk;
  };
  const Case cases[] = {{"PETSc memory (control)", TSTRAJECTORYMEMORY, -1, 0},
                        {"rewind, store-all", TSTRAJECTORYREWIND, -1, 0},
                        {"rewind, 4 RAM", TSTRAJECTORYREWIND, 4, 0},
                        {"rewind, 3 RAM + 6 disk", TSTRAJECTORYREWIND, 3, 6}};
  std::vector<PetscScalar> reference, got;
  PetscBool ok = PETSC_TRUE;
  for (const Case& c : cases) {
    PetscCall(TSTrajectorySetType(tj, p.ts, c.type));
    if (c.type == std::string(TSTRAJECTORYREWIND)) {
      PetscCall(TSTrajectoryRewindSetMaxCheckpoints(tj, c.ram, c.disk));
      PetscCall(TSTrajectorySetDirname(tj, "caller-state-ckpt"));
    }
    rwd::testing::CallbackWatch w;
    watch = &w;
    PetscCall(rwd::testing::decay_solve(p, got));
    watch = nullptr;
    if (reference.empty()) reference = got;
    const bool same = same_bits(got, reference);
    PetscCall(PetscSynchronizedPrintf(PETSC_COMM_WORLD, "[%d] %s: %s: %s; lambda %s store-all\n",
                                      rank, c.name, w.passed() ? "ok" : "SLOWED",
                                      w.describe().c_str(),
                                      same ? "bitwise equal to" : "DIFFERS from"));
    ok = (PetscBool)(ok && same && w.passed());
  }
  PetscCall(PetscSynchronizedFlush(PETSC_COMM_WORLD, PETSC_STDOUT));

  const bool all = rwd::testing::all_ranks(ok, PETSC_COMM_WORLD);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s\n",
                        all ? "caller state test passed" : "caller state test FAILED"));
  PetscCall(rwd::testing::destroy_decay_problem(p));
  PetscCall(PetscFinalize());
  return all ? 0 : 1;
}
