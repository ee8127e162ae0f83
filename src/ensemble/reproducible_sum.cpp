#include "rewind/ensemble/reproducible_sum.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "rewind/comm/agree.hpp"
#include "rewind/error.hpp"

// Why the result does not depend on the order, the grouping or the split of the additions.
//
// Write a finite nonzero addend x as +-m * 2^(s - 1074) with integers 0 < m < 2^53 and s >= 0
// (every double is a multiple of 2^-1074), and let D_i(x) be +-(bits 32i..32i+31 of m * 2^s),
// its i-th digit: x = sum_i D_i(x) * 2^(32i - 1074) exactly. lead(x) is the i of the digit that
// holds x's leading bit. For the multiset A of one entry's addends let T(A) = max lead(x) over A.
// Claim: after any sequence of add(), merge() and allreduce() whose addends form A, the entry's
// window has its top digit at T(A) and holds, for each of the digits T-2..T, the exact integer
// sum of D_i(x) over x in A; its flags are the OR of the addends' flags. By induction:
// - add(x), lead(x) <= top: T is unchanged; x's digits inside the window are added, those below
//   it are not part of the claim, and x has no digit above lead(x).
// - add(x), lead(x) > top: the window moves up to lead(x). The sums it keeps stay exact; the new
//   digits start at 0, which is exact because no earlier addend has a digit above the old top.
//   Then x is added as above.
// - merge or the MPI op, states of A and B: both windows are moved to max(T(A), T(B)) =
//   T(A + B) as above, and the sums of the same digits are added.
// So the state is a function of the multiset A alone, and result() is a function of the state.
// The sums are exact: |D_i| < 2^32 and at most 2^31 - 1 addends keep every digit sum below 2^63
// in magnitude (they are kept as uint64 with wrap-around, exact modulo 2^64, so no intermediate
// order can spoil them either). What must not happen is a carry between digit sums before the
// window is final: a carry moves part of a sum that a later, larger addend would drop into one
// that is kept, so the result would depend on when the carry happened. result() carries on a
// copy only.

namespace rwd::ensemble {
namespace {

using comm::mpi_check;

// One entry is kWords uint64: a header, then the window's digit sums, lowest digit first.
constexpr int kDigitBits = 32;
constexpr int kDigits = 3;
constexpr std::size_t kWords = 1 + kDigits;
constexpr std::uint64_t kDigitMask = 0xffffffffu;

// Header: bits 0..7 hold 1 + the absolute index of the window's top digit (0: no finite nonzero
// addend yet, and every sum is 0); bits 8..15 the flags, OR-ed over the addends.
constexpr std::uint64_t kTopMask = 0xff;
constexpr std::uint64_t kNaN = 1u << 8;
constexpr std::uint64_t kPosInf = 1u << 9;
constexpr std::uint64_t kNegInf = 1u << 10;
constexpr std::uint64_t kNegZero = 1u << 11;
constexpr std::uint64_t kOtherFinite = 1u << 12;  // a finite addend other than -0.0
constexpr std::uint64_t kFlagMask = 0xff00;

int window_top(const std::uint64_t* entry) {
  return static_cast<int>(entry[0] & kTopMask) - 1;
}

// Moves the window up so that its top digit is `top` (>= the current top): digit sums that fall
// below it are dropped whole, and the new digits start at 0.
void raise_window(std::uint64_t* entry, int top) {
  const int shift = top - window_top(entry);
  std::uint64_t* sums = entry + 1;
  for (int k = 0; k < kDigits; ++k) sums[k] = k + shift < kDigits ? sums[k + shift] : 0;
  entry[0] = (entry[0] & ~kTopMask) | static_cast<std::uint64_t>(top + 1);
}

void add_one(std::uint64_t* entry, double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const bool negative = (bits >> 63) != 0;
  const auto exponent = static_cast<int>((bits >> 52) & 0x7ff);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  if (exponent == 0x7ff) {
    entry[0] |= fraction != 0 ? kNaN : (negative ? kNegInf : kPosInf);
    return;
  }
  if (exponent == 0 && fraction == 0) {
    entry[0] |= negative ? kNegZero : kOtherFinite;
    return;
  }
  entry[0] |= kOtherFinite;
  // |x| = m * 2^(s - 1074): s is the absolute position of m's lowest bit.
  const std::uint64_t m = exponent == 0 ? fraction : fraction | (std::uint64_t{1} << 52);
  const int s = exponent == 0 ? 0 : exponent - 1;
  const int lead = (s + static_cast<int>(std::bit_width(m)) - 1) / kDigitBits;
  if (lead > window_top(entry)) raise_window(entry, lead);
  const int shift = s % kDigitBits;
  const std::uint64_t low = m << shift;
  const std::uint64_t high = shift == 0 ? 0 : m >> (64 - shift);
  const std::array<std::uint64_t, 3> digits = {low & kDigitMask, low >> kDigitBits, high};
  const std::uint64_t sign = negative ? ~std::uint64_t{0} : 0;  // (d ^ sign) - sign is +-d
  const int first_slot = s / kDigitBits - (window_top(entry) - kDigits + 1);
  for (int i = 0; i < 3; ++i) {
    const int slot = first_slot + i;
    if (slot >= 0 && slot < kDigits) entry[1 + slot] += (digits[i] ^ sign) - sign;
  }
}

// inout becomes the state of the union of the two entries' addends.
void combine(const std::uint64_t* in, std::uint64_t* inout, std::size_t entries) {
  for (std::size_t j = 0; j < entries; ++j, in += kWords, inout += kWords) {
    inout[0] |= in[0] & kFlagMask;
    const int top_in = window_top(in);
    if (top_in < 0) continue;
    if (top_in > window_top(inout)) raise_window(inout, top_in);
    const int shift = window_top(inout) - top_in;  // in's digit k is inout's digit k - shift
    for (int k = shift; k < kDigits; ++k) inout[1 + k - shift] += in[1 + k];
  }
}

// 64 bits of the magnitude `digits` (32-bit digits, lowest first) from bit `low` up; bits below
// 0 read as 0. `below` tells whether any bit under `low` is set.
template <std::size_t N>
std::uint64_t bits_from(const std::array<std::uint32_t, N>& digits, int low, bool& below) {
  const int first = low >> 5;  // floor(low / 32), also for negative low
  std::uint64_t out = 0;
  for (int q = first; q <= first + 2; ++q) {
    if (q < 0 || q >= static_cast<int>(N)) continue;
    const int at = kDigitBits * q - low;  // where digit q's bit 0 lands in `out`
    const std::uint64_t d = digits[static_cast<std::size_t>(q)];
    if (at < 0) {
      out |= d >> -at;
    } else if (at < 64) {
      out |= d << at;
    }
  }
  below = false;
  for (int q = 0; q < std::min(first, static_cast<int>(N)); ++q) below = below || digits[q] != 0;
  const int cut = low - kDigitBits * first;
  if (first >= 0 && first < static_cast<int>(N) && cut > 0) {
    below = below || (digits[static_cast<std::size_t>(first)] & ((1u << cut) - 1)) != 0;
  }
  return out;
}

// The entry's sum, rounded to nearest (ties to even).
double to_double(const std::uint64_t* entry) {
  const std::uint64_t flags = entry[0] & kFlagMask;
  if ((flags & kNaN) != 0 || ((flags & kPosInf) != 0 && (flags & kNegInf) != 0)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if ((flags & kPosInf) != 0) return std::numeric_limits<double>::infinity();
  if ((flags & kNegInf) != 0) return -std::numeric_limits<double>::infinity();

  // sum_k sums[k] * 2^(32k) as a two's complement number of kDigits + 2 digits: the carries.
  std::array<std::uint32_t, kDigits + 2> digits{};
  std::int64_t carry = 0;
  for (int k = 0; k < kDigits; ++k) {
    const auto sum = static_cast<std::int64_t>(entry[1 + k]);
    const std::int64_t v = static_cast<std::int64_t>(entry[1 + k] & kDigitMask) + carry;
    digits[k] = static_cast<std::uint32_t>(v);
    carry = (v >> kDigitBits) + (sum >> kDigitBits);
  }
  digits[kDigits] = static_cast<std::uint32_t>(carry);
  digits[kDigits + 1] = static_cast<std::uint32_t>(carry >> kDigitBits);
  const bool negative = carry < 0;
  if (negative) {
    std::uint64_t c = 1;
    for (auto& d : digits) {
      const std::uint64_t t = static_cast<std::uint64_t>(~d) + c;
      d = static_cast<std::uint32_t>(t);
      c = t >> kDigitBits;
    }
  }
  int h = static_cast<int>(digits.size()) - 1;
  while (h >= 0 && digits[static_cast<std::size_t>(h)] == 0) --h;
  if (h < 0) return (flags & kNegZero) != 0 && (flags & kOtherFinite) == 0 ? -0.0 : 0.0;

  // Bit positions: relative to the window's lowest digit, and absolute (above 2^-1074). A
  // nonzero sum has its leading bit at an absolute position >= 0: no addend has lower bits.
  const int lead_rel =
      kDigitBits * h + static_cast<int>(std::bit_width(digits[static_cast<std::size_t>(h)])) - 1;
  const int lead = lead_rel + kDigitBits * (window_top(entry) - kDigits + 1);
  const int last = std::max(lead - 52, 0);  // absolute position of the result's last bit
  const int kept = lead - last + 1;         // 1..53 bits
  bool sticky = false;
  const std::uint64_t top64 = bits_from(digits, lead_rel - 63, sticky);  // leading bit at 63
  std::uint64_t mantissa = top64 >> (64 - kept);
  const std::uint64_t rest = top64 << kept;
  sticky = sticky || (rest << 1) != 0;
  if ((rest >> 63) != 0 && (sticky || (mantissa & 1) != 0)) ++mantissa;
  // Exact (mantissa <= 2^53, last >= 0), or +-Inf when the rounded sum is beyond DBL_MAX.
  const double magnitude = std::ldexp(static_cast<double>(mantissa), last - 1074);
  return negative ? -magnitude : magnitude;
}

// A committed datatype of `words` uint64 and a commutative MPI_Op over it, freed locally.
class Reduction {
 public:
  Reduction(int words, MPI_User_function* fn) {
    mpi_check(MPI_Type_contiguous(words, MPI_UINT64_T, &type_), "MPI_Type_contiguous");
    mpi_check(MPI_Type_commit(&type_), "MPI_Type_commit");
    mpi_check(MPI_Op_create(fn, 1, &op_), "MPI_Op_create");
  }
  ~Reduction() {
    if (op_ != MPI_OP_NULL) MPI_Op_free(&op_);
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  Reduction(const Reduction&) = delete;
  Reduction& operator=(const Reduction&) = delete;
  MPI_Datatype type() const { return type_; }
  MPI_Op op() const { return op_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
};

void combine_op(void* in, void* inout, int* count, MPI_Datatype*) {
  combine(static_cast<const std::uint64_t*>(in), static_cast<std::uint64_t*>(inout),
          static_cast<std::size_t>(*count));
}

// What the ranks agree on before reducing: {max length, max ~length, total addends}.
using Agreement = std::array<std::uint64_t, 3>;

void agreement_op(void* in, void* inout, int* count, MPI_Datatype*) {
  const auto* a = static_cast<const Agreement*>(in);
  auto* b = static_cast<Agreement*>(inout);
  for (int i = 0; i < *count; ++i, ++a, ++b) {
    (*b)[0] = std::max((*a)[0], (*b)[0]);
    (*b)[1] = std::max((*a)[1], (*b)[1]);
    (*b)[2] += (*a)[2];  // each term count <= 2^31 and at most 2^31 ranks: no overflow
  }
}

std::string terms_limit_message(const char* where, std::uint64_t total) {
  return std::string("ReproducibleSum::") + where + ": " + std::to_string(total) +
         " vectors in one sum exceed the limit of " + std::to_string(ReproducibleSum::max_terms) +
         " (a digit sum could overflow); reduce partial sums in stages";
}

}  // namespace

ReproducibleSum::ReproducibleSum(std::size_t length)
    : length_(length), state_(length * kWords, 0) {}

static_assert(ReproducibleSum::words_per_entry() == kWords);

ReproducibleSum ReproducibleSum::from_words(std::size_t length, std::uint64_t terms,
                                            std::vector<std::uint64_t> words) {
  require(words.size() == length * kWords,
          "ReproducibleSum::from_words: " + std::to_string(words.size()) +
              " words for a sum of length " + std::to_string(length) + " (" +
              std::to_string(kWords) + " an entry)");
  require(terms <= max_terms, terms_limit_message("from_words", terms));
  ReproducibleSum s(0);
  s.length_ = length;
  s.terms_ = terms;
  s.state_ = std::move(words);
  return s;
}

void ReproducibleSum::add(std::span<const double> values) {
  require(values.size() == length_, "ReproducibleSum::add: got " + std::to_string(values.size()) +
                                        " values for a sum of length " + std::to_string(length_));
  require(terms_ < max_terms, terms_limit_message("add", terms_ + 1));
  std::uint64_t* entry = state_.data();
  for (const double x : values) {
    add_one(entry, x);
    entry += kWords;
  }
  ++terms_;
}

void ReproducibleSum::merge(const ReproducibleSum& other) {
  require(other.length_ == length_, "ReproducibleSum::merge: lengths differ (" +
                                        std::to_string(length_) + " and " +
                                        std::to_string(other.length_) + ")");
  require(terms_ + other.terms_ <= max_terms, terms_limit_message("merge", terms_ + other.terms_));
  combine(other.state_.data(), state_.data(), length_);
  terms_ += other.terms_;
}

void ReproducibleSum::allreduce(MPI_Comm comm) {
  const Agreement mine = {length_, ~std::uint64_t{length_}, terms_};
  Agreement all{};
  {
    const Reduction agree(3, &agreement_op);
    mpi_check(MPI_Allreduce(&mine, &all, 1, agree.type(), agree.op(), comm),
              "MPI_Allreduce (ReproducibleSum lengths and terms)");
  }
  if (all[0] != ~all[1]) {
    throw Error(ErrorCode::InvalidArgument,
                "ReproducibleSum::allreduce: the ranks' lengths differ (from " +
                    std::to_string(~all[1]) + " to " + std::to_string(all[0]) +
                    "); every rank of the communicator must reduce a sum of the same length");
  }
  if (all[2] > max_terms) {
    throw Error(ErrorCode::InvalidArgument, terms_limit_message("allreduce", all[2]));
  }
  const Reduction sum(static_cast<int>(kWords), &combine_op);
  for (std::size_t done = 0; done < length_;) {
    const std::size_t n = std::min<std::size_t>(length_ - done, INT_MAX);
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, state_.data() + done * kWords, static_cast<int>(n),
                            sum.type(), sum.op(), comm),
              "MPI_Allreduce (ReproducibleSum)");
    done += n;
  }
  terms_ = all[2];
}

std::vector<double> ReproducibleSum::result() const {
  std::vector<double> out(length_);
  for (std::size_t j = 0; j < length_; ++j) out[j] = to_double(state_.data() + j * kWords);
  return out;
}

}  // namespace rwd::ensemble
