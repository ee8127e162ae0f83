#pragma once
// Private: the two-level recursion, one layer of free disk slots at a time (see
// twolevel_layers.cpp), and the tables of decisions the planner keeps while it plans.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "convex_envelope.hpp"
#include "rewind/schedule/twolevel.hpp"
#include "segments.hpp"

namespace rwd::schedule::detail {

/// A decision as the tables store it: 0 = copy the start into RAM (or a single step), else
/// (m << 1) | right part on disk.
std::uint32_t encode_choice(const DiskChoice& choice);
DiskChoice decode_choice(std::uint32_t code);
Step split_of(std::uint32_t code);

/// The budget every part of the planner reads, with Revolve's cost R(L) for L = 0..steps with
/// every RAM slot.
struct TwoLevelCosts {
  Step steps = 0;
  std::int64_t disk = 0;  ///< D, or kUnlimited
  double write_cost = 0.0;
  double read_cost = 0.0;
  std::vector<double> ram;
};

/// Which layers are searched exhaustively: all (Exact), none (Windowed), or (Auto) each in turn
/// while the split evaluations spent so far stay within a fixed budget.
class SearchBudget {
 public:
  explicit SearchBudget(TwoLevelMethod method) : method_(method) {}
  /// Whether a layer over lengths up to `lengths` is searched exhaustively; spends its share.
  bool exhaustive(Step lengths);

 private:
  TwoLevelMethod method_;
  double spent_ = 0.0;
};

/// The layer with unlimited disk, K_inf: the answer for unlimited disk, a lower bound for every
/// finite layer, and the plan any segment may take where it fits the free slots.
struct UnlimitedLayer {
  std::vector<double> value;
  std::vector<std::uint32_t> choice;
  /// Most disk checkpoints live at once under the plan of each length, its start included.
  std::vector<std::int32_t> peak;
  bool exact = false;           ///< searched exhaustively: the values are the optimum
  std::vector<double> relaxed;  ///< not exact: the relaxation's values

  /// A lower bound on each value.
  std::span<const double> lower() const { return exact ? value : relaxed; }

  /// The plan for `length` steps never holds more than `free_disk` checkpoints besides the
  /// segment's start.
  bool fits(Step length, std::int64_t free_disk) const {
    return peak[static_cast<std::size_t>(length)] <= free_disk + 1;
  }
};

UnlimitedLayer unlimited_layer(const TwoLevelCosts& costs, SearchBudget& budget);

/// One finite layer: values and decisions for lengths 0..N (index 0 unused).
struct Layer {
  std::vector<double> value;
  std::vector<std::uint32_t> choice;
};

/// Layer d-1, whose plans reverse layer d's right parts on disk (may be longer than layer d).
struct LayerBelow {
  std::span<const double> value;
  std::span<const std::uint32_t> choice;
};

/// Lengths whose unlimited plan fits in `free_disk` free slots take it without a search (the
/// rule TwoLevelTables::choose applies).
struct FitRule {
  const UnlimitedLayer* unlimited = nullptr;
  std::int64_t free_disk = 0;
};

/// What fill_layer() fills.
struct LayerSpec {
  std::size_t lengths = 0;          ///< N: lengths 1..N
  std::optional<LayerBelow> below;  ///< none for layer 0 (right parts stay in RAM) and unlimited
  bool unlimited = false;           ///< right parts on disk use this layer itself (K_inf)
  /// Windowed search around the relaxation's minimisers (and the neighbours' splits); none:
  /// every split.
  std::optional<std::span<const Step>> windowed;
  std::optional<FitRule> fit;
};

Layer fill_layer(const TwoLevelCosts& costs, const LayerSpec& spec);

/// One layer of the convex relaxation: a lower bound on the same layer of fill_layer(), and the
/// minimising split of each length (the windows' seeds).
struct RelaxedLayer {
  std::vector<double> value;
  std::vector<Step> arg;
};

/// What relax_layer() relaxes: `below` is the relaxation of layer d-1.
struct RelaxSpec {
  std::size_t lengths = 0;
  std::optional<std::span<const double>> below;
  bool unlimited = false;
};

RelaxedLayer relax_layer(const TwoLevelCosts& costs, const RelaxSpec& spec);

/// What finite_layers() tabulates.
struct StackSpec {
  std::int64_t layers = 0;               ///< layers 0..layers-1 at most
  bool stop_when_equal = true;           ///< stop once a layer equals the one below (every
                                         ///< higher one then does too)
  bool unlimited_where_it_fits = false;  ///< layer d is filled with FitRule{free_disk = d}
};

/// The finite layers 0, 1, ... over lengths 0..n.
struct LayerStack {
  std::vector<std::vector<std::uint32_t>> choices;  ///< decisions of the layers kept
  std::vector<double> value;       ///< values of the last layer computed (the top one's)
  std::vector<double> lower;       ///< a lower bound on them
  std::int64_t computed = 0;       ///< layers computed; one equal to the layer below is not kept
  bool saturated = false;          ///< the last layer computed equals the one below
  bool saturated_exactly = false;  ///< ... and it was searched exhaustively
  bool exact = true;               ///< every layer computed was searched exhaustively
};

LayerStack finite_layers(const TwoLevelCosts& costs, const UnlimitedLayer& unlimited,
                         SearchBudget& search, const StackSpec& spec);

/// The relaxed cost of splitting `length` steps after m, m + rd + left(m) + right(length - m),
/// with `left` and `right` lower convex envelopes of the parts' costs: convex in m where finite.
struct RelaxedSplit {
  const ConvexEnvelope& left;
  const ConvexEnvelope& right;
  double read_cost = 0.0;
  Step length = 0;

  double operator()(Step m) const {
    return static_cast<double>(m) + read_cost + left.at(static_cast<double>(m)) +
           right.at(static_cast<double>(length - m));
  }
  /// The least split whose right part has a finite cost.
  Step first() const {
    const double end = right.domain_end();
    return std::max<Step>(1,
                          end >= static_cast<double>(length) ? 1 : length - static_cast<Step>(end));
  }
};

/// One disk checkpoint of the chain above the tabulated layers.
struct ChainNode {
  Step length = 0;  ///< the segment this node splits
  Step m = 0;       ///< steps to its next disk checkpoint
};

/// How the top disk segment is planned.
enum class TopSegment : std::uint8_t {
  Unlimited,  ///< every segment takes the unlimited layer's plan
  Layers,     ///< the top tabulated layer; counts above it are planned as it
  Chain,      ///< a chain of disk checkpoints above the tabulated layers
};

/// Free disk slots of a right part whose start goes to disk, for a segment with `free_disk`:
/// layer d's right parts were planned with layer d-1, a chain node's with the node below it.
std::int64_t right_part_free_disk(TopSegment top, std::int64_t top_layer, std::int64_t free_disk);

/// Every decision the planner tabulated and the rule that picks among them. It answers for any
/// length and free disk count while the plan is built and its cost counted; the schedule keeps
/// only the decisions its stream asks for (TwoLevelDiskPlan).
struct TwoLevelTables final : DiskPolicy {
  std::int64_t disk = 0;  ///< D
  TopSegment top = TopSegment::Layers;
  bool unlimited_where_it_fits = false;  ///< a segment whose unlimited plan fits its slots takes it
  std::shared_ptr<const UnlimitedLayer> unlimited;
  std::vector<std::vector<std::uint32_t>> layers;  ///< free slots 0, 1, ...
  std::vector<ChainNode> chain;                    ///< chain[t]: the node with D-1-t free slots
  std::vector<std::vector<std::uint32_t>> short_layers;  ///< top+1..D-1, lengths <= short_length
  Step short_length = 0;

  std::int64_t top_layer() const { return static_cast<std::int64_t>(layers.size()) - 1; }
  /// Free disk slots of the top disk segment (x_0's slot excluded; kUnlimited if unlimited).
  std::int64_t top_free_disk() const;
  DiskChoice choose(Step length, std::int64_t free_disk) const override;
  std::int64_t right_free_disk(std::int64_t free_disk) const override {
    return right_part_free_disk(top, top_layer(), free_disk);
  }
};

}  // namespace rwd::schedule::detail
