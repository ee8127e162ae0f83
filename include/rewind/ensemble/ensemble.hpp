#pragma once
/// @file
/// The distributed ensemble map: K independent tasks (sources, samples, members) spread over G
/// groups of g ranks. The forward pass hands tasks to groups dynamically as they come free and
/// records which group ran which task; each group keeps the tapes of its tasks. The backward
/// pass sends each group exactly the cotangents of its tasks, in one message, along that
/// recorded mapping; the groups reverse their own tapes and the gradient contributions are
/// summed reproducibly. Tapes, checkpoints and pullbacks never leave the group that made them.
///
/// How a task is run and how its tape is kept is a front end's business (TaskRunner):
/// rwd::ensemble::StepperTasks for the generic C++ API, the PETSc ensemble for TS tasks.
/// Words (checkpoint, recording, run, segment, slot, row, tape, ...): docs/runtime.md#glossary.

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rewind/engine/stats.hpp"
#include "rewind/storage/codec.hpp"

namespace rwd::ensemble {

/// How tasks reach groups in the forward pass.
enum class Assign {
  Dynamic,  ///< each group claims the next task as soon as it is free (one-sided fetch-and-add)
  Static,   ///< task k runs on group k mod G (round robin), whatever the tasks cost
};

/// "dynamic", "static".
const char* to_string(Assign assign) noexcept;

/// The order in which dynamic assignment hands out tasks.
enum class ClaimOrder {
  /// The costliest first (TaskRunner::estimate), where every task has an estimate; otherwise
  /// task order. Long tasks then start first and do not finish last (longest processing time
  /// first: within 4/3 of the optimal makespan, where task order may take twice it).
  CostliestFirst,
  TaskOrder,  ///< task 0, 1, 2, ...
};

/// An ensemble that survives a kill (docs/ensemble.md, "Resume after a kill"): each task's output
/// once its forward ended, the cotangents' hash once the backward began, and each group's exact
/// partial sum of the gradient after each task's reverse are written, synced and listed in a
/// manifest in `directory`. A job killed anywhere and started again with `resume` does not run
/// again the forwards whose outputs are listed nor the reverses already summed, and gives the
/// gradient bit for bit. The files are rewind-ensemble-<label>.*; a pass that ends removes them.
struct EnsembleResumeConfig {
  bool enabled = false;  ///< keep the manifest (needs `directory`)
  /// Go on from a killed run's manifest if there is one (a fresh start if none). Without it, a
  /// manifest there is refused rather than overwritten.
  bool resume = false;
  std::string directory;           ///< every rank's (a shared file system); must exist
  std::string label = "ensemble";  ///< one resumable ensemble per label and directory
  /// What else makes it the same problem (the program, its options, a hash of the parameters of
  /// this pass): a resumed run must give the same text.
  std::string identity;
};

struct EnsembleConfig {
  int group_size = 1;  ///< g, ranks per group; must divide the communicator's size
  Assign assign = Assign::Dynamic;
  ClaimOrder claim_order = ClaimOrder::CostliestFirst;  ///< with Assign::Dynamic
  /// A rank whose task failed waits this long for the other ranks of its group to agree on the
  /// failure. If they do not come (they are blocked in a collective call of the task with the
  /// failed rank), the failed rank throws alone and the job must be aborted (MPI_Abort).
  double failure_wait_seconds = 30.0;
  EnsembleResumeConfig resume;
};

/// What one task cost, as its front end counted it (this group).
struct TaskCost {
  std::int64_t steps = 0;          ///< n of the task
  std::int64_t forward_steps = 0;  ///< every forward step, first sweep and recomputations
  std::int64_t adjoint_steps = 0;
  std::int64_t ram_peak_bytes = 0;      ///< on the group's rank 0
  std::int64_t disk_bytes_written = 0;  ///< on the group's rank 0
  bool spilled = false;                 ///< its RAM checkpoints were moved to disk to make room
  bool cut = false;  ///< its tape was dropped to make room; its forward was run again
};

/// What one rank's group stores' codecs did: its RAM checkpoints and its disk checkpoints (each
/// rank of a group compresses its own blocks; bytes are those written, every checkpoint's, not
/// those held), and the codec's settings (StoresConfig::store.codec, lossy_pullbacks).
struct GroupCodecs {
  engine::CodecStats ram, disk;
  storage::CodecSpec spec;
  bool lossy_pullbacks = false;
};

/// Where a task ran and when. Times are seconds since the start of the pass, on the group's
/// rank 0 (MPI_Wtime after a barrier).
struct TaskRecord {
  std::int64_t task = -1;
  int group = -1;
  int position = -1;  ///< index in the group's list, in the order the group ran its tasks
  double forward_begin = 0, forward_end = 0;
  double backward_begin = 0, backward_end = 0;
  TaskCost cost;
  /// Its forward ran in a killed run (resume): its output is the manifest's; its tape was taken
  /// over from that run's durable files (tape_resumed) or is recorded again before its reverse
  /// (cost.cut).
  bool forward_resumed = false;
  bool tape_resumed = false;
  /// Its gradient was summed in a killed run: it was not reversed again.
  bool backward_resumed = false;
};

/// Every task's output, in task order, on every rank.
struct Outputs {
  std::vector<double> values;         ///< every y_k, concatenated in task order
  std::vector<std::int64_t> offsets;  ///< y_k is values[offsets[k], offsets[k + 1])
  std::span<const double> of(std::int64_t task) const {
    const auto k = static_cast<std::size_t>(task);
    return std::span<const double>(values).subspan(
        static_cast<std::size_t>(offsets[k]),
        static_cast<std::size_t>(offsets[k + 1] - offsets[k]));
  }
};

/// What the ensemble's last passes did (the same on every rank).
struct EnsembleReport {
  std::int64_t tasks = 0;
  int groups = 0;
  int group_size = 0;
  Assign assign = Assign::Dynamic;
  bool costliest_first = false;  ///< the tasks were claimed costliest first (ClaimOrder)
  /// The generation of the killed run's manifest this run went on from (EnsembleResumeConfig);
  /// 0: it started afresh. The tasks resumed are flagged in `mapping`.
  std::int64_t resumed_generation = 0;
  double forward_seconds = 0;   ///< the forward pass, slowest rank
  double backward_seconds = 0;  ///< the backward pass, slowest rank
  /// Payload bytes the backward pass handed to MPI over the whole communicator: the cotangents
  /// (scatter to the groups and broadcast within them) and the gradient reduction.
  std::int64_t backward_cotangent_bytes = 0;
  std::int64_t backward_reduction_bytes = 0;
  /// Per rank of the communicator: its process's resident-memory peak since the last forward
  /// pass began (Linux VmHWM, reset then; elsewhere the peak since the process started).
  std::vector<std::int64_t> peak_rss_bytes;
  std::vector<TaskRecord> mapping;  ///< in task order
  /// Per rank of the communicator: what its group stores' codecs did in the last forward and
  /// backward pass (TaskRunner::codecs() at the end of the backward pass less its value when the
  /// forward pass began); empty before a backward pass, and when no rank's stores compress.
  std::vector<GroupCodecs> codecs;
  /// `codecs` summed over the ranks (bytes and seconds); codec "none" where empty.
  GroupCodecs codec_totals() const;
  /// The lowest ratio of a rank that wrote RAM (disk: disk) checkpoints in `codecs`; 0 if none.
  double worst_codec_ratio(bool disk) const;
  /// One JSON object (the mapping, the times, the bytes, the memory; with a codec,
  /// "group_codecs": the totals per level and each rank's ratio).
  std::string json() const;
};

/// What a front end does with the tasks of one group. Every rank of the group makes the same
/// calls in the same order; the calls may communicate on the group's communicator.
class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  /// Runs task k's first sweep and keeps what its reverse needs; returns y_k (the same on every
  /// rank of the group). May move or drop other tapes it holds to make room.
  virtual std::vector<double> forward(std::int64_t task) = 0;
  /// The order in which to reverse `tasks` (this group's, in the order they were recorded).
  /// The default is the reverse of that order.
  virtual std::vector<std::int64_t> backward_order(std::vector<std::int64_t> tasks);
  /// Reverses task k with the cotangent of its output and frees its tape; returns this rank's
  /// block of the task's gradient contribution (the same length for every task on this rank).
  virtual std::vector<double> backward(std::int64_t task, std::span<const double> ybar) = 0;
  /// What task k has cost so far.
  virtual TaskCost cost(std::int64_t task) const = 0;
  /// What this rank's stores' codecs did since the runner was made (the ensemble reports a
  /// pass's difference); codec "none" (the default) where they do not compress.
  virtual GroupCodecs codecs() const;
  /// An estimate of what task k will cost, in any unit (steps, seconds) but the same for all
  /// tasks and on every rank, before it runs; negative: unknown (the default). With every
  /// task's estimate, dynamic assignment claims the costliest first (ClaimOrder).
  virtual double estimate(std::int64_t task) const;
  /// With EnsembleConfig::resume, after forward(k): makes task k's tape durable (its checkpoints
  /// on disk, synced and sealed, in a file that has the second name `link`, which outlives the
  /// process) and returns this rank's description of it, for adopt() in a resumed run; empty
  /// when it cannot (the default; the tape was cut; the stores cannot hold it on disk): the
  /// task's forward then runs again after a kill. Collective on the group.
  virtual std::string make_durable(std::int64_t task, const std::string& link);
  /// With EnsembleConfig::resume: task k's forward ran in a killed run, which gave `output` (the
  /// manifest's), and this group reverses it. `tape`: this rank's description of its durable
  /// tape (make_durable() in that run), to take over; empty: the tape went with that run, so
  /// hold it as a tape that was cut, whose forward runs again just before its reverse (as a
  /// recomputation) and must give `output` again, bit for bit. The default throws
  /// Error(InvalidArgument): a front end that cannot do either cannot resume. Collective on the
  /// group.
  virtual void adopt(std::int64_t task, std::span<const double> output, std::string_view tape);
  /// Set by the ensemble while its tapes are durable: a runner that drops a tape it made
  /// durable (a cut) calls it with the task, on every rank of the group, before the dropped
  /// checkpoints' room in the file is used again.
  std::function<void(std::int64_t task)> on_tape_lost;
  /// Drops every tape held (after a failure or when the caller gives up the map). Never
  /// collective, never throws.
  virtual void discard() noexcept = 0;
};

/// The map. Collective on the communicator it is made with; every rank makes the same calls.
/// Errors are rwd::Error: bad input and failed tasks raise the same error on every rank, naming
/// the task (see EnsembleConfig::failure_wait_seconds for the one exception).
class Ensemble {
 public:
  /// Splits `comm` into groups of config.group_size consecutive ranks. Collective. Throws
  /// Error(InvalidArgument) if the group size is < 1 or does not divide the size of `comm`.
  Ensemble(MPI_Comm comm, const EnsembleConfig& config);
  ~Ensemble();
  Ensemble(const Ensemble&) = delete;
  Ensemble& operator=(const Ensemble&) = delete;

  int groups() const;  ///< G
  int group() const;   ///< this rank's group, 0 .. G-1
  /// This rank's group communicator (the one tasks run on).
  MPI_Comm group_comm() const;

  /// The forward map: runs tasks 0 .. tasks-1 with this group's `runner` and returns every
  /// task's output on every rank. Collective. Throws Error(InvalidArgument) for tasks < 0 or
  /// while the tapes of an earlier forward() are still held (call backward() or discard()).
  /// With EnsembleConfig::resume, a killed run's manifest is taken in here (refused, on every
  /// rank and by name, when it is of another problem, another group size, or damaged): the
  /// tasks whose outputs it lists are not run, and those it lists as summed are not reversed.
  Outputs forward(std::int64_t tasks, TaskRunner& runner);

  /// The backward map: `ybar` holds the cotangents of every task's output, in the layout of
  /// forward()'s values, and is read on rank `root` only. Each group gets its tasks' cotangents
  /// in one message along the recorded mapping, reverses its tapes with `runner` (the same as
  /// in forward()) and the contributions are summed so that the result does not depend on the
  /// group count or on which group ran which task. Returns this rank's block of dJ/dm (the
  /// same on every group). Collective. Throws Error(InvalidArgument) before a forward(), or
  /// for a ybar of the wrong length (on every rank), or, resuming a backward pass, for a ybar
  /// other than the one the killed run was given.
  std::vector<double> backward(std::span<const double> ybar, TaskRunner& runner, int root = 0);

  /// With EnsembleConfig::resume: the identity of the next passes (EnsembleResumeConfig::
  /// identity), for a program that calls forward() more than once (an optimisation loop: give
  /// it the iteration, or a hash of the parameters, so that a program started again at another
  /// iteration is refused the killed one's manifest rather than mixing the two). Every rank
  /// must give the same text (agreed at the next forward()). Not collective.
  void set_resume_identity(std::string identity);

  /// Gives up the tapes of the last forward() without reversing them (and, with
  /// EnsembleConfig::resume, removes the manifest: nothing is left to resume). Collective.
  void discard(TaskRunner& runner);

  /// The recorded mapping: task -> (group, position), in task order, on every rank.
  const std::vector<TaskRecord>& mapping() const;

  /// Whether a pass threw because this rank's task failed and the other ranks of its group did
  /// not come to agree on it within EnsembleConfig::failure_wait_seconds (they are blocked in a
  /// collective call of the task): the job must be aborted (MPI_Abort). Rank-local; stays set.
  bool must_abort() const;
  EnsembleReport report() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rwd::ensemble
