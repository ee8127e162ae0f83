#pragma once
/// @file
/// Planning a recording: a budget in checkpoints or bytes, and the sizes of the stepper's
/// restart and pullback data, become a schedule and the slot counts it runs with. Every front
/// end (the generic API, PETSc, the ensemble) plans here. No MPI: the sizes come in already
/// agreed over the ranks.

#include <cstdint>
#include <optional>
#include <string>

#include "rewind/schedule/schedule.hpp"
#include "rewind/schedule/simulator.hpp"

namespace rwd::engine {

/// How a RAM slot count is read when the two kinds of checkpoint differ in size.
enum class SlotSize {
  /// A slot holds one restart checkpoint; pullback data larger than that takes proportionally
  /// more of the budget (the generic API: "10 slots" is 10 states' worth of memory).
  Restart,
  /// A slot holds one checkpoint of either kind (PETSc's -ts_trajectory_max_cps_ram counts
  /// checkpoints, a stage checkpoint being one): for planning with checkpoint sizes it is worth
  /// a step's pullback data with the state it ends in (any_slot_bytes()), what PETSc's CAMS
  /// gets for it.
  Any,
};

/// How the front end calls each setting, for error messages that say what to change (PETSc
/// passes its option names).
struct SettingNames {
  std::string schedule = "RecordingConfig::schedule";
  std::string ram = "RecordingConfig::params.ram";
  std::string disk = "RecordingConfig::params.disk";
  std::string ram_bytes = "RecordingConfig::ram_bytes";
  std::string no_pullback = "RecordingConfig::pullback_checkpoints = false";
  std::string pullback_data = "pullback data";  ///< what the front end calls it (PETSc: stages)
  std::string steps = "RecordingConfig::params.steps";
  /// How the user gives the step count a schedule needs in advance; empty when they cannot
  /// (PETSc with events: locating an event splits steps), and messages then do not ask for it.
  std::string give_steps = "RecordingConfig::params.steps";
  /// How the user runs without a step count, with an online schedule; empty when they cannot
  /// (PETSc with a fixed step: TS predicts the count and every schedule is given it).
  std::string online_schedule =
      "an online schedule (RecordingConfig::schedule online or dynamic) with "
      "RecordingConfig::params.steps = 0";
  std::string verify_tolerance = "RecordingConfig::verify_tolerance";
  std::string verify = "RecordingConfig::verify";
  std::string compress = "StoreConfig::codec";
  std::string compress_ratio = "RecordingConfig::compress_ratio";
  std::string lossy_pullbacks = "StoresConfig::lossy_pullbacks";
  std::string compress_disk = "StoresConfig::compress_disk";
  std::string compress_tolerance = "StoreConfig::codec.tolerance";
  std::string compress_precision = "StoreConfig::codec.precision";
  std::string compress_level = "StoreConfig::codec.level";
  // The stores' settings (StoresConfig::store).
  std::string directory = "StoreConfig::directory";
  std::string async_io = "StoreConfig::async_io";
  std::string max_staged_bytes = "StoreConfig::max_staged_bytes";
};

/// What to do when a schedule needs a step count that is not known, or not the one planned
/// for: "give the exact step count (<give_steps>) or choose <online_schedule>", without the
/// parts the front end cannot do.
std::string step_count_advice(const SettingNames& names);

/// What a recording asks for.
struct RecordingConfig {
  RecordingConfig() {
    // Disk I/O is not free: the defaults agree with the PETSc front end.
    params.write_cost = 1.0;
    params.read_cost = 1.0;
  }
  /// A registered schedule name, or "auto": the cheapest that fits (replayed for a known step
  /// count; the first online schedule that fits otherwise).
  std::string schedule = "auto";
  /// steps (0 = not known in advance: an online run that ends when Stepper::finished() says
  /// so), ram and disk slots (the slot holding x_0 included; disk may be kUnlimited), disk
  /// write and read costs in forward steps, period.
  schedule::ScheduleParams params;
  /// > 0: a RAM budget in bytes (this rank's checkpoints); it caps params.ram, and alone decides
  /// the RAM slots when params.ram is 0.
  double ram_bytes = 0.0;
  SlotSize slot_size = SlotSize::Restart;
  /// SlotSize::Any: a slot is worth a step's pullback data and the state it ends in even where
  /// that data holds the state (PETSc gives CAMS stages + 1 vectors a checkpoint for every
  /// method it does not call stiffly accurate, a first-same-as-last Runge-Kutta method whose
  /// last stage is the solution among them).
  bool slot_counts_state = false;
  /// Schedules may keep pullback data in RAM or on disk (PETSc: not -ts_trajectory_solution_only).
  bool pullback_checkpoints = true;
  /// Online runs: a step count the run cannot pass, if known (it makes restart sets exact).
  schedule::Step max_steps = 0;
  /// Replays check themselves: a hash of every state the first sweep reaches, with its norm
  /// and a random projection (32 bytes a field a step), is compared with the state a
  /// recomputation reaches; a difference stops the run on every rank with an error naming the
  /// step, the field and the difference's size, instead of a wrong gradient.
  bool verify = true;
  /// > 0: a recomputed field that differs from the first sweep's by at most this much,
  /// relative to its norm, is accepted and counted (RunStats::verify_tolerated): for programs
  /// whose recomputation cannot give the same bits. 0: the same bits, nothing less.
  double verify_tolerance = 0.0;
  /// Appended to a replay-check error: what the front end did that could explain a difference.
  std::string verify_note;
  /// With compressed RAM checkpoints (StoreConfig::codec), the compression ratio plans count on:
  /// the RAM budget (RecordingConfig::ram_bytes, or params.ram slots of uncompressed
  /// checkpoints) then holds as many checkpoints as their compressed bytes fit. 1 (the
  /// default): plan as if uncompressed (compression saves memory and buys no checkpoint).
  /// > 1: this ratio. 0: measured on x_0 when the recording is made (each rank compresses its
  /// restart data once; the smallest ratio of any rank, times kCompressMargin; below
  /// kCompressMinRatio it plans as 1) -- a guess: an x_0 with large constant regions compresses
  /// far better than the states and stages that follow it (PETSc's ex5adj: 15.8 at x_0, about
  /// 2 over the run). Checkpoints that compress worse than planned never take more than the
  /// budget: the recording moves them to disk where it has disk room, or drops and recomputes
  /// them (docs/runtime.md, "Budgets that count compressed bytes"); only when nothing can be
  /// dropped does it stop with an error on every rank (Plan::compressed_budget).
  double compress_ratio = 1.0;
  /// Where a given compress_ratio comes from, for the views (empty: "given"), e.g. a front end
  /// that plans with what an earlier run's checkpoints reached.
  std::string compress_ratio_source = {};
  /// The first sweep is a run again of one taken before (its recording was dropped to make room:
  /// an ensemble's cut tape, recorded again before its reverse): its steps reach the stepper as
  /// recomputations (StepContext::recompute), so output and accumulators are not done twice.
  bool first_sweep_again = false;
  SettingNames names;
};

/// Bytes of one checkpoint of each kind on the rank where it is largest.
struct CheckpointSizes {
  std::int64_t restart = 0;   ///< restart data: every state variable some step writes
  std::int64_t pullback = 0;  ///< one step's pullback data
  std::int64_t state = 0;     ///< every state variable (a parked recording's final state)
  /// Step i's pullback data holds x_{i+1} on every rank (Stepper::next_state_in_pullback()).
  bool pullback_holds_next = false;
  /// Step i's pullback data is made of x_i and x_{i+1} on every rank
  /// (Stepper::pullback_from_states()).
  bool pullback_from_states = false;
  /// The compression ratio RAM checkpoints are planned with (RecordingConfig::compress_ratio,
  /// agreed over the ranks): 1 plans the sizes above; more plans each kind at its size divided
  /// by this ratio, rounded up.
  double compress_ratio = 1.0;
  /// Where the ratio comes from, for the views: "given", or "measured on x_0 (R)" with the
  /// smallest measured ratio R.
  std::string compress_source = {};
};

/// The planning margin applied to a ratio measured on x_0, and the ratio below which a
/// measured one plans as uncompressed.
inline constexpr double kCompressMargin = 0.8;
inline constexpr double kCompressMinRatio = 1.05;
/// The largest ratio a plan takes (a larger one is an error naming
/// RecordingConfig::compress_ratio).
inline constexpr double kMaxCompressRatio = 1000.0;
/// The ratio a plan counts on for one it measured: with kCompressMargin, or 1 (as if
/// uncompressed) below kCompressMinRatio.
inline double ratio_with_margin(double measured) {
  const double planned = measured * kCompressMargin;
  return planned >= kCompressMinRatio ? planned : 1.0;
}

/// A planned recording: the schedule and what it runs with.
struct Plan {
  std::string schedule;             ///< the registered name ("auto" resolved)
  schedule::ScheduleParams params;  ///< what the schedule is built from
  bool stores_pullback = false;     ///< it keeps pullback data outside the stepper's buffers
  /// It reverses steps from two states, composing their pullback data
  /// (schedule::ScheduleInfo::composes_pullback with params.pullback_from_states).
  bool composes_pullback = false;
  std::optional<double> cost;  ///< the replayed cost, when the step count is known
  /// The forward steps the replay ran (the first sweep's and every recomputation), when the
  /// step count is known.
  std::optional<std::int64_t> forward_steps;
  /// Most disk checkpoints the schedule holds at once, when it was replayed (n known).
  std::optional<std::int64_t> disk_peak;
  /// RAM slots as the budget gives them: for restart checkpoints, and for schedules that store
  /// pullback data (fewer when pullback data is larger, or none when it is not allowed).
  std::int64_t restart_slots = 0;
  std::optional<std::int64_t> pullback_slots;
  /// The most RAM bytes the plan's checkpoints can take on one rank.
  double ram_bytes_bound = 0.0;
  /// Bytes of one unit when the schedule plans with checkpoint sizes (params.ram_units > 0):
  /// the budget is params.ram_units of them, a restart checkpoint takes params.restart_units
  /// and one step's pullback data params.pullback_units; 0 otherwise.
  std::int64_t unit_bytes = 0;
  /// Bytes one RAM slot of the budget stands for, when planned in units (the larger kind's
  /// size for SlotSize::Any, a restart checkpoint's otherwise) or when restart checkpoints fill
  /// SlotSize::Any slots by bytes: claims on shared stores count the slots the live bytes fill
  /// (claimed_slots()), not the checkpoints. 0 otherwise.
  std::int64_t slot_bytes = 0;
  /// The checkpoint sizes it was planned for (agreed over the ranks; uncompressed, with the
  /// ratio the plan counts on).
  CheckpointSizes sizes;
  /// > 0 when the plan counts on compression (sizes.compress_ratio > 1): the RAM bytes this
  /// recording's compressed checkpoints may take on any rank, the budget the plan was made
  /// for. The recording measures what each RAM checkpoint takes, and keeps to this.
  double compressed_budget = 0.0;
  /// With compressed_budget: the same budget's plan without compression, for the views (RAM
  /// restart slots, and its forward steps when the step count is known).
  std::int64_t uncompressed_restart_slots = 0;
  std::optional<std::int64_t> uncompressed_forward_steps;
  /// With compressed_budget: what the user can change when checkpoints do not fit, and what the
  /// front end calls pullback data, by the front end's names.
  std::string over_budget_advice, pullback_data;
};

/// True when the two kinds of checkpoint differ in size, or pullback data holds the next state:
/// the schedules that know sizes (`mixed`, `disk-mixed`) then plan in units (and the budget's
/// slots are counted by bytes).
bool two_sizes(const CheckpointSizes& sizes);

/// The bytes a SlotSize::Any slot stands for: one step's pullback data with the state it ends
/// in (the pullback data alone when it holds that state, unless `counts_state`:
/// RecordingConfig::slot_counts_state), and at least a restart checkpoint.
std::int64_t any_slot_bytes(const CheckpointSizes& sizes, bool counts_state = false);

/// The RAM slots of `slot_bytes` each that `bytes` fill (rounded up; 0 for no bytes).
std::int64_t slots_filled(double bytes, std::int64_t slot_bytes);

/// The RAM slots that `count` checkpoints of `bytes` in all claim on a budget under `plan`: the
/// slots the bytes fill when the plan counts them so (Plan::slot_bytes), else the count. The
/// one policy for a recording's claims (planned, held and parked).
std::int64_t claimed_slots(const Plan& plan, std::int64_t count, double bytes);

/// Throws Error(InvalidArgument) naming `name` unless `ratio` is a RecordingConfig::compress_ratio:
/// 0, or from 1 to kMaxCompressRatio. The one check of every front end (options and setters).
void check_compress_ratio(double ratio, const std::string& name);

/// The sizes checkpoints are planned with: `sizes` with each kind divided by its compression
/// ratio (rounded up), and a ratio of 1.
CheckpointSizes stored_sizes(const CheckpointSizes& sizes);

/// Plans a recording. Throws Error(InvalidArgument) naming what to change when no schedule
/// fits, the named schedule does not accept the budget, or the budget holds no checkpoint.
/// Identical inputs reuse an earlier plan (a process-wide cache: `auto` replays every schedule,
/// and some plans take seconds at 10^5 steps). Thread-safe; not collective.
Plan plan_recording(const RecordingConfig& config, const CheckpointSizes& sizes);

/// What `plan`'s schedule costs, replayed in the simulator, when a disk write and a disk read
/// cost `write_cost` and `read_cost` forward steps instead of the costs it was planned with
/// (plan.params): the price of a plan made with one estimate of the disk, on a disk that has
/// another. Needs the step count (plan.params.steps > 0). Not collective.
schedule::SimulationResult replay_plan(const Plan& plan, double write_cost, double read_cost);

/// Plans made and plans served from the cache since the process started.
struct PlanCacheStats {
  std::int64_t planned = 0;
  std::int64_t reused = 0;
};
PlanCacheStats plan_cache_stats();

}  // namespace rwd::engine
