#include "replay_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "rewind/storage/sealed_blocks.hpp"
#include "rewind/timing.hpp"

namespace rwd::engine::detail {

namespace {

// SplitMix64's finaliser: 64 well-mixed sign bits for 64 consecutive global indices.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The norm and the ±1 projection of this rank's block, the signs drawn from the global index
// (plain SSE2 arithmetic on the caller's thread: no wide vector state left behind).
FieldPrint sketch(const Field& f) {
  FieldPrint p;
  const std::span<const double> v = f.data;
  const auto offset = static_cast<std::uint64_t>(f.offset);
  std::size_t i = 0;
  while (i < v.size()) {
    const std::uint64_t g = offset + i;
    const std::uint64_t signs = mix(g / 64) >> (g % 64);
    const std::size_t end = std::min(v.size(), i + static_cast<std::size_t>(64 - g % 64));
    double squares = 0.0, projection = 0.0;
    std::uint64_t bits_projection = 0;
    for (std::size_t j = 0; i + j < end; ++j) {
      const double x = v[i + j];
      std::uint64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      if (x == 0.0) bits = 0;  // -0 is 0 here: the hash tells them apart
      squares += x * x;
      const bool minus = ((signs >> j) & 1U) != 0;
      projection += minus ? -x : x;
      bits_projection += minus ? 0 - bits : bits;
    }
    p.sum_squares += squares;
    p.projection += projection;
    p.bit_projection += bits_projection;
    i = end;
  }
  return p;
}

std::string scientific(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1e", v);
  return text;
}

}  // namespace

double relative_difference(const FieldPrint& then, const FieldPrint& now) {
  const double norm = std::sqrt(then.sum_squares);
  const double d = std::max(std::fabs(std::sqrt(now.sum_squares) - norm),
                            std::fabs(now.projection - then.projection));
  return norm > 0.0 ? d / norm : d;
}

std::int64_t ulps_apart(const FieldPrint& then, const FieldPrint& now) {
  const auto d = static_cast<std::int64_t>(now.bit_projection - then.bit_projection);
  const std::int64_t limit = std::int64_t{1} << 20;
  return d > -limit && d < limit ? (d < 0 ? -d : d) : -1;
}

std::vector<FieldPrint> ReplayCheck::prints(const std::vector<Field>& fields) {
  const auto t0 = SteadyClock::now();
  std::vector<FieldPrint> out;
  out.reserve(fields.size());
  for (const auto& f : fields) {
    FieldPrint p = sketch(f);
    // The stores' checksum: the same XXH3-64, with the widest vector code the CPU has.
    p.hash = storage::block_checksum(f.data);
    out.push_back(p);
    bytes_ += static_cast<std::int64_t>(f.data.size_bytes());
  }
  seconds_ += seconds_since(t0);
  return out;
}

void ReplayCheck::remember(Step step, const std::vector<Field>& fields) {
  const auto k = static_cast<std::size_t>(step);
  std::vector<FieldPrint> h = prints(fields);
  if (present_.empty() && odd_.empty()) width_ = h.size();
  if (present_.size() <= k) present_.resize(k + 1, false);
  if (h.size() == width_) {
    if (flat_.size() < (k + 1) * width_) flat_.resize((k + 1) * width_);
    std::copy(h.begin(), h.end(), flat_.begin() + static_cast<std::ptrdiff_t>(k * width_));
    present_[k] = true;
    odd_.erase(step);
  } else {
    present_[k] = false;
    odd_[step] = std::move(h);
  }
}

std::string ReplayCheck::save() const {
  std::string out;
  char buf[128];
  const auto step_line = [&](std::size_t step, const FieldPrint* p, std::size_t count) {
    out += std::to_string(step) + " " + std::to_string(count);
    for (std::size_t j = 0; j < count; ++j) {
      std::snprintf(buf, sizeof buf, " %llx %a %a %llx", static_cast<unsigned long long>(p[j].hash),
                    p[j].sum_squares, p[j].projection,
                    static_cast<unsigned long long>(p[j].bit_projection));
      out += buf;
    }
    out += "\n";
  };
  for (std::size_t k = 0; k < present_.size(); ++k) {
    if (present_[k]) step_line(k, flat_.data() + k * width_, width_);
  }
  for (const auto& [step, prints] : odd_) {
    step_line(static_cast<std::size_t>(step), prints.data(), prints.size());
  }
  return out;
}

void ReplayCheck::load(std::string_view text) {
  flat_.clear();
  present_.clear();
  odd_.clear();
  width_ = 0;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    long long step = -1;
    std::size_t count = 0;
    if (!(words >> step >> count) || step < 0 || count > (std::size_t{1} << 16)) {
      throw Error(ErrorCode::Corrupt, "replay check: a damaged line in a durable tape");
    }
    std::vector<FieldPrint> prints(count);
    for (FieldPrint& p : prints) {
      std::string hash, sum, projection, bits;
      if (!(words >> hash >> sum >> projection >> bits)) {
        throw Error(ErrorCode::Corrupt, "replay check: a damaged line in a durable tape");
      }
      p.hash = std::stoull(hash, nullptr, 16);
      p.sum_squares = std::strtod(sum.c_str(), nullptr);
      p.projection = std::strtod(projection.c_str(), nullptr);
      p.bit_projection = std::stoull(bits, nullptr, 16);
    }
    const auto k = static_cast<std::size_t>(step);
    if (present_.empty() && odd_.empty()) width_ = prints.size();
    if (prints.size() == width_) {
      if (present_.size() <= k) present_.resize(k + 1, false);
      if (flat_.size() < (k + 1) * width_) flat_.resize((k + 1) * width_);
      std::copy(prints.begin(), prints.end(),
                flat_.begin() + static_cast<std::ptrdiff_t>(k * width_));
      present_[k] = true;
    } else {
      odd_[static_cast<Step>(step)] = std::move(prints);
    }
  }
}

const FieldPrint* ReplayCheck::stored(Step step, std::size_t& count) const {
  const auto k = static_cast<std::size_t>(step);
  if (k < present_.size() && present_[k]) {
    count = width_;
    return flat_.data() + k * width_;
  }
  const auto it = odd_.find(step);
  if (it == odd_.end()) return nullptr;
  count = it->second.size();
  return it->second.data();
}

void ReplayCheck::compare(Step step, const std::vector<Field>& fields, bool exact_origin) {
  const bool strict = !lossy_ || exact_origin;
  std::size_t count = 0;
  const FieldPrint* then = mismatch_ ? nullptr : stored(step, count);
  if (then == nullptr || count == 0) return;
  const std::vector<FieldPrint> now = prints(fields);
  for (std::size_t f = 0; f < now.size() && f < count; ++f) {
    if (now[f].hash == then[f].hash) continue;
    const double size = relative_difference(then[f], now[f]);
    if (!strict) {
      ++drifted_;
      largest_drift_ = std::max(largest_drift_, size);
      continue;
    }
    if (tolerance_ > 0.0 && size <= tolerance_) {
      ++tolerated_;
      largest_tolerated_ = std::max(largest_tolerated_, size);
      continue;
    }
    std::string what = "the recomputed state x_" + std::to_string(step) +
                       " differs from the one the first sweep reached (field '" +
                       std::string(fields[f].name) + "', rank " + std::to_string(rank_) + ") by " +
                       (size > 0.0 ? "about " + scientific(size) : "less than 1e-16") +
                       " relative to its norm on this rank";
    const std::int64_t ulps = ulps_apart(then[f], now[f]);
    if (ulps == 0 && size == 0.0) {
      what += " (equal in value: zeros of the other sign)";
    } else if (ulps >= 0) {
      what += " (in its last bits: a ±1 sum of the differences of its entries is " +
              std::to_string(ulps) + " units in the last place)";
    }
    if (tolerance_ > 0.0) {
      char text[96];
      std::snprintf(text, sizeof text, " (%.6e), more than the tolerance %.6e (", size, tolerance_);
      what += text + tolerance_name_ + ")";
    }
    if (size < 1e-10 || ulps >= 0) {
      // Round-off: the model is the same, the arithmetic is not.
      what +=
          ": round-off, but the gradient would differ from store-all's by about as much. "
          "What usually causes it: arithmetic that depends on the run's history (an "
          "automatic-differentiation Jacobian taped once, a cache, a parameter set back by "
          "arithmetic that rounds, as (p + d) - d) or on timing (a reduction in another "
          "order)";
      if (tolerance_ == 0.0 && !tolerance_name_.empty()) {
        what += "; to accept it, give " + tolerance_name_ + " (e.g. 1e-12)";
      }
    } else {
      what +=
          ": the forward run cannot be reproduced from its checkpoints, and the gradient "
          "would be wrong. What usually causes it: state outside the stepper that the "
          "program changes (an event's post-event function, a parameter or model changed "
          "between solves, a hybrid mode) or a right-hand side that is not deterministic "
          "(threads, random numbers, uninitialised memory)";
    }
    mismatch_.emplace(ErrorCode::InvalidArgument, what + note_);
    return;
  }
}

std::optional<Error> ReplayCheck::take_mismatch() {
  std::optional<Error> out;
  out.swap(mismatch_);
  return out;
}

}  // namespace rwd::engine::detail
