#include "rewind/engine/engine.hpp"
#include "rewind/timing.hpp"

#include <chrono>

#include "rewind/engine/cursor.hpp"
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

namespace {
using Clock = SteadyClock;
}  // namespace

struct Engine::Impl {
  Stepper& stepper;
  EngineConfig config;

  RunStats run(std::unique_ptr<schedule::Schedule> given) {
    const auto t0 = Clock::now();
    Cursor cursor(stepper, config, std::move(given));
    const Step planned = config.params.steps;
    double forward_seconds = 0.0, adjoint_seconds = 0.0;
    Step i = 0;
    while (planned > 0 ? i < planned : !stepper.finished(i)) {
      const auto t = Clock::now();
      stepper.forward(i, cursor.record_wanted(i));
      forward_seconds += seconds_since(t);
      const bool last = planned > 0 ? i + 1 == planned : stepper.finished(i + 1);
      cursor.forward_step_done(i, last);
      ++i;
      if (planned == 0 && last) break;
    }
    cursor.end_forward(i);
    stepper.begin_adjoint();
    for (Step k = i - 1; k >= 0; --k) {
      cursor.prepare_adjoint(k);
      const auto t = Clock::now();
      stepper.adjoint(k);
      adjoint_seconds += seconds_since(t);
      cursor.adjoint_done(k);
    }
    RunStats stats = cursor.finish();
    stats.forward_seconds = forward_seconds;
    stats.adjoint_seconds = adjoint_seconds;
    stats.total_seconds = seconds_since(t0);
    return stats;
  }
};

Engine::Engine(Stepper& stepper, EngineConfig config)
    : impl_(std::make_unique<Impl>(Impl{stepper, std::move(config)})) {}

Engine::~Engine() = default;

RunStats Engine::run() {
  return impl_->run(nullptr);
}

RunStats Engine::run(std::unique_ptr<schedule::Schedule> schedule) {
  return impl_->run(std::move(schedule));
}

}  // namespace rwd::engine
