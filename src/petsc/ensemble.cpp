// The ensemble map for PETSc programs (include/rewind/petsc/ensemble.h): each task is a TS on
// its group's communicator whose rewind trajectory keeps its checkpoints in the group's stores;
// the TS lives from its TSSolve to its TSAdjointSolve.
#include "rewind/petsc/ensemble.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "made_dirs.hpp"
#include "private_access.hpp"
#include "resume_identity.hpp"
#include "rewind/comm/agree.hpp"
#include "rewind/engine/stores.hpp"
#include "rewind/ensemble/ensemble.hpp"
#include "rewind/ensemble/group_room.hpp"
#include "rewind/error.hpp"
#include "rewind/petsc/trajectory.h"
#include "rewind/storage/codec.hpp"
#include "shared_stores.hpp"
#include "trajectory_state.hpp"
#include "ts_tasks.hpp"

namespace rwd::petsc {
namespace {

struct Settings {
  PetscInt group_size = 1;
  std::string assign = "dynamic";
  std::string claim = "costliest";  ///< EnsembleConfig::claim_order
  PetscInt max_cps_ram = -1;
  PetscInt max_cps_disk = -1;
  std::string dirname = ".";
  PetscBool async = PETSC_TRUE;
  PetscReal failure_wait = 30;       ///< EnsembleConfig::failure_wait_seconds
  PetscBool resume = PETSC_FALSE;    ///< EnsembleConfig::resume (enabled and resume)
  std::string compress = "none";     ///< the groups' stores' codec (StoreConfig::codec)
  PetscReal compress_tolerance = 0;  ///< zfp: CodecSpec::tolerance
  PetscInt compress_precision = 0;   ///< zfp-precision: CodecSpec::precision
  PetscInt compress_level = 0;       ///< zstd, blosc: CodecSpec::level
  PetscBool compress_lossy_pullbacks = PETSC_FALSE;  ///< StoresConfig::lossy_pullbacks
  PetscBool compress_disk = PETSC_TRUE;              ///< ... for their disk checkpoints too
  PetscBool view = PETSC_FALSE;  ///< RewindEnsembleView on stdout after each backward pass
};

// The groups' codec as the settings give it (checked by agree_and_check).
rwd::storage::CodecSpec codec_spec(const Settings& s) {
  return {s.compress, static_cast<double>(s.compress_tolerance),
          static_cast<int>(s.compress_precision), static_cast<int>(s.compress_level)};
}

}  // namespace
}  // namespace rwd::petsc

struct _n_RewindEnsemble {
  MPI_Comm comm = MPI_COMM_NULL;
  rwd::petsc::Settings settings;
  RewindEnsembleTaskOps ops{};
  void* ctx = nullptr;
  PetscInt output_size = -1, gradient_size = -1;
  PetscInt tasks = 0;
  std::vector<double> estimates;  // RewindEnsembleSetTaskCosts
  bool forward_done = false;      // a forward pass completed: its mapping can be read
  bool backward_done = false;     // and the backward pass after it: the costs too
  std::unique_ptr<rwd::ensemble::Ensemble> ensemble;
  std::unique_ptr<rwd::petsc::TsTasks> runner;
  // The directories made for -rewind_ensemble_dirname (rank 0), removed at the end if empty.
  std::vector<rwd::petsc::MadeDir> made_dirs;
  ~_n_RewindEnsemble() {
    runner.reset();  // the group files go first
    rwd::petsc::remove_empty(made_dirs);
  }
  std::string report;
};

namespace {

PetscErrorCode ready(RewindEnsemble e, const char* call) {
  PetscFunctionBegin;
  PetscCheck(e->ensemble, e->comm, PETSC_ERR_ORDER,
             "%s: call RewindEnsembleSetFromOptions() first (it splits the communicator)", call);
  PetscCheck(e->ops.create && e->ops.output && e->ops.seed && e->ops.gradient, e->comm,
             PETSC_ERR_ORDER,
             "%s: call RewindEnsembleSetTasks() with create, output, seed and "
             "gradient callbacks first",
             call);
  PetscCheck(e->output_size >= 0 && e->gradient_size >= 0, e->comm, PETSC_ERR_ORDER,
             "%s: call RewindEnsembleSetSizes() first", call);
  PetscFunctionReturn(0);
}

// The settings read: agreed over the ranks, then checked, each error naming its option.
PetscErrorCode agree_and_check(MPI_Comm comm, const rwd::petsc::Settings& s) {
  PetscFunctionBegin;
  {
    // Ranks that differ would wait in different collectives (a hang, or a crash in the
    // backward): refused on every rank by name, before any check one rank might fail alone.
    using rwd::comm::setting_hash;
    const rwd::comm::Setting settings[] = {
        {"-rewind_ensemble_group_size", setting_hash(s.group_size)},
        {"-rewind_ensemble_assign", setting_hash(s.assign)},
        {"-rewind_ensemble_claim", setting_hash(s.claim)},
        {"-rewind_ensemble_max_cps_ram", setting_hash(s.max_cps_ram)},
        {"-rewind_ensemble_max_cps_disk", setting_hash(s.max_cps_disk)},
        {"-rewind_ensemble_dirname", setting_hash(s.dirname)},
        {"-rewind_ensemble_async", setting_hash(s.async)},
        {"-rewind_ensemble_failure_wait", setting_hash(s.failure_wait)},
        {"-rewind_ensemble_resume", setting_hash(s.resume)},
        {"-rewind_ensemble_compress", setting_hash(s.compress)},
        {"-rewind_ensemble_compress_tolerance", setting_hash(s.compress_tolerance)},
        {"-rewind_ensemble_compress_precision", setting_hash(s.compress_precision)},
        {"-rewind_ensemble_compress_level", setting_hash(s.compress_level)},
        {"-rewind_ensemble_compress_lossy_pullbacks", setting_hash(s.compress_lossy_pullbacks)},
        {"-rewind_ensemble_compress_disk", setting_hash(s.compress_disk)},
        {"-rewind_ensemble_view", setting_hash(s.view)}};
    try {
      rwd::comm::agree_settings(comm, settings);
    } catch (const rwd::Error& e) {  // on every rank, each printing it
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_INCOMP, "%s", e.what());
    }
  }
  PetscCheck(s.assign == "dynamic" || s.assign == "static", comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-rewind_ensemble_assign must be dynamic or static, got %s", s.assign.c_str());
  PetscCheck(s.max_cps_ram >= -1 && s.max_cps_disk >= -1, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-rewind_ensemble_max_cps_ram and -rewind_ensemble_max_cps_disk must be >= 0, or -1 "
             "for no limit");
  try {
    rwd::storage::check_codec(rwd::petsc::codec_spec(s), "-rewind_ensemble_compress",
                              "-rewind_ensemble_compress_tolerance",
                              "-rewind_ensemble_compress_precision",
                              "-rewind_ensemble_compress_level");
  } catch (const rwd::Error& err) {
    SETERRQ(comm, PETSC_ERR_ARG_OUTOFRANGE, "%s", err.what());
  }
  PetscCheck(!s.compress_lossy_pullbacks || rwd::storage::codec_is_lossy(s.compress), comm,
             PETSC_ERR_ARG_INCOMP,
             "-rewind_ensemble_compress_lossy_pullbacks compresses stage values lossily, and "
             "-rewind_ensemble_compress %s is not lossy; choose zfp or leave it false",
             s.compress.c_str());
  PetscFunctionReturn(0);
}

void make_runner(RewindEnsemble e) {
  rwd::engine::StoresConfig sc;
  sc.store.directory = e->settings.dirname;
  sc.store.label = "ensemble-group" + std::to_string(e->ensemble->group());
  sc.store.async_io = e->settings.async == PETSC_TRUE;
  sc.ram = e->settings.max_cps_ram < 0 ? rwd::schedule::kUnlimited : e->settings.max_cps_ram;
  sc.disk = e->settings.max_cps_disk < 0 ? rwd::schedule::kUnlimited : e->settings.max_cps_disk;
  sc.store.codec = rwd::petsc::codec_spec(e->settings);
  sc.lossy_pullbacks = e->settings.compress_lossy_pullbacks == PETSC_TRUE;
  sc.compress_disk = e->settings.compress_disk == PETSC_TRUE;
  e->runner = std::make_unique<rwd::petsc::TsTasks>(e->ensemble->group_comm(), e->ops, e->ctx,
                                                    e->output_size, e->gradient_size, sc);
  e->runner->estimates = &e->estimates;
}

// The -rewind_ensemble_compress* options, inside RewindEnsembleSetFromOptions' option block.
PetscErrorCode read_compress_options(rwd::petsc::Settings& s,
                                     rwd::petsc::detail::OptionItems PetscOptionsObject) {
  char compress[64];
  PetscFunctionBegin;
  PetscCall(PetscStrncpy(compress, s.compress.c_str(), sizeof compress));
  PetscCall(PetscOptionsString("-rewind_ensemble_compress",
                               "Compress the checkpoints of every group's tapes: none, zstd or "
                               "blosc (lossless; disk checkpoints too, on the I/O thread, unless "
                               "-rewind_ensemble_compress_disk 0), zfp or zfp-precision (lossy, "
                               "RAM restart states only unless "
                               "-rewind_ensemble_compress_lossy_pullbacks)",
                               "RewindEnsembleSetFromOptions", compress, compress, sizeof compress,
                               NULL));
  PetscCall(PetscOptionsReal(
      "-rewind_ensemble_compress_tolerance", "zfp: the largest absolute error of a restored value",
      "RewindEnsembleSetFromOptions", s.compress_tolerance, &s.compress_tolerance, NULL));
  PetscCall(PetscOptionsInt("-rewind_ensemble_compress_precision",
                            "zfp-precision: bits kept of each block of values (1..64)",
                            "RewindEnsembleSetFromOptions", s.compress_precision,
                            &s.compress_precision, NULL));
  PetscCall(PetscOptionsInt("-rewind_ensemble_compress_level",
                            "zstd (1..19) and blosc (1..9): the compression level (0: zstd 1, "
                            "blosc 5)",
                            "RewindEnsembleSetFromOptions", s.compress_level, &s.compress_level,
                            NULL));
  PetscCall(PetscOptionsBool("-rewind_ensemble_compress_lossy_pullbacks",
                             "With a lossy codec: compress the stage values adjoint steps read "
                             "lossily too (more checkpoints fit; a larger gradient error)",
                             "RewindEnsembleSetFromOptions", s.compress_lossy_pullbacks,
                             &s.compress_lossy_pullbacks, NULL));
  PetscCall(PetscOptionsBool("-rewind_ensemble_compress_disk",
                             "With -rewind_ensemble_compress: compress the groups' disk "
                             "checkpoints (spilled tapes) too (fewer bytes moved; the file keeps "
                             "room for the values)",
                             "RewindEnsembleSetFromOptions", s.compress_disk, &s.compress_disk,
                             NULL));
  s.compress = compress;
  PetscFunctionReturn(0);
}

}  // namespace

extern "C" {

PetscErrorCode RewindEnsembleCreate(MPI_Comm comm, RewindEnsemble* ens) {
  PetscFunctionBegin;
  PetscCall(TSTrajectoryRegisterRewind());
  PetscCallCXX(*ens = new _n_RewindEnsemble());
  (*ens)->comm = comm;
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleDestroy(RewindEnsemble* ens) {
  PetscFunctionBegin;
  if (!ens || !*ens) PetscFunctionReturn(0);
  // Every group's files go before rank 0 removes the directories it made (collective), and the
  // resumable ensemble's lock with the ensemble.
  PetscCallCXX((*ens)->runner.reset());
  PetscCallCXX((*ens)->ensemble.reset());
  if ((*ens)->settings.max_cps_disk != 0) {  // agreed by every rank
    PetscCallMPI(MPI_Barrier((*ens)->comm));
  }
  rwd::petsc::remove_empty((*ens)->made_dirs);
  PetscCallCXX(delete *ens);
  *ens = nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleSetFromOptions(RewindEnsemble e) {
  rwd::petsc::Settings& s = e->settings;
  char assign[32], claim[32], dir[PETSC_MAX_PATH_LEN];
  PetscBool flg = PETSC_FALSE;
  PetscFunctionBegin;
  PetscCall(PetscStrncpy(assign, s.assign.c_str(), sizeof assign));
  PetscCall(PetscStrncpy(claim, s.claim.c_str(), sizeof claim));
  PetscCall(PetscStrncpy(dir, s.dirname.c_str(), sizeof dir));
  PetscOptionsBegin(e->comm, NULL, "rewind ensemble options (independent adjoint tasks)", NULL);
  PetscCall(PetscOptionsInt("-rewind_ensemble_group_size", "Ranks per group (divides the size)",
                            "RewindEnsembleSetFromOptions", s.group_size, &s.group_size, NULL));
  PetscCall(PetscOptionsString(
      "-rewind_ensemble_assign", "How tasks reach groups: dynamic (first free group) or static",
      "RewindEnsembleSetFromOptions", assign, assign, sizeof assign, &flg));
  PetscCall(PetscOptionsString("-rewind_ensemble_claim",
                               "Order of dynamic claims: costliest (first, with "
                               "RewindEnsembleSetTaskCosts) or task",
                               "RewindEnsembleSetFromOptions", claim, claim, sizeof claim, NULL));
  PetscCall(PetscOptionsInt("-rewind_ensemble_max_cps_ram",
                            "RAM checkpoints all of a group's tapes share (-1: no limit)",
                            "RewindEnsembleSetFromOptions", s.max_cps_ram, &s.max_cps_ram, NULL));
  PetscCall(PetscOptionsInt("-rewind_ensemble_max_cps_disk",
                            "Disk checkpoints all of a group's tapes share (-1: no limit)",
                            "RewindEnsembleSetFromOptions", s.max_cps_disk, &s.max_cps_disk, NULL));
  PetscCall(PetscOptionsString("-rewind_ensemble_dirname",
                               "Directory of the groups' checkpoint files",
                               "RewindEnsembleSetFromOptions", dir, dir, sizeof dir, NULL));
  PetscCall(PetscOptionsBool("-rewind_ensemble_async", "Disk I/O behind the computation",
                             "RewindEnsembleSetFromOptions", s.async, &s.async, NULL));
  PetscCall(PetscOptionsReal("-rewind_ensemble_failure_wait",
                             "Seconds a rank whose task failed waits for its group to agree on it "
                             "(then RewindEnsembleGetMustAbort says to abort)",
                             "RewindEnsembleGetMustAbort", s.failure_wait, &s.failure_wait, NULL));
  PetscCall(PetscOptionsBool("-rewind_ensemble_resume",
                             "Keep a manifest in -rewind_ensemble_dirname and go on from a killed "
                             "run's (the same command again)",
                             "RewindEnsembleSetFromOptions", s.resume, &s.resume, NULL));
  PetscCall(read_compress_options(s, PetscOptionsObject));
  PetscCall(PetscOptionsBool("-rewind_ensemble_view",
                             "RewindEnsembleView on stdout after each RewindEnsembleBackward",
                             "RewindEnsembleView", s.view, &s.view, NULL));
  PetscOptionsEnd();
  s.assign = assign;
  s.claim = claim;
  s.dirname = dir;
  PetscCall(agree_and_check(e->comm, s));
  rwd::ensemble::EnsembleConfig c;
  c.group_size = static_cast<int>(s.group_size);
  c.assign = s.assign == "dynamic" ? rwd::ensemble::Assign::Dynamic : rwd::ensemble::Assign::Static;
  PetscCheck(s.failure_wait >= 0, e->comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-rewind_ensemble_failure_wait must be >= 0 seconds, got %g", (double)s.failure_wait);
  c.failure_wait_seconds = static_cast<double>(s.failure_wait);
  PetscCheck(s.claim == "costliest" || s.claim == "task", e->comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-rewind_ensemble_claim must be costliest or task, got %s", s.claim.c_str());
  c.claim_order = s.claim == "task" ? rwd::ensemble::ClaimOrder::TaskOrder
                                    : rwd::ensemble::ClaimOrder::CostliestFirst;
  if (s.resume) {
    c.resume.enabled = c.resume.resume = true;
    c.resume.directory = s.dirname;
    PetscCallCXX(c.resume.identity = rwd::petsc::ensemble_identity());
    // The manifest's directory, made when missing (collective: the ranks agreed on it).
    PetscCall(rwd::petsc::make_dirs(e->comm, s.dirname.c_str(), "-rewind_ensemble_dirname",
                                    e->made_dirs));
  }
  if (!s.resume) {
    // A killed resumable run's manifest there is not passed over silently (its files would stay
    // and its work be done again): resume it, or remove it.
    PetscMPIInt rank = 0;
    PetscCallMPI(MPI_Comm_rank(e->comm, &rank));
    const std::string head = s.dirname + "/rewind-ensemble-ensemble.resume";
    int found = rank == 0 && access(head.c_str(), F_OK) == 0 ? 1 : 0;
    PetscCallMPI(MPI_Bcast(&found, 1, MPI_INT, 0, e->comm));
    PetscCheck(!found, e->comm, PETSC_ERR_FILE_UNEXPECTED,
               "%s is the manifest of a killed ensemble run that can be resumed: add "
               "-rewind_ensemble_resume to go on from it, or remove its files "
               "(rewind-ensemble-ensemble.* in -rewind_ensemble_dirname) to start again",
               head.c_str());
  }
  e->runner.reset();
  e->ensemble.reset();
  e->forward_done = e->backward_done = false;
  PetscCallCXX(e->ensemble = std::make_unique<rwd::ensemble::Ensemble>(e->comm, c));
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleSetTasks(RewindEnsemble e, const RewindEnsembleTaskOps* ops,
                                      void* ctx) {
  PetscFunctionBegin;
  e->ops = *ops;
  e->ctx = ctx;
  e->runner.reset();
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleSetSizes(RewindEnsemble e, PetscInt output_size,
                                      PetscInt gradient_size) {
  PetscFunctionBegin;
  PetscCheck(output_size >= 0 && gradient_size >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "RewindEnsembleSetSizes: sizes must be >= 0");
  e->output_size = output_size;
  e->gradient_size = gradient_size;
  e->runner.reset();
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleGetGroup(RewindEnsemble e, PetscInt* group, PetscInt* groups,
                                      MPI_Comm* comm) {
  PetscFunctionBegin;
  PetscCheck(e->ensemble, PETSC_COMM_SELF, PETSC_ERR_ORDER,
             "RewindEnsembleGetGroup: call RewindEnsembleSetFromOptions() first");
  if (group) *group = e->ensemble->group();
  if (groups) *groups = e->ensemble->groups();
  if (comm) *comm = e->ensemble->group_comm();
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleSetTaskCosts(RewindEnsemble e, PetscInt ntasks,
                                          const PetscReal costs[]) {
  PetscFunctionBegin;
  PetscCheck(ntasks >= 0 && (ntasks == 0 || costs), PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "RewindEnsembleSetTaskCosts: give ntasks >= 0 costs");
  PetscCallCXX(e->estimates.assign(costs, costs + ntasks));
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleSetResumeIdentity(RewindEnsemble e, const char text[]) {
  PetscFunctionBegin;
  PetscCheck(e->ensemble, PETSC_COMM_SELF, PETSC_ERR_ORDER,
             "RewindEnsembleSetResumeIdentity: call RewindEnsembleSetFromOptions() first");
  PetscCallCXX(e->ensemble->set_resume_identity(rwd::petsc::ensemble_identity() + "; pass " +
                                                (text ? text : "")));
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleGetMustAbort(RewindEnsemble e, PetscBool* must_abort) {
  PetscFunctionBegin;
  PetscCheck(must_abort, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL,
             "RewindEnsembleGetMustAbort: must_abort is NULL");
  *must_abort = e->ensemble && e->ensemble->must_abort() ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleForward(RewindEnsemble e, PetscInt ntasks, PetscScalar y[]) {
  PetscFunctionBegin;
  PetscCall(ready(e, "RewindEnsembleForward"));
  if (!e->runner && e->settings.max_cps_disk != 0 && !e->settings.resume) {
    // Made when missing, as -ts_trajectory_dirname is (collective: the ranks agreed on it).
    PetscCall(rwd::petsc::make_dirs(e->comm, e->settings.dirname.c_str(),
                                    "-rewind_ensemble_dirname", e->made_dirs));
  }
  if (!e->runner) PetscCallCXX(make_runner(e));
  rwd::ensemble::Outputs out;
  e->forward_done = e->backward_done = false;
  PetscCallCXX(out = e->ensemble->forward(ntasks, *e->runner));
  e->tasks = ntasks;
  e->forward_done = true;
  if (y) {
    for (std::size_t i = 0; i < out.values.size(); ++i) y[i] = out.values[i];
  }
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleBackward(RewindEnsemble e, const PetscScalar ybar[], PetscScalar g[]) {
  PetscMPIInt rank = 0;
  PetscFunctionBegin;
  PetscCall(ready(e, "RewindEnsembleBackward"));
  PetscCheck(e->runner, e->comm, PETSC_ERR_ORDER,
             "RewindEnsembleBackward: call RewindEnsembleForward() first");
  PetscCallMPI(MPI_Comm_rank(e->comm, &rank));
  const std::size_t n = static_cast<std::size_t>(e->tasks * e->output_size);
  std::span<const double> cotangents;
  if (rank == 0) cotangents = std::span<const double>(ybar, ybar ? n : 0);
  std::vector<double> gradient;
  PetscCallCXX(gradient = e->ensemble->backward(cotangents, *e->runner));
  // With no task at all the summed gradient has no length: its gradient_size values are zero.
  for (std::size_t i = 0; i < static_cast<std::size_t>(e->gradient_size); ++i) {
    g[i] = i < gradient.size() ? gradient[i] : 0.0;
  }
  e->backward_done = true;
  PetscCallCXX(e->report = e->ensemble->report().json());
  if (e->settings.view) PetscCall(RewindEnsembleView(e, PETSC_VIEWER_STDOUT_(e->comm)));
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleGetStats(RewindEnsemble e, RewindEnsembleStats* out) {
  PetscFunctionBegin;
  PetscCheck(out, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "RewindEnsembleGetStats: stats is NULL");
  PetscCheck(e->forward_done, PETSC_COMM_SELF, PETSC_ERR_ORDER,
             "RewindEnsembleGetStats: call RewindEnsembleForward() first");
  rwd::ensemble::EnsembleReport r;
  PetscCallCXX(r = e->ensemble->report());
  *out = RewindEnsembleStats{};
  out->tasks = (PetscInt)r.tasks;
  out->groups = r.groups;
  out->group_size = r.group_size;
  out->forward_seconds = r.forward_seconds;
  out->costliest_first = r.costliest_first ? PETSC_TRUE : PETSC_FALSE;
  out->resumed_generation = (PetscInt)r.resumed_generation;
  for (const auto& m : r.mapping) {
    out->outputs_resumed += m.forward_resumed ? 1 : 0;
    out->gradients_resumed += m.backward_resumed ? 1 : 0;
  }
  if (!e->backward_done) PetscFunctionReturn(0);
  PetscMPIInt rank = 0;
  PetscCallMPI(MPI_Comm_rank(e->comm, &rank));
  out->reversed = PETSC_TRUE;
  out->backward_seconds = r.backward_seconds;
  out->cotangent_bytes = (PetscReal)r.backward_cotangent_bytes;
  out->reduction_bytes = (PetscReal)r.backward_reduction_bytes;
  for (const auto& m : r.mapping) {
    out->spilled += m.cost.spilled ? 1 : 0;
    out->cut += m.cost.cut ? 1 : 0;
  }
  if (static_cast<std::size_t>(rank) < r.peak_rss_bytes.size()) {
    out->peak_rss_bytes = (PetscReal)r.peak_rss_bytes[static_cast<std::size_t>(rank)];
  }
  const rwd::ensemble::GroupCodecs c = r.codec_totals();
  out->ram_stored_bytes = (PetscReal)c.ram.stored_bytes;
  out->ram_uncompressed_bytes = (PetscReal)c.ram.uncompressed_bytes;
  out->disk_stored_bytes = (PetscReal)c.disk.stored_bytes;
  out->disk_uncompressed_bytes = (PetscReal)c.disk.uncompressed_bytes;
  out->codec_seconds = c.ram.compress_seconds + c.ram.decompress_seconds + c.disk.compress_seconds +
                       c.disk.decompress_seconds;
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleGetTaskRecord(RewindEnsemble e, PetscInt task,
                                           RewindEnsembleTaskRecord* out) {
  PetscFunctionBegin;
  PetscCheck(out, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL,
             "RewindEnsembleGetTaskRecord: record is NULL");
  PetscCheck(e->forward_done, PETSC_COMM_SELF, PETSC_ERR_ORDER,
             "RewindEnsembleGetTaskRecord: call RewindEnsembleForward() first");
  PetscCheck(task >= 0 && task < e->tasks, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "RewindEnsembleGetTaskRecord: task %" PetscInt_FMT
             " is not one of the last forward pass's %" PetscInt_FMT " tasks",
             task, e->tasks);
  const rwd::ensemble::TaskRecord& m = e->ensemble->mapping()[static_cast<std::size_t>(task)];
  *out = RewindEnsembleTaskRecord{};
  out->group = m.group;
  out->position = m.position;
  out->forward_begin = m.forward_begin;
  out->forward_end = m.forward_end;
  out->forward_resumed = m.forward_resumed ? PETSC_TRUE : PETSC_FALSE;
  out->backward_resumed = m.backward_resumed ? PETSC_TRUE : PETSC_FALSE;
  if (!e->backward_done) PetscFunctionReturn(0);
  const rwd::ensemble::TaskCost& c = m.cost;
  out->reversed = PETSC_TRUE;
  out->backward_begin = m.backward_begin;
  out->backward_end = m.backward_end;
  out->steps = (PetscInt)c.steps;
  out->forward_steps = (PetscInt)c.forward_steps;
  out->recomputed = (PetscInt)(c.forward_steps - c.steps);
  out->adjoint_steps = (PetscInt)c.adjoint_steps;
  out->ram_peak_bytes = (PetscReal)c.ram_peak_bytes;
  out->disk_bytes_written = (PetscReal)c.disk_bytes_written;
  out->spilled = c.spilled ? PETSC_TRUE : PETSC_FALSE;
  out->cut = c.cut ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleGetReport(RewindEnsemble e, const char** json) {
  PetscFunctionBegin;
  PetscCallCXX(e->report = e->ensemble ? e->ensemble->report().json() : std::string("{}"));
  *json = e->report.c_str();
  PetscFunctionReturn(0);
}

PetscErrorCode RewindEnsembleView(RewindEnsemble e, PetscViewer viewer) {
  PetscBool ascii = PETSC_FALSE;
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii || !e->ensemble) PetscFunctionReturn(0);
  const rwd::ensemble::EnsembleReport r = e->ensemble->report();
  std::vector<int> per_group(static_cast<std::size_t>(r.groups), 0);
  int spilled = 0, cut = 0;
  for (const auto& m : r.mapping) {
    if (m.group >= 0) ++per_group[static_cast<std::size_t>(m.group)];
    spilled += m.cost.spilled ? 1 : 0;
    cut += m.cost.cut ? 1 : 0;
  }
  std::string counts;
  for (int c : per_group) counts += (counts.empty() ? "" : " ") + std::to_string(c);
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "rewind ensemble: %lld task%s on %d group%s of %d rank%s (%s assignment%s)\n",
      (long long)r.tasks, r.tasks == 1 ? "" : "s", r.groups, r.groups == 1 ? "" : "s", r.group_size,
      r.group_size == 1 ? "" : "s", rwd::ensemble::to_string(r.assign),
      r.assign != rwd::ensemble::Assign::Dynamic ? ""
      : r.costliest_first                        ? ", the costliest claimed first"
                                                 : ", claimed in task order"));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  tasks per group: %s; spilled %d, cut %d\n",
                                   counts.c_str(), spilled, cut));
  if (e->runner && e->settings.compress != "none") {
    // The last pass's, summed over the ranks, after a backward pass (each rank of a group holds
    // its own blocks); before one, this rank's so far.
    const bool all = !r.codecs.empty();
    const rwd::ensemble::GroupCodecs t = all ? r.codec_totals() : e->runner->codecs();
    const rwd::petsc::Settings& s = e->settings;
    std::string setting;  // a level, or what a lossy codec keeps, after the option's name
    if (rwd::storage::codec_is_lossy(s.compress)) {
      char bound[64];
      if (s.compress_precision > 0) {
        std::snprintf(bound, sizeof bound, "; lossy, %d bits kept", (int)s.compress_precision);
      } else {
        std::snprintf(bound, sizeof bound, "; lossy, tolerance %g", (double)s.compress_tolerance);
      }
      setting = std::string(bound) +
                (s.compress_lossy_pullbacks ? ", stage values too" : ", restart states only");
    }
    if (s.compress_level > 0) setting += "; level " + std::to_string(s.compress_level);
    const auto line = [&](const char* level, const char* option, const char* verb,
                          const rwd::engine::CodecStats& c, bool disk) {
      char whose[64] = "this rank";
      if (all)
        std::snprintf(whose, sizeof whose, "all ranks; the worst rank's %.2f",
                      r.worst_codec_ratio(disk));
      return c.uncompressed_bytes <= 0
                 ? PetscErrorCode(0)
                 : PetscViewerASCIIPrintf(
                       viewer,
                       "  group %s checkpoints compressed by %s (%s%s): %lld bytes %s for %lld "
                       "(ratio %.2f, %s), compressing %.4f s, decompressing %.4f s, %.4f s of "
                       "it on the I/O thread\n",
                       level, c.codec.c_str(), option, setting.c_str(), (long long)c.stored_bytes,
                       verb, (long long)c.uncompressed_bytes, c.ratio(), whose, c.compress_seconds,
                       c.decompress_seconds, c.io_thread_seconds);
    };
    PetscCall(line("RAM", "-rewind_ensemble_compress", "stored", t.ram, false));
    PetscCall(line("disk", "-rewind_ensemble_compress_disk", "written", t.disk, true));
  }
  if (r.resumed_generation > 0) {
    int outputs = 0, gradients = 0;
    for (const auto& m : r.mapping) {
      outputs += m.forward_resumed ? 1 : 0;
      gradients += m.backward_resumed ? 1 : 0;
    }
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "  resumed from a killed run's manifest (generation %lld): %d outputs taken from it (not "
        "run forward; their tapes recorded again before their reverse), %d gradients already "
        "summed (not reversed)\n",
        (long long)r.resumed_generation, outputs, gradients));
  }
  PetscCall(PetscViewerASCIIPrintf(
      viewer,
      "  forward %.3f s, backward %.3f s; backward sent %lld bytes of cotangents and %lld "
      "of gradient reduction\n",
      r.forward_seconds, r.backward_seconds, (long long)r.backward_cotangent_bytes,
      (long long)r.backward_reduction_bytes));
  PetscFunctionReturn(0);
}

}  // extern "C"
