// The two-level plan: the layers of the recursion (twolevel_layers.cpp), the chain above them
// when they do not all fit (twolevel_chain.cpp) and the proven lower bound, composed into one
// value. Planning needs the whole tables (n+1 decisions per layer); the plan keeps only the
// decisions of the disk segments its stream visits, a few hundred where the tables hold millions.
#include "twolevel_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "builtin.hpp"
#include "rewind/error.hpp"
#include "twolevel_chain.hpp"

namespace rwd::schedule::detail {

namespace {

constexpr double kTargetGap = 0.01;        // a looser bound is worth more relaxed layers
constexpr Step kMaxSteps = Step{1} << 30;  // splits are stored in 31 bits

void check(const TwoLevelRequest& r) {
  ScheduleParams p;
  p.steps = r.steps;
  p.ram = r.ram;
  p.disk = r.disk;
  p.write_cost = r.write_cost;
  p.read_cost = r.read_cost;
  check_offline_params("twolevel", p, 0);
  require(r.steps <= kMaxSteps, "twolevel: at most " + std::to_string(kMaxSteps) +
                                    " steps can be planned, got " + std::to_string(r.steps));
  require(r.steps == 1 || r.ram >= 1 || r.disk != 0,
          "twolevel: " + std::to_string(r.steps) +
              " steps need at least one RAM or disk slot (both counts include x_0's slot)");
}

// What the tables plan: x_0 in RAM (R(n)) or on disk (wd + the top disk segment).
struct TopCosts {
  double disk = 0.0;   // the top disk segment's cost under the tables
  double lower = 0.0;  // a lower bound on the optimal top disk segment
};

TwoLevelPlan summarise(const TwoLevelCosts& costs, const TwoLevelTables& tables, bool exact,
                       const TopCosts& top) {
  const double ram = costs.ram[static_cast<std::size_t>(costs.steps)];
  const double wd = costs.write_cost;
  TwoLevelPlan plan;
  plan.exact = exact;
  plan.x0_on_disk = wd + top.disk < ram;
  plan.cost = plan.x0_on_disk ? wd + top.disk : ram;
  if (exact) {
    plan.lower_bound = plan.cost;
  } else {
    // Round-off in the envelope is far below this margin.
    const double lb = std::min(ram, wd + top.lower);
    plan.lower_bound = std::min(plan.cost, lb - 1e-9 * std::abs(lb));
  }
  plan.layers =
      tables.top == TopSegment::Unlimited ? 1 : static_cast<std::int64_t>(tables.layers.size());
  plan.chain = static_cast<std::int64_t>(tables.chain.size());
  return plan;
}

// The relaxation carried up from `lower` (a lower bound on some layer) through at most `layers`
// more layers, or until it stops changing: every higher layer then has the same bound.
struct CarriedBound {
  std::vector<double> lower;
  std::int64_t layers = 0;  // layers carried up
  bool saturated = false;   // stopped because a layer equalled the one below
};

CarriedBound carry_relaxation(const TwoLevelCosts& costs, std::vector<double> lower,
                              std::int64_t layers) {
  const auto N = static_cast<std::size_t>(costs.steps);
  CarriedBound out;
  for (; out.layers < layers; ++out.layers) {
    RelaxedLayer next = relax_layer(costs, {.lengths = N, .below = lower, .unlimited = false});
    const bool same = next.value == lower;
    lower = std::move(next.value);
    if (same) {
      out.saturated = true;
      break;
    }
  }
  out.lower = std::move(lower);
  return out;
}

// What the bound of a finite budget knows besides the layers.
struct BoundContext {
  bool layers_fit = true;          // the table holds all D layers
  std::int64_t table_entries = 0;  // the table's size
  double top_disk = 0.0;           // the top disk segment's planned cost
};

// A lower bound on the top disk segment with D finite, from the tabulated layers (whose lower
// bounds it consumes). When the table cannot hold all D layers, the chain bound covers the layers
// above the tabulated ones; where that leaves more than the target gap, the relaxation is carried
// up (O(n) memory, a fraction of the time of a filled layer) for up to four times the table's
// entries. Else the relaxation is carried up to layer D-1 (or until it stops changing).
double finite_lower_bound(const TwoLevelCosts& costs, const UnlimitedLayer& unlimited,
                          LayerStack stack, const BoundContext& context) {
  const auto N = static_cast<std::size_t>(costs.steps);
  const std::int64_t D = costs.disk;
  const double ram = costs.ram[N];
  double top_lower = 0.0;
  if (!context.layers_fit) {
    std::int64_t c = stack.computed - 1;
    top_lower = chain_lower_bound(costs, stack.lower, c, unlimited.lower());
    const double cost = std::min(ram, costs.write_cost + context.top_disk);
    if (cost > (1.0 + kTargetGap) * std::min(ram, costs.write_cost + top_lower)) {
      const std::int64_t more = 4 * context.table_entries / static_cast<std::int64_t>(N + 1);
      const CarriedBound up = carry_relaxation(
          costs, std::move(stack.lower), std::max<std::int64_t>(0, std::min(more, D - 1 - c)));
      c = up.saturated ? D - 1 : c + up.layers;
      top_lower = std::max(top_lower, chain_lower_bound(costs, up.lower, c, unlimited.lower()));
    }
  } else if (stack.saturated_exactly) {
    top_lower = stack.lower[N];
  } else {
    top_lower = carry_relaxation(costs, std::move(stack.lower), D - stack.computed).lower[N];
  }
  return std::max(unlimited.lower()[N], top_lower);
}

// The tables of `request` and what they plan.
struct Tabulated {
  TwoLevelPlan summary;
  TwoLevelTables tables;
};

Tabulated tabulate(const TwoLevelRequest& request) {
  check(request);
  const Step n = request.steps;
  const std::int64_t D = request.disk;
  const auto N = static_cast<std::size_t>(n);
  const TwoLevelCosts costs{.steps = n,
                            .disk = D,
                            .write_cost = request.write_cost,
                            .read_cost = request.read_cost,
                            .ram = revolve_costs(n, request.ram)};
  Tabulated out;
  TwoLevelTables& tables = out.tables;
  tables.disk = D;
  if (n == 1 || D == 0) {  // one step, or RAM only: Revolve
    out.summary.cost = out.summary.lower_bound = n == 1 ? 1.0 : costs.ram[N];
    out.summary.exact = true;
    return out;
  }
  const std::int64_t table_entries =
      std::clamp<std::int64_t>(request.table_entries, 1, std::int64_t{1} << 40);
  SearchBudget search(request.method);
  // The unlimited layer: the answer for unlimited disk, and for a finite budget whenever its
  // plan never holds more disk checkpoints than the budget.
  const auto unlimited = std::make_shared<const UnlimitedLayer>(unlimited_layer(costs, search));
  tables.unlimited = unlimited;
  bool exact = unlimited->exact;
  if (D == kUnlimited || (request.unlimited_shortcut && unlimited->peak[N] <= D)) {
    tables.top = TopSegment::Unlimited;
    out.summary = summarise(costs, tables, exact,
                            {.disk = unlimited->value[N], .lower = unlimited->lower()[N]});
    return out;
  }
  // Finite layers for d = 0 .. D-1 free disk slots. When D layers do not fit in the table, the
  // layers that fit are tabulated and a chain of disk checkpoints above them covers the rest.
  const std::int64_t max_layers =
      std::max<std::int64_t>(1, table_entries / static_cast<std::int64_t>(N + 1));
  const bool layers_fit = D <= max_layers;
  tables.unlimited_where_it_fits = !layers_fit;
  LayerStack stack = finite_layers(costs, *unlimited, search,
                                   {.layers = std::min(D, max_layers),
                                    .stop_when_equal = true,
                                    .unlimited_where_it_fits = tables.unlimited_where_it_fits});
  exact = exact && stack.exact;
  tables.layers = std::move(stack.choices);
  double top_disk = stack.value[N];
  if (!stack.saturated && stack.computed < D) {
    exact = false;
    tables.top = TopSegment::Chain;
    ChainedTables chained = plan_chain(costs, std::move(tables), stack.value);
    tables = std::move(chained.tables);
    top_disk = chained.cost;
  }
  double top_lower = stack.value[N];
  if (!exact) {
    top_lower = finite_lower_bound(
        costs, *unlimited, std::move(stack),
        {.layers_fit = layers_fit, .table_entries = table_entries, .top_disk = top_disk});
  }
  stack = LayerStack{};  // its vectors are not needed by the short layers
  if (tables.top == TopSegment::Chain) {
    const double ram = costs.ram[N];
    if (std::min(ram, request.write_cost + top_disk) >
        (1.0 + kTargetGap) * std::min(ram, request.write_cost + top_lower)) {
      std::optional<ChainedTables> shorter = plan_short_layers(
          costs, unlimited, search, {.table_entries = table_entries, .current_cost = top_disk});
      if (shorter) {
        tables = std::move(shorter->tables);
        top_disk = shorter->cost;
      }
    }
  }
  out.summary = summarise(costs, tables, exact, {.disk = top_disk, .lower = top_lower});
  return out;
}

}  // namespace

TwoLevelRequest two_level_request(const ScheduleParams& params, TwoLevelMethod method,
                                  std::int64_t table_entries) {
  return {.steps = params.steps,
          .ram = params.ram,
          .disk = params.disk,
          .write_cost = params.write_cost,
          .read_cost = params.read_cost,
          .method = method,
          .table_entries = table_entries,
          .unlimited_shortcut = true};
}

TwoLevelDiskPlan::TwoLevelDiskPlan(const TwoLevelPlan& summary, const TwoLevelTables& tables,
                                   std::span<const DiskSegment> roots)
    : summary_(summary),
      top_(tables.top),
      top_layer_(tables.top_layer()),
      top_free_disk_(tables.top_free_disk()) {
  // The tree of disk segments SegmentStream expands from the roots: a split's left part keeps
  // the free slots, a right part on disk gets right_free_disk(); one step asks nothing.
  std::vector<std::tuple<std::int64_t, Step, std::uint32_t>> seen;
  std::vector<DiskSegment> stack;
  for (const DiskSegment& root : roots) {
    if (root.length >= 2) stack.push_back(root);
  }
  while (!stack.empty()) {
    const DiskSegment s = stack.back();
    stack.pop_back();
    const DiskChoice c = tables.choose(s.length, s.free_disk);
    seen.emplace_back(s.free_disk, s.length, encode_choice(c));
    if (c.kind == DiskChoice::Kind::ToRam) continue;
    if (c.m >= 2) stack.push_back({c.m, s.free_disk});
    const Step right = s.length - c.m;
    if (right >= 2 && c.right_disk) stack.push_back({right, tables.right_free_disk(s.free_disk)});
  }
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  for (auto first = seen.begin(); first != seen.end();) {
    const std::int64_t free_disk = std::get<0>(*first);
    const auto last = std::find_if(
        first, seen.end(), [free_disk](const auto& s) { return std::get<0>(s) != free_disk; });
    const auto count = static_cast<std::size_t>(last - first);
    const auto longest = static_cast<std::size_t>(std::get<1>(*(last - 1)));
    Decisions d{.free_disk = free_disk, .length = {}, .code = {}};
    if (2 * count >= longest + 1) {
      d.code.assign(longest + 1, kNone);
      for (auto s = first; s != last; ++s) {
        d.code[static_cast<std::size_t>(std::get<1>(*s))] = std::get<2>(*s);
      }
    } else {
      d.length.reserve(count);
      d.code.reserve(count);
      for (auto s = first; s != last; ++s) {
        d.length.push_back(static_cast<std::uint32_t>(std::get<1>(*s)));
        d.code.push_back(std::get<2>(*s));
      }
    }
    by_free_disk_.push_back(std::move(d));
    first = last;
  }
}

DiskChoice TwoLevelDiskPlan::choose(Step length, std::int64_t free_disk) const {
  const auto layer =
      std::lower_bound(by_free_disk_.begin(), by_free_disk_.end(), free_disk,
                       [](const Decisions& d, std::int64_t f) { return d.free_disk < f; });
  if (layer != by_free_disk_.end() && layer->free_disk == free_disk && length >= 0) {
    std::uint32_t code = kNone;
    if (layer->length.empty()) {
      if (static_cast<std::size_t>(length) < layer->code.size()) {
        code = layer->code[static_cast<std::size_t>(length)];
      }
    } else {
      const auto at = std::lower_bound(layer->length.begin(), layer->length.end(),
                                       static_cast<std::uint32_t>(length));
      if (at != layer->length.end() && *at == length) {
        code = layer->code[static_cast<std::size_t>(at - layer->length.begin())];
      }
    }
    if (code != kNone) return decode_choice(code);
  }
  throw Error(ErrorCode::Internal, "twolevel: no decision planned for a disk segment of " +
                                       std::to_string(length) + " steps with " +
                                       std::to_string(free_disk) + " free disk slots");
}

std::size_t TwoLevelDiskPlan::decisions() const {
  std::size_t count = 0;
  for (const Decisions& d : by_free_disk_) {
    count += d.length.empty()
                 ? static_cast<std::size_t>(std::count_if(
                       d.code.begin(), d.code.end(), [](std::uint32_t c) { return c != kNone; }))
                 : d.length.size();
  }
  return count;
}

std::size_t TwoLevelDiskPlan::bytes() const {
  std::size_t total = sizeof(*this) + by_free_disk_.capacity() * sizeof(Decisions);
  for (const Decisions& d : by_free_disk_) {
    total += (d.length.capacity() + d.code.capacity()) * sizeof(std::uint32_t);
  }
  return total;
}

TwoLevelDiskPlan plan_two_level(const TwoLevelRequest& request) {
  const Tabulated t = tabulate(request);
  std::vector<DiskSegment> roots;
  if (request.steps >= 2 && t.summary.x0_on_disk) {
    roots.push_back({.length = request.steps, .free_disk = t.tables.top_free_disk()});
  }
  return TwoLevelDiskPlan(t.summary, t.tables, roots);
}

TwoLevelDiskPlan plan_two_level_segments(const TwoLevelRequest& request,
                                         std::span<const DiskSegment> roots) {
  const Tabulated t = tabulate(request);
  return TwoLevelDiskPlan(t.summary, t.tables, roots);
}

}  // namespace rwd::schedule::detail
