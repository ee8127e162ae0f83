#include "exact_series.hpp"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <stdexcept>

// Stepped blocks are exact only if decoding repeats, operation for operation, the additions
// seal() checked: no reassociation, no contraction, the same rounding. CMakeLists.txt compiles
// this file with -fno-fast-math -ffp-contract=off -frounding-math.
#ifdef __FAST_MATH__
#error "exact_series.cpp must not be compiled with -ffast-math"
#endif

namespace rwd::petsc {
namespace {

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;  // -0.0 is not 0.0; a NaN is its own payload
}

// Values a fixed step may cover: zero or normal, and well inside the range, so that adding the
// step to one of them neither overflows (no FE_OVERFLOW trap under PETSc's -fp_trap, no inf - inf
// raising FE_INVALID) nor produces a subnormal (flush-to-zero and denormals-are-zero then cannot
// change a result).
bool steppable(double v) {
  return v == 0.0 || (std::isnormal(v) && std::abs(v) < 0x1p1000);
}

// In round-to-nearest for as long as it lives (what every PETSc run uses; a program that changed
// the rounding mode between sealing and decoding must still get the bits seal() checked).
class NearestRounding {
 public:
  NearestRounding() : mode_(std::fegetround()) {
    if (mode_ != FE_TONEAREST) std::fesetround(FE_TONEAREST);
  }
  ~NearestRounding() {
    if (mode_ != FE_TONEAREST) std::fesetround(mode_);
  }
  NearestRounding(const NearestRounding&) = delete;
  NearestRounding& operator=(const NearestRounding&) = delete;

 private:
  int mode_;
};

// out[0 .. count) = first, first + step, (first + step) + step, ...: the one way a Stepped
// block's values are computed, by seal() to check them and by every read.
void step_from(double first, double step, double* out, std::size_t count) {
  const NearestRounding nearest;
  double v = first;
  for (std::size_t j = 0; j < count; ++j) {
    out[j] = v;
    v += step;
  }
}

}  // namespace

void ExactSeries::push_back(double v) {
  if (tail_.capacity() < kBlock) tail_.reserve(kBlock);
  tail_.push_back(v);
  if (tail_.size() == kBlock) seal();
}

ExactSeries::Kind ExactSeries::kind_of(double& step) const {
  const double first = tail_[0];
  if (std::all_of(tail_.begin(), tail_.end(), [&](double v) { return same_bits(v, first); })) {
    return Kind::Constant;  // no arithmetic at all: any bits, NaN and infinity included
  }
  if (!std::all_of(tail_.begin(), tail_.end(), steppable)) return Kind::Literal;
  step = tail_[1] - tail_[0];  // both steppable: exact enough, never overflows
  if (!steppable(step)) return Kind::Literal;
  double check[kBlock];
  step_from(first, step, check, kBlock);
  for (std::size_t j = 0; j < kBlock; ++j) {
    if (!same_bits(check[j], tail_[j])) return Kind::Literal;
  }
  return Kind::Stepped;
}

void ExactSeries::seal() {
  double step = 0.0;
  const Kind kind = kind_of(step);
  const std::size_t at = values_.size();
  try {
    if (kind == Kind::Constant) {
      values_.push_back(tail_[0]);
    } else if (kind == Kind::Stepped) {
      values_.push_back(tail_[0]);
      values_.push_back(step);
    } else {
      values_.insert(values_.end(), tail_.begin(), tail_.end());
    }
    blocks_.push_back({kind, at});
  } catch (...) {
    values_.resize(at);  // as it was: the values stay in the tail
    throw;
  }
  tail_.clear();
}

void ExactSeries::decode(const Block& b, double* out) const {
  switch (b.kind) {
    case Kind::Constant:
      std::fill_n(out, kBlock, values_[b.at]);
      return;
    case Kind::Stepped:
      step_from(values_[b.at], values_[b.at + 1], out, kBlock);
      return;
    case Kind::Literal:
      std::copy_n(values_.begin() + static_cast<std::ptrdiff_t>(b.at), kBlock, out);
      return;
  }
}

void ExactSeries::unseal() {  // the tail is empty
  const Block b = blocks_.back();
  tail_.resize(kBlock);
  decode(b, tail_.data());
  values_.resize(b.at);
  blocks_.pop_back();
}

void ExactSeries::set_back(double v) {
  if (empty()) throw std::logic_error("ExactSeries::set_back on an empty series");
  if (tail_.empty()) unseal();
  tail_.back() = v;
  if (tail_.size() == kBlock) seal();  // it was full: seal it again, as it now reads
}

void ExactSeries::clear() {
  blocks_.clear();
  values_.clear();
  tail_.clear();
}

void ExactSeries::assign(std::size_t n, double v) {
  clear();
  for (std::size_t i = 0; i < n; ++i) push_back(v);
}

void ExactSeries::assign(const double* first, const double* last) {
  clear();
  for (; first != last; ++first) push_back(*first);
}

double ExactSeries::operator[](std::size_t i) const {
  const std::size_t b = i / kBlock, j = i % kBlock;
  if (b == blocks_.size()) return tail_[j];
  const Block& block = blocks_[b];
  switch (block.kind) {
    case Kind::Constant:
      return values_[block.at];
    case Kind::Literal:
      return values_[block.at + j];
    case Kind::Stepped:
      break;
  }
  double out[kBlock];
  step_from(values_[block.at], values_[block.at + 1], out, j + 1);
  return out[j];
}

void ExactSeries::copy_to(double* out, std::size_t n) const {
  double block[kBlock];
  for (std::size_t b = 0; b * kBlock < n; ++b) {
    const std::size_t count = std::min(kBlock, n - b * kBlock);
    if (b == blocks_.size()) {
      std::copy_n(tail_.begin(), count, out + b * kBlock);
    } else {
      decode(blocks_[b], block);
      std::copy_n(block, count, out + b * kBlock);
    }
  }
}

std::size_t ExactSeries::bytes() const {
  return blocks_.capacity() * sizeof(Block) + values_.size() * sizeof(double) +
         tail_.capacity() * sizeof(double);
}

}  // namespace rwd::petsc
