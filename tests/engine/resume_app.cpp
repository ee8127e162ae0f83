// A generic-API adjoint run that can be made resumable, killed at a chosen step of either sweep
// and resumed: the program tests/engine/kill_resume.sh drives. Prints (rank 0) one line:
//   result gradient <hash of every rank's gradient bits> forward <steps> adjoint <steps>
//          resumed_at <step> reverse <0|1>
// Usage: rewind_resume_app --dir D [--steps N] [--size cells] [--dt-scale s] [--label L] [--ram R]
// [--disk D] [--interval L]
//          [--stepper lorenz|diffusion] [--plain] [--resume] [--identity S] [--sync]
//          [--kill-forward K | --kill-adjoint K] [--marker FILE]
// --plain runs the Engine without resume (the baseline); --kill-* makes rank 0 write FILE and
// every rank wait, once first-sweep step K (or adjoint step K) starts, for the driver's SIGKILL.

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "rewind/engine/engine.hpp"
#include "steppers.hpp"

namespace {

using namespace rwd;
using namespace rwd::testing;

// Forwards to the test stepper; stops the process where the driver wants it killed.
class Killable final : public ForwardingStepper {
 public:
  Killable(TestStepper& inner, Step kill_forward, Step kill_adjoint, std::string marker,
           MPI_Comm comm)
      : ForwardingStepper(inner),
        kill_forward_(kill_forward),
        kill_adjoint_(kill_adjoint),
        marker_(std::move(marker)),
        comm_(comm) {}
  void forward(Step i, const StepContext& c) override {
    if (!c.recompute && i == kill_forward_) wait_for_kill();
    inner_.forward(i, c);
  }
  void adjoint(Step i) override {
    if (i == kill_adjoint_) wait_for_kill();
    inner_.adjoint(i);
  }

 private:
  void wait_for_kill() {
    MPI_Barrier(comm_);  // every rank has reached the step
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    if (rank == 0) std::ofstream(marker_) << "ready\n";
    for (;;) ::pause();
  }
  Step kill_forward_, kill_adjoint_;
  std::string marker_;
  MPI_Comm comm_;
};

std::uint64_t fnv1a(const std::vector<double>& values) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* p = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(double); ++i) {
    h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

int run(int argc, char** argv) {
  std::string dir, stepper_name = "lorenz", identity = "resume_app", marker;
  Step steps = 120, kill_forward = -1, kill_adjoint = -1, interval = 0;
  int cells = 96;
  double dt_scale = 1.0;
  std::string label = "resume_app";
  std::int64_t ram = 4, disk = 12;
  bool plain = false, resume = false, sync = false;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto value = [&] {
      if (a + 1 >= argc) throw std::runtime_error(arg + " needs a value");
      return std::string(argv[++a]);
    };
    if (arg == "--dir")
      dir = value();
    else if (arg == "--steps")
      steps = std::stoll(value());
    else if (arg == "--size")
      cells = std::stoi(value());
    else if (arg == "--dt-scale")
      dt_scale = std::stod(value());
    else if (arg == "--label")
      label = value();
    else if (arg == "--ram")
      ram = std::stoll(value());
    else if (arg == "--disk")
      disk = std::stoll(value());
    else if (arg == "--interval")
      interval = std::stoll(value());
    else if (arg == "--stepper")
      stepper_name = value();
    else if (arg == "--identity")
      identity = value();
    else if (arg == "--kill-forward")
      kill_forward = std::stoll(value());
    else if (arg == "--kill-adjoint")
      kill_adjoint = std::stoll(value());
    else if (arg == "--marker")
      marker = value();
    else if (arg == "--plain")
      plain = true;
    else if (arg == "--resume")
      resume = true;
    else if (arg == "--sync")
      sync = true;
    else
      throw std::runtime_error("unknown argument " + arg);
  }
  Ring ring(MPI_COMM_WORLD, cells);
  std::unique_ptr<TestStepper> inner;
  if (stepper_name == "lorenz")
    inner = std::make_unique<Lorenz96Rk4>(ring, 0.01 * dt_scale);
  else if (stepper_name == "diffusion")
    inner = std::make_unique<DiffusionDecay>(ring, 0.2 * dt_scale);
  else
    throw std::runtime_error("unknown stepper " + stepper_name);
  Killable stepper(*inner, kill_forward, kill_adjoint, marker, MPI_COMM_WORLD);

  engine::EngineConfig config;
  config.params.steps = steps;
  config.params.ram = ram;
  config.params.disk = disk;
  config.store.comm = MPI_COMM_WORLD;
  config.store.directory = dir;
  config.store.label = label;
  config.store.async_io = !sync;
  config.resume.enabled = !plain;
  config.resume.resume = resume;
  config.resume.interval = interval;
  config.resume.identity = identity;
  engine::Engine engine(stepper, config);
  const engine::RunStats stats = engine.run();

  // Every rank's gradient, in rank order, hashed on rank 0.
  const std::vector<double> mine = inner->gradient();
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Gatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf(
        "result gradient %016llx forward %lld adjoint %lld resumed_at %lld reverse %d "
        "seconds %.3f disk_writes %lld\n",
        static_cast<unsigned long long>(fnv1a(all)), static_cast<long long>(stats.forward_steps),
        static_cast<long long>(stats.adjoint_steps), static_cast<long long>(stats.resumed_at),
        stats.resumed_in_reverse ? 1 : 0, stats.total_seconds,
        static_cast<long long>(stats.disk.writes));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rewind_resume_app: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return rc;
}
