/* rewind's PETSc front end: the `rewind` TSTrajectory type.

   Programs that link rewind call TSTrajectoryRegisterRewind() once after PetscInitialize();
   unmodified programs get the type with `-dll_append <build>/lib/librewind.so`, which makes
   PETSc call PetscDLLibraryRegister_rewind(). Either way, `-ts_trajectory_type rewind` then
   selects it. Options (all listed by -help):

     -ts_trajectory_max_cps_ram <n>          RAM checkpoints (default: store everything)
     -ts_trajectory_max_cps_disk <n>         disk checkpoints, -1 = unlimited (default 0)
     -ts_trajectory_dirname <dir>            directory for the parallel HDF5 checkpoint file
     -ts_trajectory_keep_files               keep the checkpoint file after the run
     -ts_trajectory_solution_only            never store stages (each adjoint step recomputes)
     -ts_trajectory_view / -ts_trajectory_monitor
     -ts_trajectory_rewind_schedule <name>   auto, revolve, storeall, periodic, ...
     -ts_trajectory_rewind_write_cost <w>    disk write cost in forward steps, or auto (measured,
                                             the default)
     -ts_trajectory_rewind_read_cost <r>     disk read cost in forward steps, or auto (measured,
                                             the default)
     -ts_trajectory_rewind_async <bool>      disk I/O on a background thread (default true)
     -ts_trajectory_rewind_max_staged_bytes <b>  bytes of staging buffers a rank (default
                                             268435456, 256 MiB)
     -ts_trajectory_rewind_ram_bytes <b>     RAM budget in bytes (caps max_cps_ram)
     -ts_trajectory_rewind_steps <n>         the step count, where TS cannot predict it
     -ts_trajectory_rewind_verify <bool>     check recomputed states against the forward run
                                             (default true; an error instead of a wrong
                                             gradient when they differ)
     -ts_trajectory_rewind_verify_tolerance <r>  accept a recomputed state within r of the
                                             forward run's, relative (default 0: the same bits)
     -ts_trajectory_rewind_recompute_solves  TSSolve calls that continue a run may recompute
                                             the earlier solves' steps (the program changes
                                             nothing between them; default: kept whole)
     -ts_trajectory_rewind_resume <bool>     survive a kill, and resume a killed run
     -ts_trajectory_rewind_resume_interval <n>  steps between durable states (0: from the disk
                                             budget)
     -ts_trajectory_rewind_recompute_warning <x>  warn when a plan recomputes more than x times
                                             the steps it reverses (default 10; 0: never)
     -ts_trajectory_rewind_fsal_restart <bool>  restart first-same-as-last methods from the
                                             solution where that gives the same bits
     -ts_trajectory_rewind_compress <codec>  compress checkpoints: none, zstd or blosc
                                             (lossless; disk checkpoints too), or zfp (lossy,
                                             RAM only: solution checkpoints within an
                                             absolute tolerance, stages exact)
     -ts_trajectory_rewind_compress_tolerance <e>  zfp: the largest error of a restored value
     -ts_trajectory_rewind_compress_precision <bits>  zfp-precision: bits kept
     -ts_trajectory_rewind_compress_level <n>  zstd (1-19), blosc (1-9): compression level
     -ts_trajectory_rewind_compress_lossy_pullbacks <bool>  zfp: stages lossy too
     -ts_trajectory_rewind_compress_disk <bool>  lossless codecs: disk checkpoints too
                                             (default true)
     -ts_trajectory_rewind_compress_ratio <r>  plan the RAM budget with checkpoints of 1/r
                                             their size (default 1: as if uncompressed; 0:
                                             measured on the initial state)

   Events (TSSetEventHandler) and a TSSolve that continues the step numbering split a run into
   segments, each planned with what the segments before it leave of the budget; see
   docs/petsc.md, "Events and runs in segments".
*/
#ifndef REWIND_PETSC_TRAJECTORY_H
#define REWIND_PETSC_TRAJECTORY_H

#include <petscts.h>

#define TSTRAJECTORYREWIND "rewind"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the `rewind` trajectory type. Not collective; safe to call more than once. */
PetscErrorCode TSTrajectoryRegisterRewind(void);

/* Called by PETSc when librewind.so is loaded with -dll_append. */
PetscErrorCode PetscDLLibraryRegister_rewind(void);

/* Setters matching the options above (logically collective on the trajectory); a cost of
   PETSC_DETERMINE means "auto" (measured). */
PetscErrorCode TSTrajectoryRewindSetSchedule(TSTrajectory, const char[]);
PetscErrorCode TSTrajectoryRewindSetCosts(TSTrajectory, PetscReal write_cost, PetscReal read_cost);
PetscErrorCode TSTrajectoryRewindSetAsync(TSTrajectory, PetscBool);
PetscErrorCode TSTrajectoryRewindSetMaxCheckpoints(TSTrajectory, PetscInt ram, PetscInt disk);
PetscErrorCode TSTrajectoryRewindSetVerify(TSTrajectory, PetscBool);
/* -ts_trajectory_rewind_verify_tolerance: 0 (the default) asks every recomputed state for the
   forward run's bits; 0 < tolerance < 1 accepts one within it, relative to its norm. */
PetscErrorCode TSTrajectoryRewindSetVerifyTolerance(TSTrajectory, PetscReal tolerance);
/* -ts_trajectory_rewind_recompute_solves: the program changes nothing between TSSolve calls
   that continue a run (or restores each solve's model before its adjoint), so their steps may
   be recomputed (docs/petsc.md, "Events and runs in segments"). */
PetscErrorCode TSTrajectoryRewindSetRecomputeSolves(TSTrajectory, PetscBool);
/* -ts_trajectory_rewind_ram_bytes (0: no byte budget) and -ts_trajectory_rewind_max_staged_bytes:
   whole numbers of bytes, at most 1e18. */
PetscErrorCode TSTrajectoryRewindSetRAMBytes(TSTrajectory, PetscReal bytes);
PetscErrorCode TSTrajectoryRewindSetMaxStagedBytes(TSTrajectory, PetscReal bytes);
/* -ts_trajectory_rewind_steps (0: count the steps). */
PetscErrorCode TSTrajectoryRewindSetSteps(TSTrajectory, PetscInt steps);
/* -ts_trajectory_rewind_resume and -ts_trajectory_rewind_resume_interval (0: from the disk
   budget). */
PetscErrorCode TSTrajectoryRewindSetResume(TSTrajectory, PetscBool resume, PetscInt interval);
/* -ts_trajectory_rewind_recompute_warning: warn (once, rank 0, on stderr) when a plan recomputes
   more than `multiple` times the steps it reverses, naming the RAM budget that would not (default
   10; 0: never warn). */
PetscErrorCode TSTrajectoryRewindSetRecomputeWarning(TSTrajectory, PetscReal multiple);
/* -ts_trajectory_rewind_compress and -ts_trajectory_rewind_compress_tolerance: checkpoints
   compressed by a lossless codec ("none", "zstd", "blosc"; RAM and, unless
   TSTrajectoryRewindSetCompressDisk says no, disk), which keeps every gradient bit, or by
   "zfp", lossy: a restored solution is within `tolerance` (an absolute error, > 0) of the one
   stored, stage values keep their bits, and the gradient is then close to store-all's, not equal
   (docs/runtime.md, "Lossy checkpoints", gives measured errors). An unknown codec or a bad
   tolerance is an error naming the setter. */
PetscErrorCode TSTrajectoryRewindSetCompress(TSTrajectory, const char codec[], PetscReal tolerance);
/* -ts_trajectory_rewind_compress_precision: zfp-precision's bits kept of each block of four
   values (1 to 64); call it before TSTrajectoryRewindSetCompress(tj, "zfp-precision", 0). */
PetscErrorCode TSTrajectoryRewindSetCompressPrecision(TSTrajectory, PetscInt bits);
/* -ts_trajectory_rewind_compress_level: zstd's (1 to 19) or blosc's (1 to 9) compression level,
   0 (the default) for zstd 1 and blosc 5. A higher level stores smaller checkpoints for more
   time compressing (ex5adj's states: zstd 2.05x at level 1, 2.71x at 3); the bits restored are
   the same. Call it before TSTrajectoryRewindSetCompress, which checks the pair. */
PetscErrorCode TSTrajectoryRewindSetCompressLevel(TSTrajectory, PetscInt level);
/* -ts_trajectory_rewind_compress_lossy_pullbacks: with a lossy codec, stage values are compressed
   lossily too (more checkpoints in a budget planned with a ratio, a larger gradient error). */
PetscErrorCode TSTrajectoryRewindSetCompressLossyPullbacks(TSTrajectory, PetscBool lossy);
/* -ts_trajectory_rewind_compress_disk (default true): with a lossless codec, disk checkpoints are
   compressed too, on the I/O thread where they are written behind and read ahead (fewer bytes
   moved; the file keeps room for the values). A lossy codec never compresses disk checkpoints. */
PetscErrorCode TSTrajectoryRewindSetCompressDisk(TSTrajectory, PetscBool compress);
/* -ts_trajectory_rewind_compress_ratio: the compression ratio the RAM budget is planned with
   (1, the default: as if uncompressed; > 1: the budget's bytes hold checkpoints of 1/ratio their
   size; 0: measured on the initial state). Checkpoints that compress worse than planned move to
   the disk budget's room; without it they are dropped (pullback data only when there is a disk
   budget) and recomputed, the reverse planned again from x_0 with the ratio reached when the
   first sweep dropped some; a run stops, on every rank, only when nothing can be dropped.
   Another value is an error naming the setter. */
PetscErrorCode TSTrajectoryRewindSetCompressRatio(TSTrajectory, PetscReal ratio);

/* A function told of every step of every rewind run in the process, on every rank: sweep is
   "forward" when the first sweep reached step `step` (before the trajectory stores anything of
   it), "adjoint" when `step` adjoint steps are done and the next one's data is in the TS. For
   progress reports of long runs, and for tools that hold a run at a chosen step (rewind's kill
   tests load such a hook with -dll_append). An error it returns stops the run on that rank
   with a message naming the hook. Process-wide; NULL removes it. Not collective. */
typedef PetscErrorCode (*TSTrajectoryRewindProgressFn)(const char sweep[], PetscInt step,
                                                       void* ctx);
PetscErrorCode TSTrajectoryRewindSetProgressHook(TSTrajectoryRewindProgressFn hook, void* ctx);

/* The schedule of the current (or last) run, as planned at set(0), or after the second step
   when disk costs are measured (after the first with an event handler or a one-step run):
   "auto" resolved to the schedule it chose, costs resolved to what "auto" measured. Budgets are
   in checkpoints, -1 meaning unlimited; max_cps_ram counts as -ts_trajectory_max_cps_ram does,
   in stage checkpoints (a step's stages with its solution), whatever the schedule stores: one
   that keeps solutions only fills them with more, smaller checkpoints. Identical on every rank.
   Errors if no run has been planned yet. */
typedef struct {
  char schedule[64];
  PetscInt steps; /* the step count planned for, 0 if it was unknown (online) */
  PetscInt max_cps_ram, max_cps_disk;
  PetscReal write_cost, read_cost; /* in forward steps */
  PetscBool online, stores_stages;
} TSTrajectoryRewindSchedule;
PetscErrorCode TSTrajectoryRewindGetSchedule(TSTrajectory, TSTrajectoryRewindSchedule*);

/* Statistics of the last adjoint run on this rank, as -ts_trajectory_view prints them; byte
   counts are whole numbers held in a PetscReal. ram_peak counts as -ts_trajectory_max_cps_ram
   does: stage checkpoints; when a solution checkpoint is smaller, the slots of a step's stages
   with their solution that the peak's bytes fill (ram_peak_checkpoints: how many checkpoints of
   either kind were live at the peak). */
typedef struct {
  PetscInt steps, forward_steps, recomputed, adjoint_steps;
  PetscInt ram_writes, ram_reads, ram_peak, disk_writes, disk_reads, disk_peak;
  PetscReal bytes_written, io_seconds, io_hidden_seconds, recompute_seconds;
  PetscReal verify_seconds;      /* hashing states for the replay check */
  PetscInt segments;             /* recordings the run was planned in (1 without events) */
  PetscInt events;               /* events located in the forward run */
  PetscInt thinned;              /* segments thinned to make room for later ones */
  PetscInt rerecorded;           /* forward steps run again for thinned segments */
  PetscReal ram_peak_bytes;      /* most bytes held in RAM checkpoints at once (this rank) */
  PetscInt ram_peak_checkpoints; /* most RAM checkpoints live at once, of either size */
  PetscReal disk_peak_bytes;     /* most bytes held in disk checkpoints at once (this rank's part
                                    of the parallel HDF5 file) */
  /* Compressed RAM checkpoints (-ts_trajectory_rewind_compress): the bytes stored on this rank
     and what they held before compression (ram_peak and the other byte counts above count them
     uncompressed); the ratio the budget was planned with (-ts_trajectory_rewind_compress_ratio;
     1: as if uncompressed), the RAM checkpoints the budget holds as planned and without
     compression, and the checkpoints that compressed worse than planned and were moved to
     disk. */
  PetscReal ram_stored_bytes, ram_uncompressed_bytes, compress_ratio;
  PetscInt ram_checkpoints_planned, ram_checkpoints_uncompressed, moved_to_disk;
  /* Compressed disk checkpoints (-ts_trajectory_rewind_compress_disk): the bytes written to the
     file on this rank and what they held before compression (0 and 0 when disk checkpoints are
     not compressed); durable states of a resumable run included. */
  PetscReal disk_stored_bytes, disk_uncompressed_bytes;
  /* Compressed RAM checkpoints that did not fit their budget with no disk room to move them to:
     the checkpoints dropped, the forward steps that recomputed them where the plan needed them,
     and, when the first sweep dropped some, the ratio its checkpoints reached (worst rank) and
     the one its reverse was planned again with from x_0 (0 and 0: it was not; 1: as
     uncompressed). */
  PetscInt dropped, dropped_steps;
  PetscReal reached_ratio, replanned_ratio;
} TSTrajectoryRewindStats;
PetscErrorCode TSTrajectoryRewindGetStats(TSTrajectory, TSTrajectoryRewindStats*);

#ifdef __cplusplus
}
#endif

#endif
