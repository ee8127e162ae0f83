#pragma once
// Private: the two-level planner's table as a DiskPolicy, shared by twolevel and online.

#include <cstdint>
#include <memory>

#include "rewind/schedule/twolevel.hpp"
#include "segments.hpp"

namespace rwd::schedule::detail {

class TableImpl;

/// The table of twolevel for params (see twolevel.cpp). `shortcut_unlimited`: with a finite
/// disk budget, use the unlimited-disk plan when it fits the budget from the top segment; turn
/// it off when segments start with less free disk than the top one would have. choose() may be
/// asked any length up to params.steps with any free disk count; its plan never needs more.
class TwoLevelTable final : public DiskPolicy {
 public:
  TwoLevelTable(const ScheduleParams& params, TwoLevelMethod method, bool shortcut_unlimited = true,
                std::int64_t table_entries = kTwoLevelTableEntries);
  ~TwoLevelTable() override;
  const TwoLevelPlan& plan() const;
  /// Free disk slots of the top disk segment (kUnlimited for the unlimited layer).
  std::int64_t top_free_disk() const;
  DiskChoice choose(Step length, std::int64_t free_disk) const override;
  std::int64_t right_free_disk(std::int64_t free_disk) const override;

 private:
  std::unique_ptr<TableImpl> impl_;
};

}  // namespace rwd::schedule::detail
