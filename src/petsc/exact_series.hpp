#pragma once
// ExactSeries: a sequence of doubles that returns exactly the bits pushed, stored compactly when
// the values repeat or advance by a fixed step, as a fixed-step run's times, step sizes and
// proposals do. The step log (ts_stepper.hpp) keeps three of them, one entry per step of the
// run, for the whole run: as std::vector<double> that was 24 bytes a step (up to twice that in
// capacity, and a reallocation's copy at the peak); a fixed-step run now needs well under a byte.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace rwd::petsc {

class ExactSeries {
 public:
  /// Values are sealed in blocks of this many: each is one value (all equal, bit for bit), two
  /// (a first value and a step that, added one at a time in round-to-nearest, gives every value
  /// bit for bit; only for zero or normal values below 2^1000, so that no addition can overflow,
  /// trap or meet a subnormal) or all of them.
  static constexpr std::size_t kBlock = 64;

  void push_back(double v);
  /// Replaces the last value (there must be one).
  void set_back(double v);
  void assign(std::size_t n, double v);
  void assign(const double* first, const double* last);
  void clear();

  /// The i-th value pushed, bit for bit (i < size()). At most kBlock - 1 additions.
  double operator[](std::size_t i) const;
  /// The first n values into out[0 .. n), in one pass (n <= size()).
  void copy_to(double* out, std::size_t n) const;

  std::size_t size() const { return blocks_.size() * kBlock + tail_.size(); }
  bool empty() const { return size() == 0; }
  /// Bytes held (blocks and their values, plus the unsealed tail), for tests and statistics.
  std::size_t bytes() const;

 private:
  enum class Kind : std::uint8_t { Constant, Stepped, Literal };
  struct Block {
    Kind kind;
    std::size_t at;  ///< its first value in values_
  };

  Kind kind_of(double& step) const;  // how the full tail seals (step: a Stepped block's)
  void seal();
  void unseal();
  void decode(const Block& b, double* out) const;

  std::vector<Block> blocks_;
  std::deque<double> values_;  ///< the blocks' values; a deque, so growing never copies them
  std::vector<double> tail_;   ///< the values after the last sealed block (< kBlock)
};

}  // namespace rwd::petsc
