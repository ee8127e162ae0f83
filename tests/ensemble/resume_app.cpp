// A generic-API ensemble (StepperTasks over the test steppers) that can be made resumable,
// killed at a chosen point of either pass or between them, and resumed: the program
// tests/ensemble/kill_resume.sh drives. Prints (rank 0) one line:
//   result gradient <hash of group 0's gradient blocks> outputs <hash> ran <forwards run here>
//          reversed <adjoints run here> resumed <generation> outputs_resumed <n>
//          gradients_resumed <n>
// Usage: rewind_ensemble_resume_app --dir D [--tasks K] [--group-size g] [--assign A]
//          [--ram R] [--group-ram C] [--group-disk C] [--resume] [--plain] [--identity S]
//          [--kill forward:N | adjoint:N | gap] [--marker FILE] [--param-shift h]
//          [--pass-identity S] [--store-dir D]
// --plain runs without a manifest (the baseline); --kill holds the job once its group's N-th
// task starts its first sweep (forward:N) or its reverse (adjoint:N), or after the forward pass
// (gap): rank 0 of the group writes FILE and every rank of it waits for the driver's SIGKILL.

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "../engine/steppers.hpp"
#include "rewind/ensemble/ensemble.hpp"
#include "rewind/ensemble/stepper_tasks.hpp"

namespace {

using namespace rwd;
using namespace rwd::testing;

constexpr int kCells = 48;

struct Options {
  std::string dir, marker, kill, identity = "resume_app", assign = "dynamic";
  std::int64_t tasks = 12, ram = 3, group_ram = -1, group_disk = -1;
  double shift = 0.0;     // the parameter field moved by this much (another problem)
  std::string pass;       // Ensemble::set_resume_identity before the pass (an iteration's name)
  std::string store_dir;  // the group stores' directory (default: --dir)
  int group_size = 1;
  bool resume = false, plain = false;
};

struct Hold {
  std::string sweep;  // "forward", "adjoint" or "gap"
  int nth = 0;
  std::string marker;
  int seen_forward = 0, seen_adjoint = 0;
  void wait(MPI_Comm group) {
    MPI_Barrier(group);  // every rank of the group has reached it
    int rank = 0;
    MPI_Comm_rank(group, &rank);
    if (rank == 0) std::ofstream(marker) << "ready\n";
    for (;;) ::pause();
  }
};

// Task k: a bump at cell 7k mod 48 diffusing and decaying for 12 + 5 (k mod 5) steps.
class HeldStepper final : public ForwardingStepper {
 public:
  HeldStepper(TestStepper& inner, Hold& hold, MPI_Comm group)
      : ForwardingStepper(inner), hold_(hold), group_(group) {}
  // A first sweep (not one recorded again after a cut or a resume, which are recomputations).
  void forward(Step i, const engine::StepContext& c) override {
    if (i == 0 && !c.recompute) ++hold_.seen_forward;
    if (i == 3 && !c.recompute && hold_.sweep == "forward" && hold_.seen_forward == hold_.nth) {
      hold_.wait(group_);
    }
    inner_.forward(i, c);
  }
  void adjoint(Step i) override {
    if (!adjoint_seen_) {
      adjoint_seen_ = true;
      ++hold_.seen_adjoint;
      if (hold_.sweep == "adjoint" && hold_.seen_adjoint == hold_.nth) hold_.wait(group_);
    }
    inner_.adjoint(i);
  }

 private:
  Hold& hold_;
  MPI_Comm group_;
  bool adjoint_seen_ = false;
};

class SourceTask final : public ensemble::Task {
 public:
  SourceTask(std::int64_t k, MPI_Comm group, Hold& hold, double shift)
      : ring_(group, kCells),
        model_(ring_, 0.05),
        held_(model_, hold, group),
        steps_(12 + 5 * (k % 5)) {
    const double centre = static_cast<double>((7 * k) % kCells);
    model_.set_initial([centre](int g) {
      const double d = (g - centre) / 3.0;
      return std::exp(-d * d);
    });
    model_.set_receivers({5, 17, 29});
    model_.reset(0.0, shift);
  }
  engine::Stepper& stepper() override { return held_; }
  schedule::Step steps() const override { return steps_; }
  std::vector<double> output() override { return model_.readings(); }
  std::vector<double> gradient() override { return model_.parameter_gradient(); }

 private:
  Ring ring_;
  DiffusionDecay model_;
  HeldStepper held_;
  schedule::Step steps_;
};

double datum(std::size_t i) {
  return 0.05 * std::cos(0.3 * static_cast<double>(i));
}

std::uint64_t fnv1a(const std::vector<double>& values) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* p = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(double); ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto value = [&] { return std::string(a + 1 < argc ? argv[++a] : ""); };
    if (arg == "--dir")
      o.dir = value();
    else if (arg == "--tasks")
      o.tasks = std::stoll(value());
    else if (arg == "--group-size")
      o.group_size = std::stoi(value());
    else if (arg == "--assign")
      o.assign = value();
    else if (arg == "--ram")
      o.ram = std::stoll(value());
    else if (arg == "--group-ram")
      o.group_ram = std::stoll(value());
    else if (arg == "--group-disk")
      o.group_disk = std::stoll(value());
    else if (arg == "--identity")
      o.identity = value();
    else if (arg == "--param-shift")
      o.shift = std::stod(value());
    else if (arg == "--pass-identity")
      o.pass = value();
    else if (arg == "--store-dir")
      o.store_dir = value();
    else if (arg == "--kill")
      o.kill = value();
    else if (arg == "--marker")
      o.marker = value();
    else if (arg == "--resume")
      o.resume = true;
    else if (arg == "--plain")
      o.plain = true;
    else
      throw std::runtime_error("unknown argument " + arg);
  }
  return o;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Hold hold;
  hold.marker = o.marker;
  if (!o.kill.empty()) {
    const auto colon = o.kill.find(':');
    hold.sweep = o.kill.substr(0, colon);
    if (colon != std::string::npos) hold.nth = std::stoi(o.kill.substr(colon + 1));
  }
  ensemble::EnsembleConfig ec;
  ec.group_size = o.group_size;
  ec.assign = o.assign == "static" ? ensemble::Assign::Static : ensemble::Assign::Dynamic;
  if (!o.plain) {
    ec.resume.enabled = true;
    ec.resume.resume = o.resume;
    ec.resume.directory = o.dir;
    ec.resume.identity = o.identity;
  }
  ensemble::Ensemble ens(MPI_COMM_WORLD, ec);
  MPI_Comm group = ens.group_comm();

  ensemble::StepperTasksConfig tc;
  tc.recording.params.ram = o.ram;
  tc.stores.store.directory = o.store_dir.empty() ? o.dir : o.store_dir;
  tc.stores.store.label = "resume-app-group" + std::to_string(ens.group());
  if (o.group_ram >= 0) tc.stores.ram = o.group_ram;
  if (o.group_disk >= 0) tc.stores.disk = o.group_disk;
  tc.estimate = [](std::int64_t k) { return static_cast<double>(12 + 5 * (k % 5)); };
  ensemble::StepperTasks runner(
      group,
      [&](std::int64_t k, MPI_Comm comm) {
        return std::make_unique<SourceTask>(k, comm, hold, o.shift);
      },
      tc);

  if (!o.pass.empty()) ens.set_resume_identity(o.identity + "; " + o.pass);
  const ensemble::Outputs out = ens.forward(o.tasks, runner);
  if (hold.sweep == "gap") hold.wait(MPI_COMM_WORLD);
  // Phi = log sum |y - d|^2; its cotangents on rank 0.
  double s = 0;
  for (std::size_t i = 0; i < out.values.size(); ++i) {
    s += (out.values[i] - datum(i)) * (out.values[i] - datum(i));
  }
  std::vector<double> ybar(out.values.size());
  for (std::size_t i = 0; i < ybar.size(); ++i) ybar[i] = 2.0 * (out.values[i] - datum(i)) / s;
  const std::vector<double> g = ens.backward(ybar, runner);

  // Group 0's blocks, in rank order, on rank 0.
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = static_cast<int>(g.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(counts.size());
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Gatherv(g.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  int ran_all = 0, reversed_all = 0;
  MPI_Reduce(&hold.seen_forward, &ran_all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&hold.seen_adjoint, &reversed_all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    all.resize(static_cast<std::size_t>(displs[static_cast<std::size_t>(o.group_size - 1)] +
                                        counts[static_cast<std::size_t>(o.group_size - 1)]));
    const ensemble::EnsembleReport r = ens.report();
    int outputs = 0, gradients = 0, spilled = 0, cut = 0, tapes = 0, again = 0;
    for (const auto& m : r.mapping) {
      outputs += m.forward_resumed ? 1 : 0;
      gradients += m.backward_resumed ? 1 : 0;
      tapes += m.tape_resumed ? 1 : 0;
      spilled += m.cost.spilled ? 1 : 0;
      cut += m.cost.cut && !m.forward_resumed ? 1 : 0;
      // A resumed task whose tape was not durable, recorded again before its reverse (a tape
      // taken over may be cut later like any other: it counts as taken over).
      again += m.cost.cut && m.forward_resumed && !m.tape_resumed ? 1 : 0;
    }
    std::printf(
        "result gradient %016llx outputs %016llx ran %d reversed %d resumed %lld outputs_resumed "
        "%d gradients_resumed %d tapes_resumed %d recorded_again %d spilled %d cut %d\n",
        static_cast<unsigned long long>(fnv1a(all)),
        static_cast<unsigned long long>(fnv1a(out.values)), ran_all / o.group_size,
        reversed_all / o.group_size, static_cast<long long>(r.resumed_generation), outputs,
        gradients, tapes, again, spilled, cut);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    code = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "resume_app: error: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Finalize();
  return code;
}
