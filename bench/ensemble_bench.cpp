// The ensemble map against its alternatives (ctest label `bench`): K independent adjoint tasks
// with a skewed cost (log-normal, fixed seed) on G groups of g ranks, four ways in one run, the
// modes in rotation within each repetition:
//   dynamic  the ensemble as built: groups claim tasks as they come free, tapes stay on their
//            group, the backward gets the cotangents along the recorded mapping;
//   static   the same with Assign::Static (task k on group k mod G), the same tapes;
//   ship     the forward as in dynamic, then every tape (its storeall recording's checkpoints,
//            read out of the group's RAM store) is sent to world rank 0, which holds them all
//            and runs every adjoint, then broadcasts the gradient;
//   fused    each group runs a task's forward and reverse back to back (possible only for a
//            separable objective; the lower bound on time), then one gradient reduction.
// Every task is recorded with `storeall` in RAM, so the modes hold and move the same tapes, and
// the objective is separable (sum_i log(1 + (y_i - d_i)^2)), so all four give the same gradient
// bits; the program exits 1 only if they do not.
//
// Models: --model sleep, a stepper whose steps sleep (no core used: the task durations are
// planned, so 4-8 groups can be measured on a small machine); --model pde, DiffusionDecay from
// tests/engine (real computation). Reports medians over --reps repetitions: makespan (forward +
// backward, slowest rank), ratios to the list-scheduling bound (total work / G + longest task,
// per pass, from the dynamic run's measured task times), payload bytes of the backward, peak
// memory per rank (VmHWM, reset before each mode), rank 0's memory against K for ship, and the
// reproducible reduction against MPI_Allreduce. One JSON line per result (lines starting '{').
//
//   mpiexec --oversubscribe -n 8 build/bin/rewind-bench-ensemble --model sleep --group-size 1
//   mpiexec --oversubscribe -n 8 build/bin/rewind-bench-ensemble --model sleep --group-size 2
//   mpiexec -n 2 build/bin/rewind-bench-ensemble --model pde --group-size 1
#include <malloc.h>
#include <mpi.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "rewind/engine/recording.hpp"
#include "rewind/ensemble/ensemble.hpp"
#include "rewind/ensemble/reproducible_sum.hpp"
#include "rewind/ensemble/stepper_tasks.hpp"
#include "rewind/error.hpp"
#include "steppers.hpp"

namespace {

using rwd::Error;
using rwd::ErrorCode;
using rwd::require;
using rwd::engine::Field;
using rwd::engine::Kind;
using rwd::engine::Step;
using rwd::ensemble::Assign;
using rwd::ensemble::ClaimOrder;
using rwd::ensemble::Ensemble;
using rwd::ensemble::EnsembleConfig;
using rwd::ensemble::ReproducibleSum;
using rwd::ensemble::Task;
using rwd::ensemble::TaskFactory;

constexpr double kMiB = 1024.0 * 1024.0;

int rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
int size_of(MPI_Comm comm) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  return n;
}
double slowest(double seconds) {
  double worst = 0;
  MPI_Allreduce(&seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
std::int64_t total_over_ranks(std::int64_t mine) {
  std::int64_t all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return all;
}
double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// ---- options ---------------------------------------------------------------------------------

struct Options {
  std::string model = "sleep";
  int group_size = 1;
  std::int64_t tasks = 64;
  int reps = 3;
  double sigma = 1.0;  // of the log-normal task cost
  std::uint64_t seed = 20261124;
  // sleep: mean task duration (its adjoint takes as long), mean step duration, state size
  double mean_ms = 50.0;
  double step_ms = 2.5;
  std::int64_t state = 16384;
  // pde: cells, mean step count
  int cells = 4096;
  double mean_steps = 300.0;
  // the smaller task counts at which ship and dynamic are run once more for memory against K
  std::vector<std::int64_t> memory_tasks = {16, 32};
  // gradient evaluations per mode and repetition with the same runner (the last one is timed;
  // the first is reported too): later ones find the tape memory already mapped
  int evaluations = 1;
};

std::vector<std::int64_t> parse_list(const std::string& s) {
  std::vector<std::int64_t> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(std::stoll(item));
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  using Setter = std::function<void(const std::string&)>;
  const std::map<std::string, Setter> options = {
      {"--model", [&](const std::string& v) { o.model = v; }},
      {"--group-size", [&](const std::string& v) { o.group_size = std::stoi(v); }},
      {"--tasks", [&](const std::string& v) { o.tasks = std::stoll(v); }},
      {"--reps", [&](const std::string& v) { o.reps = std::stoi(v); }},
      {"--evaluations", [&](const std::string& v) { o.evaluations = std::stoi(v); }},
      {"--sigma", [&](const std::string& v) { o.sigma = std::stod(v); }},
      {"--seed", [&](const std::string& v) { o.seed = std::stoull(v); }},
      {"--mean-ms", [&](const std::string& v) { o.mean_ms = std::stod(v); }},
      {"--step-ms", [&](const std::string& v) { o.step_ms = std::stod(v); }},
      {"--state", [&](const std::string& v) { o.state = std::stoll(v); }},
      {"--cells", [&](const std::string& v) { o.cells = std::stoi(v); }},
      {"--mean-steps", [&](const std::string& v) { o.mean_steps = std::stod(v); }},
      {"--memory-tasks", [&](const std::string& v) { o.memory_tasks = parse_list(v); }},
  };
  for (int i = 1; i < argc; ++i) {
    const auto it = options.find(argv[i]);
    if (it == options.end()) {
      std::string known;
      for (const auto& [name, set] : options) known += " " + name;
      throw Error(ErrorCode::InvalidArgument,
                  std::string("ensemble bench: unknown option ") + argv[i] + "; known:" + known);
    }
    require(i + 1 < argc, "ensemble bench: " + it->first + " needs a value");
    it->second(argv[++i]);
  }
  require(o.model == "sleep" || o.model == "pde", "ensemble bench: --model is sleep or pde");
  require(o.tasks >= 1 && o.reps >= 1 && o.evaluations >= 1,
          "ensemble bench: --tasks, --reps and --evaluations must be >= 1");
  return o;
}

// ---- the tasks -------------------------------------------------------------------------------

// Log-normal weights exp(sigma z) scaled to mean 1. Box-Muller on mt19937_64's raw output, so
// the weights are the same with any standard library.
std::vector<double> lognormal_weights(std::int64_t n, double sigma, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto uniform = [&rng] {  // (0, 1]
    return (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
  };
  std::vector<double> w(static_cast<std::size_t>(n));
  for (auto& v : w) {
    const double z =
        std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
    v = std::exp(sigma * z);
  }
  const double mean = std::accumulate(w.begin(), w.end(), 0.0) / static_cast<double>(n);
  for (auto& v : w) v /= mean;
  return w;
}

// What task k is: its step count and, for the sleep model, its planned duration on a group.
struct TaskPlan {
  std::int64_t steps = 0;
  double seconds = 0.0;  // sleep model: each sweep (forward, adjoint) of the task on a group
};

void sleep_for(double seconds) {
  if (seconds <= 0) return;
  timespec t{};
  t.tv_sec = static_cast<time_t>(seconds);
  t.tv_nsec = static_cast<long>((seconds - static_cast<double>(t.tv_sec)) * 1e9);
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

// Output weights: y_r = (1/N) sum_j w(r, j) x_j. Cheap and exact in binary.
double output_weight(int r, std::int64_t j) {
  return 1.0 + 0.125 * static_cast<double>((j * (r + 1)) % 7);
}

// x' = x - dt p x^2 entry by entry, then a sleep: a task whose cost is a planned wall time, with
// a nonlinear step so the adjoint needs the pullback data (x before the step). Each rank owns a
// contiguous block of the N entries. The factory sets the sleep: the task's step time on a group
// of g ranks, times g / the ranks it runs on (rank 0 alone in ship sleeps g times as long).
class SleepStepper final : public rwd::engine::Stepper {
 public:
  static constexpr int kOutputs = 4;

  SleepStepper(MPI_Comm comm, std::int64_t global, std::int64_t task, double step_seconds)
      : comm_(comm), global_(global), step_seconds_(step_seconds) {
    const int size = size_of(comm), rank = rank_of(comm);
    const std::int64_t block = global / size;
    offset_ = rank * block;
    const std::int64_t local = rank == size - 1 ? global - offset_ : block;
    const auto m = static_cast<std::size_t>(local);
    x_.resize(m);
    p_.resize(m);
    x_in_.resize(m);
    lambda_.assign(m, 0.0);
    gp_.assign(m, 0.0);
    for (std::size_t j = 0; j < m; ++j) {
      const std::int64_t g = offset_ + static_cast<std::int64_t>(j);
      x_[j] = 0.5 + 0.01 * static_cast<double>((7 * g + 13 * task) % 50);
      p_[j] = 0.2 + 0.001 * static_cast<double>(g % 100);
    }
  }

  std::vector<Field> state() override {
    return {{"x", x_, offset_, global_}, {"p", p_, offset_, global_}};
  }
  std::vector<Field> pullback() override { return {{"x_in", x_in_, offset_, global_}}; }
  rwd::engine::StepAccess access(Step) override { return {{0, 1}, {0}}; }

  void forward(Step, const rwd::engine::StepContext& context) override {
    if (context.record) x_in_ = x_;
    for (std::size_t j = 0; j < x_.size(); ++j) x_[j] -= kDt * p_[j] * x_[j] * x_[j];
    sleep_for(step_seconds_);
  }

  void begin_adjoint(std::span<const double> seed) override {
    std::fill(gp_.begin(), gp_.end(), 0.0);
    const double scale = 1.0 / static_cast<double>(global_);
    for (std::size_t j = 0; j < lambda_.size(); ++j) {
      double l = 0;
      for (int r = 0; r < kOutputs && r < static_cast<int>(seed.size()); ++r) {
        l += seed[static_cast<std::size_t>(r)] * output_weight(r, offset_ + std::int64_t(j));
      }
      lambda_[j] = l * scale;
    }
  }

  void adjoint(Step) override {
    for (std::size_t j = 0; j < lambda_.size(); ++j) {
      gp_[j] -= kDt * x_in_[j] * x_in_[j] * lambda_[j];
      lambda_[j] *= 1.0 - 2.0 * kDt * p_[j] * x_in_[j];
    }
    sleep_for(step_seconds_);
  }

  std::vector<double> output() const {
    std::vector<double> mine(kOutputs, 0.0), all(kOutputs, 0.0);
    for (int r = 0; r < kOutputs; ++r) {
      for (std::size_t j = 0; j < x_.size(); ++j) {
        mine[static_cast<std::size_t>(r)] += output_weight(r, offset_ + std::int64_t(j)) * x_[j];
      }
      mine[static_cast<std::size_t>(r)] /= static_cast<double>(global_);
    }
    MPI_Allreduce(mine.data(), all.data(), kOutputs, MPI_DOUBLE, MPI_SUM, comm_);
    return all;
  }
  const std::vector<double>& parameter_gradient() const { return gp_; }

 private:
  static constexpr double kDt = 0.01;
  MPI_Comm comm_;
  std::int64_t global_, offset_ = 0;
  double step_seconds_;
  std::vector<double> x_, p_, x_in_, lambda_, gp_;
};

class SleepTask final : public Task {
 public:
  SleepTask(MPI_Comm comm, std::int64_t global, std::int64_t task, Step steps, double step_seconds)
      : stepper_(comm, global, task, step_seconds), steps_(steps) {}
  rwd::engine::Stepper& stepper() override { return stepper_; }
  Step steps() const override { return steps_; }
  std::vector<double> output() override { return stepper_.output(); }
  std::vector<double> gradient() override { return stepper_.parameter_gradient(); }

 private:
  SleepStepper stepper_;
  Step steps_;
};

// A source task of the diffusion-decay model: its own initial state, three receivers, the
// gradient with respect to the decay field (the pattern of tests/ensemble/ensemble_test.cpp).
class PdeTask final : public Task {
 public:
  PdeTask(MPI_Comm comm, int cells, std::int64_t task, Step steps)
      : ring_(comm, cells), stepper_(ring_, 0.01), steps_(steps) {
    const double phase = 0.37 * static_cast<double>(task);
    stepper_.set_initial([cells, phase](int g) {
      return 1.0 + 0.5 * std::sin(6.283185307179586 * g / cells + phase);
    });
    stepper_.set_receivers({cells / 5, cells / 2, (4 * cells) / 5});
    stepper_.reset(0.0, 0.0);
  }
  rwd::engine::Stepper& stepper() override { return stepper_; }
  Step steps() const override { return steps_; }
  std::vector<double> output() override { return stepper_.readings(); }
  std::vector<double> gradient() override { return stepper_.parameter_gradient(); }

 private:
  rwd::testing::Ring ring_;
  rwd::testing::DiffusionDecay stepper_;
  Step steps_;
};

// The tasks of one configuration.
struct Model {
  std::string name;
  std::vector<TaskPlan> plan;
  TaskFactory factory;
  bool planned_times = false;  // the sleep model: task durations are known in advance
};

Model make_model(const Options& o) {
  Model m;
  m.name = o.model;
  const std::vector<double> w = lognormal_weights(o.tasks, o.sigma, o.seed);
  for (double v : w) {
    TaskPlan t;
    if (o.model == "sleep") {
      t.seconds = 1e-3 * o.mean_ms * v;
      t.steps = std::max<std::int64_t>(1, std::llround(t.seconds / (1e-3 * o.step_ms)));
    } else {
      t.steps = std::max<std::int64_t>(10, std::llround(o.mean_steps * v));
    }
    m.plan.push_back(t);
  }
  const auto plan = m.plan;
  if (o.model == "sleep") {
    m.planned_times = true;
    const std::int64_t global = o.state;
    const int g = o.group_size;
    m.factory = [plan, global, g](std::int64_t k, MPI_Comm comm) -> std::unique_ptr<Task> {
      const TaskPlan& t = plan[static_cast<std::size_t>(k)];
      // The rank's share of a group's work: 1 on a group of g ranks, g on one rank alone.
      const double share = static_cast<double>(g) / static_cast<double>(size_of(comm));
      return std::make_unique<SleepTask>(comm, global, k, t.steps,
                                         share * t.seconds / static_cast<double>(t.steps));
    };
  } else {
    const int cells = o.cells;
    m.factory = [plan, cells](std::int64_t k, MPI_Comm comm) -> std::unique_ptr<Task> {
      return std::make_unique<PdeTask>(comm, cells, k, plan[static_cast<std::size_t>(k)].steps);
    };
  }
  return m;
}

// The separable objective J = sum_i log(1 + (y_i - d_i)^2) and its gradient, for the outputs
// y[0..] whose first has global index `first`.
std::vector<double> cotangents(std::span<const double> y, std::size_t first) {
  std::vector<double> g(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double e = y[i] - 0.05 * std::cos(0.3 * static_cast<double>(first + i));
    g[i] = 2.0 * e / (1.0 + e * e);
  }
  return g;
}

// ---- memory ----------------------------------------------------------------------------------

std::int64_t status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  const std::string prefix = std::string(field) + ":";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return std::stoll(line.substr(prefix.size())) * 1024;
  }
  return 0;
}

std::int64_t minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::int64_t>(u.ru_minflt);
}

// Every rank's figures, on every rank.
std::vector<std::int64_t> every_rank(std::int64_t mine) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(size_of(MPI_COMM_WORLD)), 0);
  MPI_Allgather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
  return all;
}

// This process's resident memory over one mode: freed heap pages are handed back and the
// kernel's high-water mark (VmHWM) is reset at start(), so stop() sees this mode's peak alone;
// and the minor page faults taken meanwhile (first touches of fresh memory).
class MemoryWindow {
 public:
  void start() {
    malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
    base_ = status_bytes("VmRSS");
    faults_ = minor_faults();
  }
  struct Figures {
    std::vector<std::int64_t> peak, growth, faults;  // per rank
  };
  Figures stop() const {
    const std::int64_t peak = status_bytes("VmHWM");
    return {every_rank(peak), every_rank(peak - base_), every_rank(minor_faults() - faults_)};
  }

 private:
  std::int64_t base_ = 0, faults_ = 0;
};

// ---- the modes -------------------------------------------------------------------------------

// dynamic: claims in task order; costliest: dynamic, claiming the costliest first from each
// task's step count (ClaimOrder::CostliestFirst, the ensemble's default where estimates exist).
enum class Mode { Dynamic, Static, Ship, Fused, Costliest };
const char* name_of(Mode m) {
  static constexpr const char* kNames[] = {"dynamic", "static", "ship", "fused", "costliest"};
  return kNames[static_cast<int>(m)];
}

// What every mode shares: the tasks, the recording, the communicators of the groups.
struct Setup {
  Options options;
  Model model;
  int g = 1, groups = 1;
  MPI_Comm group = MPI_COMM_NULL;  // this rank's group (consecutive ranks)
  MPI_Comm cross = MPI_COMM_NULL;  // the ranks with the same rank within their group
  std::int64_t block = 0;          // this rank's gradient block: length and offset
  std::int64_t block_offset = 0;
  rwd::engine::RecordingConfig recording;
};

rwd::engine::StoresConfig stores_config(MPI_Comm group) {
  rwd::engine::StoresConfig c;
  c.store.comm = group;
  c.store.directory = "/tmp";
  c.store.label = "ensemble-bench";
  return c;
}

struct ModeRun {
  // Seconds, slowest rank, of the last evaluation (forward, forward + backward) and the first.
  double total = 0, forward = 0, first_total = 0;
  void timed(int evaluation, double fwd, double all) {
    forward = fwd;
    total = all;
    if (evaluation == 0) first_total = all;
  }
  std::int64_t backward_bytes = 0;
  std::int64_t shipped_bytes = 0;  // ship: tape bytes sent to rank 0
  MemoryWindow::Figures memory;
  std::vector<double> gradient;  // this rank's block
  // Per task seconds and group, from the ensemble's mapping (ship: the forward only; fused: the
  // forward holds the reverse too).
  std::vector<double> task_forward, task_backward;
  std::vector<int> task_group;
};

void take_mapping(const std::vector<rwd::ensemble::TaskRecord>& mapping, ModeRun& out) {
  out.task_forward.clear();
  out.task_backward.clear();
  out.task_group.clear();
  for (const auto& m : mapping) {
    out.task_forward.push_back(m.forward_end - m.forward_begin);
    out.task_backward.push_back(m.backward_end - m.backward_begin);
    out.task_group.push_back(m.group);
  }
}

// One mode's run: a new ensemble and `make(group)`'s runner, options.evaluations gradient
// evaluations, each timed from a barrier through the forward map and `backward(ens, runner, y,
// out)` (which leaves this rank's gradient block in out.gradient), then `account(ens, runner,
// out)` untimed (bytes, mapping; may be collective); the whole inside one memory window.
template <class Make, class Backward, class Account>
ModeRun measure(const Setup& s, Assign assign, std::int64_t tasks, Make make, Backward backward,
                Account account, ClaimOrder claim = ClaimOrder::TaskOrder) {
  MemoryWindow memory;
  memory.start();
  ModeRun out;
  {
    EnsembleConfig ec;
    ec.group_size = s.g;
    ec.assign = assign;
    ec.claim_order = claim;
    Ensemble ens(MPI_COMM_WORLD, ec);
    auto runner = make(ens.group_comm());
    for (int e = 0; e < s.options.evaluations; ++e) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      const rwd::ensemble::Outputs y = ens.forward(tasks, *runner);
      const double t1 = MPI_Wtime();
      backward(ens, *runner, y, out);
      const double t2 = MPI_Wtime();
      out.timed(e, slowest(t1 - t0), slowest(t2 - t0));
      account(ens, *runner, out);
    }
  }
  out.memory = memory.stop();
  return out;
}

// The ensemble as built (dynamic or static), with storeall tapes in the groups' RAM.
ModeRun run_map(const Setup& s, Assign assign, std::int64_t tasks,
                ClaimOrder claim = ClaimOrder::TaskOrder) {
  using Runner = rwd::ensemble::StepperTasks;
  return measure(
      s, assign, tasks,
      [&](MPI_Comm group) {
        rwd::ensemble::StepperTasksConfig tc;
        tc.recording = s.recording;
        tc.stores = stores_config(group);
        const std::vector<TaskPlan> plan = s.model.plan;
        tc.estimate = [plan](std::int64_t k) {
          return static_cast<double>(plan[static_cast<std::size_t>(k)].steps);
        };
        return std::make_unique<Runner>(group, s.model.factory, tc);
      },
      [](Ensemble& ens, Runner& runner, const rwd::ensemble::Outputs& y, ModeRun& out) {
        std::vector<double> ybar;
        if (rank_of(MPI_COMM_WORLD) == 0) ybar = cotangents(y.values, 0);
        out.gradient = ens.backward(ybar, runner);
      },
      [](Ensemble& ens, Runner&, ModeRun& out) {
        const rwd::ensemble::EnsembleReport report = ens.report();
        out.backward_bytes = report.backward_cotangent_bytes + report.backward_reduction_bytes;
        take_mapping(report.mapping, out);
      },
      claim);
}

// One rank's blocks of a task's tape as it travels: per field (offset, length, global size) of
// the pullback fields, then of the state fields; the data is every step's pullback blocks, then
// the final state's blocks.
struct TapePiece {
  std::vector<std::int64_t> header;  // task, steps, #pullback fields, triples..., #state, triples
  std::vector<double> data;
};

void describe(const std::vector<Field>& fields, std::vector<std::int64_t>& header) {
  header.push_back(static_cast<std::int64_t>(fields.size()));
  for (const Field& f : fields) {
    header.push_back(f.offset);
    header.push_back(static_cast<std::int64_t>(f.data.size()));
    header.push_back(f.global_size);
  }
}

// The ship-to-root baseline's front end: records each task with storeall and parks it, as
// StepperTasks does, but in stores of its own (a RamStore keeps the slots of erased checkpoints
// while it lives), so that take() can read a tape out of the RAM store and give its memory
// back, as a ship-to-root code frees the tapes it has sent.
class ShipRunner final : public rwd::ensemble::TaskRunner {
 public:
  ShipRunner(MPI_Comm group, TaskFactory factory, rwd::engine::RecordingConfig recording)
      : group_(group), factory_(std::move(factory)), recording_(std::move(recording)) {}

  std::vector<double> forward(std::int64_t k) override {
    std::unique_ptr<Task> task = factory_(k, group_);
    rwd::engine::RecordingConfig c = recording_;
    c.params.steps = task->steps();
    Tape& tape = held_[k];
    tape.stores = std::make_shared<rwd::engine::Stores>(stores_config(group_));
    tape.recording = std::make_unique<rwd::engine::Recording>(task->stepper(), tape.stores, c);
    tape.recording->record();
    std::vector<double> y = task->output();
    tape.recording->park();
    return y;
  }
  std::vector<double> backward(std::int64_t, std::span<const double>) override {
    throw Error(ErrorCode::Internal, "ship: the backward runs on rank 0, not in the ensemble");
  }
  rwd::ensemble::TaskCost cost(std::int64_t) const override { return {}; }
  void discard() noexcept override { held_.clear(); }

  // Task k's tape, this rank's blocks, read out of the RAM store; its recording is dropped.
  TapePiece take(std::int64_t k) {
    auto it = held_.find(k);
    require(it != held_.end(), "ship: no tape of task " + std::to_string(k));
    rwd::engine::Recording& rec = *it->second.recording;
    std::unique_ptr<Task> task = factory_(k, group_);  // buffers of the right names and sizes
    const std::vector<Field> pull = task->stepper().pullback();
    const std::vector<Field> state = task->stepper().state();
    const Step n = rec.steps();
    TapePiece piece;
    piece.header = {k, n};
    describe(pull, piece.header);
    describe(state, piece.header);
    auto& ram = it->second.stores->ram();
    const auto read = [&](const rwd::storage::Key& key, const std::vector<Field>& fields) {
      require(ram.contains(key), "ship: the RAM store lacks " + rwd::storage::to_string(key));
      ram.get(key, {fields, {}});
      for (const Field& f : fields)
        piece.data.insert(piece.data.end(), f.data.begin(), f.data.end());
    };
    for (Step i = 0; i < n; ++i) read({i, Kind::Pullback, rec.id()}, pull);
    read({n, Kind::Final, rec.id()}, state);
    held_.erase(it);  // frees its checkpoints and their slots (no disk store: rank-local)
    malloc_trim(0);
    return piece;
  }

 private:
  struct Tape {
    std::shared_ptr<rwd::engine::Stores> stores;
    std::unique_ptr<rwd::engine::Recording> recording;  // destroyed before its stores
  };
  MPI_Comm group_;
  TaskFactory factory_;
  rwd::engine::RecordingConfig recording_;
  std::map<std::int64_t, Tape> held_;
};

// A whole tape on rank 0: every step's pullback fields, then the final state, each field whole.
struct FullTape {
  Step steps = 0;
  std::int64_t pull_doubles = 0;  // one step's pullback data
  std::vector<double> data;

  // Places one rank's blocks; a piece of whole fields (a group of one rank) is taken as it is.
  void merge(TapePiece piece) {
    using Triple = std::array<std::int64_t, 3>;  // offset, length, global size
    const std::vector<std::int64_t>& h = piece.header;
    std::size_t at = 2;
    const auto fields = [&] {
      std::vector<Triple> out(static_cast<std::size_t>(h[at++]));
      for (auto& f : out) {
        f = {h[at], h[at + 1], h[at + 2]};
        at += 3;
      }
      return out;
    };
    const auto global = [](const std::vector<Triple>& fs) {
      std::int64_t n = 0;
      for (const auto& f : fs) n += f[2];
      return n;
    };
    steps = h[1];
    const std::vector<Triple> pull = fields(), state = fields();
    pull_doubles = global(pull);
    const std::int64_t whole = steps * pull_doubles + global(state);
    if (static_cast<std::int64_t>(piece.data.size()) == whole) {
      data = std::move(piece.data);
      return;
    }
    if (data.empty()) data.assign(static_cast<std::size_t>(whole), 0.0);
    const double* from = piece.data.data();
    const auto place = [&](const std::vector<Triple>& fs, std::int64_t base) {
      for (const auto& f : fs) {
        std::copy(from, from + f[1], data.begin() + base + f[0]);
        from += f[1];
        base += f[2];
      }
    };
    for (Step i = 0; i < steps; ++i) place(pull, i * pull_doubles);
    place(state, steps * pull_doubles);
  }
};

void load(const std::vector<Field>& fields, const double* from) {
  for (const Field& f : fields) {
    require(f.offset == 0 && static_cast<std::int64_t>(f.data.size()) == f.global_size,
            "ship: rank 0's task must hold whole fields");
    std::copy(from, from + f.data.size(), f.data.begin());
    from += f.data.size();
  }
}

// Rank 0 reverses task k from its whole tape, as a storeall reverse sweep would, and returns the
// task's gradient.
std::vector<double> reverse_on_root(const TaskFactory& factory, std::int64_t k, const FullTape& t,
                                    std::span<const double> ybar) {
  std::unique_ptr<Task> task = factory(k, MPI_COMM_SELF);
  rwd::engine::Stepper& s = task->stepper();
  load(s.state(), t.data.data() + t.steps * t.pull_doubles);
  s.loaded(Kind::Restart);
  s.begin_adjoint(ybar);
  for (Step i = t.steps - 1; i >= 0; --i) {
    load(s.pullback(), t.data.data() + i * t.pull_doubles);
    s.loaded(Kind::Pullback);
    s.adjoint(i);
  }
  return task->gradient();
}

// Ship to root, after the forward: every rank sends its blocks of its group's tapes to world
// rank 0, which assembles them, runs every adjoint (newest task first) and broadcasts the
// gradient. Returns the whole gradient on every rank; `sent` counts this rank's tape bytes.
std::vector<double> ship_backward(const Setup& s, ShipRunner& runner,
                                  const std::vector<rwd::ensemble::TaskRecord>& mapping,
                                  const rwd::ensemble::Outputs& y, std::int64_t& sent) {
  const int me = rank_of(MPI_COMM_WORLD), ranks = size_of(MPI_COMM_WORLD);
  const auto tasks = static_cast<std::int64_t>(mapping.size());
  // Each group's tasks in the order it ran them.
  std::vector<std::vector<std::int64_t>> lists(static_cast<std::size_t>(s.groups));
  for (const auto& m : mapping) lists[static_cast<std::size_t>(m.group)].push_back(m.task);
  for (auto& l : lists) {
    std::sort(l.begin(), l.end(), [&](std::int64_t a, std::int64_t b) {
      return mapping[static_cast<std::size_t>(a)].position <
             mapping[static_cast<std::size_t>(b)].position;
    });
  }
  sent = 0;
  std::vector<double> full;
  if (me != 0) {
    for (std::int64_t k : lists[static_cast<std::size_t>(me / s.g)]) {
      const TapePiece p = runner.take(k);
      MPI_Send(p.header.data(), static_cast<int>(p.header.size()), MPI_INT64_T, 0, 1,
               MPI_COMM_WORLD);
      MPI_Send(p.data.data(), static_cast<int>(p.data.size()), MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
      sent += static_cast<std::int64_t>(p.header.size() * sizeof(std::int64_t) +
                                        p.data.size() * sizeof(double));
    }
  } else {
    std::vector<FullTape> tapes(static_cast<std::size_t>(tasks));
    for (std::int64_t k : lists[0]) tapes[static_cast<std::size_t>(k)].merge(runner.take(k));
    for (int r = 1; r < ranks; ++r) {
      for (std::int64_t k : lists[static_cast<std::size_t>(r / s.g)]) {
        TapePiece p;
        MPI_Status st;
        int n = 0;
        MPI_Probe(r, 1, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT64_T, &n);
        p.header.resize(static_cast<std::size_t>(n));
        MPI_Recv(p.header.data(), n, MPI_INT64_T, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Probe(r, 2, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &n);
        p.data.resize(static_cast<std::size_t>(n));
        MPI_Recv(p.data.data(), n, MPI_DOUBLE, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        require(p.header[0] == k, "ship: tapes arrived out of order");
        tapes[static_cast<std::size_t>(k)].merge(std::move(p));
      }
    }
    // Rank 0 holds every tape now.
    const std::vector<double> ybar = cotangents(y.values, 0);
    std::unique_ptr<ReproducibleSum> sum;
    for (std::int64_t k = tasks - 1; k >= 0; --k) {
      const auto j = static_cast<std::size_t>(k);
      const std::span<const double> yk = std::span<const double>(ybar).subspan(
          static_cast<std::size_t>(y.offsets[j]),
          static_cast<std::size_t>(y.offsets[j + 1] - y.offsets[j]));
      const std::vector<double> gk = reverse_on_root(s.model.factory, k, tapes[j], yk);
      tapes[j] = FullTape{};  // its tape is used up
      if (!sum) sum = std::make_unique<ReproducibleSum>(gk.size());
      sum->add(gk);
    }
    full = sum->result();
  }
  long long length = static_cast<long long>(full.size());
  MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  full.resize(static_cast<std::size_t>(length));
  MPI_Bcast(full.data(), static_cast<int>(length), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return full;
}

// Ship to root: the forward as dynamic, then ship_backward().
ModeRun run_ship(const Setup& s, std::int64_t tasks) {
  return measure(
      s, Assign::Dynamic, tasks,
      [&](MPI_Comm group) {
        return std::make_unique<ShipRunner>(group, s.model.factory, s.recording);
      },
      [&](Ensemble& ens, ShipRunner& runner, const rwd::ensemble::Outputs& y, ModeRun& out) {
        const std::vector<double> full =
            ship_backward(s, runner, ens.mapping(), y, out.shipped_bytes);
        out.gradient.assign(full.begin() + s.block_offset, full.begin() + s.block_offset + s.block);
      },
      [&](Ensemble& ens, ShipRunner& runner, ModeRun& out) {
        out.shipped_bytes = total_over_ranks(out.shipped_bytes);
        // The tapes, and the whole gradient to every other rank.
        std::int64_t length = 0;
        MPI_Allreduce(&s.block, &length, 1, MPI_INT64_T, MPI_SUM, s.group);
        out.backward_bytes =
            out.shipped_bytes + static_cast<std::int64_t>(size_of(MPI_COMM_WORLD) - 1) * length * 8;
        take_mapping(ens.mapping(), out);
        ens.discard(runner);
      });
}

// Fused: each task's forward and reverse back to back on the group that claimed it (its cotangent
// depends on its own outputs alone), the contributions summed as they come.
class FusedRunner final : public rwd::ensemble::TaskRunner {
 public:
  FusedRunner(MPI_Comm group, TaskFactory factory, rwd::engine::RecordingConfig recording,
              std::size_t block)
      : group_(group),
        factory_(std::move(factory)),
        recording_(std::move(recording)),
        stores_(std::make_shared<rwd::engine::Stores>(stores_config(group))),
        sum_(block) {}

  std::vector<double> forward(std::int64_t k) override {
    std::unique_ptr<Task> task = factory_(k, group_);
    rwd::engine::RecordingConfig c = recording_;
    c.params.steps = task->steps();
    rwd::engine::Recording rec(task->stepper(), stores_, c);
    rec.record();
    std::vector<double> y = task->output();
    rec.reverse(cotangents(y, static_cast<std::size_t>(k) * y.size()));
    sum_.add(task->gradient());
    return y;
  }
  std::vector<double> backward(std::int64_t, std::span<const double>) override {
    throw Error(ErrorCode::Internal, "fused: the reverse ran in the forward");
  }
  rwd::ensemble::TaskCost cost(std::int64_t) const override { return {}; }
  void discard() noexcept override {}

  // The sum of every group's contributions on every rank, and a new sum for the next evaluation.
  // Collective on `cross` (the ranks with this rank's block).
  std::vector<double> reduce(MPI_Comm cross) {
    sum_.allreduce(cross);
    std::vector<double> g = sum_.result();
    sum_ = ReproducibleSum(sum_.length());
    return g;
  }

 private:
  MPI_Comm group_;
  TaskFactory factory_;
  rwd::engine::RecordingConfig recording_;
  std::shared_ptr<rwd::engine::Stores> stores_;
  ReproducibleSum sum_;
};

ModeRun run_fused(const Setup& s, std::int64_t tasks) {
  return measure(
      s, Assign::Dynamic, tasks,
      [&](MPI_Comm group) {
        return std::make_unique<FusedRunner>(group, s.model.factory, s.recording,
                                             static_cast<std::size_t>(s.block));
      },
      [&](Ensemble&, FusedRunner& runner, const rwd::ensemble::Outputs&, ModeRun& out) {
        out.gradient = runner.reduce(s.cross);
      },
      [&](Ensemble& ens, FusedRunner& runner, ModeRun& out) {
        // As the ensemble counts its reduction: each rank hands 32 bytes an entry to the allreduce.
        out.backward_bytes = s.groups > 1 ? total_over_ranks(32 * s.block) : 0;
        take_mapping(ens.mapping(), out);
        ens.discard(runner);
      });
}

ModeRun run(const Setup& s, Mode mode, std::int64_t tasks) {
  switch (mode) {
    case Mode::Dynamic:
      return run_map(s, Assign::Dynamic, tasks);
    case Mode::Static:
      return run_map(s, Assign::Static, tasks);
    case Mode::Ship:
      return run_ship(s, tasks);
    case Mode::Fused:
      return run_fused(s, tasks);
    case Mode::Costliest:
      return run_map(s, Assign::Dynamic, tasks, ClaimOrder::CostliestFirst);
  }
  return {};
}

// ---- bounds and ideal schedules -----------------------------------------------------------

// List scheduling on G machines finishes within W/G + p_max (Graham); no schedule finishes
// before max(W/G, p_max). Per pass; a makespan's bounds are the sums over the two passes (the
// backward starts when every output is known).
struct Bounds {
  double list = 0, lower = 0;
};
Bounds pass_bounds(const std::vector<double>& times, int groups) {
  const double w = std::accumulate(times.begin(), times.end(), 0.0);
  const double pmax = times.empty() ? 0.0 : *std::max_element(times.begin(), times.end());
  return {w / groups + pmax, std::max(w / groups, pmax)};
}
Bounds two_passes(const std::vector<double>& fwd, const std::vector<double>& bwd, int groups) {
  const Bounds f = pass_bounds(fwd, groups), b = pass_bounds(bwd, groups);
  return {f.list + b.list, f.lower + b.lower};
}

// The largest per-group sum of `times` under the assignment `group_of`.
double busiest(const std::vector<double>& times, const std::vector<int>& group_of, int groups) {
  std::vector<double> load(static_cast<std::size_t>(groups), 0.0);
  for (std::size_t k = 0; k < times.size(); ++k) {
    load[static_cast<std::size_t>(group_of[k])] += times[k];
  }
  return *std::max_element(load.begin(), load.end());
}

// Greedy list scheduling in task order without overhead (each task to the group free first):
// the groups it picks.
std::vector<int> greedy(const std::vector<double>& times, int groups) {
  std::vector<double> free_at(static_cast<std::size_t>(groups), 0.0);
  std::vector<int> out;
  for (double t : times) {
    const auto q = std::min_element(free_at.begin(), free_at.end()) - free_at.begin();
    free_at[static_cast<std::size_t>(q)] += t;
    out.push_back(static_cast<int>(q));
  }
  return out;
}

// Each mode's makespan without overhead, for task costs fwd/bwd (seconds on a group): dynamic
// is greedy in task order in the forward and each group's own tasks in the backward; static the
// round robin; ship the greedy forward and every adjoint on one rank (g times a group's time);
// fused greedy over forward + reverse.
double ideal_longest_first(const std::vector<double>& fwd, const std::vector<double>& bwd,
                           int groups);

double ideal(Mode mode, const std::vector<double>& fwd, const std::vector<double>& bwd, int groups,
             int g) {
  std::vector<int> rr(fwd.size());
  for (std::size_t k = 0; k < rr.size(); ++k) rr[k] = static_cast<int>(k % std::size_t(groups));
  const std::vector<int> dyn = greedy(fwd, groups);
  switch (mode) {
    case Mode::Dynamic:
      return busiest(fwd, dyn, groups) + busiest(bwd, dyn, groups);
    case Mode::Static:
      return busiest(fwd, rr, groups) + busiest(bwd, rr, groups);
    case Mode::Ship:
      return busiest(fwd, dyn, groups) + g * std::accumulate(bwd.begin(), bwd.end(), 0.0);
    case Mode::Costliest:
      return ideal_longest_first(fwd, bwd, groups);
    case Mode::Fused: {
      std::vector<double> both(fwd.size());
      for (std::size_t k = 0; k < both.size(); ++k) both[k] = fwd[k] + bwd[k];
      return busiest(both, greedy(both, groups), groups);
    }
  }
  return 0.0;
}

// Dynamic assignment without overhead if tasks were claimed longest first (LPT), as a cost hint
// would allow; the ensemble claims them in task order.
double ideal_longest_first(const std::vector<double>& fwd, const std::vector<double>& bwd,
                           int groups) {
  std::vector<std::size_t> order(fwd.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return fwd[a] > fwd[b]; });
  std::vector<double> sorted;
  for (std::size_t k : order) sorted.push_back(fwd[k]);
  const std::vector<int> picked = greedy(sorted, groups);
  std::vector<int> group_of(fwd.size());
  for (std::size_t i = 0; i < order.size(); ++i) group_of[order[i]] = picked[i];
  return busiest(fwd, group_of, groups) + busiest(bwd, group_of, groups);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

std::int64_t max_other(const std::vector<std::int64_t>& v) {
  std::int64_t m = 0;
  for (std::size_t r = 1; r < v.size(); ++r) m = std::max(m, v[r]);
  return m;
}

// ---- the reproducible reduction against MPI_Allreduce ----------------------------------------

struct ReductionTimes {
  double repro = 0, plain = 0;  // medians, slowest rank
};

// allreduce() + result() of this rank's block over the ranks with the same block, against an
// MPI_Allreduce(MPI_SUM) of the same doubles; barrier-started, interleaved.
ReductionTimes time_reduction(const Setup& s, std::int64_t tasks_per_group) {
  const auto m = static_cast<std::size_t>(s.block);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  ReproducibleSum base(m);
  std::vector<double> plain(m, 0.0), x(m), reduced(m);
  for (std::int64_t t = 0; t < tasks_per_group; ++t) {
    for (auto& v : x) v = u(rng) * 1e-3;
    base.add(x);
    for (std::size_t j = 0; j < m; ++j) plain[j] += x[j];
  }
  std::vector<double> repro_t, plain_t;
  for (int it = 0; it < 21; ++it) {
    ReproducibleSum sum = base;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    sum.allreduce(s.cross);
    reduced = sum.result();
    repro_t.push_back(slowest(MPI_Wtime() - t0));
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_Allreduce(plain.data(), reduced.data(), static_cast<int>(m), MPI_DOUBLE, MPI_SUM, s.cross);
    plain_t.push_back(slowest(MPI_Wtime() - t0));
  }
  return {median(repro_t), median(plain_t)};
}

// ---- the run ---------------------------------------------------------------------------------

const std::vector<Mode> kModes = {Mode::Dynamic, Mode::Static, Mode::Ship, Mode::Fused,
                                  Mode::Costliest};

// One mode's figures over the repetitions (medians are printed).
struct ModeSummary {
  std::vector<double> total, forward, first, ratio_list, ratio_lower, ratio_ideal, busy;
  std::vector<double> peak0, peak_other, growth0, growth_other, faults0, faults_other;
  std::int64_t backward_bytes = 0, shipped_bytes = 0;

  void add(const ModeRun& r, Mode mode, const Bounds& b, double ideal_seconds, int groups) {
    total.push_back(r.total);
    forward.push_back(r.forward);
    first.push_back(r.first_total);
    ratio_list.push_back(r.total / b.list);
    ratio_lower.push_back(r.total / b.lower);
    ratio_ideal.push_back(r.total / ideal_seconds);
    if (mode == Mode::Dynamic || mode == Mode::Static || mode == Mode::Costliest) {
      busy.push_back(busiest(r.task_forward, r.task_group, groups) +
                     busiest(r.task_backward, r.task_group, groups));
    } else if (mode == Mode::Fused) {
      busy.push_back(busiest(r.task_forward, r.task_group, groups));
    }
    const MemoryWindow::Figures& m = r.memory;
    peak0.push_back(static_cast<double>(m.peak[0]));
    peak_other.push_back(static_cast<double>(max_other(m.peak)));
    growth0.push_back(static_cast<double>(m.growth[0]));
    growth_other.push_back(static_cast<double>(max_other(m.growth)));
    faults0.push_back(static_cast<double>(m.faults[0]));
    faults_other.push_back(static_cast<double>(max_other(m.faults)));
    backward_bytes = r.backward_bytes;
    shipped_bytes = r.shipped_bytes;
  }
};

// Rank 0's memory at one task count, ship against dynamic.
struct MemoryPoint {
  std::int64_t tasks = 0;
  double ship0 = 0, ship_other = 0, dyn0 = 0, dyn_other = 0;
  std::int64_t shipped = 0;
};

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / kMiB);
  return buf;
}

struct Results {
  std::map<Mode, ModeSummary> modes;
  std::vector<double> bound_list, bound_lower, dynamic_backward;
  std::map<Mode, std::vector<double>> ideal;
  std::vector<double> ideal_lpt;
  std::vector<MemoryPoint> memory;
  ReductionTimes reduction;
};

void print_tables(const Setup& s, const Results& res) {
  const double bl = median(res.bound_list), bw = median(res.bound_lower);
  std::printf(
      "\nlist-scheduling bound (both passes, W/G + longest task, from the dynamic run's "
      "measured task times): %.3f s; lower bound max(W/G, longest): %.3f s\n",
      bl, bw);
  std::printf("without overhead (the same task times):");
  for (Mode mode : kModes) std::printf(" %s %.3f s", name_of(mode), median(res.ideal.at(mode)));
  std::printf("; dynamic claiming longest first %.3f s\n", median(res.ideal_lpt));
  if (s.model.planned_times) {
    std::vector<double> planned;
    for (const auto& t : s.model.plan) planned.push_back(t.seconds);
    const Bounds p = two_passes(planned, planned, s.groups);
    std::printf(
        "planned sleep times: list-scheduling bound %.3f s, lower bound %.3f s; without "
        "overhead:",
        p.list, p.lower);
    for (Mode mode : kModes) {
      std::printf(" %s %.3f s", name_of(mode), ideal(mode, planned, planned, s.groups, s.g));
    }
    std::printf("; longest first %.3f s\n", ideal_longest_first(planned, planned, s.groups));
  }
  std::printf(
      "\n| mode | makespan s | min-max s | forward s | backward s | / LS bound | / lower "
      "bound | / no overhead | busiest group's tasks s |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (Mode mode : kModes) {
    const ModeSummary& m = res.modes.at(mode);
    const double total = median(m.total), fwd = median(m.forward);
    char busy[32] = "-";
    if (!m.busy.empty()) std::snprintf(busy, sizeof busy, "%.3f", median(m.busy));
    std::printf("| %s | %.3f | %.3f-%.3f | %.3f | %.3f | %.2f | %.2f | %.2f | %s |\n",
                name_of(mode), total, *std::min_element(m.total.begin(), m.total.end()),
                *std::max_element(m.total.begin(), m.total.end()), fwd, total - fwd,
                median(m.ratio_list), median(m.ratio_lower), median(m.ratio_ideal), busy);
  }
  if (s.options.evaluations > 1) {
    std::printf("\nfirst of the %d evaluations (the table times the last):", s.options.evaluations);
    for (Mode mode : kModes) {
      std::printf(" %s %.3f s", name_of(mode), median(res.modes.at(mode).first));
    }
    std::printf("\n");
  }
  std::printf(
      "\n| mode | backward bytes | rank 0 peak MiB | others' max peak MiB | rank 0 growth "
      "MiB | others' max growth MiB | rank 0 minor faults | others' max faults |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (Mode mode : kModes) {
    const ModeSummary& m = res.modes.at(mode);
    std::printf("| %s | %lld | %s | %s | %s | %s | %.0f | %.0f |\n", name_of(mode),
                static_cast<long long>(m.backward_bytes), mib(median(m.peak0)).c_str(),
                mib(median(m.peak_other)).c_str(), mib(median(m.growth0)).c_str(),
                mib(median(m.growth_other)).c_str(), median(m.faults0), median(m.faults_other));
  }
  std::printf(
      "\nmemory growth against K (MiB; shipped: the tape bytes sent to rank 0):\n"
      "| K | ship: rank 0 | ship: others' max | shipped | dynamic: rank 0 | dynamic: "
      "others' max |\n|---|---|---|---|---|---|\n");
  for (const auto& p : res.memory) {
    std::printf("| %lld | %s | %s | %s | %s | %s |\n", static_cast<long long>(p.tasks),
                mib(p.ship0).c_str(), mib(p.ship_other).c_str(),
                mib(static_cast<double>(p.shipped)).c_str(), mib(p.dyn0).c_str(),
                mib(p.dyn_other).c_str());
  }
  const double bwd = median(res.dynamic_backward);
  const ReductionTimes& red = res.reduction;
  std::printf(
      "\nreproducible reduction of a %lld-entry block over %d groups: allreduce() + "
      "result() %.1f us, MPI_Allreduce %.1f us (x%.1f); %.2f %% of the dynamic backward "
      "(%.3f s), plain %.2f %%\n",
      static_cast<long long>(s.block), s.groups, 1e6 * red.repro, 1e6 * red.plain,
      red.plain > 0 ? red.repro / red.plain : 0.0, 100.0 * red.repro / bwd, bwd,
      100.0 * red.plain / bwd);
}

// One JSON object a line, each starting with '{'.
void print_json(const Setup& s, const Results& res) {
  const Options& o = s.options;
  const int ranks = size_of(MPI_COMM_WORLD);
  for (Mode mode : kModes) {
    const ModeSummary& m = res.modes.at(mode);
    const double total = median(m.total), fwd = median(m.forward);
    std::printf(
        "{\"bench\": \"ensemble\", \"model\": \"%s\", \"ranks\": %d, \"group_size\": %d, "
        "\"groups\": %d, \"tasks\": %lld, \"mode\": \"%s\", \"makespan_s\": %.6f, "
        "\"forward_s\": %.6f, \"backward_s\": %.6f, \"first_evaluation_s\": %.6f, "
        "\"evaluations\": %d, \"list_bound_s\": %.6f, "
        "\"lower_bound_s\": %.6f, \"no_overhead_s\": %.6f, \"ratio_list_bound\": %.4f, "
        "\"ratio_lower_bound\": %.4f, \"ratio_no_overhead\": %.4f, \"backward_bytes\": "
        "%lld, \"shipped_bytes\": %lld, \"rank0_peak_bytes\": %.0f, "
        "\"others_peak_max_bytes\": %.0f, \"rank0_growth_bytes\": %.0f, "
        "\"others_growth_max_bytes\": %.0f, \"makespans_s\": [",
        o.model.c_str(), ranks, s.g, s.groups, static_cast<long long>(o.tasks), name_of(mode),
        total, fwd, total - fwd, median(m.first), o.evaluations, median(res.bound_list),
        median(res.bound_lower), median(res.ideal.at(mode)), median(m.ratio_list),
        median(m.ratio_lower), median(m.ratio_ideal), static_cast<long long>(m.backward_bytes),
        static_cast<long long>(m.shipped_bytes), median(m.peak0), median(m.peak_other),
        median(m.growth0), median(m.growth_other));
    for (std::size_t i = 0; i < m.total.size(); ++i) {
      std::printf("%s%.6f", i ? ", " : "", m.total[i]);
    }
    std::printf("]}\n");
  }
  for (const auto& p : res.memory) {
    std::printf(
        "{\"bench\": \"ensemble_memory\", \"model\": \"%s\", \"ranks\": %d, "
        "\"group_size\": %d, \"tasks\": %lld, \"ship_rank0_growth_bytes\": %.0f, "
        "\"ship_others_growth_max_bytes\": %.0f, \"shipped_bytes\": %lld, "
        "\"dynamic_rank0_growth_bytes\": %.0f, \"dynamic_others_growth_max_bytes\": "
        "%.0f}\n",
        o.model.c_str(), ranks, s.g, static_cast<long long>(p.tasks), p.ship0, p.ship_other,
        static_cast<long long>(p.shipped), p.dyn0, p.dyn_other);
  }
  std::printf(
      "{\"bench\": \"ensemble_reduction\", \"model\": \"%s\", \"ranks\": %d, "
      "\"group_size\": %d, \"block\": %lld, \"reproducible_s\": %.9f, \"plain_s\": "
      "%.9f, \"dynamic_backward_s\": %.6f}\n",
      o.model.c_str(), ranks, s.g, static_cast<long long>(s.block), res.reduction.repro,
      res.reduction.plain, median(res.dynamic_backward));
}

Setup make_setup(const Options& o) {
  const int me = rank_of(MPI_COMM_WORLD), ranks = size_of(MPI_COMM_WORLD);
  require(o.group_size >= 1 && ranks % o.group_size == 0,
          "ensemble bench: --group-size must divide the rank count");
  Setup s;
  s.options = o;
  s.model = make_model(o);
  s.g = o.group_size;
  s.groups = ranks / s.g;
  MPI_Comm_split(MPI_COMM_WORLD, me / s.g, me, &s.group);
  MPI_Comm_split(MPI_COMM_WORLD, me % s.g, me, &s.cross);
  s.block = static_cast<std::int64_t>(s.model.factory(0, s.group)->gradient().size());
  MPI_Exscan(&s.block, &s.block_offset, 1, MPI_INT64_T, MPI_SUM, s.group);
  if (rank_of(s.group) == 0) s.block_offset = 0;
  s.recording.schedule = "storeall";
  s.recording.params.ram = std::int64_t{1} << 40;  // capped at each task's step count
  s.recording.params.disk = 0;
  return s;
}

void print_setup(const Setup& s) {
  const Options& o = s.options;
  std::int64_t steps = 0;
  for (const auto& t : s.model.plan) steps += t.steps;
  std::printf(
      "ensemble bench: model %s, %d ranks, group size %d (%d groups), K = %lld tasks, "
      "log-normal sigma %.2f seed %llu, %d reps of %d evaluation(s), storeall tapes in RAM\n",
      o.model.c_str(), size_of(MPI_COMM_WORLD), s.g, s.groups, static_cast<long long>(o.tasks),
      o.sigma, static_cast<unsigned long long>(o.seed), o.reps, o.evaluations);
  if (o.model == "sleep") {
    std::printf(
        "  sleep: mean task %.1f ms (its adjoint as long), steps of ~%.2f ms, state %lld "
        "doubles; %lld steps in all\n",
        o.mean_ms, o.step_ms, static_cast<long long>(o.state), static_cast<long long>(steps));
  } else {
    std::printf("  pde: diffusion-decay, %d cells, mean %.0f steps; %lld steps in all\n", o.cells,
                o.mean_steps, static_cast<long long>(steps));
  }
  std::fflush(stdout);
}

int bench(const Options& o) {
  const int me = rank_of(MPI_COMM_WORLD);
  Setup s = make_setup(o);
  if (me == 0) print_setup(s);
  const std::int64_t K = o.tasks;

  Results res;
  std::vector<double> reference;  // the first dynamic gradient, this rank's block
  std::vector<std::string> failures;
  const auto check = [&](const std::vector<double>& gradient, const std::vector<double>& against,
                         const std::string& what) {
    if (!same_bits(gradient, against)) failures.push_back(what);
  };
  for (int rep = 0; rep < o.reps; ++rep) {
    std::map<Mode, ModeRun> runs;
    for (std::size_t i = 0; i < kModes.size(); ++i) {
      const Mode mode = kModes[(i + static_cast<std::size_t>(rep)) % kModes.size()];
      runs[mode] = run(s, mode, K);
      if (me == 0) {
        std::printf("  rep %d %-8s %.3f s\n", rep, name_of(mode), runs[mode].total);
        std::fflush(stdout);
      }
    }
    const ModeRun& dyn = runs[Mode::Dynamic];
    const Bounds b = two_passes(dyn.task_forward, dyn.task_backward, s.groups);
    res.bound_list.push_back(b.list);
    res.bound_lower.push_back(b.lower);
    res.dynamic_backward.push_back(dyn.total - dyn.forward);
    res.ideal_lpt.push_back(ideal_longest_first(dyn.task_forward, dyn.task_backward, s.groups));
    if (reference.empty()) reference = dyn.gradient;
    for (Mode mode : kModes) {
      const double best = ideal(mode, dyn.task_forward, dyn.task_backward, s.groups, s.g);
      res.ideal[mode].push_back(best);
      res.modes[mode].add(runs[mode], mode, b, best, s.groups);
      check(runs[mode].gradient, reference,
            std::string(name_of(mode)) + " in rep " + std::to_string(rep));
    }
  }

  // Memory against K: dynamic and ship once more at smaller task counts.
  for (std::int64_t k : o.memory_tasks) {
    if (k >= K || k < 1) continue;
    const ModeRun d = run(s, Mode::Dynamic, k);
    const ModeRun sh = run(s, Mode::Ship, k);
    check(sh.gradient, d.gradient, "ship at K = " + std::to_string(k));
    res.memory.push_back({k, static_cast<double>(sh.memory.growth[0]),
                          static_cast<double>(max_other(sh.memory.growth)),
                          static_cast<double>(d.memory.growth[0]),
                          static_cast<double>(max_other(d.memory.growth)), sh.shipped_bytes});
  }
  {
    const ModeSummary& sh = res.modes.at(Mode::Ship);
    const ModeSummary& d = res.modes.at(Mode::Dynamic);
    res.memory.push_back({K, median(sh.growth0), median(sh.growth_other), median(d.growth0),
                          median(d.growth_other), sh.shipped_bytes});
  }
  res.reduction = time_reduction(s, (K + s.groups - 1) / s.groups);

  const int mine = failures.empty() ? 0 : 1;
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0) {
    print_tables(s, res);
    print_json(s, res);
  }
  if (mine) {
    std::string list;
    for (const auto& f : failures) list += (list.empty() ? "" : ", ") + f;
    std::fprintf(stderr, "rank %d: FAILED: gradient bits differ from the dynamic map's: %s\n", me,
                 list.c_str());
  }
  if (!any && me == 0) {
    std::printf(
        "gradients: dynamic, static, ship, fused and costliest agree bitwise on every rank and "
        "rep\n");
  }
  MPI_Comm_free(&s.group);
  MPI_Comm_free(&s.cross);
  return any ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  // Big buffers come from mmap and go back to the system when freed, so that one mode's peak
  // memory is not hidden by pages an earlier mode left in the heap; sleeps wake on time.
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  int rc = 0;
  try {
    rc = bench(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return rc;
}
