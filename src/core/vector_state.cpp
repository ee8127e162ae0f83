#include "rewind/vector_state.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#include <cstdint>
#endif

namespace rwd {

#if defined(__x86_64__)
namespace {

// AVX instructions run only where the CPU has them and the OS saves the YMM state.
bool cpu_has_avx() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  if (!(c & bit_AVX) || !(c & bit_OSXSAVE)) return false;
  std::uint32_t lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0x6) == 0x6;  // XMM and YMM state enabled in XCR0
}

__attribute__((target("avx"))) void zero_upper() noexcept {
  _mm256_zeroupper();
}

}  // namespace

void clear_upper_vector_state() noexcept {
  static const bool avx = cpu_has_avx();
  if (avx) zero_upper();
}
#else
void clear_upper_vector_state() noexcept {}
#endif

}  // namespace rwd
