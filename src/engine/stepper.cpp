#include "rewind/engine/stepper.hpp"

#include "rewind/error.hpp"

namespace rwd::engine {

StepAccess Stepper::access(Step) {
  const std::size_t n = state().size();
  StepAccess a;
  a.reads.resize(n);
  for (std::size_t v = 0; v < n; ++v) a.reads[v] = v;
  a.writes = a.reads;
  return a;
}

bool Stepper::finished(Step) {
  throw Error(ErrorCode::InvalidArgument,
              "an online run (no step count given) ends when Stepper::finished() says so, and "
              "this stepper does not implement it; give the step count or override finished()");
}

}  // namespace rwd::engine
