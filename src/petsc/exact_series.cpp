#include "exact_series.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace rwd::petsc {
namespace {

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;  // -0.0 is not 0.0; a NaN is its own payload
}

}  // namespace

void ExactSeries::push_back(double v) {
  if (tail_.capacity() < kBlock) tail_.reserve(kBlock);
  tail_.push_back(v);
  if (tail_.size() == kBlock) seal();
}

void ExactSeries::seal() {
  const double first = tail_[0];
  bool constant = true;
  for (std::size_t j = 1; j < kBlock && constant; ++j) constant = same_bits(tail_[j], first);
  const double step = tail_[1] - tail_[0];
  bool stepped = !constant;
  double v = first;
  for (std::size_t j = 1; j < kBlock && stepped; ++j) {
    v += step;
    stepped = same_bits(v, tail_[j]);
  }
  const Kind kind = constant ? Kind::Constant : stepped ? Kind::Stepped : Kind::Literal;
  blocks_.push_back({kind, values_.size()});
  if (kind == Kind::Constant) {
    values_.push_back(first);
  } else if (kind == Kind::Stepped) {
    values_.push_back(first);
    values_.push_back(step);
  } else {
    values_.insert(values_.end(), tail_.begin(), tail_.end());
  }
  ++sealed_;
  tail_.clear();
}

void ExactSeries::decode(const Block& b, double* out) const {
  if (b.kind == Kind::Literal) {
    for (std::size_t j = 0; j < kBlock; ++j) out[j] = values_[b.at + j];
    return;
  }
  double v = values_[b.at];
  const double step = b.kind == Kind::Stepped ? values_[b.at + 1] : 0.0;
  out[0] = v;
  for (std::size_t j = 1; j < kBlock; ++j) {
    if (b.kind == Kind::Stepped) v += step;
    out[j] = v;
  }
}

void ExactSeries::unseal() {
  const Block b = blocks_.back();
  tail_.resize(kBlock);
  decode(b, tail_.data());
  values_.resize(b.at);
  blocks_.pop_back();
  --sealed_;
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
  sealed_ = 0;
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
  if (b == sealed_) return tail_[j];
  const Block& block = blocks_[b];
  switch (block.kind) {
    case Kind::Constant:
      return values_[block.at];
    case Kind::Literal:
      return values_[block.at + j];
    case Kind::Stepped:
      break;
  }
  double v = values_[block.at];
  const double step = values_[block.at + 1];
  for (std::size_t k = 0; k < j; ++k) v += step;
  return v;
}

void ExactSeries::copy_to(double* out, std::size_t n) const {
  double block[kBlock];
  for (std::size_t b = 0; b * kBlock < n; ++b) {
    const std::size_t count = std::min(kBlock, n - b * kBlock);
    if (b == sealed_) {
      std::memcpy(out + b * kBlock, tail_.data(), count * sizeof(double));
    } else {
      decode(blocks_[b], block);
      std::memcpy(out + b * kBlock, block, count * sizeof(double));
    }
  }
}

std::size_t ExactSeries::bytes() const {
  return blocks_.capacity() * sizeof(Block) + values_.size() * sizeof(double) +
         tail_.capacity() * sizeof(double);
}

}  // namespace rwd::petsc
