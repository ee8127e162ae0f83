// The chain of disk checkpoints above the tabulated two-level layers, and its lower bound.
//
// The table holds n+1 choices per layer. When the D layers of a budget do not all fit, layers
// 0..c do, and the top segment is planned as a chain above them: the first sweep writes D-1-c
// disk checkpoints, one per layer from D-1 down to c+1, and the rest after the last one is a
// segment of layer c. When the reverse sweep comes back to the interval of the t-th checkpoint
// from the top, everything after it is freed, so the interval has D-1-t free slots: it is
// reversed by the unlimited layer's plan, among lengths whose unlimited plan fits in those slots
// (the rule "a segment whose unlimited plan fits its free slots takes it" is applied everywhere,
// and layers 0..c are filled with it). The lengths are chosen along the Lagrangian path of the
// intervals' convex envelopes. Where that leaves more than 1 % to the bound, half the table is
// given to short layers c'+1..D-1 over lengths up to M, and an interval of at most M steps may
// also take the plan of its node's layer. The lower bound (chain_lower_bound) unrolls the top
// segment's disk right parts in the same way and does not depend on the plan; the plan's cost is
// counted by walking choose() over the tree of disk segments, as SegmentStream replays it.
#include "twolevel_chain.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "convex_envelope.hpp"

namespace rwd::schedule::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The vertices of a lower convex envelope of interval costs, in increasing length.
struct Envelope {
  std::vector<Step> m;
  std::vector<double> cost;
};

Envelope envelope_of(const ConvexEnvelope& e) {
  Envelope out;
  out.m.reserve(e.xs().size());
  for (const double x : e.xs()) out.m.push_back(static_cast<Step>(x));
  out.cost = e.ys();
  return out;
}

// An interval of the chain: m steps, its right part written to disk, its start read back, and
// k to reverse it.
double part(const TwoLevelCosts& costs, Step m, double k) {
  return static_cast<double>(m) + costs.read_cost + costs.write_cost + k;
}

// Envelopes of the intervals reversed by the unlimited plan, over lengths in [from, n) whose plan
// holds at most p disk checkpoints, for p = p_lo .. p_max (p_max: D, or the highest peak among
// those lengths). Built incrementally: level p's envelope is that of level p-1's vertices and the
// lengths of peak exactly p.
struct LevelEnvelopes {
  std::vector<Envelope> levels;  // levels[p - p_lo]
  std::int64_t p_max = 0;
};

LevelEnvelopes level_envelopes(const TwoLevelCosts& costs, const UnlimitedLayer& unlimited,
                               std::int64_t p_lo, Step from) {
  const auto N = static_cast<std::size_t>(costs.steps);
  const auto first = static_cast<std::size_t>(std::max<Step>(from, 1));
  LevelEnvelopes out;
  std::int64_t& p_max = out.p_max;
  p_max = p_lo;
  for (std::size_t m = first; m < N; ++m) {
    p_max = std::max<std::int64_t>(p_max, unlimited.peak[m]);
  }
  p_max = std::min(p_max, costs.disk);
  const auto levels = static_cast<std::size_t>(p_max - p_lo + 1);
  std::vector<std::vector<Step>> bucket(levels);
  for (std::size_t m = first; m < N; ++m) {
    const std::int64_t p = std::max<std::int64_t>(unlimited.peak[m], p_lo);
    if (p <= p_max) bucket[static_cast<std::size_t>(p - p_lo)].push_back(static_cast<Step>(m));
  }
  std::vector<Envelope>& env = out.levels;
  env.resize(levels);
  for (std::size_t i = 0; i < levels; ++i) {
    ConvexEnvelope e;
    const std::vector<Step> none;
    const std::vector<Step>& prev = i > 0 ? env[i - 1].m : none;
    std::size_t a = 0, b = 0;
    while (a < prev.size() || b < bucket[i].size()) {
      const bool take_prev = b == bucket[i].size() || (a < prev.size() && prev[a] < bucket[i][b]);
      const Step m = take_prev ? prev[a++] : bucket[i][b++];
      e.add(static_cast<double>(m), part(costs, m, unlimited.value[static_cast<std::size_t>(m)]));
    }
    std::vector<Step>().swap(bucket[i]);
    env[i] = envelope_of(e);
  }
  return out;
}

// The chain's intervals (t = 0 at the top) and the cost of the chain with the rest of the run.
struct ChainPath {
  double cost = kInf;
  std::vector<Step> lengths;
};

// The chain's intervals m_t, each a vertex of its node's envelope `env[t]`, minimising their cost
// plus top_value of the rest: advancing the nodes along their envelopes in increasing order of
// slope visits, for each total it reaches, the least sum of envelope values for that total (a
// Lagrangian path); the best visited total is taken. Nothing if a node has no admitted length.
std::optional<ChainPath> chain_path(const TwoLevelCosts& costs,
                                    const std::vector<const Envelope*>& env,
                                    std::span<const double> top_value) {
  struct Advance {
    double slope;
    std::size_t t;
  };
  const Step n = costs.steps;
  const std::size_t k = env.size();
  std::vector<Advance> moves;
  Step X = 0;
  double sum = 0.0;
  for (std::size_t t = 0; t < k; ++t) {
    const Envelope& e = *env[t];
    if (e.m.empty()) return std::nullopt;
    X += e.m.front();
    sum += e.cost.front();
    for (std::size_t i = 0; i + 1 < e.m.size(); ++i) {
      moves.push_back({(e.cost[i + 1] - e.cost[i]) / static_cast<double>(e.m[i + 1] - e.m[i]), t});
    }
  }
  // Stable: a node's own moves keep their (increasing) order among equal slopes.
  std::stable_sort(moves.begin(), moves.end(),
                   [](const Advance& a, const Advance& b) { return a.slope < b.slope; });
  std::vector<std::size_t> at(k, 0);
  ChainPath out;
  std::size_t best_s = 0;
  for (std::size_t s = 0; X <= n - 2; ++s) {  // a one-step right part never goes to disk
    const double c = sum + top_value[static_cast<std::size_t>(n - X)];
    if (c < out.cost) {
      out.cost = c;
      best_s = s;
    }
    if (s == moves.size()) break;
    const Envelope& e = *env[moves[s].t];
    std::size_t& i = at[moves[s].t];
    X += e.m[i + 1] - e.m[i];
    sum += e.cost[i + 1] - e.cost[i];
    ++i;
  }
  at.assign(k, 0);
  for (std::size_t s = 0; s < best_s; ++s) ++at[moves[s].t];
  out.lengths.resize(k);
  for (std::size_t t = 0; t < k; ++t) out.lengths[t] = env[t]->m[at[t]];
  return out;
}

std::vector<ChainNode> chain_nodes(Step n, const std::vector<Step>& lengths) {
  std::vector<ChainNode> nodes(lengths.size());
  Step L = n;
  for (std::size_t t = 0; t < lengths.size(); ++t) {
    nodes[t] = {L, lengths[t]};
    L -= lengths[t];
  }
  return nodes;
}

}  // namespace

double replay_cost(const DiskPolicy& policy, const TwoLevelCosts& costs, Step length,
                   std::int64_t free_disk) {
  double total = 0.0;
  std::vector<std::pair<Step, std::int64_t>> stack{{length, free_disk}};
  while (!stack.empty()) {
    const auto [L, f] = stack.back();
    stack.pop_back();
    if (L == 1) {
      total += 1.0;
      continue;
    }
    const DiskChoice c = policy.choose(L, f);
    if (c.kind == DiskChoice::Kind::ToRam) {
      total += costs.ram[static_cast<std::size_t>(L)];
      continue;
    }
    total += static_cast<double>(c.m) + costs.read_cost;
    stack.emplace_back(c.m, f);
    const Step r = L - c.m;
    if (r == 1) {
      total += 1.0;
    } else if (c.right_disk) {
      // Written first only if it splits: a right part that goes to RAM after all (with more
      // free slots than the layer it was planned in) is never written (SegmentStream).
      const std::int64_t rf = policy.right_free_disk(f);
      if (policy.choose(r, rf).kind != DiskChoice::Kind::ToRam) total += costs.write_cost;
      stack.emplace_back(r, rf);
    } else {
      total += costs.ram[static_cast<std::size_t>(r)];
    }
  }
  return total;
}

// Node t (t = 0 at the top) splits a segment with D-1-t free slots into a left part of m_t steps
// and a right part written to disk, the next node with one slot fewer; the k-th right part is a
// segment of the top tabulated layer. When the sweep comes back to node t's left part, every
// checkpoint of the right part is freed, so the left part has D-1-t free slots as well: it takes
// the unlimited plan if that plan holds at most D-t disk checkpoints (so the admitted lengths
// grow towards the top), at the same cost in every node. The path with every node held to the
// top layer's slots (parts of two adjacent vertices of one envelope) is a second candidate.
ChainedTables plan_chain(const TwoLevelCosts& costs, TwoLevelTables tables,
                         std::span<const double> top_value) {
  const Step n = costs.steps;
  const std::int64_t D = costs.disk;
  const std::int64_t top = tables.top_layer();
  const Step k = D - 1 - top;
  const UnlimitedLayer& unlimited = *tables.unlimited;
  if (unlimited.fits(n, D - 1)) {
    return {std::move(tables), unlimited.value[static_cast<std::size_t>(n)]};
  }
  const std::int64_t p_lo = top + 1;
  const LevelEnvelopes levels = level_envelopes(costs, unlimited, p_lo, 1);
  const std::int64_t p_max = levels.p_max;
  std::optional<ChainPath> best;
  std::vector<const Envelope*> env(static_cast<std::size_t>(k));
  for (const std::int64_t cap : {p_lo, p_max}) {
    if (cap == p_max && p_max == p_lo) break;
    for (Step t = 0; t < k; ++t) {
      const std::int64_t p = std::clamp<std::int64_t>(std::min(D - t, cap), p_lo, p_max);
      env[static_cast<std::size_t>(t)] = &levels.levels[static_cast<std::size_t>(p - p_lo)];
    }
    std::optional<ChainPath> path = chain_path(costs, env, top_value);
    if (path && path->cost < (best ? best->cost : kInf)) best = std::move(path);
  }
  if (!best) return {std::move(tables), kInf};
  tables.chain = chain_nodes(n, best->lengths);
  const double cost = replay_cost(tables, costs, n, D - 1);
  return {std::move(tables), cost};
}

// When the chain above the full table leaves more than the target gap, the intervals usually
// need more disk slots than their unlimited plan may take, refined by a few dozen disk
// checkpoints each: node t's left part may then also take layer D-1-t's plan when m <= M
// (choose() gives it, as it gives that layer's own right parts the layer below), and each node
// has its own envelope.
std::optional<ChainedTables> plan_short_layers(
    const TwoLevelCosts& costs, const std::shared_ptr<const UnlimitedLayer>& unlimited,
    SearchBudget& search, const ShortLayerBudget& budget) {
  const Step n = costs.steps;
  const std::int64_t D = costs.disk;
  const auto N = static_cast<std::size_t>(n);
  const std::int64_t max_layers =
      std::max<std::int64_t>(1, budget.table_entries / static_cast<std::int64_t>(N + 1));
  const std::int64_t c = std::max<std::int64_t>(1, max_layers / 2) - 1;
  if (c >= D - 1) return std::nullopt;
  const std::int64_t k = D - 1 - c;
  const std::int64_t room = budget.table_entries - (c + 1) * static_cast<std::int64_t>(N + 1);
  const Step M = std::min<Step>(n - 1, room / k - 1);
  if (M < 2) return std::nullopt;
  TwoLevelTables tables;
  tables.disk = D;
  tables.top = TopSegment::Chain;
  tables.unlimited_where_it_fits = true;
  tables.unlimited = unlimited;
  // Full layers 0..c, filled as the chain above the full table fills them.
  LayerStack full =
      finite_layers(costs, *unlimited, search,
                    {.layers = c + 1, .stop_when_equal = false, .unlimited_where_it_fits = true});
  tables.layers = std::move(full.choices);
  const std::vector<double>& below = full.value;
  const std::vector<double>& below_lower = full.lower;
  // Short layers c+1..D-1 over lengths up to M; node t = D-1-d's envelope over m <= M.
  const auto Ms = static_cast<std::size_t>(M);
  std::vector<double> sbelow(below.begin(), below.begin() + static_cast<std::ptrdiff_t>(Ms) + 1);
  std::vector<double> sbelow_lower(below_lower.begin(),
                                   below_lower.begin() + static_cast<std::ptrdiff_t>(Ms) + 1);
  std::vector<Envelope> node_env(static_cast<std::size_t>(k));
  tables.short_length = M;
  for (std::int64_t d = c + 1; d < D; ++d) {
    const bool exd = search.exhaustive(M);
    RelaxedLayer relaxed;
    if (!exd) {
      relaxed = relax_layer(costs, {.lengths = Ms, .below = sbelow_lower, .unlimited = false});
    }
    const std::vector<std::uint32_t>& below_choice =
        tables.short_layers.empty() ? tables.layers.back() : tables.short_layers.back();
    Layer layer = fill_layer(
        costs, {.lengths = Ms,
                .below = LayerBelow{sbelow, below_choice},
                .unlimited = false,
                .windowed = exd ? std::nullopt : std::optional<std::span<const Step>>(relaxed.arg),
                .fit = FitRule{unlimited.get(), d}});
    ConvexEnvelope e;
    for (std::size_t m = 1; m <= Ms && m < N; ++m) {
      e.add(static_cast<double>(m), part(costs, static_cast<Step>(m), layer.value[m]));
    }
    node_env[static_cast<std::size_t>(D - 1 - d)] = envelope_of(e);
    sbelow_lower = exd ? layer.value : std::move(relaxed.value);
    sbelow = std::move(layer.value);
    tables.short_layers.push_back(std::move(layer.choice));
  }
  // Longer left parts take the unlimited plan where it fits, as in plan_chain().
  const std::int64_t p_lo = c + 1;
  const LevelEnvelopes levels = level_envelopes(costs, *unlimited, p_lo, M + 1);
  std::vector<const Envelope*> env(static_cast<std::size_t>(k));
  for (std::int64_t t = 0; t < k; ++t) {
    Envelope& mine = node_env[static_cast<std::size_t>(t)];
    const std::int64_t p = std::clamp<std::int64_t>(D - t, p_lo, levels.p_max);
    const Envelope& longer = levels.levels[static_cast<std::size_t>(p - p_lo)];
    if (!longer.m.empty()) {
      ConvexEnvelope e;
      for (std::size_t i = 0; i < mine.m.size(); ++i) {
        e.add(static_cast<double>(mine.m[i]), mine.cost[i]);
      }
      for (std::size_t i = 0; i < longer.m.size(); ++i) {
        e.add(static_cast<double>(longer.m[i]), longer.cost[i]);
      }
      mine = envelope_of(e);
    }
    env[static_cast<std::size_t>(t)] = &mine;
  }
  const std::optional<ChainPath> path = chain_path(costs, env, below);
  if (!path || !(path->cost < kInf)) return std::nullopt;
  tables.chain = chain_nodes(n, path->lengths);
  const double cost = replay_cost(tables, costs, n, D - 1);
  if (!(cost < budget.current_cost)) return std::nullopt;
  return ChainedTables{std::move(tables), cost};
}

// Unroll the right parts on disk from the top segment: a plan splits off j left parts m_1..m_j,
// each costing m_i + rd + wd + K_d(m_i) with K_d >= K_inf, and then either (j >= k = D-1-c) the
// k-th right part is a segment of layer c, or (j < k) the last segment writes nothing more to
// disk: it goes to RAM, R(L), or splits off a left part and keeps its right part in RAM,
// m + rd + K_d(m) + R(L-m). With h the lower convex envelope of m + rd + wd + K_inf(m), j left
// parts of total X cost at least j h(X/j) (Jensen), and for j < k the least of j h(X/j) over real
// j is at the clamped j where X/j minimises h(x)/x.
double chain_lower_bound(const TwoLevelCosts& costs, std::span<const double> layer_lower,
                         std::int64_t c, std::span<const double> unlimited_lower) {
  const Step n = costs.steps;
  const std::int64_t D = costs.disk;
  const double rd = costs.read_cost;
  const auto N = static_cast<std::size_t>(n);
  if (c >= D - 1) return layer_lower[N];
  const double k = static_cast<double>(D - 1 - c);
  ConvexEnvelope h, hk, hr;
  for (std::size_t m = 1; m < N; ++m) {
    const double md = static_cast<double>(m);
    h.add(md, md + rd + costs.write_cost + unlimited_lower[m]);
    hk.add(md, unlimited_lower[m]);
  }
  for (std::size_t m = 1; m <= N; ++m) hr.add(static_cast<double>(m), costs.ram[m]);
  double bound = kInf;
  for (Step X = static_cast<Step>(k); X <= n - 1; ++X) {
    const double x = static_cast<double>(X);
    bound = std::min(bound, k * h.at(x / k) + layer_lower[N - static_cast<std::size_t>(X)]);
  }
  // A last segment of L steps costs at least terminal[L] = min(R(L), min_m m + rd + K_inf(m) +
  // R(L-m)) with envelopes in place of K_inf and R: a convex split function where R is finite.
  std::vector<double> terminal(N + 1, kInf);
  terminal[1] = 1.0;
  Step pm = 1;
  for (std::size_t L = 2; L <= N; ++L) {
    const auto Ls = static_cast<Step>(L);
    const RelaxedSplit f{.left = hk, .right = hr, .read_cost = rd, .length = Ls};
    const auto [m, fm] = descend(f, pm, f.first(), Ls - 1);
    pm = m;
    terminal[L] = std::min(costs.ram[L], fm);
  }
  double shorter = terminal[N];
  if (k >= 2) {
    double x0 = 1.0, ratio = kInf;
    for (std::size_t i = 0; i < h.xs().size(); ++i) {
      if (h.ys()[i] / h.xs()[i] < ratio) {
        ratio = h.ys()[i] / h.xs()[i];
        x0 = h.xs()[i];
      }
    }
    for (Step X = 1; X <= n - 1; ++X) {
      const double x = static_cast<double>(X);
      const double j = std::clamp(x / x0, 1.0, std::min(k - 1.0, x));
      shorter = std::min(shorter, j * h.at(x / j) + terminal[N - static_cast<std::size_t>(X)]);
    }
  }
  return std::min(bound, shorter);
}

}  // namespace rwd::schedule::detail
