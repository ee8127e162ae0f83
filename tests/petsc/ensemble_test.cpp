// The PETSc ensemble (include/rewind/petsc/ensemble.h): K decay tasks with different rates and
// lengths, all starting from the shared initial state m, each a TS with the rewind trajectory
// on its group; y_k = w . x_k(T); Phi = log(sum_k (y_k - d_k)^2) couples the tasks; dPhi/dm =
// sum_k lambda_k(0). Compared bit for bit with a serial loop over the tasks on the first group
// with PETSc's store-all `memory` trajectory, summed the same reproducible way; each task's
// record (RewindEnsembleGetTaskRecord) and the passes' statistics (RewindEnsembleGetStats)
// checked against what the tasks are, what their trajectories counted and the JSON report. Run
// with any -rewind_ensemble_* and -ts_trajectory_* options.
#include <petscts.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "all_ranks.hpp"
#include "decay_problem.hpp"
#include "rewind/ensemble/reproducible_sum.hpp"
#include "rewind/petsc/ensemble.h"
#include "rewind/petsc/trajectory.h"

namespace {

using rwd::testing::DecayProblem;

constexpr PetscInt kSize = 23;
constexpr PetscInt kTasks = 7;

// Task k's step count.
PetscInt steps_of(PetscInt k) {
  return 20 + 5 * (k % 3);
}

struct Context {
  std::vector<DecayProblem> problems = std::vector<DecayProblem>(kTasks);
  std::vector<Vec> weights = std::vector<Vec>(kTasks, nullptr);
  bool use_memory = false;  // the serial reference: PETSc's store-all trajectory
  // What each task's rewind trajectory counted on this rank, read after its adjoint solve.
  std::vector<TSTrajectoryRewindStats> counted = std::vector<TSTrajectoryRewindStats>(kTasks);
};

PetscErrorCode create(PetscInt k, MPI_Comm group, void* ctx, TS* ts) {
  Context& c = *static_cast<Context*>(ctx);
  DecayProblem& p = c.problems[static_cast<std::size_t>(k)];
  PetscFunctionBegin;
  PetscInt fail = -1;  // -fail_task k: the callback's own error must reach the caller
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-fail_task", &fail, NULL));
  PetscCheck(k != fail, group, PETSC_ERR_FILE_OPEN, "task %" PetscInt_FMT "'s mesh file is missing",
             k);
  PetscCall(rwd::testing::create_decay_problem(group, kSize, steps_of(k), 1.0 + 0.1 * k, p));
  PetscCall(TSSetFromOptions(p.ts));
  if (c.use_memory) {
    TSTrajectory tj;
    PetscCall(TSGetTrajectory(p.ts, &tj));
    PetscCall(TSTrajectorySetType(tj, p.ts, TSTRAJECTORYMEMORY));
  }
  PetscInt lo, hi;
  PetscCall(VecGetOwnershipRange(p.x, &lo, &hi));
  for (PetscInt i = lo; i < hi; ++i) PetscCall(VecSetValue(p.x, i, 1.0 + 0.1 * i, INSERT_VALUES));
  PetscCall(VecAssemblyBegin(p.x));
  PetscCall(VecAssemblyEnd(p.x));
  PetscCall(TSSetTimeStep(p.ts, 0.01));
  PetscCall(TSSetSolution(p.ts, p.x));
  Vec& w = c.weights[static_cast<std::size_t>(k)];
  PetscCall(VecDuplicate(p.x, &w));
  for (PetscInt i = lo; i < hi; ++i)
    PetscCall(VecSetValue(w, i, std::cos(0.7 * i + k), INSERT_VALUES));
  PetscCall(VecAssemblyBegin(w));
  PetscCall(VecAssemblyEnd(w));
  *ts = p.ts;
  PetscFunctionReturn(0);
}

PetscErrorCode output(PetscInt k, TS ts, void* ctx, PetscScalar y[]) {
  Context& c = *static_cast<Context*>(ctx);
  Vec x;
  PetscFunctionBegin;
  PetscCall(TSGetSolution(ts, &x));
  PetscCall(VecDot(x, c.weights[static_cast<std::size_t>(k)], &y[0]));
  PetscFunctionReturn(0);
}

PetscErrorCode seed(PetscInt k, TS ts, void* ctx, const PetscScalar ybar[]) {
  Context& c = *static_cast<Context*>(ctx);
  DecayProblem& p = c.problems[static_cast<std::size_t>(k)];
  PetscFunctionBegin;
  PetscCall(VecCopy(c.weights[static_cast<std::size_t>(k)], p.lambda));
  PetscCall(VecScale(p.lambda, ybar[0]));
  PetscCall(TSSetCostGradients(ts, 1, &p.lambda, NULL));
  PetscFunctionReturn(0);
}

PetscErrorCode gradient(PetscInt k, TS ts, void* ctx, PetscScalar g[]) {
  Context& c = *static_cast<Context*>(ctx);
  const PetscScalar* l;
  PetscInt n;
  PetscFunctionBegin;
  const Vec lambda = c.problems[static_cast<std::size_t>(k)].lambda;
  PetscCall(VecGetLocalSize(lambda, &n));
  PetscCall(VecGetArrayRead(lambda, &l));
  for (PetscInt i = 0; i < n; ++i) g[i] = l[i];
  PetscCall(VecRestoreArrayRead(lambda, &l));
  if (!c.use_memory) {
    TSTrajectory tj;
    PetscCall(TSGetTrajectory(ts, &tj));
    PetscCall(TSTrajectoryRewindGetStats(tj, &c.counted[static_cast<std::size_t>(k)]));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode destroy(PetscInt k, TS, void* ctx) {
  Context& c = *static_cast<Context*>(ctx);
  DecayProblem& p = c.problems[static_cast<std::size_t>(k)];
  PetscFunctionBegin;
  p.ts = nullptr;  // the ensemble destroys the TS
  PetscCall(MatDestroy(&p.A));
  PetscCall(VecDestroy(&p.x));
  PetscCall(VecDestroy(&p.lambda));
  PetscCall(VecDestroy(&c.weights[static_cast<std::size_t>(k)]));
  PetscFunctionReturn(0);
}

std::vector<PetscScalar> misfit_gradient(const std::vector<PetscScalar>& y) {
  double s = 0;
  for (std::size_t k = 0; k < y.size(); ++k) s += std::pow(y[k] - 0.3 * std::sin(1.0 * k), 2);
  std::vector<PetscScalar> g(y.size());
  for (std::size_t k = 0; k < y.size(); ++k) g[k] = 2 * (y[k] - 0.3 * std::sin(1.0 * k)) / s;
  return g;
}

// The serial reference on `group`: every task with the store-all trajectory, one after the
// other, the contributions summed as the ensemble sums them.
PetscErrorCode serial(MPI_Comm group, std::vector<PetscScalar>& g) {
  Context c;
  c.use_memory = true;
  std::vector<PetscScalar> y(kTasks);
  PetscFunctionBegin;
  for (PetscInt k = 0; k < kTasks; ++k) {
    TS ts;
    PetscCall(create(k, group, &c, &ts));
    PetscCall(TSSolve(ts, nullptr));
    PetscCall(output(k, ts, &c, &y[static_cast<std::size_t>(k)]));
    PetscCall(TSDestroy(&ts));
    PetscCall(destroy(k, ts, &c));
  }
  const std::vector<PetscScalar> ybar = misfit_gradient(y);
  std::unique_ptr<rwd::ensemble::ReproducibleSum> sum;
  for (PetscInt k = 0; k < kTasks; ++k) {
    TS ts;
    PetscCall(create(k, group, &c, &ts));
    PetscCall(TSSolve(ts, nullptr));
    PetscCall(seed(k, ts, &c, &ybar[static_cast<std::size_t>(k)]));
    PetscCall(TSAdjointSolve(ts));
    PetscInt n;
    PetscCall(VecGetLocalSize(c.problems[static_cast<std::size_t>(k)].lambda, &n));
    std::vector<PetscScalar> gk(static_cast<std::size_t>(n));
    PetscCall(gradient(k, ts, &c, gk.data()));
    if (!sum) sum = std::make_unique<rwd::ensemble::ReproducibleSum>(gk.size());
    sum->add(gk);
    PetscCall(TSDestroy(&ts));
    PetscCall(destroy(k, ts, &c));
  }
  g = sum->result();
  PetscFunctionReturn(0);
}

// True on every rank when every rank passed `v` with the same bits.
bool same_everywhere(const std::vector<double>& v) {
  std::vector<double> lo(v.size()), hi(v.size());
  const int n = static_cast<int>(v.size());
  MPI_Allreduce(v.data(), lo.data(), n, MPI_DOUBLE, MPI_MIN, PETSC_COMM_WORLD);
  MPI_Allreduce(v.data(), hi.data(), n, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
  int same = std::memcmp(lo.data(), v.data(), v.size() * sizeof(double)) == 0 &&
             std::memcmp(hi.data(), v.data(), v.size() * sizeof(double)) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, PETSC_COMM_WORLD);
  return same == 1;
}

// Every task's record, and whether every call succeeded.
bool records(RewindEnsemble ens, std::vector<RewindEnsembleTaskRecord>& out) {
  out.assign(kTasks, RewindEnsembleTaskRecord{});
  bool ok = true;
  for (PetscInt k = 0; k < kTasks; ++k) {
    ok = ok && RewindEnsembleGetTaskRecord(ens, k, &out[static_cast<std::size_t>(k)]) == 0;
  }
  return ok;
}

std::vector<double> flatten(const std::vector<RewindEnsembleTaskRecord>& rs) {
  std::vector<double> v;
  for (const auto& r : rs) {
    v.insert(v.end(), {(double)r.group, (double)r.position, r.forward_begin, r.forward_end,
                       (double)r.reversed, r.backward_begin, r.backward_end, (double)r.steps,
                       (double)r.forward_steps, (double)r.recomputed, (double)r.adjoint_steps,
                       r.ram_peak_bytes, r.disk_bytes_written, (double)r.spilled, (double)r.cut});
  }
  return v;
}

// Each group's tasks, in the order of `key`.
template <typename Key>
std::vector<std::vector<PetscInt>> by_group(const std::vector<RewindEnsembleTaskRecord>& rs,
                                            PetscInt groups, Key key) {
  std::vector<std::vector<PetscInt>> out(static_cast<std::size_t>(groups));
  for (PetscInt k = 0; k < kTasks; ++k) {
    const PetscInt q = rs[static_cast<std::size_t>(k)].group;
    if (q >= 0 && q < groups) out[static_cast<std::size_t>(q)].push_back(k);
  }
  for (auto& ks : out) {
    std::sort(ks.begin(), ks.end(), [&](PetscInt a, PetscInt b) {
      return key(rs[static_cast<std::size_t>(a)]) < key(rs[static_cast<std::size_t>(b)]);
    });
  }
  return out;
}

bool option_is(const char* name, const char* value) {
  char buf[32] = "";
  PetscBool set = PETSC_FALSE;
  if (PetscOptionsGetString(NULL, NULL, name, buf, sizeof buf, &set)) return false;
  return set && std::strcmp(buf, value) == 0;
}

// After the forward pass: where each task ran. Each group ran its tasks one after the other in
// the order of their positions 0, 1, ...; static assignment puts task k on group k mod G.
bool check_forward(RewindEnsemble ens, PetscInt groups, PetscInt group_size) {
  std::vector<RewindEnsembleTaskRecord> rs;
  bool ok = records(ens, rs) && same_everywhere(flatten(rs));
  const bool by_rule = option_is("-rewind_ensemble_assign", "static");
  for (PetscInt k = 0; k < kTasks; ++k) {
    const auto& r = rs[static_cast<std::size_t>(k)];
    ok = ok && r.group >= 0 && r.group < groups && !r.reversed && r.steps == 0 &&
         r.forward_begin >= 0 && r.forward_begin <= r.forward_end;
    if (by_rule) ok = ok && r.group == k % groups && r.position == k / groups;
  }
  for (const auto& ks : by_group(rs, groups, [](const auto& r) { return r.position; })) {
    for (std::size_t i = 0; i < ks.size(); ++i) {
      const auto& r = rs[static_cast<std::size_t>(ks[i])];
      ok = ok && r.position == static_cast<PetscInt>(i);
      if (i > 0) ok = ok && rs[static_cast<std::size_t>(ks[i - 1])].forward_end <= r.forward_begin;
    }
  }
  RewindEnsembleStats st;
  ok = ok && RewindEnsembleGetStats(ens, &st) == 0 && st.tasks == kTasks && st.groups == groups &&
       st.group_size == group_size && !st.reversed && st.backward_seconds == 0;
  for (const auto& r : rs) ok = ok && st.forward_seconds >= r.forward_end;
  // Asking for a task the pass did not have is an error.
  RewindEnsembleTaskRecord r;
  ok = ok && RewindEnsembleGetTaskRecord(ens, -1, &r) != 0 &&
       RewindEnsembleGetTaskRecord(ens, kTasks, &r) != 0;
  return ok;
}

// Task k's entry of the JSON report, written from its record as report.cpp writes it.
std::string json_entry(PetscInt k, const RewindEnsembleTaskRecord& r) {
  std::ostringstream os;
  os.precision(9);
  os << "{\"task\": " << k << ", \"group\": " << r.group << ", \"position\": " << r.position
     << ", \"forward\": [" << r.forward_begin << ", " << r.forward_end << "], \"backward\": ["
     << r.backward_begin << ", " << r.backward_end << "], \"steps\": " << r.steps
     << ", \"forward_steps\": " << r.forward_steps << ", \"adjoint_steps\": " << r.adjoint_steps
     << ", \"ram_peak_bytes\": " << (long long)r.ram_peak_bytes
     << ", \"disk_bytes_written\": " << (long long)r.disk_bytes_written
     << ", \"spilled\": " << (r.spilled ? "true" : "false")
     << ", \"cut\": " << (r.cut ? "true" : "false")
     << ", \"forward_resumed\": " << (r.forward_resumed ? "true" : "false")
     << ", \"backward_resumed\": " << (r.backward_resumed ? "true" : "false") << "}";
  return os.str();
}

// After the backward pass: what each task cost, against the task's definition, its own
// trajectory's statistics (on the group's rank 0, where the record is counted), the order the
// group reversed its tapes in, the passes' statistics and the JSON report.
bool check_backward(RewindEnsemble ens, const Context& c, PetscInt groups, PetscInt group_size,
                    MPI_Comm group_comm) {
  std::vector<RewindEnsembleTaskRecord> rs;
  bool ok = records(ens, rs) && same_everywhere(flatten(rs));
  PetscMPIInt group_rank = 0;
  MPI_Comm_rank(group_comm, &group_rank);
  PetscInt group = 0;
  RewindEnsembleGetGroup(ens, &group, NULL, NULL);
  PetscInt budget = -1;
  PetscOptionsGetInt(NULL, NULL, "-ts_trajectory_max_cps_ram", &budget, NULL);
  const char* json = nullptr;
  ok = ok && RewindEnsembleGetReport(ens, &json) == 0;
  PetscInt spilled = 0, cut = 0;
  for (PetscInt k = 0; k < kTasks; ++k) {
    const auto& r = rs[static_cast<std::size_t>(k)];
    ok = ok && r.reversed && r.steps == steps_of(k) && r.adjoint_steps == r.steps &&
         r.recomputed == r.forward_steps - r.steps && r.recomputed >= (r.cut ? r.steps : 0) &&
         r.ram_peak_bytes > 0 && r.backward_begin <= r.backward_end;
    if (budget >= 1 && budget < r.steps) ok = ok && r.recomputed > 0;
    if (r.group == group && group_rank == 0) {
      const TSTrajectoryRewindStats& t = c.counted[static_cast<std::size_t>(k)];
      // Every forward step once: the trajectory's, and the first sweep of a TS that was cut.
      ok = ok && r.steps == t.steps && r.adjoint_steps == t.adjoint_steps &&
           r.ram_peak_bytes == t.ram_peak_bytes &&
           r.forward_steps == t.forward_steps + (r.cut ? r.steps : 0);
    }
    ok = ok && json && std::strstr(json, json_entry(k, r).c_str()) != nullptr;
    spilled += r.spilled ? 1 : 0;
    cut += r.cut ? 1 : 0;
  }
  // A group reverses one task at a time; the tapes kept in RAM newest first.
  for (const auto& ks : by_group(rs, groups, [](const auto& r) { return r.backward_begin; })) {
    PetscInt last_in_ram = kTasks;
    for (std::size_t i = 0; i < ks.size(); ++i) {
      const auto& r = rs[static_cast<std::size_t>(ks[i])];
      if (i > 0)
        ok = ok && rs[static_cast<std::size_t>(ks[i - 1])].backward_end <= r.backward_begin;
      if (r.spilled || r.cut) continue;
      ok = ok && r.position < last_in_ram;
      last_in_ram = r.position;
    }
  }
  // Cotangents: each group's tasks' values sent to its leader (but the root's) and broadcast
  // to the g - 1 others; the reduction: 32 bytes a value of every rank's block, with G > 1.
  long long off_root = 0;
  for (const auto& r : rs) off_root += r.group != 0 ? 1 : 0;
  const double cotangents = 8.0 * (double)(off_root + (group_size - 1) * kTasks);
  const double reduction = groups > 1 ? 32.0 * (double)(groups * kSize) : 0.0;
  RewindEnsembleStats st;
  ok = ok && RewindEnsembleGetStats(ens, &st) == 0 && st.reversed && st.tasks == kTasks &&
       st.spilled == spilled && st.cut == cut && st.cotangent_bytes == cotangents &&
       st.reduction_bytes == reduction && st.peak_rss_bytes > 0;
  for (const auto& r : rs) ok = ok && st.backward_seconds >= r.backward_end;
  // The group stores' codec counts, summed over the ranks: there with -rewind_ensemble_compress
  // (and in the JSON report), zero and absent without.
  char codec[32] = "none";
  PetscOptionsGetString(nullptr, nullptr, "-rewind_ensemble_compress", codec, sizeof codec,
                        nullptr);
  const bool compressing = std::string(codec) != "none";
  ok = ok && json && (std::strstr(json, "\"group_codecs\"") != nullptr) == compressing &&
       (st.ram_uncompressed_bytes > 0) == compressing && (st.ram_stored_bytes > 0) == compressing &&
       (st.codec_seconds > 0) == compressing;
  PetscPrintf(PETSC_COMM_WORLD,
              "records: %lld tasks, %lld spilled, %lld cut, %g cotangent bytes, %g reduction "
              "bytes; %s\n",
              (long long)st.tasks, (long long)st.spilled, (long long)st.cut,
              (double)st.cotangent_bytes, (double)st.reduction_bytes,
              ok ? "consistent" : "INCONSISTENT");
  return ok;
}

// The message of the error `e` was raised with, by PetscErrorMessage (which gives it as a char*
// in PETSc 3.18 and as a const char* in later releases).
template <class Code, class Text>
const char* last_error_message(PetscErrorCode (*message)(Code, const char**, Text**),
                               PetscErrorCode e) {
  Text* specific = nullptr;
  return message(static_cast<Code>(e), nullptr, &specific) == 0 ? specific : nullptr;
}

// -fail_task k: task k's create fails on the ranks of the group that claimed it. Every rank
// must get an error from RewindEnsembleForward, none may hang, and each error names the task,
// the group and the task's own words (the failing ranks' traceback holds their own error
// first). Each rank's message is checked here rather than matched in PETSc's error output,
// which mpirun may cut short when the first rank to reach main aborts the job.
bool task_error_reached_every_rank(RewindEnsemble ens, PetscInt fail) {
  PetscErrorCode err = PetscPushErrorHandler(PetscReturnErrorHandler, NULL);
  std::vector<PetscScalar> y(kTasks);
  const PetscErrorCode got = RewindEnsembleForward(ens, kTasks, y.data());
  err = err ? err : PetscPopErrorHandler();
  const char* specific = got ? last_error_message(PetscErrorMessage, got) : nullptr;
  const std::string message = specific ? specific : "";
  const std::string named =
      "ensemble: task " + std::to_string(fail) + " failed in its forward sweep on group ";
  const std::string own =
      ": task " + std::to_string(fail) + "'s mesh file is missing (in ops_.create";
  const bool ok =
      err == 0 && got != 0 && message.rfind(named, 0) == 0 &&
      (message.compare(named.size(), 1, "0") == 0 || message.compare(named.size(), 1, "1") == 0) &&
      message.find(own) == named.size() + 1;
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  std::fprintf(stderr, "[%d] RewindEnsembleForward returned %d: %s\n", rank, (int)got,
               message.c_str());
  std::fflush(stderr);
  return rwd::testing::all_ranks(ok, PETSC_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  RewindEnsemble ens;
  PetscCall(RewindEnsembleCreate(PETSC_COMM_WORLD, &ens));
  PetscCall(RewindEnsembleSetFromOptions(ens));
  PetscInt group = 0, groups = 0;
  MPI_Comm group_comm;
  PetscCall(RewindEnsembleGetGroup(ens, &group, &groups, &group_comm));
  Context ctx;
  const RewindEnsembleTaskOps ops = {create, output, seed, gradient, destroy};
  PetscCall(RewindEnsembleSetTasks(ens, &ops, &ctx));
  PetscInt local = 0;
  {
    Vec probe;  // this rank's block of the parameter, as every task lays it out
    PetscCall(VecCreateMPI(group_comm, PETSC_DECIDE, kSize, &probe));
    PetscCall(VecGetLocalSize(probe, &local));
    PetscCall(VecDestroy(&probe));
  }
  PetscCall(RewindEnsembleSetSizes(ens, 1, local));
  PetscInt fail = -1;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-fail_task", &fail, NULL));
  if (fail >= 0) {
    const bool reached = task_error_reached_every_rank(ens, fail);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "task error test %s\n", reached ? "passed" : "FAILED"));
    PetscCall(RewindEnsembleDestroy(&ens));
    PetscCall(PetscFinalize());
    return reached ? 0 : 1;
  }
  PetscBool set_costs = PETSC_FALSE;  // -set_costs: each task's step count as its estimate
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-set_costs", &set_costs, NULL));
  if (set_costs) {
    std::vector<PetscReal> costs(kTasks);
    for (PetscInt k = 0; k < kTasks; ++k) costs[static_cast<std::size_t>(k)] = steps_of(k);
    PetscCall(RewindEnsembleSetTaskCosts(ens, kTasks, costs.data()));
  }
  PetscMPIInt rank, size;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  const int g_size = size / static_cast<int>(groups);
  // Before a forward pass there is nothing to read: an error, not zeros.
  RewindEnsembleTaskRecord early;
  RewindEnsembleStats early_stats;
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  bool records_ok = RewindEnsembleGetTaskRecord(ens, 0, &early) == PETSC_ERR_ORDER &&
                    RewindEnsembleGetStats(ens, &early_stats) == PETSC_ERR_ORDER;
  PetscCall(PetscPopErrorHandler());
  std::vector<PetscScalar> y(kTasks), g(static_cast<std::size_t>(local));
  PetscCall(RewindEnsembleForward(ens, kTasks, y.data()));
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  records_ok = check_forward(ens, groups, g_size) && records_ok;
  PetscCall(PetscPopErrorHandler());
  const std::vector<PetscScalar> ybar = misfit_gradient(y);
  PetscCall(RewindEnsembleBackward(ens, ybar.data(), g.data()));
  PetscCall(RewindEnsembleView(ens, PETSC_VIEWER_STDOUT_WORLD));
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  records_ok = check_backward(ens, ctx, groups, g_size, group_comm) && records_ok;
  PetscCall(PetscPopErrorHandler());

  // The reference on the first group, handed to the same block of every other group.
  std::vector<PetscScalar> reference(static_cast<std::size_t>(local));
  if (group == 0) PetscCall(serial(group_comm, reference));
  MPI_Comm cross;
  PetscCallMPI(MPI_Comm_split(PETSC_COMM_WORLD, rank % g_size, rank, &cross));
  PetscCallMPI(MPI_Bcast(reference.data(), static_cast<int>(local), MPIU_SCALAR, 0, cross));
  PetscCallMPI(MPI_Comm_free(&cross));
  // -within <r>: a lossy codec's gradient, within r of the reference's largest value (normwise
  // over every rank), not its bits.
  PetscReal within = -1;
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-within", &within, NULL));
  bool same =
      local > 0 && std::memcmp(reference.data(), g.data(), g.size() * sizeof(PetscScalar)) == 0;
  if (within >= 0) {
    double err[2] = {0.0, 0.0};  // the largest difference, the largest reference value
    for (std::size_t i = 0; i < g.size(); ++i) {
      err[0] = std::max(err[0], std::abs((double)(g[i] - reference[i])));
      err[1] = std::max(err[1], std::abs((double)reference[i]));
    }
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, err, 2, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
    const double rel = err[0] / std::max(err[1], 1e-300);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "gradient error against the serial store-all loop: %.3g (largest "
                          "value %.3g; relative %.3g, allowed %g)\n",
                          err[0], err[1], rel, (double)within));
    same = local > 0 && std::isfinite(rel) && rel <= within;
  }
  const bool all = rwd::testing::all_ranks(same, PETSC_COMM_WORLD);
  const char* json;
  PetscCall(RewindEnsembleGetReport(ens, &json));
  const bool reported = std::strstr(json, "\"mapping\": [{\"task\": 0") != nullptr;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "claimed the costliest first: %s\n",
                        std::strstr(json, "\"costliest_first\": true") ? "yes" : "no"));

  // No task at all: the gradient is gradient_size zeros (not left as it was).
  std::vector<PetscScalar> none(static_cast<std::size_t>(local), std::nan(""));
  PetscCall(RewindEnsembleForward(ens, 0, NULL));
  PetscCall(RewindEnsembleBackward(ens, NULL, none.data()));
  bool zeros = true;
  for (PetscScalar v : none) zeros = zeros && v == 0.0;
  zeros = rwd::testing::all_ranks(zeros, PETSC_COMM_WORLD);
  // The pass had no task 0.
  RewindEnsembleTaskRecord none_record;
  RewindEnsembleStats none_stats;
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  records_ok = records_ok && RewindEnsembleGetTaskRecord(ens, 0, &none_record) != 0 &&
               RewindEnsembleGetStats(ens, &none_stats) == 0 && none_stats.tasks == 0 &&
               none_stats.reversed;
  PetscCall(PetscPopErrorHandler());
  int records_all = records_ok ? 1 : 0;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &records_all, 1, MPI_INT, MPI_MIN, PETSC_COMM_WORLD));

  const bool passed = all && reported && zeros && records_all == 1;
  PetscCall(
      PetscPrintf(PETSC_COMM_WORLD,
                  "%d groups: gradient %s the serial store-all loop; no tasks: %s; task "
                  "records %s; %s\n",
                  (int)groups,
                  all ? (within >= 0 ? "within the bound of" : "bitwise equal to") : "DIFFERS from",
                  zeros ? "a zero gradient" : "NOT a zero gradient",
                  records_all == 1 ? "consistent" : "INCONSISTENT",
                  passed ? "ensemble test passed" : "ensemble test FAILED"));
  PetscCall(RewindEnsembleDestroy(&ens));
  PetscCall(PetscFinalize());
  return passed ? 0 : 1;
}
