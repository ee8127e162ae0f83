#include "progress.hpp"

#include <string>

#include "rewind/error.hpp"
#include "rewind/petsc/trajectory.h"

namespace rwd::petsc {

namespace {

struct Hook {
  TSTrajectoryRewindProgressFn fn = nullptr;
  void* ctx = nullptr;
};

Hook& hook() {
  static Hook h;
  return h;
}

}  // namespace

void report_progress(const char* sweep, PetscInt step) {
  const Hook& h = hook();
  if (!h.fn) return;
  if (const PetscErrorCode e = h.fn(sweep, step, h.ctx)) {
    throw Error(ErrorCode::Client,
                "the progress hook (TSTrajectoryRewindSetProgressHook) failed "
                "with PETSc error " +
                    std::to_string(static_cast<int>(e)) + " at " + sweep + " step " +
                    std::to_string(static_cast<long long>(step)));
  }
}

}  // namespace rwd::petsc

extern "C" PetscErrorCode TSTrajectoryRewindSetProgressHook(TSTrajectoryRewindProgressFn fn,
                                                            void* ctx) {
  PetscFunctionBegin;
  rwd::petsc::hook() = {fn, ctx};
  PetscFunctionReturn(0);
}
