#pragma once
// What one recording is and holds (its plan, schedule, checkpoints, phase, position in the
// sweeps and statistics) and the pieces every part of it uses: the stepper it drives, the
// replay check, its claims on the stores, its checkpoint keys and its action stream. The parts
// build on it in layers, each in a file of its own: Sweeps (the first sweep, recomputing,
// moving checkpoints between levels), Parking (parking, spilling, thinning, planning again,
// rebuilding a lost working state), ReverseSweep (the reverse sweep), and Recording::Impl.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "action_stream.hpp"
#include "checkpoint_io.hpp"
#include "replay_check.hpp"
#include "rewind/engine/recording.hpp"
#include "rewind/record/restart_sets.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine::detail {

using schedule::Action;

struct RecordingState {
  /// Plans the run (collective: settings and sizes agreed over the ranks), claims its budget,
  /// takes the stepper over and remembers x_0 for the replay check.
  RecordingState(Stepper& s, std::shared_ptr<Stores> st, const RecordingConfig& c);
  RecordingState(const RecordingState&) = delete;
  RecordingState& operator=(const RecordingState&) = delete;

  Stepper& stepper() { return *stepper_ptr; }
  void take_stepper();
  void release_stepper() noexcept;
  // Another recording took the stepper over while this one still needed its buffers.
  void evicted();
  void require_buffers(const char* call) const;
  void remember(Step step);
  void compare(Step step);
  // Collective: every rank throws if a recomputation on some rank missed the first sweep's bits.
  void settle_check();
  Claim full_claim() const;
  // The plan's budget, with the disk taken by checkpoints spilled there from RAM.
  Claim reverse_claim() const;
  // What the recording holds now, in the sizes every rank agreed on.
  Claim held_claim() const;
  Key key(Step step, Kind kind) const;
  // Every checkpoint still recorded is erased (RAM ones at once, disk ones at the stores' next
  // collective call) and the budget given back. Never collective, so a destructor can call it.
  void drop() noexcept;
  void put_restart(Step b, Level level);
  [[noreturn]] void broken(const std::string& what) const;
  void require_phase(Phase wanted, const char* call) const;
  Action next_action();
  void record_pullback(Step i, const schedule::Forward& f);

  Stepper* stepper_ptr;  // the stepper the recording drives (attach() changes it while parked)
  std::shared_ptr<Stores> stores;
  RecordingConfig config;
  record::RestartSets sets;
  CheckpointSizes sizes;
  Plan plan;
  detail::ActionStream stream;
  std::int64_t id = 0;  // storage::Key::recording
  std::optional<detail::CheckpointIo> io;
  RunStats stats;
  Phase phase = Phase::Recording;
  Step steps = 0;                            // n (0 while an online run has not ended)
  std::optional<Step> position;              // the stepper's working state x_position
  std::optional<schedule::Forward> forward;  // open Forward of the first sweep
  std::optional<schedule::Reverse> reverse;  // open Reverse of the reverse sweep
  std::optional<Step> adjoint_position;      // the adjoint has run down to this step
  bool end_forward_seen = false;
  bool work_lost = false;      // the host's buffers no longer hold x_n (lose_work())
  bool thinned = false;        // thin() was called and the reverse has not planned again
  bool overwritten = false;    // another recording took the stepper before this one parked
  bool tail_kept = false;      // thin() kept step n-1's pullback data
  bool final_dropped = false;  // thin(false) dropped the final state
  Step base = 0;               // thin() kept the restart checkpoint of x_base
  bool held_base = false;      // x_base is held by step base-1's pullback data (kept)
  // Stepper::pullback_from_states() was checked against a recorded step: its end fields, and
  // its start fields too (composed_pullback.cpp).
  bool end_sources_checked = false;
  bool sources_checked = false;
  Step served_below = 0;  // after replan(): the steps below this one reverse from kept data
  std::int64_t dropped_steps = 0;  // forward steps recomputing what the compressed budget dropped
  // replan_measured(): the plan it replaced, and the ratio the first sweep's checkpoints reached
  // (the replanned reverse keeps to that plan's compressed budget: Parking::replan).
  std::optional<Plan> first_plan;
  double reached_ratio = 0.0;
  detail::ReplayCheck check;
  // Made again from a durable tape (Recording::from_durable) until it is parked: the first sweep
  // is replayed without the stepper (its checkpoints' data come from the tape).
  bool importing = false;
  Step import_steps = 0;
  std::string import_check;  // the first sweep's replay-check prints
  const SteadyClock::time_point started = SteadyClock::now();
  double overlap_at_start = 0.0;
  PrefetchStats prefetch_at_start;
  storage::StoreStats ram_at_start;  // the RAM store's counts when the recording began
  CodecStats disk_codec_at_start;    // the disk stores' codec counts when it began
};

}  // namespace rwd::engine::detail
