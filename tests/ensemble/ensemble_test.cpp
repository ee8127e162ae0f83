// The ensemble map under MPI (1, 2, 3, 4 ranks; group sizes that divide them): K source tasks
// of different lengths on the advection-free diffusion-decay model, outputs at three receivers,
// a misfit that couples the tasks (log of the summed squares), gradient with respect to the
// shared decay field. Checked: bitwise equality with a serial loop over the tasks on one group
// (so across group counts and assignments), Taylor order 2, that the backward runs each task on
// the group that ran its forward, budgets that force spills and cuts, and bad input and failed
// tasks as errors on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>

#include "../engine/engine_test_util.hpp"
#include "rewind/engine/recording.hpp"
#include "rewind/ensemble/ensemble.hpp"
#include "rewind/ensemble/reproducible_sum.hpp"
#include "rewind/ensemble/stepper_tasks.hpp"
#include "rewind/error.hpp"

namespace rwd::testing {
namespace {

using ensemble::Assign;
using ensemble::Ensemble;
using ensemble::EnsembleConfig;
using ensemble::StepperTasks;
using ensemble::StepperTasksConfig;

constexpr int kCells = 48;
const std::vector<int> kReceivers = {5, 17, 29};

// Task k: a bump at cell 7k mod 48 diffusing and decaying for 12 + 5 (k mod 5) steps; the
// decay field (the shared parameter m) is perturbed by h in the parameter direction.
class SourceTask final : public ensemble::Task {
 public:
  SourceTask(std::int64_t k, MPI_Comm group, double h)
      : ring_(group, kCells), stepper_(ring_, 0.05), steps_(12 + 5 * (k % 5)) {
    const double centre = static_cast<double>((7 * k) % kCells);
    stepper_.set_initial([centre](int g) {
      const double d = (g - centre) / 3.0;
      return std::exp(-d * d);
    });
    stepper_.set_receivers(kReceivers);
    stepper_.reset(0.0, h);
  }
  engine::Stepper& stepper() override { return stepper_; }
  schedule::Step steps() const override { return steps_; }
  std::vector<double> output() override { return stepper_.readings(); }
  std::vector<double> gradient() override { return stepper_.parameter_gradient(); }
  DiffusionDecay& model() { return stepper_; }

 private:
  Ring ring_;
  DiffusionDecay stepper_;
  schedule::Step steps_;
};

// Synthetic data d_k; Phi(y) = log(sum_k |y_k - d_k|^2) couples every task.
double datum(std::size_t i) {
  return 0.05 * std::cos(0.3 * static_cast<double>(i));
}
double misfit(const std::vector<double>& y) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += (y[i] - datum(i)) * (y[i] - datum(i));
  return std::log(s);
}
std::vector<double> misfit_gradient(const std::vector<double>& y) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += (y[i] - datum(i)) * (y[i] - datum(i));
  std::vector<double> g(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) g[i] = 2.0 * (y[i] - datum(i)) / s;
  return g;
}

engine::RecordingConfig task_recording(std::int64_t ram, std::int64_t disk) {
  engine::RecordingConfig c;
  c.params.ram = ram;
  c.params.disk = disk;
  return c;
}

StepperTasksConfig tasks_config(std::int64_t ram, std::int64_t disk, const std::string& sub) {
  StepperTasksConfig c;
  c.recording = task_recording(ram, disk);
  c.stores.store.directory = scratch_dir("ensemble-" + sub);
  c.stores.store.label = "ensemble-test";
  return c;
}

ensemble::TaskFactory factory(double h = 0.0) {
  return [h](std::int64_t k, MPI_Comm group) { return std::make_unique<SourceTask>(k, group, h); };
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// The group sizes that divide the world.
std::vector<int> group_sizes() {
  std::vector<int> out;
  for (int g : {1, 2}) {
    if (world_size() % g == 0) out.push_back(g);
  }
  return out;
}

// The gradient of Phi by a plain serial loop over the tasks on one group of g ranks (the
// world's first g ranks), with the same reproducible sum; returned on every rank for its own
// block (ranks with the same rank within their group get the same values).
std::vector<double> serial_gradient(int g, std::int64_t tasks) {
  const int rank = world_rank();
  MPI_Comm first = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < g ? 0 : MPI_UNDEFINED, rank, &first);
  std::vector<double> block;
  if (first != MPI_COMM_NULL) {
    std::vector<double> y;
    for (std::int64_t k = 0; k < tasks; ++k) {  // the outputs, forward only
      SourceTask t(k, first, 0.0);
      t.model().run_forward(t.steps());
      const auto yk = t.output();
      y.insert(y.end(), yk.begin(), yk.end());
    }
    const std::vector<double> ybar = misfit_gradient(y);
    engine::StoresConfig sc;
    sc.store.comm = first;
    auto stores = std::make_shared<engine::Stores>(sc);
    std::unique_ptr<ensemble::ReproducibleSum> sum;
    for (std::int64_t k = 0; k < tasks; ++k) {
      SourceTask t(k, first, 0.0);
      engine::RecordingConfig c = task_recording(4, 0);
      c.params.steps = t.steps();
      engine::Recording r(t.stepper(), stores, c);
      r.record();
      r.reverse(std::span<const double>(ybar).subspan(3 * static_cast<std::size_t>(k), 3));
      const auto gk = t.gradient();
      if (!sum) sum = std::make_unique<ensemble::ReproducibleSum>(gk.size());
      sum->add(gk);
    }
    block = sum ? sum->result() : std::vector<double>{};
    MPI_Comm_free(&first);
  }
  // Hand group 0's blocks to the ranks with the same rank in the other groups.
  MPI_Comm cross;
  MPI_Comm_split(MPI_COMM_WORLD, rank % g, rank, &cross);
  long long n = static_cast<long long>(block.size());
  MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, cross);
  block.resize(static_cast<std::size_t>(n));
  MPI_Bcast(block.data(), static_cast<int>(n), MPI_DOUBLE, 0, cross);
  MPI_Comm_free(&cross);
  return block;
}

struct MapRun {
  ensemble::Outputs y;
  std::vector<double> gradient;
  ensemble::EnsembleReport report;
};

MapRun run_map(int g, Assign assign, std::int64_t tasks, const StepperTasksConfig& tc,
               double h = 0.0) {
  EnsembleConfig ec;
  ec.group_size = g;
  ec.assign = assign;
  Ensemble ens(MPI_COMM_WORLD, ec);
  StepperTasks runner(ens.group_comm(), factory(h), tc);
  MapRun r;
  r.y = ens.forward(tasks, runner);
  const std::vector<double> ybar = misfit_gradient(r.y.values);
  r.gradient = ens.backward(
      world_rank() == 0 ? std::span<const double>(ybar) : std::span<const double>(), runner);
  r.report = ens.report();
  runner.stores().close();
  return r;
}

class EnsembleMap : public ::testing::TestWithParam<Assign> {};

TEST_P(EnsembleMap, GradientIsBitwiseTheSerialLoopWhateverTheGroups) {
  for (int g : group_sizes()) {
    for (std::int64_t tasks : {std::int64_t{7}, std::int64_t{1}, std::int64_t{0}}) {
      const MapRun r = run_map(g, GetParam(), tasks, tasks_config(4, 0, "serial"));
      const std::vector<double> serial = serial_gradient(g, tasks);
      EXPECT_TRUE(all_ranks(bitwise_equal(r.gradient, serial))) << "g=" << g << " tasks=" << tasks;
      ASSERT_EQ(r.y.offsets.size(), static_cast<std::size_t>(tasks + 1));
      EXPECT_EQ(r.y.values.size(), static_cast<std::size_t>(3 * tasks));
      EXPECT_EQ(r.report.mapping.size(), static_cast<std::size_t>(tasks));
      // The report is the same on every rank: the reduction hands 4 words of each rank's
      // gradient block to MPI when there is more than one group.
      int size = 1;
      MPI_Comm_size(MPI_COMM_WORLD, &size);
      long long mine = static_cast<long long>(r.gradient.size()) * 32, handed = 0;
      MPI_Allreduce(&mine, &handed, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      EXPECT_EQ(r.report.backward_reduction_bytes, size / g > 1 ? handed : 0)
          << "g=" << g << " tasks=" << tasks;
      EXPECT_EQ(r.report.peak_rss_bytes.size(), static_cast<std::size_t>(size));
      for (const auto& m : r.report.mapping) {
        EXPECT_GE(m.group, 0);
        EXPECT_EQ(m.cost.steps, 12 + 5 * (m.task % 5));
        EXPECT_EQ(m.cost.adjoint_steps, m.cost.steps);
        EXPECT_GT(m.cost.forward_steps, m.cost.steps) << "a 4-slot budget recomputes";
      }
    }
  }
}

TEST_P(EnsembleMap, TaylorRemainderIsSecondOrder) {
  const int g = group_sizes().back();
  const std::int64_t tasks = 5;
  const MapRun base = run_map(g, GetParam(), tasks, tasks_config(3, 0, "taylor"));
  const double j0 = misfit(base.y.values);
  // <dJ/dm, dm> over the group's blocks (every group holds the same sum).
  EnsembleConfig ec;
  ec.group_size = g;
  Ensemble probe(MPI_COMM_WORLD, ec);
  SourceTask t(0, probe.group_comm(), 0.0);
  const std::vector<double> dir = t.model().parameter_direction();
  double local = 0, dj = 0;
  for (std::size_t j = 0; j < dir.size(); ++j) local += base.gradient[j] * dir[j];
  MPI_Allreduce(&local, &dj, 1, MPI_DOUBLE, MPI_SUM, probe.group_comm());
  std::vector<double> remainders;
  for (double h = 1e-2; h > 1e-3; h /= 2) {
    std::vector<double> y;
    for (std::int64_t k = 0; k < tasks; ++k) {
      SourceTask s(k, probe.group_comm(), h);
      s.model().run_forward(s.steps());
      const auto yk = s.output();
      y.insert(y.end(), yk.begin(), yk.end());
    }
    remainders.push_back(std::abs(misfit(y) - j0 - h * dj));
  }
  for (std::size_t k = 1; k < remainders.size(); ++k) {
    EXPECT_NEAR(std::log2(remainders[k - 1] / remainders[k]), 2.0, 0.15);
  }
}

// Each group reverses exactly the tasks it ran forward: a runner that remembers both sets.
class WatchingRunner final : public ensemble::TaskRunner {
 public:
  explicit WatchingRunner(ensemble::TaskRunner& inner) : inner_(inner) {}
  std::vector<double> forward(std::int64_t k) override {
    forwarded.insert(k);
    return inner_.forward(k);
  }
  std::vector<std::int64_t> backward_order(std::vector<std::int64_t> tasks) override {
    return inner_.backward_order(std::move(tasks));
  }
  std::vector<double> backward(std::int64_t k, std::span<const double> ybar) override {
    reversed.insert(k);
    return inner_.backward(k, ybar);
  }
  ensemble::TaskCost cost(std::int64_t k) const override { return inner_.cost(k); }
  void discard() noexcept override { inner_.discard(); }
  std::set<std::int64_t> forwarded, reversed;

 private:
  ensemble::TaskRunner& inner_;
};

TEST_P(EnsembleMap, BackwardRunsEachTaskOnTheGroupThatRanItsForward) {
  const int g = group_sizes().front();
  EnsembleConfig ec;
  ec.group_size = g;
  ec.assign = GetParam();
  Ensemble ens(MPI_COMM_WORLD, ec);
  StepperTasks inner(ens.group_comm(), factory(), tasks_config(4, 0, "pinned"));
  WatchingRunner runner(inner);
  const std::int64_t tasks = 9;
  const auto y = ens.forward(tasks, runner);
  std::set<std::int64_t> mapped;
  for (const auto& m : ens.mapping()) {
    if (m.group == ens.group()) mapped.insert(m.task);
  }
  EXPECT_EQ(mapped, runner.forwarded);
  const std::vector<double> ybar = misfit_gradient(y.values);
  ens.backward(ybar, runner);
  EXPECT_EQ(runner.reversed, runner.forwarded);
  // Every task ran somewhere, once.
  std::int64_t all = 0;
  const std::int64_t leader_share =
      world_rank() % g == 0 ? static_cast<std::int64_t>(runner.forwarded.size()) : 0;
  MPI_Allreduce(&leader_share, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(all, tasks);
  if (GetParam() == Assign::Static) {
    for (const auto& m : ens.mapping()) EXPECT_EQ(m.group, m.task % ens.groups());
  }
  inner.stores().close();
}

// A group capacity of 6 RAM checkpoints and 10 on disk for five tapes of 4 RAM slots each:
// later tasks spill earlier tapes to disk and, once disk is full, cut them; the gradient is
// still bitwise the serial loop's.
TEST_P(EnsembleMap, BudgetsThatForceSpillsAndCutsKeepTheGradient) {
  const int g = group_sizes().front();
  StepperTasksConfig tc = tasks_config(4, 0, "budget");
  tc.stores.ram = 6;
  tc.stores.disk = 10;
  const std::int64_t tasks = 5 * (world_size() / g);  // five tapes a group
  const MapRun r = run_map(g, GetParam(), tasks, tc);
  EXPECT_TRUE(all_ranks(bitwise_equal(r.gradient, serial_gradient(g, tasks))));
  int spilled = 0, cut = 0;
  for (const auto& m : r.report.mapping) {
    spilled += m.cost.spilled ? 1 : 0;
    cut += m.cost.cut ? 1 : 0;
    if (m.cost.cut) {
      EXPECT_GE(m.cost.forward_steps, 2 * m.cost.steps) << "a cut tape's forward ran twice";
    }
  }
  EXPECT_GT(spilled, 0);
  EXPECT_GT(cut, 0);
}

// A group capacity equal to the per-task budget: a tape fits while it is recorded, but not once
// parked (the final state and the last step's data come on top), not even alone, and there is
// no disk: every tape is cut at once and recorded again before its reverse. The gradient is
// still the serial loop's (once an engine-level "recording 1 needs 5 RAM checkpoints" error).
TEST_P(EnsembleMap, GroupCapacityBelowAParkedTapeCutsItAndKeepsTheGradient) {
  const int g = group_sizes().front();
  StepperTasksConfig tc = tasks_config(3, 0, "tight");
  tc.stores.ram = 3;
  tc.stores.disk = 0;
  const std::int64_t tasks = 3 * (world_size() / g);
  const MapRun r = run_map(g, GetParam(), tasks, tc);
  EXPECT_TRUE(all_ranks(bitwise_equal(r.gradient, serial_gradient(g, tasks))));
  for (const auto& m : r.report.mapping) {
    EXPECT_TRUE(m.cost.cut) << "task " << m.task;
    EXPECT_GE(m.cost.forward_steps, 2 * m.cost.steps) << "task " << m.task;
  }
}

// No per-task budget (the default RecordingConfig): each task stores every step, none is run
// again, and the gradient is bitwise the serial loop's.
TEST_P(EnsembleMap, NoBudgetStoresEveryStep) {
  const int g = group_sizes().front();
  StepperTasksConfig tc = tasks_config(0, 0, "storeall");
  const std::int64_t tasks = 2 * (world_size() / g);
  const MapRun r = run_map(g, GetParam(), tasks, tc);
  EXPECT_TRUE(all_ranks(bitwise_equal(r.gradient, serial_gradient(g, tasks))));
  for (const auto& m : r.report.mapping) {
    EXPECT_EQ(m.cost.forward_steps, m.cost.steps) << "task " << m.task;
    EXPECT_FALSE(m.cost.cut) << "task " << m.task;
  }
}

// A task's stepper that counts the steps it was given as first-sweep steps
// (StepContext::recompute false): output and accumulators are done on those.
std::map<std::int64_t, std::int64_t>& first_sweep_steps() {
  static std::map<std::int64_t, std::int64_t> counts;
  return counts;
}
class CountingTask final : public ensemble::Task {
 public:
  CountingTask(std::int64_t k, MPI_Comm group)
      : inner_(k, group, 0.0), counting_(inner_.model(), k) {}
  engine::Stepper& stepper() override { return counting_; }
  schedule::Step steps() const override { return inner_.steps(); }
  std::vector<double> output() override { return inner_.output(); }
  std::vector<double> gradient() override { return inner_.gradient(); }

 private:
  class Counting final : public ForwardingStepper {
   public:
    Counting(TestStepper& inner, std::int64_t k) : ForwardingStepper(inner), k_(k) {}
    void forward(Step i, const StepContext& c) override {
      if (!c.recompute) ++first_sweep_steps()[k_];
      inner_.forward(i, c);
    }

   private:
    std::int64_t k_;
  };
  SourceTask inner_;
  Counting counting_;
};

// A cut tape's forward, run again before its reverse, reaches the task as recomputations: each
// task sees its steps once as first-sweep steps, however often they run (docs/runtime.md).
TEST_P(EnsembleMap, ACutTapeRunsAgainAsARecomputation) {
  const int g = group_sizes().front();
  StepperTasksConfig tc = tasks_config(3, 0, "recut");
  tc.stores.ram = 3;  // below a parked tape: every tape is cut and recorded again
  tc.stores.disk = 0;
  const std::int64_t tasks = 3 * (world_size() / g);
  first_sweep_steps().clear();
  EnsembleConfig ec;
  ec.group_size = g;
  ec.assign = GetParam();
  Ensemble ens(MPI_COMM_WORLD, ec);
  StepperTasks runner(
      ens.group_comm(),
      [](std::int64_t k, MPI_Comm group) { return std::make_unique<CountingTask>(k, group); }, tc);
  const ensemble::Outputs y = ens.forward(tasks, runner);
  const std::vector<double> ybar = misfit_gradient(y.values);
  ens.backward(ybar, runner);
  for (const auto& m : ens.report().mapping) {
    EXPECT_TRUE(m.cost.cut) << "task " << m.task;
    EXPECT_GE(m.cost.forward_steps, 2 * m.cost.steps) << "task " << m.task;
    if (m.group == ens.group()) {
      EXPECT_EQ(first_sweep_steps()[m.task], m.cost.steps) << "task " << m.task;
    }
  }
  runner.stores().close();
}

// Group stores with a lossless codec: the gradient keeps the serial loop's bits, and the report
// gathers what each rank's stores' codec did, in rank order (each rank's entry is what its own
// stores counted), with the totals and the JSON's "group_codecs"; without a codec it has none.
TEST_P(EnsembleMap, CompressedGroupStoresKeepTheBitsAndReportEachRanksCodec) {
  const int g = group_sizes().back();
  const std::int64_t tasks = 3 * (world_size() / g);
  for (const std::string codec : {"zstd", "none"}) {
    StepperTasksConfig tc = tasks_config(4, 0, "codec");
    tc.stores.store.codec.name = codec;
    EnsembleConfig ec;
    ec.group_size = g;
    ec.assign = GetParam();
    Ensemble ens(MPI_COMM_WORLD, ec);
    StepperTasks runner(ens.group_comm(), factory(), tc);
    const ensemble::Outputs y = ens.forward(tasks, runner);
    const std::vector<double> ybar = misfit_gradient(y.values);
    const std::vector<double> gradient = ens.backward(
        world_rank() == 0 ? std::span<const double>(ybar) : std::span<const double>(), runner);
    EXPECT_TRUE(all_ranks(bitwise_equal(gradient, serial_gradient(g, tasks)))) << codec;
    const ensemble::EnsembleReport report = ens.report();
    const engine::CodecStats mine = runner.stores().ram_codec_stats();
    if (codec == "none") {
      EXPECT_TRUE(report.codecs.empty());
      EXPECT_EQ(report.json().find("group_codecs"), std::string::npos);
      EXPECT_EQ(report.codec_totals().ram.codec, "none");
    } else {
      ASSERT_EQ(report.codecs.size(), static_cast<std::size_t>(world_size()));
      const engine::CodecStats& entry = report.codecs[static_cast<std::size_t>(world_rank())].ram;
      EXPECT_EQ(entry.codec, "zstd");
      EXPECT_EQ(entry.uncompressed_bytes, mine.uncompressed_bytes);
      EXPECT_EQ(entry.stored_bytes, mine.stored_bytes);
      long long sum = 0, mine_bytes = mine.uncompressed_bytes;
      MPI_Allreduce(&mine_bytes, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      // (A dynamic claim may leave a group without a task, so only the sum must be positive.)
      EXPECT_GT(sum, 0) << "a 4-slot budget stores checkpoints";
      EXPECT_EQ(report.codec_totals().ram.uncompressed_bytes, sum);
      EXPECT_NE(report.json().find("\"group_codecs\": {\"ram\": {\"codec\": \"zstd\""),
                std::string::npos)
          << report.json();
      EXPECT_NE(report.json().find("\"uncompressed_bytes_per_rank\": ["), std::string::npos);
      // A second pass with the same runner reports its own counts, not the running ones.
      const ensemble::Outputs y2 = ens.forward(tasks, runner);
      ens.backward(world_rank() == 0 ? std::span<const double>(ybar) : std::span<const double>(),
                   runner);
      const engine::CodecStats after = runner.stores().ram_codec_stats();
      const ensemble::EnsembleReport second_report = ens.report();  // a copy: keep it
      const engine::CodecStats& second =
          second_report.codecs[static_cast<std::size_t>(world_rank())].ram;
      EXPECT_EQ(second.uncompressed_bytes, after.uncompressed_bytes - mine.uncompressed_bytes);
      EXPECT_EQ(second.stored_bytes, after.stored_bytes - mine.stored_bytes);
      EXPECT_TRUE(all_ranks(bitwise_equal(y2.values, y.values)));
    }
    runner.stores().close();
  }
}

INSTANTIATE_TEST_SUITE_P(Assign, EnsembleMap, ::testing::Values(Assign::Dynamic, Assign::Static),
                         [](const auto& p) { return std::string(ensemble::to_string(p.param)); });

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// With every task's cost estimated, dynamic assignment claims the costliest first: each group's
// first task is one of the G costliest, the report says so, and the gradient keeps its bits.
// Estimates that differ between ranks are refused by name.
TEST(Ensemble, DynamicClaimsTheCostliestFirst) {
  const int g = group_sizes().front();
  const int groups = world_size() / g;
  const std::int64_t tasks = 10;
  StepperTasksConfig tc = tasks_config(3, 0, "costliest");
  tc.estimate = [](std::int64_t k) {
    return static_cast<double>(SourceTask(k, MPI_COMM_SELF, 0.0).steps());
  };
  const MapRun r = run_map(g, Assign::Dynamic, tasks, tc);
  EXPECT_TRUE(r.report.costliest_first);
  EXPECT_TRUE(all_ranks(bitwise_equal(r.gradient, serial_gradient(g, tasks))));
  std::vector<std::int64_t> order(tasks);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return tc.estimate(a) > tc.estimate(b); });
  // Claims come off one sequence, the costliest first: each group's tasks, in the order it ran
  // them, are in that sequence's order (a group that is quick may claim twice before a slow
  // one claims once, so the groups' first tasks need not be the G costliest).
  std::vector<std::int64_t> place(tasks);
  for (std::int64_t i = 0; i < tasks; ++i) place[order[i]] = i;
  std::map<int, std::map<int, std::int64_t>> ran;  // group -> position -> task
  for (const auto& m : r.report.mapping) ran[m.group][m.position] = m.task;
  EXPECT_LE(ran.size(), static_cast<std::size_t>(groups));
  for (const auto& [group, by_position] : ran) {
    std::int64_t last = -1;
    for (const auto& [position, task] : by_position) {
      EXPECT_GT(place[task], last) << "group " << group << " position " << position;
      last = place[task];
    }
  }
  EXPECT_TRUE(std::any_of(ran.begin(), ran.end(), [&](const auto& gr) {
    return gr.second.begin()->second == order[0];
  })) << "the costliest task is some group's first";
  StepperTasksConfig in_order = tc;
  in_order.estimate = nullptr;
  EXPECT_FALSE(run_map(g, Assign::Dynamic, tasks, in_order).report.costliest_first);
  if (world_size() > 1) {
    StepperTasksConfig differ = tc;
    const int rank = world_rank();
    differ.estimate = [rank](std::int64_t k) {
      return static_cast<double>(k + (rank == 0 ? 1 : 0));
    };
    EXPECT_TRUE(all_ranks(error_of([&] { run_map(g, Assign::Dynamic, tasks, differ); })
                              .find("TaskRunner::estimate (the tasks' cost estimates) differs "
                                    "between ranks") != std::string::npos));
  }
}

// Settings that differ between ranks are refused on every rank, naming the setting, before
// anything is split or claimed (they used to hang the forward or crash the backward).
TEST(Ensemble, SettingsThatDifferBetweenRanksAreRefusedByName) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const bool last = world_rank() == world_size() - 1;
  EnsembleConfig assign;
  assign.assign = world_rank() == 0 ? Assign::Static : Assign::Dynamic;
  EXPECT_TRUE(all_ranks(error_of([&] { Ensemble e(MPI_COMM_WORLD, assign); })
                            .find("EnsembleConfig::assign (PETSc: -rewind_ensemble_assign) "
                                  "differs between ranks") != std::string::npos));
  EnsembleConfig size;  // the last rank alone gives 1: every value divides the rank count
  size.group_size = last ? 1 : (world_size() % 2 == 0 ? 2 : world_size());
  EXPECT_TRUE(all_ranks(error_of([&] { Ensemble e(MPI_COMM_WORLD, size); })
                            .find("EnsembleConfig::group_size (PETSc: "
                                  "-rewind_ensemble_group_size) differs between ranks") !=
                        std::string::npos));
  EnsembleConfig odd;  // one rank's value does not even divide: still refused as differing
  odd.group_size = last ? world_size() + 1 : 1;
  EXPECT_TRUE(all_ranks(error_of([&] {
                          Ensemble e(MPI_COMM_WORLD, odd);
                        }).find("differs between ranks") != std::string::npos));
  // A task count that differs (it crashed the output gather with SIGSEGV), in each assignment.
  for (const Assign a : {Assign::Static, Assign::Dynamic}) {
    const std::int64_t tasks = last ? 5 : 4;
    EXPECT_TRUE(all_ranks(
        error_of([&] { run_map(1, a, tasks, tasks_config(3, 0, "count")); })
            .find("the task count (Ensemble::forward's tasks; PETSc: RewindEnsembleForward's "
                  "ntasks) differs between ranks") != std::string::npos))
        << ensemble::to_string(a);
  }
  EnsembleConfig wait;
  wait.failure_wait_seconds = last ? 5.0 : 30.0;
  EXPECT_TRUE(
      all_ranks(error_of([&] {
                  Ensemble e(MPI_COMM_WORLD, wait);
                }).find("EnsembleConfig::failure_wait_seconds differs") != std::string::npos));
}

TEST(Ensemble, BadInputIsAClearErrorOnEveryRank) {
  EnsembleConfig bad;
  bad.group_size = world_size() + 1;
  EXPECT_TRUE(all_ranks(error_of([&] {
                          Ensemble e(MPI_COMM_WORLD, bad);
                        }).find("must be >= 1 and divide the") != std::string::npos));
  bad.group_size = 0;
  EXPECT_TRUE(all_ranks(error_of([&] {
                          Ensemble e(MPI_COMM_WORLD, bad);
                        }).find("must be >= 1 and divide the") != std::string::npos));

  Ensemble ens(MPI_COMM_WORLD, EnsembleConfig{});
  StepperTasks runner(ens.group_comm(), factory(), tasks_config(4, 0, "bad"));
  const std::vector<double> none;
  EXPECT_TRUE(all_ranks(error_of([&] {
                          ens.backward(none, runner);
                        }).find("call forward() first") != std::string::npos));
  EXPECT_TRUE(all_ranks(error_of([&] {
                          ens.forward(-1, runner);
                        }).find("task count must be >= 0") != std::string::npos));
  const auto y = ens.forward(3, runner);
  EXPECT_TRUE(
      all_ranks(error_of([&] { ens.forward(3, runner); }).find("still held") != std::string::npos));
  const std::vector<double> short_ybar(y.values.size() - 1, 0.0);
  EXPECT_TRUE(all_ranks(error_of([&] {
                          ens.backward(short_ybar, runner);
                        }).find("got 8 cotangents on rank 0, but the forward's outputs have 9") !=
                        std::string::npos));
  ens.discard(runner);
  EXPECT_EQ(runner.stores().ram().stats().live, 0);
  EXPECT_EQ(runner.stores().claimed().ram, 0);
  ens.forward(2, runner);  // after discard() a new forward is fine
  ens.discard(runner);
  runner.stores().close();
}

// A task that fails on every rank of its group (a collective check: a NaN in a reduced norm, a
// diverging solve) is an error naming it on every rank of the communicator, in either sweep.
class FailingTask final : public ensemble::Task {
 public:
  FailingTask(std::int64_t k, MPI_Comm group, std::int64_t failing, bool in_forward)
      : inner_(k, group, 0.0), fail_(k == failing), in_forward_(in_forward) {}
  engine::Stepper& stepper() override { return inner_.stepper(); }
  schedule::Step steps() const override { return inner_.steps(); }
  std::vector<double> output() override {
    if (fail_ && in_forward_) throw Error(ErrorCode::InvalidArgument, "the solve diverged");
    return inner_.output();
  }
  std::vector<double> gradient() override {
    // Not an rwd::Error: the caller's own exception (ErrorCode::Client when agreed).
    if (fail_ && !in_forward_) throw std::runtime_error("NaN in the adjoint");
    return inner_.gradient();
  }

 private:
  SourceTask inner_;
  bool fail_, in_forward_;
};

TEST(Ensemble, FailedTaskIsAnErrorNamingItOnEveryRank) {
  for (bool in_forward : {true, false}) {
    EnsembleConfig ec;
    ec.group_size = group_sizes().back();
    Ensemble ens(MPI_COMM_WORLD, ec);
    StepperTasks runner(
        ens.group_comm(),
        [in_forward](std::int64_t k, MPI_Comm group) {
          return std::make_unique<FailingTask>(k, group, 3, in_forward);
        },
        tasks_config(3, 2, "failing"));
    std::string what;
    ErrorCode code = ErrorCode::Internal;
    try {
      const auto y = ens.forward(6, runner);
      const std::vector<double> ybar = misfit_gradient(y.values);
      ens.backward(ybar, runner);
    } catch (const Error& e) {
      what = e.what();
      code = e.code();
    }
    EXPECT_TRUE(all_ranks(what.find("task 3 failed in its") != std::string::npos)) << what;
    EXPECT_TRUE(all_ranks(code == (in_forward ? ErrorCode::InvalidArgument : ErrorCode::Client)))
        << what;
    // One group failed: no note counts the ranks of the world (its group mates hold the same
    // error, and are not other failures). The group's own note counts its ranks.
    if (world_size() > ec.group_size) {
      EXPECT_EQ(what.find(" of " + std::to_string(world_size()) + " ranks failed"),
                std::string::npos)
          << what;
    }
    EXPECT_NE(what.find(in_forward ? "the solve diverged" : "NaN in the adjoint"),
              std::string::npos);
    EXPECT_EQ(runner.stores().ram().stats().live, 0) << "the failed map's tapes are freed";
    runner.stores().abandon();
    runner.stores().close();
    // After the failure the map can be used again.
    if (!in_forward) {
      EXPECT_TRUE(
          all_ranks(error_of([&] { ens.forward(2, runner); }).find("task 3") == std::string::npos));
      ens.discard(runner);
      runner.stores().close();
    }
  }
}

}  // namespace
}  // namespace rwd::testing
