// The two-level recursion (H-Revolve for two levels), one layer of free disk slots at a time.
//
// K_d(L) is the least cost of reversing L steps whose start state is on disk (and in work), with
// every RAM slot free and d more disk slots. Either copy the start into RAM and run Revolve with
// all S RAM slots, R(L), or advance m steps, reverse the right part, read the start back (rd) and
// reverse the left part the same way:
//   K_d(L) = min( R(L), min_m  m + rd + K_d(m) + Rt_d(L-m) ),
//   Rt_d(1) = 1,  Rt_d(j) = min( R(j), wd + K_{d-1}(j) )  (right part's start in RAM or on disk),
// and the whole run costs min( R(n), wd + K_{D-1}(n) ): x_0 in a RAM slot or on disk. Unlimited
// disk is the layer that refers to itself (K_inf on both sides). Placing disk checkpoints inside
// RAM segments, or moving a start between levels later, never helps (tests/unit/twolevel_test
// checks this against a more general dynamic programme), so this is the optimum of the model.
//
// A layer costs O(n^2) split evaluations when searched exhaustively. The windowed search
// evaluates only splits near those of the neighbouring entries (L-1 in the same layer, L in the
// layer below, the argmin of the relaxation, and the extreme splits), O(n) per layer; the plan is
// then still a valid schedule and its cost is what the simulator counts. Its distance to the
// optimum is bounded by a relaxation of the same recursion in which K_d and Rt_d of shorter
// segments are replaced by their lower convex envelopes: the relaxation is a lower bound by
// induction, and for each L its split function is convex, so a local descent finds its minimum.
#include "twolevel_layers.hpp"

#include <array>
#include <limits>
#include <string>

#include "convex_envelope.hpp"
#include "rewind/error.hpp"

namespace rwd::schedule::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kExactBudget = 6e7;  // split evaluations for Auto to stay exhaustive
constexpr Step kWindow = 6;

// Most disk checkpoints live at once under the plan `choice` of each length, counting the
// segment's own start.
std::vector<std::int32_t> disk_peaks(const std::vector<std::uint32_t>& choice) {
  const std::size_t N = choice.size() - 1;
  std::vector<std::int32_t> peak(N + 1, 1);
  for (std::size_t L = 2; L <= N; ++L) {
    const std::uint32_t code = choice[L];
    if (code == 0) continue;
    const auto m = static_cast<std::size_t>(split_of(code));
    const std::int32_t right = (code & 1U) != 0 ? 1 + peak[L - m] : 1;
    peak[L] = std::max(right, peak[m]);
  }
  return peak;
}

}  // namespace

std::uint32_t encode_choice(const DiskChoice& choice) {
  if (choice.kind == DiskChoice::Kind::ToRam) return 0;
  return (static_cast<std::uint32_t>(choice.m) << 1) |
         static_cast<std::uint32_t>(choice.right_disk);
}

Step split_of(std::uint32_t code) {
  return static_cast<Step>(code >> 1);
}

DiskChoice decode_choice(std::uint32_t code) {
  if (code == 0) return {DiskChoice::Kind::ToRam, 0, false};
  return {DiskChoice::Kind::Split, split_of(code), (code & 1U) != 0};
}

bool SearchBudget::exhaustive(Step lengths) {
  if (method_ == TwoLevelMethod::Exact) return true;
  if (method_ == TwoLevelMethod::Windowed) return false;
  const double l = static_cast<double>(lengths);
  const double work = 0.5 * l * l;
  if (spent_ + work > kExactBudget) return false;
  spent_ += work;
  return true;
}

Layer fill_layer(const TwoLevelCosts& costs, const LayerSpec& spec) {
  const std::size_t N = spec.lengths;
  const double wd = costs.write_cost;
  const double rd = costs.read_cost;
  const std::vector<double>& ram = costs.ram;
  Layer out;
  std::vector<double>& value = out.value;
  std::vector<std::uint32_t>& choice = out.choice;
  value.assign(N + 1, kInf);
  choice.assign(N + 1, 0);
  std::vector<double> rt(N + 1, kInf);  // right part cost
  std::vector<std::uint8_t> rt_disk(N + 1, 0);
  const auto set_rt = [&](std::size_t j) {
    rt[j] = ram[j];
    const double* src =
        spec.unlimited ? value.data() : (spec.below ? spec.below->value.data() : nullptr);
    if (j >= 2 && src != nullptr && wd + src[j] < rt[j]) {
      rt[j] = wd + src[j];
      rt_disk[j] = 1;
    }
  };
  if (!spec.unlimited) {
    for (std::size_t j = 1; j <= N; ++j) set_rt(j);
  }
  value[1] = 1.0;
  if (spec.unlimited) set_rt(1);
  for (std::size_t L = 2; L <= N; ++L) {
    if (spec.fit && spec.fit->unlimited->fits(static_cast<Step>(L), spec.fit->free_disk)) {
      value[L] = spec.fit->unlimited->value[L];
      choice[L] = spec.fit->unlimited->choice[L];
      continue;
    }
    double best = ram[L];
    Step arg = 0;
    const auto scan = [&](Step a, Step b) {
      const double bar = best - rd;
      double low = bar;
      for (Step m = a; m <= b; ++m) {
        const auto mi = static_cast<std::size_t>(m);
        const double c = static_cast<double>(m) + value[mi] + rt[L - mi];
        if (c < low) {
          low = c;
          arg = m;
        }
      }
      if (low < bar) best = low + rd;
    };
    const auto Ls = static_cast<Step>(L);
    if (!spec.windowed) {
      scan(1, Ls - 1);
    } else {
      // Up to five windows, merged so that no split is evaluated twice.
      std::array<std::pair<Step, Step>, 5> win{};
      std::size_t k = 0;
      const auto add = [&](Step centre) {
        if (centre > 0) win[k++] = {centre - kWindow, centre + kWindow + 1};
      };
      win[k++] = {1, kWindow};
      win[k++] = {Ls - 1 - kWindow, Ls - 1};
      add(split_of(choice[L - 1]));
      if (spec.below) add(split_of(spec.below->choice[L]));
      add((*spec.windowed)[L]);
      for (std::size_t i = 0; i < k; ++i) {
        win[i].first = std::max<Step>(win[i].first, 1);
        win[i].second = std::min<Step>(win[i].second, Ls - 1);
      }
      std::sort(win.begin(), win.begin() + static_cast<std::ptrdiff_t>(k));
      Step done = 0;  // splits up to here are evaluated
      for (std::size_t i = 0; i < k; ++i) {
        const Step a = std::max(win[i].first, done + 1);
        if (a <= win[i].second) {
          scan(a, win[i].second);
          done = win[i].second;
        }
      }
    }
    value[L] = best;
    if (arg > 0) {
      choice[L] = encode_choice(
          {DiskChoice::Kind::Split, arg, rt_disk[L - static_cast<std::size_t>(arg)] != 0});
    }
    if (spec.unlimited) set_rt(L);
  }
  return out;
}

RelaxedLayer relax_layer(const TwoLevelCosts& costs, const RelaxSpec& spec) {
  const std::size_t N = spec.lengths;
  RelaxedLayer out;
  std::vector<double>& value = out.value;
  value.assign(N + 1, kInf);
  out.arg.assign(N + 1, 0);
  // Envelopes of the left parts' costs (this layer) and of the right parts' (RAM or disk).
  ConvexEnvelope hk, hr;
  value[1] = 1.0;
  hk.add(1.0, 1.0);
  hr.add(1.0, 1.0);
  Step pm = 1;
  for (std::size_t L = 2; L <= N; ++L) {
    const auto Ls = static_cast<Step>(L);
    const RelaxedSplit f{.left = hk, .right = hr, .read_cost = costs.read_cost, .length = Ls};
    // f is convex on the splits where both envelopes are finite, an interval [lo, hi].
    const double hk_end = hk.domain_end();
    const Step lo = f.first();
    const Step hi = std::min<Step>(
        Ls - 1, hk_end >= static_cast<double>(Ls) ? Ls - 1 : static_cast<Step>(hk_end));
    const auto [m, fm] = lo <= hi ? descend(f, pm, lo, hi) : std::pair<Step, double>{lo, kInf};
    pm = m;
    double best = costs.ram[L];
    if (fm < best) {
      best = fm;
      out.arg[L] = m;
    }
    value[L] = best;
    hk.add(static_cast<double>(L), best);
    double r = costs.ram[L];
    const double* src = spec.unlimited ? value.data() : (spec.below ? spec.below->data() : nullptr);
    if (src != nullptr) r = std::min(r, costs.write_cost + src[L]);
    hr.add(static_cast<double>(L), r);
  }
  return out;
}

UnlimitedLayer unlimited_layer(const TwoLevelCosts& costs, SearchBudget& budget) {
  const auto N = static_cast<std::size_t>(costs.steps);
  UnlimitedLayer out;
  out.exact = budget.exhaustive(costs.steps);
  RelaxedLayer relaxed;
  if (!out.exact) {
    relaxed = relax_layer(costs, {.lengths = N, .below = std::nullopt, .unlimited = true});
  }
  Layer filled = fill_layer(
      costs,
      {.lengths = N,
       .below = std::nullopt,
       .unlimited = true,
       .windowed = out.exact ? std::nullopt : std::optional<std::span<const Step>>(relaxed.arg),
       .fit = std::nullopt});
  out.value = std::move(filled.value);
  out.choice = std::move(filled.choice);
  out.relaxed = std::move(relaxed.value);
  out.peak = disk_peaks(out.choice);
  return out;
}

LayerStack finite_layers(const TwoLevelCosts& costs, const UnlimitedLayer& unlimited,
                         SearchBudget& search, const StackSpec& spec) {
  const auto N = static_cast<std::size_t>(costs.steps);
  LayerStack out;
  std::int64_t d = 0;
  for (; d < spec.layers; ++d) {
    const bool exd = search.exhaustive(costs.steps);
    out.exact = out.exact && exd;
    RelaxedLayer relaxed;
    if (!exd) {
      relaxed = relax_layer(
          costs,
          {.lengths = N,
           .below = d == 0 ? std::nullopt : std::optional<std::span<const double>>(out.lower),
           .unlimited = false});
    }
    Layer layer = fill_layer(
        costs,
        {.lengths = N,
         .below = d == 0 ? std::nullopt
                         : std::optional<LayerBelow>(LayerBelow{out.value, out.choices.back()}),
         .unlimited = false,
         .windowed = exd ? std::nullopt : std::optional<std::span<const Step>>(relaxed.arg),
         .fit = spec.unlimited_where_it_fits ? std::optional<FitRule>(FitRule{&unlimited, d})
                                             : std::nullopt});
    const bool same = spec.stop_when_equal && d > 0 && layer.value == out.value;
    out.lower = exd ? layer.value : std::move(relaxed.value);
    out.value = std::move(layer.value);
    if (same) {
      out.saturated = true;
      out.saturated_exactly = exd;
      ++d;
      break;
    }
    out.choices.push_back(std::move(layer.choice));
  }
  out.computed = d;
  return out;
}

std::int64_t right_part_free_disk(TopSegment top, std::int64_t top_layer, std::int64_t free_disk) {
  if (top == TopSegment::Unlimited) return kUnlimited;
  const std::int64_t d = top == TopSegment::Chain ? free_disk : std::min(free_disk, top_layer);
  return std::max<std::int64_t>(0, d - 1);
}

std::int64_t TwoLevelTables::top_free_disk() const {
  if (top == TopSegment::Unlimited) return kUnlimited;
  return top == TopSegment::Chain ? disk - 1 : top_layer();
}

DiskChoice TwoLevelTables::choose(Step length, std::int64_t free_disk) const {
  const auto L = static_cast<std::size_t>(length);
  if (top == TopSegment::Unlimited) return decode_choice(unlimited->choice[L]);
  if (free_disk < 0) {
    throw Error(ErrorCode::Internal, "twolevel: unlimited disk asked of a finite table");
  }
  if (unlimited_where_it_fits && unlimited->fits(length, free_disk)) {
    return decode_choice(unlimited->choice[L]);
  }
  const std::int64_t t = top_layer();
  if (free_disk > t && free_disk < disk && !chain.empty()) {
    const ChainNode& node = chain[static_cast<std::size_t>(disk - 1 - free_disk)];
    if (node.length == length) return {DiskChoice::Kind::Split, node.m, true};
  }
  if (free_disk > t && length <= short_length && !short_layers.empty()) {
    const std::int64_t d = std::min(free_disk, disk - 1);
    return decode_choice(short_layers[static_cast<std::size_t>(d - t - 1)][L]);
  }
  return decode_choice(layers[static_cast<std::size_t>(std::min(free_disk, t))][L]);
}

}  // namespace rwd::schedule::detail
