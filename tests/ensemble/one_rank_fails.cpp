// A task that throws on one rank of a two-rank group while its group mate is blocked in the
// task's own halo exchange: the mate cannot be told (MPI has no way to interrupt it), so the
// failing rank must get its own error promptly, naming the task and saying that the job must
// be aborted, instead of waiting for ever. This program then aborts, as an application would.
// Run on 2 ranks; ctest checks the message and that the run ends within its timeout.
#include <mpi.h>

#include <cstdio>
#include <memory>

#include "../engine/steppers.hpp"
#include "rewind/ensemble/ensemble.hpp"
#include "rewind/ensemble/stepper_tasks.hpp"
#include "rewind/error.hpp"

namespace {

using namespace rwd;

class Stalling final : public ensemble::Task {
 public:
  Stalling(std::int64_t k, MPI_Comm group) : ring_(group, 40), model_(ring_, 0.05), task_(k) {
    MPI_Comm_rank(group, &rank_);
  }
  engine::Stepper& stepper() override { return wrapper_; }
  schedule::Step steps() const override { return 10; }
  std::vector<double> output() override { return {0.0}; }
  std::vector<double> gradient() override { return model_.parameter_gradient(); }

 private:
  class Wrapper final : public engine::Stepper {
   public:
    explicit Wrapper(Stalling& t) : t_(t) {}
    std::vector<engine::Field> state() override { return t_.model_.state(); }
    std::vector<engine::Field> pullback() override { return t_.model_.pullback(); }
    engine::StepAccess access(engine::Step i) override { return t_.model_.access(i); }
    void forward(engine::Step i, const engine::StepContext& c) override {
      if (t_.task_ == 1 && i == 3 && t_.rank_ == 1) {
        throw Error(ErrorCode::InvalidArgument, "NaN on this rank only");
      }
      t_.model_.forward(i, c);  // its halo exchange waits for the other rank
    }
    void adjoint(engine::Step i) override { t_.model_.adjoint(i); }

   private:
    Stalling& t_;
  };
  testing::Ring ring_;
  testing::DiffusionDecay model_;
  std::int64_t task_;
  int rank_ = 0;
  Wrapper wrapper_{*this};
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ensemble::EnsembleConfig ec;
  ec.group_size = 2;
  ec.failure_wait_seconds = 2.0;
  ensemble::Ensemble ens(MPI_COMM_WORLD, ec);
  try {
    ensemble::StepperTasksConfig tc;
    tc.recording.params.ram = 3;
    ensemble::StepperTasks runner(
        ens.group_comm(),
        [](std::int64_t k, MPI_Comm group) { return std::make_unique<Stalling>(k, group); }, tc);
    ens.forward(3, runner);
    std::printf("rank %d: the forward map finished, which it must not\n", rank);
  } catch (const Error& e) {
    std::printf("caught on the failing rank %d (must_abort %d): %s\n", rank,
                ens.must_abort() ? 1 : 0, e.what());
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Finalize();
  return 1;
}
