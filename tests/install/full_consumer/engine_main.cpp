// A separate project using an installed rewind::engine: x_{i+1} = x_i / 2 for 10 steps on one
// rank, every state stored on disk (parallel HDF5) and read back for the reverse sweep. The
// adjoint of x_0 is 2^-10, exactly.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

#include "rewind/engine/engine.hpp"
#include "rewind/error.hpp"

namespace {

class Halving final : public rwd::engine::Stepper {
 public:
  std::vector<rwd::engine::Field> state() override { return {{"x", {&x_, 1}, 0, 1}}; }
  std::vector<rwd::engine::Field> pullback() override { return {{"x_in", {&x_in_, 1}, 0, 1}}; }
  void forward(rwd::engine::Step, const rwd::engine::StepContext& context) override {
    if (context.record) x_in_ = x_;
    x_ *= 0.5;
  }
  void begin_adjoint(std::span<const double>) override { lambda_ = 1.0; }
  void adjoint(rwd::engine::Step) override { lambda_ *= 0.5; }
  double lambda() const { return lambda_; }

 private:
  double x_ = 1.0, x_in_ = 0.0, lambda_ = 0.0;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    Halving stepper;
    rwd::engine::EngineConfig config;
    config.schedule = "storeall";
    config.params.steps = 10;
    config.params.ram = 1;
    config.params.disk = rwd::schedule::kUnlimited;
    config.store.comm = MPI_COMM_WORLD;
    config.store.directory = ".";  // the test's own build directory
    config.store.label = "consumer";
    config.store.async_io = false;
    rwd::engine::Engine engine(stepper, config);
    const rwd::engine::RunStats stats = engine.run();
    std::printf("engine n=10 adjoint=%.17g disk_writes=%lld\n", stepper.lambda(),
                static_cast<long long>(stats.disk.writes));
    rc = stepper.lambda() == std::ldexp(1.0, -10) && stats.disk.writes > 0 ? 0 : 1;
  } catch (const rwd::Error& e) {
    std::fprintf(stderr, "rewind error (%s): %s\n", rwd::to_string(e.code()), e.what());
  }
  MPI_Finalize();
  return rc;
}
