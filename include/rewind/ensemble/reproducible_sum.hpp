#pragma once
/// @file
/// Reproducible summation of vectors of doubles: the ensemble's gradient reduction.
///
/// An ensemble runs K independent tasks on G groups of g ranks; task k leaves a gradient block
/// g_k on every rank of the group that ran it, and dJ/dm = sum_k g_k. Floating-point addition is
/// not associative, so summing the blocks as tasks finish gives bits that depend on which group
/// ran which task and on the number of groups. ReproducibleSum gives the same bits whatever the
/// order, the grouping and the split of the additions over accumulators and ranks, and the same
/// bits as a serial loop `ReproducibleSum s(M); for (k) s.add(g_k); s.result();` over the tasks.
///
/// Method (docs/ensemble.md, "Reproducible gradient reduction"): a fixed-point accumulator per
/// entry. Every double is an integer multiple of 2^-1074, so its bits sit at fixed absolute
/// positions; they are cut into 32-bit digits at fixed absolute boundaries (digit i holds bits
/// 32i..32i+31 above 2^-1074). Each entry keeps a window of three digit sums, 64-bit integers,
/// topped by the digit that holds the leading bit of the largest addend seen. An addend's digits
/// inside the window are added exactly; digits below it are dropped. A larger addend moves the
/// window up and drops whole digit sums at the bottom. The state therefore holds, for each digit
/// of the window set by the largest addend, the exact integer sum of that digit over all
/// addends: a function of the multiset of addends alone, so any order and grouping gives the same
/// state and the same correctly rounded double.
///
/// Accuracy: for an entry with n addends x_k, the result is the correctly rounded value of
/// S + d, where S = sum_k x_k exactly and |d| < n * 2^-64 * max_k |x_k| (each addend loses less
/// than one unit of the window's lowest digit, which is at most 2^-64 times the largest addend):
/// |result - S| <= ulp(result)/2 + n * 2^-64 * max|x_k|, so for n <= 2048 the truncation costs
/// at most 2^-53 max|x_k|, one rounding of the largest addend. The result is exactly the
/// correctly rounded sum when no addend has bits below the window (integer-valued data, or all
/// nonzero addends of the entry within a factor 2^40 of each other). Plain recursive summation is
/// only bounded by (n-1) * 2^-53 * sum_k |x_k| and depends on the order (1e16 + 1 - 1e16 gives 0 or
/// 1).
///
/// Limits and special values:
/// - at most max_terms = 2^31 - 1 addends per accumulator, counting those merged and reduced
///   in (beyond that a digit sum could overflow); add, merge and allreduce throw before that;
/// - memory: 32 bytes per entry (four doubles' worth); allreduce moves four times the bytes of a
///   plain MPI_SUM of the doubles;
/// - NaN in any addend gives NaN (the canonical quiet NaN, payloads are not kept); +Inf and -Inf
///   together give NaN; otherwise an infinite addend gives that infinity;
/// - an exact sum whose rounding exceeds the largest double gives +-Inf; partial sums never
///   overflow (DBL_MAX + DBL_MAX - DBL_MAX gives DBL_MAX);
/// - the result is -0.0 only when every addend of the entry was -0.0; any other zero is +0.0;
/// - subnormals need no special case (the grid is 2^-1074): addends are cut like any other, and
///   a subnormal result is the accumulated value exactly.

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rwd::ensemble {

/// Order-independent sum of vectors of `length()` doubles, on one rank and across ranks.
///
/// add() and merge() are rank-local. allreduce() is collective on the communicator it is given:
/// in the ensemble, the communicator of the ranks with the same rank within their group (one per
/// group), so that each rank reduces its own block of the parameter field. A ReproducibleSum is a
/// value: copy it to keep a partial sum. Errors are rwd::Error.
class ReproducibleSum {
 public:
  /// The most addends an accumulator may hold (per entry; every add() adds one to every entry).
  static constexpr std::uint64_t max_terms = (std::uint64_t{1} << 31) - 1;

  /// An empty sum of vectors of `length` doubles (the result of an empty sum is all +0.0).
  /// Rank-local.
  explicit ReproducibleSum(std::size_t length);

  /// Adds `values` (exactly `length()` doubles) entry by entry. Rank-local. Throws
  /// Error(InvalidArgument) for a wrong length or when max_terms would be exceeded; the sum is
  /// then unchanged.
  void add(std::span<const double> values);

  /// Adds everything `other` holds, as if its addends had been added here. Rank-local. Throws
  /// Error(InvalidArgument) when the lengths differ or max_terms would be exceeded; the sum is
  /// then unchanged.
  void merge(const ReproducibleSum& other);

  /// Collective on `comm` (any intracommunicator; every rank of it must call): afterwards every
  /// rank holds the sum of what all ranks held, as if every rank's addends had been added to one
  /// accumulator. Two MPI_Allreduce calls: one agrees on the length and the total number of
  /// addends, one sums the accumulators with a custom, commutative MPI_Op (MPI may use any
  /// reduction order: the result is the same). If the lengths differ between ranks or the total
  /// exceeds max_terms, every rank throws Error(InvalidArgument) and keeps its sum. A failed MPI
  /// call throws Error(Mpi) (with MPI's default error handler MPI aborts first); the sum is then
  /// unusable.
  void allreduce(MPI_Comm comm);

  /// The sum, one double per entry, correctly rounded from the accumulator (see the file
  /// comment for the accuracy). Rank-local; may be called any number of times.
  std::vector<double> result() const;

  /// Number of doubles per vector.
  std::size_t length() const noexcept { return length_; }
  /// Number of vectors added, here and in everything merged or reduced in.
  std::uint64_t terms() const noexcept { return terms_; }

  /// The exact state, for keeping a partial sum durable (an ensemble that resumes after a
  /// kill): words_per_entry() words per entry, in entry order. Rank-local.
  const std::vector<std::uint64_t>& words() const noexcept { return state_; }
  static constexpr std::size_t words_per_entry() noexcept { return 4; }
  /// The sum whose words() and terms() these were: restored bit for bit. Throws
  /// Error(InvalidArgument) when the word count is not words_per_entry() per entry of `length`
  /// or `terms` exceeds max_terms. Rank-local.
  static ReproducibleSum from_words(std::size_t length, std::uint64_t terms,
                                    std::vector<std::uint64_t> words);

 private:
  std::size_t length_;
  std::uint64_t terms_ = 0;
  std::vector<std::uint64_t> state_;  // per entry: a header word, then the window's digit sums
};

}  // namespace rwd::ensemble
