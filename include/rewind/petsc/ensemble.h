/* rewind's ensemble map for PETSc programs: K independent TS adjoint tasks (sources, samples,
   members) spread over groups of ranks. The forward pass hands tasks to groups as they come free
   and records which group ran which; each task's TS, with its rewind trajectory, stays on its
   group until its TSAdjointSolve. The backward pass sends each group the cotangents of exactly
   its tasks' outputs along that mapping; the gradient contributions are summed so that the
   result does not depend on the number of groups or on which group ran which task.

   Options (listed by -help), read by RewindEnsembleSetFromOptions():
     -rewind_ensemble_group_size <g>        ranks per group (must divide the size; default 1)
     -rewind_ensemble_assign <dynamic|static>
     -rewind_ensemble_max_cps_ram <n>       RAM checkpoints all of a group's tapes share (-1: no
                                            limit beyond each task's own budget)
     -rewind_ensemble_max_cps_disk <n>      disk checkpoints all of a group's tapes share
     -rewind_ensemble_dirname <dir>         directory of the groups' checkpoint files (default .)
     -rewind_ensemble_async <bool>          disk I/O behind the computation (default true)
     -rewind_ensemble_claim <costliest|task>  order of dynamic claims: the costliest first where
                                            RewindEnsembleSetTaskCosts gave every cost (default)
     -rewind_ensemble_failure_wait <s>      how long a rank whose task failed waits for its group
                                            (default 30; then RewindEnsembleGetMustAbort)
     -rewind_ensemble_resume <bool>         keep a manifest in -rewind_ensemble_dirname (outputs,
                                            partial sums) and go on from a killed run's: the same
                                            command again, on any multiple of g ranks
                                            (docs/ensemble.md, "Resume after a kill")
     -rewind_ensemble_compress <codec>      compress every group's RAM checkpoints: none (the
                                            default), zstd or blosc (lossless: the same bits),
                                            zfp or zfp-precision (lossy: restart states within
                                            the tolerance, stage values exact)
     -rewind_ensemble_compress_tolerance <e>  zfp: the largest error of a restored value
     -rewind_ensemble_compress_precision <bits>  zfp-precision: bits kept
     -rewind_ensemble_compress_level <n>    zstd (1-19), blosc (1-9): compression level
     -rewind_ensemble_compress_lossy_pullbacks <bool>  zfp: stage values lossy too
     -rewind_ensemble_compress_disk <bool>  lossless codecs: the groups' disk checkpoints too
                                            (default true)
     -rewind_ensemble_view                  RewindEnsembleView on stdout after each backward pass
   Each task's own budget and schedule are the usual -ts_trajectory_* options of its TS.

   Every function is collective on the ensemble's communicator unless it says otherwise; the
   task callbacks are called on every rank of the task's group, collectively on its
   communicator. */
#ifndef REWIND_PETSC_ENSEMBLE_H
#define REWIND_PETSC_ENSEMBLE_H

#include <petscts.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _n_RewindEnsemble* RewindEnsemble;

/* What the program does for one task. `ctx` is the pointer given to RewindEnsembleSetTasks. */
typedef struct {
  /* Creates task `task`'s TS on `group`: problem, time span, initial state (TSSetSolution),
     TSSetSaveTrajectory, and TSSetFromOptions. The ensemble makes its trajectory type rewind
     and gives it the group's stores; it calls TSSolve(ts, NULL). Called again in the backward
     pass for a task whose tape was cut to make room: it must make the same task. */
  PetscErrorCode (*create)(PetscInt task, MPI_Comm group, void* ctx, TS* ts);
  /* After TSSolve: the task's output, RewindEnsembleSetSizes' output_size values, the same on
     every rank of the group. */
  PetscErrorCode (*output)(PetscInt task, TS ts, void* ctx, PetscScalar y[]);
  /* Before TSAdjointSolve: TSSetCostGradients (and anything else the adjoint needs) from the
     cotangent of the output, output_size values. */
  PetscErrorCode (*seed)(PetscInt task, TS ts, void* ctx, const PetscScalar ybar[]);
  /* After TSAdjointSolve: this rank's block of the task's gradient contribution,
     RewindEnsembleSetSizes' gradient_size values. */
  PetscErrorCode (*gradient)(PetscInt task, TS ts, void* ctx, PetscScalar g[]);
  /* Optional: frees what create() made besides the TS (the ensemble destroys the TS). */
  PetscErrorCode (*destroy)(PetscInt task, TS ts, void* ctx);
} RewindEnsembleTaskOps;

PetscErrorCode RewindEnsembleCreate(MPI_Comm comm, RewindEnsemble* ens);
/* Collective: the groups' checkpoint files go, then the directories rewind made for them. */
PetscErrorCode RewindEnsembleDestroy(RewindEnsemble* ens);
/* Reads the -rewind_ensemble_* options and splits the communicator into groups. */
PetscErrorCode RewindEnsembleSetFromOptions(RewindEnsemble ens);
PetscErrorCode RewindEnsembleSetTasks(RewindEnsemble ens, const RewindEnsembleTaskOps* ops,
                                      void* ctx);
/* output_size: values in each task's output (the same on every rank); gradient_size: this
   rank's block of the gradient (the same on the ranks with the same rank in every group). */
PetscErrorCode RewindEnsembleSetSizes(RewindEnsemble ens, PetscInt output_size,
                                      PetscInt gradient_size);
/* This rank's group and its communicator (after RewindEnsembleSetFromOptions; not collective). */
PetscErrorCode RewindEnsembleGetGroup(RewindEnsemble ens, PetscInt* group, PetscInt* groups,
                                      MPI_Comm* comm);
/* An estimate of each task's cost (its step count, say; any unit, the same on every rank) for
   tasks 0 .. ntasks-1: with dynamic assignment the costliest is claimed first (long tasks do
   not finish last; -rewind_ensemble_claim task keeps task order). A task without an estimate
   (k >= ntasks, or a negative cost) makes the order task order. Not collective. */
PetscErrorCode RewindEnsembleSetTaskCosts(RewindEnsemble ens, PetscInt ntasks,
                                          const PetscReal costs[]);
/* After RewindEnsembleForward or RewindEnsembleBackward returned an error: whether this rank's
   task failed and the other ranks of its group did not come to agree on it within
   -rewind_ensemble_failure_wait seconds (they are blocked in a collective call of the task and
   cannot be told): the program must then call MPI_Abort. Not collective. */
PetscErrorCode RewindEnsembleGetMustAbort(RewindEnsemble ens, PetscBool* must_abort);
/* With -rewind_ensemble_resume: text that names the next passes besides the program and its
   options (which the identity holds already): a program that calls RewindEnsembleForward more
   than once (an optimisation loop) gives the iteration, or a hash of its parameters, so that a
   program started again at another iteration is refused the killed one's manifest rather than
   mixing the two. Every rank must give the same text (agreed at the next forward pass). Not
   collective. */
PetscErrorCode RewindEnsembleSetResumeIdentity(RewindEnsemble ens, const char text[]);
/* The forward map over tasks 0 .. ntasks-1. y (ntasks * output_size values, may be NULL) gets
   every task's output in task order on every rank. */
PetscErrorCode RewindEnsembleForward(RewindEnsemble ens, PetscInt ntasks, PetscScalar y[]);
/* The backward map. ybar (ntasks * output_size values, in the layout of y) is read on rank 0
   only; g gets this rank's block of the summed gradient (gradient_size values). */
PetscErrorCode RewindEnsembleBackward(RewindEnsemble ens, const PetscScalar ybar[],
                                      PetscScalar g[]);
/* The last passes as one JSON object (mapping, times, bytes sent in the backward, spills and
   cuts, peak memory per rank); the string belongs to the ensemble. Not collective. */
PetscErrorCode RewindEnsembleGetReport(RewindEnsemble ens, const char** json);
/* What the last passes did as a whole. Not collective: the same on every rank but
   peak_rss_bytes. Errors (PETSC_ERR_ORDER) before a RewindEnsembleForward has completed. */
typedef struct {
  PetscInt tasks;             /* of the last forward pass */
  PetscInt groups;            /* G */
  PetscInt group_size;        /* g, ranks per group */
  PetscReal forward_seconds;  /* the forward pass, slowest rank */
  PetscBool costliest_first;  /* its dynamic claims took the costliest task first
                                 (-rewind_ensemble_claim, RewindEnsembleSetTaskCosts) */
  PetscBool reversed;         /* RewindEnsembleBackward has completed since: the fields below are
                                 set (0 before) */
  PetscReal backward_seconds; /* the backward pass, slowest rank */
  PetscReal cotangent_bytes;  /* the cotangents the backward pass handed to MPI, all ranks */
  PetscReal reduction_bytes;  /* the gradient reduction's bytes handed to MPI, all ranks */
  PetscInt spilled;           /* tasks whose RAM checkpoints were moved to disk to make room */
  PetscInt cut;               /* tasks whose checkpoints were dropped and forward run again */
  PetscReal peak_rss_bytes;   /* this rank's resident-memory peak since the forward pass began
                                 (Linux; elsewhere since the process started) */
  PetscInt resumed_generation; /* -rewind_ensemble_resume: the generation of the killed run's
                                  manifest the last forward pass went on from (0: afresh) */
  PetscInt outputs_resumed;    /* tasks whose output came from that manifest (not run forward) */
  PetscInt gradients_resumed;  /* of those, tasks whose gradient it had summed (not reversed) */
  /* -rewind_ensemble_compress: what the group stores' codec did in the last forward and backward
     pass, summed over the ranks (each rank of a group compresses its own blocks; bytes written,
     recomputations' included, not bytes held; 0 without a codec; set after a backward pass) */
  PetscReal ram_stored_bytes;        /* RAM checkpoints: the bytes stored */
  PetscReal ram_uncompressed_bytes;  /* and what they were before compression */
  PetscReal disk_stored_bytes;       /* disk checkpoints (lossless codecs), likewise */
  PetscReal disk_uncompressed_bytes;
  PetscReal codec_seconds; /* compressing and decompressing, on any thread */
} RewindEnsembleStats;
PetscErrorCode RewindEnsembleGetStats(RewindEnsemble ens, RewindEnsembleStats* stats);

/* Where task `task` (0 .. tasks-1 of the last forward pass) ran and what it cost. Not
   collective: the records are gathered from the groups, so every rank gets the same record.
   Errors (PETSC_ERR_ORDER) before a RewindEnsembleForward has completed, and
   (PETSC_ERR_ARG_OUTOFRANGE) for a task outside 0 .. tasks-1. Times are seconds since the
   start of the pass on the group's rank 0; costs are counted on the group's rank 0. */
typedef struct {
  PetscInt group;                         /* the group that ran it, 0 .. G-1 */
  PetscInt position;                      /* its place in its group's forward order, 0 first */
  PetscReal forward_begin, forward_end;   /* its TSSolve in the forward pass */
  PetscBool reversed;                     /* RewindEnsembleBackward has completed since: the
                                             fields below are set (0 before) */
  PetscReal backward_begin, backward_end; /* its TSAdjointSolve in the backward pass (and, if it
                                             was cut, its TSSolve run again before it) */
  PetscInt steps;                         /* its time steps */
  PetscInt forward_steps;                 /* every forward step: first sweep and recomputations */
  PetscInt recomputed;                    /* forward_steps - steps */
  PetscInt adjoint_steps;                 /* its adjoint steps */
  PetscReal ram_peak_bytes;               /* most bytes in its RAM checkpoints at once */
  PetscReal disk_bytes_written;           /* bytes its trajectory wrote to disk checkpoints */
  PetscBool spilled;                      /* its RAM checkpoints were moved to disk to make room */
  PetscBool cut;                          /* its checkpoints were dropped to make room and its
                                             forward run again before its adjoint */
  PetscBool forward_resumed;              /* its output came from a killed run's manifest; its
                                             forward runs again before its adjoint (cut) */
  PetscBool backward_resumed;             /* its gradient was summed in the killed run */
} RewindEnsembleTaskRecord;
PetscErrorCode RewindEnsembleGetTaskRecord(RewindEnsemble ens, PetscInt task,
                                           RewindEnsembleTaskRecord* record);

/* A few lines: groups, tasks per group, times, bytes, spills and cuts. */
PetscErrorCode RewindEnsembleView(RewindEnsemble ens, PetscViewer viewer);

#ifdef __cplusplus
}
#endif

#endif
