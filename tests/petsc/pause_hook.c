/* A test library for the kill tests (tests/petsc/kill_resume.sh), loaded into an unmodified PETSc
   program with -dll_append after librewind: it sets rewind's progress hook so that, with
   REWIND_TEST_PAUSE set to "forward:K" (or "adjoint:K"), the first sweep's step K (or the point
   where K adjoint steps are done) makes rank 0 create the file REWIND_TEST_PAUSE_MARKER and every
   rank wait there for the test's SIGKILL. With REWIND_TEST_PAUSE_COUNT=N, the N-th time this
   rank reaches that point (an ensemble's N-th task on the rank's group). The product has no
   such hook of its own. */
#include <petscsys.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rewind/petsc/trajectory.h"

static PetscErrorCode pause_at(const char sweep[], PetscInt step, void *ctx) {
  const char *want = getenv("REWIND_TEST_PAUSE");
  char here[64];
  (void)ctx;
  if (!want) return 0;
  snprintf(here, sizeof here, "%s:%lld", sweep, (long long)step);
  if (strcmp(here, want) != 0) return 0;
  static int seen = 0;
  const char *count = getenv("REWIND_TEST_PAUSE_COUNT");
  if (++seen < (count ? atoi(count) : 1)) return 0;
  const char *marker = getenv("REWIND_TEST_PAUSE_MARKER");
  if (marker) {
    FILE *f = fopen(marker, "w");
    if (f) fclose(f);
  }
  for (;;) pause();
  return 0;
}

PetscErrorCode PetscDLLibraryRegister_rewind_test_pause(void);
PetscErrorCode PetscDLLibraryRegister_rewind_test_pause(void) {
  return TSTrajectoryRewindSetProgressHook(pause_at, NULL);
}
