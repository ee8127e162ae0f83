#pragma once
// Private: the two-level plan as an immutable value, shared by twolevel and online, and the
// process-wide cache that lets identical requests share one plan (twolevel_cache.cpp).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rewind/schedule/twolevel.hpp"
#include "segments.hpp"
#include "twolevel_layers.hpp"

namespace rwd::schedule::detail {

/// What a two-level plan is made for. Two requests that compare equal get the same plan.
struct TwoLevelRequest {
  Step steps = 0;
  std::int64_t ram = 0;
  std::int64_t disk = 0;  ///< or kUnlimited
  double write_cost = 0.0;
  double read_cost = 0.0;
  TwoLevelMethod method = TwoLevelMethod::Auto;
  std::int64_t table_entries = kTwoLevelTableEntries;
  /// With a finite disk budget, take the unlimited-disk plan when it fits the budget from the
  /// top segment. Off when segments start with less free disk than the top one would have.
  bool unlimited_shortcut = true;
};

/// The request for `params` (its steps, slots and costs).
TwoLevelRequest two_level_request(const ScheduleParams& params, TwoLevelMethod method,
                                  std::int64_t table_entries);

/// A disk segment as SegmentStream::push_disk starts one: `length` steps from a start on disk,
/// with `free_disk` more slots (kUnlimited for unlimited disk).
struct DiskSegment {
  Step length = 0;
  std::int64_t free_disk = 0;
};

/// The plan: what the planner found, and the decision of every disk segment a stream from its
/// roots reaches (one per distinct length and free disk count, at most 1 + 2 x the disk reads
/// of the schedule), not the tables it was chosen from. Per free disk count the decisions take
/// 8 bytes each, or 4 bytes per length when they cover at least half of the lengths, so a plan
/// is never larger than its tables. Immutable: safe to share between schedules and threads.
class TwoLevelDiskPlan final : public DiskPolicy {
 public:
  /// Keeps the decisions `tables` makes for the segments reachable from `roots`.
  TwoLevelDiskPlan(const TwoLevelPlan& summary, const TwoLevelTables& tables,
                   std::span<const DiskSegment> roots);

  const TwoLevelPlan& summary() const { return summary_; }
  /// Free disk slots of the run's top disk segment (kUnlimited for the unlimited layer).
  std::int64_t top_free_disk() const { return top_free_disk_; }

  /// Throws Error(Internal) for a segment no root reaches.
  DiskChoice choose(Step length, std::int64_t free_disk) const override;
  std::int64_t right_free_disk(std::int64_t free_disk) const override {
    return right_part_free_disk(top_, top_layer_, free_disk);
  }

  /// Decisions kept, and the bytes they and the plan take.
  std::size_t decisions() const;
  std::size_t bytes() const;

 private:
  // The decisions for one free disk count: code[i] for length[i], by increasing length, or
  // (length empty) code[L] for every length L, kNone where no segment of L steps is reached.
  struct Decisions {
    std::int64_t free_disk = 0;
    std::vector<std::uint32_t> length;
    std::vector<std::uint32_t> code;
  };
  static constexpr std::uint32_t kNone = 1;  // a split after 0 steps: no decision encodes to it

  TwoLevelPlan summary_;
  TopSegment top_;
  std::int64_t top_layer_;
  std::int64_t top_free_disk_;
  std::vector<Decisions> by_free_disk_;  // increasing free disk count
};

/// Plans `request` for the run: its roots are the run's top disk segment, if x_0 goes to disk.
/// Throws Error(InvalidArgument) if the budget cannot reverse the run or the costs are negative.
TwoLevelDiskPlan plan_two_level(const TwoLevelRequest& request);

/// Plans `request` (request.steps: the longest segment) for disk segments that start elsewhere,
/// as `online` reverses the intervals between the checkpoints it kept.
TwoLevelDiskPlan plan_two_level_segments(const TwoLevelRequest& request,
                                         std::span<const DiskSegment> roots);

/// The plan of `request`, shared with every caller of an equal request while it stays in the
/// process-wide cache (the 16 most recently used plans, at most 64 MiB of them). Thread-safe: a
/// request being planned is planned once, and other callers wait for it. A request that throws
/// is not kept.
std::shared_ptr<const TwoLevelDiskPlan> shared_two_level_plan(const TwoLevelRequest& request);

/// What the cache holds and has done since the process started.
struct TwoLevelCacheStats {
  std::int64_t planned = 0;  ///< requests planned (not found in the cache)
  std::int64_t reused = 0;   ///< requests answered with a plan found in the cache
  std::size_t plans = 0;     ///< plans held now
  std::size_t bytes = 0;     ///< bytes they take
};

TwoLevelCacheStats two_level_cache_stats();

}  // namespace rwd::schedule::detail
