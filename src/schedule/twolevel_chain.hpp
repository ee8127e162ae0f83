#pragma once
// Private: the chain of disk checkpoints above the tabulated two-level layers, the short layers
// that refine it, and the proven lower bound that unrolls it (see twolevel_chain.cpp).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "twolevel_layers.hpp"

namespace rwd::schedule::detail {

/// The cost of reversing `length` steps from disk with `free_disk` free slots as `policy` and
/// its right_free_disk() direct it (what SegmentStream does), over the tree of disk segments.
double replay_cost(const DiskPolicy& policy, const TwoLevelCosts& costs, Step length,
                   std::int64_t free_disk);

/// Tables with their chain, and what reversing the top segment (n steps from disk, D-1 free
/// slots) costs under them.
struct ChainedTables {
  TwoLevelTables tables;
  double cost = 0.0;
};

/// Plans the chain above `tables`, whose layers 0..c (c < D-1) are tabulated and whose top layer
/// has the values `top_value`; the tables must pick their top segment as a chain
/// (TopSegment::Chain). The cost is infinite if no chain fits the run.
ChainedTables plan_chain(const TwoLevelCosts& costs, TwoLevelTables tables,
                         std::span<const double> top_value);

/// What plan_short_layers() may use.
struct ShortLayerBudget {
  std::int64_t table_entries = 0;  ///< entries of the whole table, shared by full and short layers
  double current_cost = 0.0;       ///< the chain above the full table costs this
};

/// Plans the chain again with half the table in full layers 0..c' and half in short layers
/// c'+1..D-1 over lengths up to M, where a chain node's left part may also take its own layer's
/// plan. Returns the new tables if they cost less than budget.current_cost.
std::optional<ChainedTables> plan_short_layers(
    const TwoLevelCosts& costs, const std::shared_ptr<const UnlimitedLayer>& unlimited,
    SearchBudget& search, const ShortLayerBudget& budget);

/// A proven lower bound on K_{D-1}(n), the top segment with a finite budget, from lower bounds
/// of layer `c` < D-1 (`layer_lower`) and of the unlimited layer (`unlimited_lower`), both over
/// lengths 0..n. It does not depend on any plan. For c >= D-1 it is layer_lower[n].
double chain_lower_bound(const TwoLevelCosts& costs, std::span<const double> layer_lower,
                         std::int64_t c, std::span<const double> unlimited_lower);

}  // namespace rwd::schedule::detail
