#include "rewind/ensemble/ensemble.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "agreement.hpp"
#include "cotangents.hpp"
#include "durable.hpp"
#include "groups.hpp"
#include "report.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/ensemble/reproducible_sum.hpp"
#include "rewind/error.hpp"
#include "task_queue.hpp"

namespace rwd::ensemble {

using comm::mpi_check;

const char* to_string(Assign assign) noexcept {
  return assign == Assign::Dynamic ? "dynamic" : "static";
}

std::vector<std::int64_t> TaskRunner::backward_order(std::vector<std::int64_t> tasks) {
  std::reverse(tasks.begin(), tasks.end());
  return tasks;
}

namespace {

// What a task throws that is not an rwd::Error is the caller's failure, not rewind's.
template <class Fn>
std::optional<Error> capture_task(Fn&& fn) {
  return comm::capture(std::forward<Fn>(fn), ErrorCode::Client);
}

// What a group knows of one of its tasks, sent to every rank after a pass.
struct Entry {
  std::int64_t task = -1;
  std::int64_t position = -1;
  double begin = 0, end = 0;
  TaskCost cost;
};
constexpr int kEntryWords = 11;

void pack(const Entry& e, std::vector<double>& out) {
  const TaskCost& c = e.cost;
  for (double v :
       {static_cast<double>(e.task), static_cast<double>(e.position), e.begin, e.end,
        static_cast<double>(c.steps), static_cast<double>(c.forward_steps),
        static_cast<double>(c.adjoint_steps), static_cast<double>(c.ram_peak_bytes),
        static_cast<double>(c.disk_bytes_written), c.spilled ? 1.0 : 0.0, c.cut ? 1.0 : 0.0}) {
    out.push_back(v);
  }
}

Entry unpack(const double* w) {
  Entry e;
  e.task = static_cast<std::int64_t>(w[0]);
  e.position = static_cast<std::int64_t>(w[1]);
  e.begin = w[2];
  e.end = w[3];
  e.cost = {static_cast<std::int64_t>(w[4]),
            static_cast<std::int64_t>(w[5]),
            static_cast<std::int64_t>(w[6]),
            static_cast<std::int64_t>(w[7]),
            static_cast<std::int64_t>(w[8]),
            w[9] != 0.0,
            w[10] != 0.0};
  return e;
}

// Every rank's doubles, concatenated in rank order, on every rank of `comm`.
std::vector<double> allgather(MPI_Comm comm, const std::vector<double>& mine) {
  int size = 0;
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  mpi_check(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
  std::vector<double> all(static_cast<std::size_t>(displs.back() + counts.back()));
  mpi_check(MPI_Allgatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                           MPI_DOUBLE, comm),
            "MPI_Allgatherv");
  return all;
}

// The process's resident-memory peak (Linux VmHWM), started again at each forward pass
// ("5" to /proc/self/clear_refs resets only that peak); where /proc is not there, the peak since
// the process started.
void reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  if (clear) clear << "5";
}

std::int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // kB
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
}

// Every rank must give the same settings: ranks that disagree on the groups or the assignment
// would wait for each other in different collectives. Collective on `comm`; refused on every
// rank naming the first setting that differs, before anything is split or claimed.
const EnsembleConfig& agreed(MPI_Comm comm, const EnsembleConfig& c) {
  require(comm != MPI_COMM_NULL, "ensemble: the communicator is MPI_COMM_NULL");
  using comm::setting_hash;
  const comm::Setting settings[] = {
      {"EnsembleConfig::group_size (PETSc: -rewind_ensemble_group_size)",
       setting_hash(c.group_size)},
      {"EnsembleConfig::assign (PETSc: -rewind_ensemble_assign)", setting_hash(c.assign)},
      {"EnsembleConfig::claim_order (PETSc: -rewind_ensemble_claim)", setting_hash(c.claim_order)},
      {"EnsembleConfig::failure_wait_seconds", setting_hash(c.failure_wait_seconds)},
      {"EnsembleResumeConfig::enabled (PETSc: -rewind_ensemble_resume)",
       setting_hash(c.resume.enabled)},
      {"EnsembleResumeConfig::resume (PETSc: -rewind_ensemble_resume)",
       setting_hash(c.resume.resume)},
      {"EnsembleResumeConfig::directory (PETSc: -rewind_ensemble_dirname)",
       setting_hash(std::string_view(c.resume.directory))},
      {"EnsembleResumeConfig::label", setting_hash(std::string_view(c.resume.label))},
      {"EnsembleResumeConfig::identity", setting_hash(std::string_view(c.resume.identity))}};
  comm::agree_settings(comm, settings);
  return c;
}

}  // namespace

struct Ensemble::Impl {
  Impl(MPI_Comm comm, const EnsembleConfig& c)
      : groups(comm, agreed(comm, c).group_size), config(c) {
    require(c.failure_wait_seconds >= 0,
            "ensemble: EnsembleConfig::failure_wait_seconds must be >= 0");
    if (c.resume.enabled || c.resume.resume) {
      durable = std::make_unique<detail::DurableEnsemble>(groups, c.resume);
    }
  }

  detail::Groups groups;
  EnsembleConfig config;
  bool held = false;                // the tapes of a forward are held
  bool must_abort = false;          // a failure the group could not agree on (must_abort())
  long long gradient_length = 0;    // this rank's block of the last gradient
  std::vector<std::int64_t> mine;   // this group's tasks, in the order it ran them
  std::vector<TaskRecord> mapping;  // in task order
  Outputs outputs;
  EnsembleReport report;
  GroupCodecs codecs_at_forward;  // the runner's codec counts when the last forward began
  std::unique_ptr<detail::DurableEnsemble> durable;  // EnsembleConfig::resume
  const detail::Resumed* resumed = nullptr;          // what the last forward took over

  std::optional<Error> agree_task(const std::optional<Error>& local, std::int64_t task,
                                  const char* sweep, TaskRunner& runner) {
    std::optional<Error> named;
    if (local) {
      named.emplace(local->code(), "ensemble: task " + std::to_string(task) + " failed in its " +
                                       sweep + " on group " + std::to_string(groups.group_index()) +
                                       ": " + local->what());
    }
    try {
      return detail::agree_in_group(groups.group(), named, config.failure_wait_seconds);
    } catch (...) {
      // This rank's group mates did not come: it is alone with its error (must_abort()).
      must_abort = true;
      runner.discard();
      throw;
    }
  }

  // Collective on the world: every rank throws the lowest failing rank's error if any failed.
  void agree_world(const std::optional<Error>& failure, TaskRunner& runner) {
    try {
      // Every rank of a failed group holds its group's agreed failure: one brings it, so the
      // note counts groups, not ranks.
      comm::Verdict verdict;
      if (groups.group_rank() == 0) verdict.local = failure;
      verdict.unit = "group";
      verdict.total = groups.groups();
      comm::agree(groups.world(), verdict);
    } catch (const Error& e) {
      runner.discard();
      held = false;
      mine.clear();
      // A task that cannot reproduce its own first sweep (run again after a resume or a cut, or
      // recomputed from a tape taken over) is not the program that wrote the manifest: what the
      // manifest lists would mix two problems, so it goes (the next run starts afresh).
      const std::string what = e.what();
      if (durable &&
          (what.find("does not give the output its first sweep gave") != std::string::npos ||
           what.find("cannot be reproduced from its checkpoints") != std::string::npos)) {
        durable->forget();
        // Every rank waits for the files to go: a program that aborts on the error (MPI_Abort)
        // must not cut rank 0's removal short.
        MPI_Barrier(groups.world());
        throw Error(e.code(), what +
                                  "; the ensemble's manifest was removed (its files are not "
                                  "this program's): the next run starts afresh");
      }
      throw;
    } catch (...) {
      runner.discard();
      held = false;
      mine.clear();
      throw;
    }
  }

  // The leaders' entries of every group, gathered on every rank: (group, entry) pairs.
  std::vector<std::pair<int, Entry>> gather_entries(const std::vector<Entry>& local) {
    std::vector<double> words;
    if (groups.leader()) {
      for (const Entry& e : local) pack(e, words);
    }
    // Prefix each group's block with its group index: leaders send (group, n, entries...).
    std::vector<double> framed;
    if (groups.leader()) {
      framed.push_back(groups.group_index());
      framed.push_back(static_cast<double>(local.size()));
      framed.insert(framed.end(), words.begin(), words.end());
    }
    const std::vector<double> all = allgather(groups.world(), framed);
    std::vector<std::pair<int, Entry>> out;
    for (std::size_t at = 0; at < all.size();) {
      const int q = static_cast<int>(all[at]);
      const auto n = static_cast<std::size_t>(all[at + 1]);
      at += 2;
      for (std::size_t j = 0; j < n; ++j, at += kEntryWords) out.emplace_back(q, unpack(&all[at]));
    }
    return out;
  }

  void gather_outputs(std::int64_t tasks,
                      const std::vector<std::pair<std::int64_t, std::vector<double>>>& ys) {
    // Leaders send (task, length, values...) per task.
    std::vector<double> framed;
    if (groups.leader()) {
      for (const auto& [k, y] : ys) {
        framed.push_back(static_cast<double>(k));
        framed.push_back(static_cast<double>(y.size()));
        framed.insert(framed.end(), y.begin(), y.end());
      }
    }
    const std::vector<double> all = allgather(groups.world(), framed);
    std::vector<std::vector<double>> by_task(static_cast<std::size_t>(tasks));
    if (resumed) {
      for (const auto& [k, o] : resumed->outputs) by_task[static_cast<std::size_t>(k)] = o.values;
    }
    for (std::size_t at = 0; at < all.size();) {
      const auto k = static_cast<std::size_t>(all[at]);
      const auto n = static_cast<std::size_t>(all[at + 1]);
      by_task[k].assign(all.begin() + static_cast<std::ptrdiff_t>(at + 2),
                        all.begin() + static_cast<std::ptrdiff_t>(at + 2 + n));
      at += 2 + n;
    }
    outputs = {};
    outputs.offsets.push_back(0);
    for (const auto& y : by_task) {
      outputs.values.insert(outputs.values.end(), y.begin(), y.end());
      outputs.offsets.push_back(static_cast<std::int64_t>(outputs.values.size()));
    }
  }

  double slowest(double seconds) {
    double worst = 0;
    mpi_check(MPI_Allreduce(&seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, groups.world()),
              "MPI_Allreduce (pass time)");
    return worst;
  }

  void gather_peak_memory() {
    const std::int64_t mine_rss = peak_rss_bytes();
    report.peak_rss_bytes.assign(static_cast<std::size_t>(groups.world_size()), 0);
    mpi_check(MPI_Allgather(&mine_rss, 1, MPI_INT64_T, report.peak_rss_bytes.data(), 1, MPI_INT64_T,
                            groups.world()),
              "MPI_Allgather (peak memory)");
  }

  // Dynamic assignment's order of the tasks: the costliest first (stable: ties in task order)
  // where every task has an estimate, else task order; `by_cost` says which. The task count and the
  // runner's estimates must agree on every rank (ranks given another count would gather and scatter
  // different amounts, a crash): one agreement refuses either by name. Collective on the world.
  std::vector<std::int64_t> agreed_order(std::int64_t tasks, TaskRunner& runner,
                                         bool& by_cost_out) {
    const bool by_cost = config.assign == Assign::Dynamic &&
                         config.claim_order == ClaimOrder::CostliestFirst && tasks > 0;
    std::vector<double> estimates;
    bool known = by_cost;
    for (std::int64_t k = 0; by_cost && k < tasks; ++k) {
      estimates.push_back(runner.estimate(k));
      known = known && estimates.back() >= 0;
    }
    std::uint64_t h = comm::setting_hash(known);
    for (double e : estimates) h = comm::setting_hash(&e, sizeof e, h);
    const comm::Setting agreed[] = {
        {"the task count (Ensemble::forward's tasks; PETSc: RewindEnsembleForward's ntasks)",
         comm::setting_hash(tasks)},
        {"TaskRunner::estimate (the tasks' cost estimates)", h},
        {"the resume identity (EnsembleResumeConfig::identity, Ensemble::set_resume_identity; "
         "PETSc: RewindEnsembleSetResumeIdentity)",
         comm::setting_hash(std::string_view(config.resume.identity))}};
    comm::agree_settings(groups.world(), agreed);
    std::vector<std::int64_t> order(static_cast<std::size_t>(std::max<std::int64_t>(tasks, 0)));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    by_cost_out = known;
    if (!known) return order;
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return estimates[static_cast<std::size_t>(a)] > estimates[static_cast<std::size_t>(b)];
    });
    return order;
  }

  // The tasks whose forward a killed run made durable that this group reverses (resume): held
  // as tapes that were cut, first in this group's order. Returns the group's agreed failure.
  std::optional<Error> adopt(TaskRunner& runner, std::vector<Entry>& local) {
    for (const auto& [k, q] : resumed->owner) {
      if (q != groups.group_index() || resumed->summed.contains(k)) continue;
      const auto tape = resumed->tapes.find(k);
      const std::span<const double> y = resumed->outputs.at(k).values;
      std::optional<Error> f = agree_task(
          capture_task([&] {
            runner.adopt(k, y, tape == resumed->tapes.end() ? std::string_view() : tape->second);
            // Listed again, in this run's files (the killed run's go at the end of the pass).
            durable->forward_done(k, resumed->outputs.at(k).steps, y,
                                  runner.make_durable(k, durable->tape_link()));
          }),
          k, "take-over (resume)", runner);
      if (f) return f;
      Entry e;
      e.task = k;
      e.position = static_cast<std::int64_t>(local.size());
      mine.push_back(k);
      local.push_back(e);
    }
    return std::nullopt;
  }

  Outputs forward(std::int64_t tasks, TaskRunner& runner) {
    require(!held,
            "ensemble: forward() while the tapes of the last forward() are still held; call "
            "backward() or discard() first");
    bool costliest_first = false;
    codecs_at_forward = runner.codecs();
    std::vector<std::int64_t> order = agreed_order(tasks, runner, costliest_first);
    require(tasks >= 0, "ensemble: the task count must be >= 0, got " + std::to_string(tasks));
    resumed = durable ? &durable->begin_forward(tasks) : nullptr;
    const std::int64_t resumed_generation = resumed ? resumed->generation : 0;
    if (resumed) {  // the forwards a killed run made durable are not run again
      std::erase_if(order, [&](std::int64_t k) { return resumed->outputs.contains(k); });
    }
    mpi_check(MPI_Barrier(groups.world()), "MPI_Barrier (forward start)");
    reset_peak_rss();
    const double t0 = MPI_Wtime();
    detail::TaskQueue queue(groups, config.assign, std::move(order));
    std::vector<Entry> local;
    std::vector<std::pair<std::int64_t, std::vector<double>>> ys;
    std::optional<Error> failure;
    mine.clear();
    if (durable) runner.on_tape_lost = [this](std::int64_t k) { durable->unlist_tape(k); };
    if (resumed) failure = adopt(runner, local);
    if (failure) queue.stop();
    while (!failure) {
      const std::int64_t k = queue.next();
      if (k < 0) break;
      Entry e;
      e.task = k;
      e.position = static_cast<std::int64_t>(local.size());
      e.begin = MPI_Wtime() - t0;
      std::vector<double> y;
      failure = agree_task(capture_task([&] {
                             y = runner.forward(k);
                             if (durable) {
                               durable->forward_done(k, runner.cost(k).steps, y,
                                                     runner.make_durable(k, durable->tape_link()));
                             }
                           }),
                           k, "forward sweep", runner);
      if (failure) {
        queue.stop();
        break;
      }
      e.end = MPI_Wtime() - t0;
      mine.push_back(k);
      local.push_back(e);
      ys.emplace_back(k, std::move(y));
    }
    queue.close();
    held = true;
    agree_world(failure, runner);
    if (durable) durable->taken_over();

    const auto entries = gather_entries(local);
    mapping.assign(static_cast<std::size_t>(tasks), TaskRecord{});
    for (const auto& [q, e] : entries) {
      TaskRecord& r = mapping[static_cast<std::size_t>(e.task)];
      r.task = e.task;
      r.group = q;
      r.position = static_cast<int>(e.position);
      r.forward_begin = e.begin;
      r.forward_end = e.end;
    }
    if (resumed_generation > 0) {
      for (const auto& [k, q] : resumed->owner) {
        TaskRecord& r = mapping[static_cast<std::size_t>(k)];
        r.forward_resumed = true;
        r.tape_resumed = resumed->with_tape.contains(k);
        r.backward_resumed = resumed->summed.contains(k);
        if (r.backward_resumed) {  // reversed by no group of this run
          r.task = k;
          r.group = q;
        }
      }
    }
    gather_outputs(tasks, ys);
    report = {};
    report.tasks = tasks;
    report.groups = groups.groups();
    report.group_size = groups.group_size();
    report.assign = config.assign;
    report.costliest_first = costliest_first;
    report.resumed_generation = resumed_generation;
    report.forward_seconds = slowest(MPI_Wtime() - t0);
    return outputs;
  }

  // The sum over the groups of each group's sum of its tasks' gradients (each rank its block),
  // reproducible; groups without a task learn the gradient's length from the others. Sets the
  // length the reduction bytes are counted from. Collective.
  std::vector<double> reduce_gradient(std::optional<ReproducibleSum>& sum) {
    long long length = sum ? static_cast<long long>(sum->length()) : -1, longest = 0, shortest = 0;
    mpi_check(MPI_Allreduce(&length, &longest, 1, MPI_LONG_LONG, MPI_MAX, groups.cross()),
              "MPI_Allreduce (gradient length)");
    if (length < 0) length = std::max(longest, 0LL);
    mpi_check(MPI_Allreduce(&length, &shortest, 1, MPI_LONG_LONG, MPI_MIN, groups.cross()),
              "MPI_Allreduce (gradient length)");
    require(shortest == longest || longest < 0,
            "ensemble: the tasks' gradient blocks differ in length between groups on the same "
            "rank within the group (" +
                std::to_string(shortest) + " and " + std::to_string(longest) + " values)");
    if (!sum) sum.emplace(static_cast<std::size_t>(length));
    sum->allreduce(groups.cross());
    gradient_length = length;
    return sum->result();
  }

  std::vector<double> backward(std::span<const double> ybar, TaskRunner& runner, int root) {
    require(held, "ensemble: backward() needs the tapes of a forward(); call forward() first");
    require(root >= 0 && root < groups.world_size(),
            "ensemble: backward() root " + std::to_string(root) + " is not a rank of the " +
                std::to_string(groups.world_size()) + " ranks");
    const auto total = static_cast<std::int64_t>(outputs.values.size());
    std::int64_t given = static_cast<std::int64_t>(ybar.size());
    mpi_check(MPI_Bcast(&given, 1, MPI_INT64_T, root, groups.world()), "MPI_Bcast (ybar length)");
    require(given == total, "ensemble: backward() got " + std::to_string(given) +
                                " cotangents on rank " + std::to_string(root) +
                                ", but the forward's outputs have " + std::to_string(total) +
                                " values; ybar must have the layout of forward()'s values");
    if (durable) durable->begin_backward(ybar, root);
    mpi_check(MPI_Barrier(groups.world()), "MPI_Barrier (backward start)");
    const double t0 = MPI_Wtime();

    const detail::GroupCotangents received =
        detail::scatter_cotangents(ybar, outputs, mapping, groups, root);
    const int G = groups.groups();

    std::optional<ReproducibleSum> sum;
    if (resumed && resumed->partial) sum = resumed->partial;  // what the killed run summed
    std::optional<Error> failure;
    std::vector<Entry> local;
    for (std::int64_t k : runner.backward_order(mine)) {
      Entry e;
      e.task = k;
      e.begin = MPI_Wtime() - t0;
      const auto [off, len] = received.where[static_cast<std::size_t>(k)];
      const std::span<const double> yk(received.values.data() + off, static_cast<std::size_t>(len));
      std::vector<double> g;
      failure = agree_task(capture_task([&] {
                             if (durable) durable->unlist_tape(k);  // its room is reused now
                             g = runner.backward(k, yk);
                             if (!sum) sum.emplace(g.size());
                             require(g.size() == sum->length(),
                                     "its gradient block has " + std::to_string(g.size()) +
                                         " values, the group's first task's had " +
                                         std::to_string(sum->length()));
                             sum->add(g);
                             if (durable) durable->summed(k, *sum);
                           }),
                           k, "reverse sweep", runner);
      if (failure) break;
      e.end = MPI_Wtime() - t0;
      e.cost = runner.cost(k);
      local.push_back(e);
    }
    agree_world(failure, runner);
    held = false;

    std::vector<double> gradient = reduce_gradient(sum);
    if (durable) durable->finish();

    for (const auto& [grp, e] : gather_entries(local)) {
      TaskRecord& r = mapping[static_cast<std::size_t>(e.task)];
      r.backward_begin = e.begin;
      r.backward_end = e.end;
      r.cost = e.cost;
    }
    report.mapping = mapping;
    report.backward_seconds = slowest(MPI_Wtime() - t0);
    report.backward_cotangent_bytes = received.bytes;
    // Each rank hands its accumulator (4 words an entry of its block) to the reduction over the
    // G groups; the blocks differ in length between a group's ranks, so sum over every rank.
    long long handed = G > 1 ? gradient_length * 32 : 0, all_handed = 0;
    mpi_check(MPI_Allreduce(&handed, &all_handed, 1, MPI_LONG_LONG, MPI_SUM, groups.world()),
              "MPI_Allreduce (reduction bytes)");
    report.backward_reduction_bytes = all_handed;
    gather_peak_memory();
    report.codecs = gather_codecs(codecs_since(runner.codecs(), codecs_at_forward), groups.world());
    mine.clear();
    return gradient;
  }
};

Ensemble::Ensemble(MPI_Comm comm, const EnsembleConfig& config)
    : impl_(std::make_unique<Impl>(comm, config)) {}
Ensemble::~Ensemble() = default;

int Ensemble::groups() const {
  return impl_->groups.groups();
}
int Ensemble::group() const {
  return impl_->groups.group_index();
}
MPI_Comm Ensemble::group_comm() const {
  return impl_->groups.group();
}

Outputs Ensemble::forward(std::int64_t tasks, TaskRunner& runner) {
  return impl_->forward(tasks, runner);
}

std::vector<double> Ensemble::backward(std::span<const double> ybar, TaskRunner& runner, int root) {
  return impl_->backward(ybar, runner, root);
}

void Ensemble::discard(TaskRunner& runner) {
  Impl& s = *impl_;
  runner.discard();
  s.held = false;
  s.mine.clear();
  if (s.durable) s.durable->finish();
  mpi_check(MPI_Barrier(s.groups.world()), "MPI_Barrier (discard)");
}

double TaskRunner::estimate(std::int64_t) const {
  return -1.0;
}

std::string TaskRunner::make_durable(std::int64_t, const std::string&) {
  return {};
}

void TaskRunner::adopt(std::int64_t task, std::span<const double>, std::string_view) {
  throw Error(ErrorCode::InvalidArgument,
              "ensemble: this front end cannot take over task " + std::to_string(task) +
                  ", whose forward ran in a killed run (TaskRunner::adopt); it cannot resume");
}

void Ensemble::set_resume_identity(std::string identity) {
  impl_->config.resume.identity = identity;
  if (impl_->durable) impl_->durable->set_identity(std::move(identity));
}

bool Ensemble::must_abort() const {
  return impl_->must_abort;
}

const std::vector<TaskRecord>& Ensemble::mapping() const {
  return impl_->mapping;
}

EnsembleReport Ensemble::report() const {
  EnsembleReport r = impl_->report;
  if (r.mapping.empty()) r.mapping = impl_->mapping;
  return r;
}

}  // namespace rwd::ensemble
