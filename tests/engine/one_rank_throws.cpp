// A stepper that throws on one rank only (a NaN check, a diverging solver), with disk
// checkpoints in use, synchronous or asynchronous, in the first sweep or while recomputing. The
// throwing rank must get its own exception at once — not wait in a collective call of the
// stores while it unwinds — so it can report and abort; the other ranks are then stopped by
// MPI_Abort, as an application would. The test passes if the thrower prints what it caught
// (the ctest regex) before the timeout; a hang fails it.
//
// With `dropped`, the plan counts on a compression ratio of 8 that Lorenz-96's states do not
// reach, with no disk: the first sweep drops checkpoints, the reverse is planned again from x_0,
// and the stepper throws on one rank while that plan recomputes (the budget's agreement over the
// ranks runs at every RAM put).
//
// With `corrupt`, nothing throws in the stepper: the last rank's compressed RAM checkpoints are
// damaged after their checksum was taken (RamStore::damage_next_blocks), and the first restore
// on that rank must be its own Error(Corrupt), naming the checkpoint and the rank.
//
//   rewind_engine_one_rank_throws <first|recompute|dropped|corrupt> <async|sync>
#include <mpi.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "engine_test_util.hpp"
#include "ram_store.hpp"

namespace {

using namespace rwd;
using namespace rwd::testing;

// Lorenz-96 with RK4 that throws on rank `thrower` at step `at`, first sweep or recomputation.
class Failing final : public engine::Stepper {
 public:
  Failing(const Ring& ring, int thrower, Step at, bool in_recompute)
      : inner_(ring, 0.01), thrower_(thrower), at_(at), in_recompute_(in_recompute) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  }
  std::vector<engine::Field> state() override { return inner_.state(); }
  std::vector<engine::Field> pullback() override { return inner_.pullback(); }
  engine::StepAccess access(Step i) override { return inner_.access(i); }
  void forward(Step i, const engine::StepContext& c) override {
    if (rank_ == thrower_ && i == at_ && c.recompute == in_recompute_) {
      throw std::runtime_error("the solver diverged at step " + std::to_string(i) + " on rank " +
                               std::to_string(rank_));
    }
    inner_.forward(i, c);
  }
  void begin_adjoint(std::span<const double> seed) override { inner_.begin_adjoint(seed); }
  void adjoint(Step i) override { inner_.adjoint(i); }
  void loaded(engine::Kind k) override { inner_.loaded(k); }

 private:
  Lorenz96Rk4 inner_;
  int thrower_;
  Step at_;
  bool in_recompute_;
  int rank_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  const std::string phase = argc > 1 ? argv[1] : "first";
  const bool async = argc > 2 ? std::string(argv[2]) == "async" : true;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int thrower = size - 1;
  {
    const Ring ring(MPI_COMM_WORLD, 40);
    Failing stepper(ring, thrower, phase == "corrupt" ? -1 : 17,
                    phase == "recompute" || phase == "dropped");
    EngineConfig c = config("twolevel", 2, 6);
    if (phase == "dropped") {
      c = config("revolve", 3, 0);
      c.store.codec = {"zstd"};
      c.compress_ratio = 8.0;
    }
    if (phase == "corrupt") {
      c.store.codec = {"zstd"};
      if (rank == thrower) storage::RamStore::damage_next_blocks(1 << 20);
    }
    c.store.directory = scratch_dir("one-rank-throws-" + phase + (async ? "-async" : "-sync"));
    c.store.async_io = async;
    c.store.inline_io_bytes = 0;  // every checkpoint through the I/O thread when async
    try {
      engine::Engine engine(stepper, c);
      engine.run();
      std::printf("rank %d: the run ended without the failure\n", rank);
    } catch (const std::exception& e) {
      if (rank == thrower) {
        std::printf("rank %d caught its own exception: %s\n", rank, e.what());
        std::fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
    }
  }
  MPI_Finalize();
  return 1;
}
