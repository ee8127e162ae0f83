#pragma once
// Whether a call left the calling thread slower for the code that runs after it: a plain SSE2
// loop, as code built for x86-64's baseline (PETSc's, a reference BLAS) is, timed before and
// after the call. Code that runs 256- or 512-bit vector instructions and returns without
// VZEROUPPER leaves the upper halves of the vector registers dirty, and every later
// legacy-encoded SSE instruction of the thread pays for it until something clears them (4x on
// this project's AMD EPYC development machine for a loop at full throughput; Intel's cores pay
// too).
//
// Two checks, both for the tests to assert:
//  - time: the loop's fastest of several repetitions after the call against before it (minima,
//    so that a busy machine inflates both alike or neither). A slowdown the call left in the
//    thread's state lasts until something clears it, so a suspected one is looked at again after
//    pauses, the state untouched: what goes away was the machine (another test, an I/O thread
//    on the sibling hardware thread), not the call;
//  - state, where the CPU reports it: XGETBV(1) says whether the upper halves of ymm0-15 are in
//    use (XINUSE bit 2); clean before the call and in use after it means the call dirtied them,
//    whatever this CPU charges for it.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#if defined(__x86_64__)
#include <cpuid.h>
#include <emmintrin.h>
#endif

namespace rwd::testing {

#if defined(__x86_64__)
namespace caller_state_detail {

// 16 KiB of doubles: in L1, so the loop times the vector unit, not memory.
inline double* loop_data() {
  alignas(64) static double data[2048];
  static bool filled = [] {
    for (int i = 0; i < 2048; ++i) data[i] = 1.0 + 1e-3 * i;
    return true;
  }();
  (void)filled;
  return data;
}

// mulpd/addpd in their legacy (non-VEX) encoding: the compiler emits SSE2 for these intrinsics
// unless the file is built with -mavx, which the tests are not. Four independent chains, so
// the loop runs at the unit's throughput, as a BLAS kernel does: a dirty upper state costs it
// 6x on the development machine, where a single dependent chain hides most of that.
inline double sse2_pass(int sweeps) {
  double* d = loop_data();
  __m128d a0 = _mm_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  const __m128d scale = _mm_set1_pd(0.999999);
  for (int s = 0; s < sweeps; ++s) {
    for (int i = 0; i < 2048; i += 8) {
      a0 = _mm_add_pd(a0, _mm_mul_pd(_mm_load_pd(d + i), scale));
      a1 = _mm_add_pd(a1, _mm_mul_pd(_mm_load_pd(d + i + 2), scale));
      a2 = _mm_add_pd(a2, _mm_mul_pd(_mm_load_pd(d + i + 4), scale));
      a3 = _mm_add_pd(a3, _mm_mul_pd(_mm_load_pd(d + i + 6), scale));
    }
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3));  // keep each sweep
  }
  double out[2];
  _mm_storeu_pd(out, _mm_add_pd(_mm_add_pd(a0, a1), _mm_add_pd(a2, a3)));
  return out[0] + out[1];
}

__attribute__((target("avx"))) inline void vzeroupper() {
  __asm__ volatile("vzeroupper" ::: "memory");
}

// A 256-bit instruction and no VZEROUPPER after it: what a careless AVX kernel leaves behind. In
// assembly and in a function not built for AVX, since GCC ends an AVX function that touches a
// ymm register (a clobber included) with VZEROUPPER.
inline void dirty_upper_state() {
  __asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0" ::: "xmm0");
}

}  // namespace caller_state_detail

/// Seconds of the fastest of `reps` runs of the SSE2 loop (about 20-60 microseconds each on a
/// clean unit).
inline double sse2_loop_seconds(int reps = 9) {
  double best = 1e30;
  volatile double sink = 0.0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink + caller_state_detail::sse2_pass(96);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return best;
}

/// Whether the upper halves of ymm0-15 are in use, where the CPU says (XGETBV with ECX = 1);
/// nullopt where it cannot.
inline std::optional<bool> upper_state_in_use() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return std::nullopt;
  if (__get_cpuid_max(0, nullptr) < 0xD) return std::nullopt;
  __cpuid_count(0xD, 1, a, b, c, d);
  if (!(a & (1u << 2))) return std::nullopt;  // XGETBV with ECX = 1 not supported
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  return (lo & (1u << 2)) != 0;
}

inline bool has_avx() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_AVX) && (c & bit_OSXSAVE);
}

/// Clears the upper state before a measurement, so that each call is judged from a clean start.
inline void clear_upper_state() {
  if (has_avx()) caller_state_detail::vzeroupper();
}

/// Leaves the upper state in use, as a kernel without VZEROUPPER does (the tests' canary);
/// false where the CPU has no AVX.
inline bool dirty_upper_state() {
  if (!has_avx()) return false;
  caller_state_detail::dirty_upper_state();
  return true;
}
#else
inline double sse2_loop_seconds(int = 9) {
  return 1.0;
}
inline std::optional<bool> upper_state_in_use() {
  return std::nullopt;
}
inline void clear_upper_state() {}
inline bool dirty_upper_state() {
  return false;
}
#endif

/// What one call did to the calling thread.
struct CallerCost {
  double before = 0.0;  ///< the SSE2 loop's fastest run on a clean unit, before or after, seconds
  double after = 0.0;   ///< and after it
  std::optional<bool> in_use_before, in_use_after;
  std::optional<bool> in_use_later;  ///< after the pauses of a suspected slowdown

  double ratio() const { return after / before; }
  /// The call dirtied the upper state (known only where the CPU reports it).
  bool dirtied() const { return in_use_before && in_use_after && !*in_use_before && *in_use_after; }
  /// Slower by more than `limit` times (minima, so generous limits hold under load), or dirtied.
  /// Where the CPU reports the upper state, that is the check of what a call leaves, and the
  /// time's limit is at least kSiblingLimit: two vCPUs of this project's VMs can be one core's
  /// hyperthreads, and the other rank busy-polling MPI on the sibling slowed the loop 1.7-2.0x
  /// after collective HDF5 calls whose state was clean before, after and after the pauses (a
  /// dirty upper state costs 9.5x here, so the time check still catches what the state check
  /// does not see, such as the upper halves of zmm registers).
  static constexpr double kSiblingLimit = 3.0;
  bool slowed(double limit = 1.5) const {
    const bool state_known = in_use_before && in_use_after && !*in_use_before;
    return ratio() > (state_known ? std::max(limit, kSiblingLimit) : limit) || dirtied();
  }
  std::string describe() const {
    std::string s = "SSE2 loop " + std::to_string(before * 1e6) + " us before, " +
                    std::to_string(after * 1e6) + " us after (" + std::to_string(ratio()) + "x)";
    if (in_use_before && in_use_after) {
      s += std::string("; upper vector state ") + (*in_use_before ? "in use" : "clean") +
           " before, " + (*in_use_after ? "in use" : "clean") + " after";
      if (in_use_later) s += std::string(", ") + (*in_use_later ? "in use" : "clean") + " later";
    }
    return s;
  }
};

/// Times the SSE2 loop before and after `call()` from a clean upper state.
template <class F>
CallerCost measure_caller_cost(F&& call) {
  CallerCost c;
  clear_upper_state();
  c.before = sse2_loop_seconds();
  c.in_use_before = upper_state_in_use();
  call();
  c.in_use_after = upper_state_in_use();
  c.after = sse2_loop_seconds();
  // A suspected slowdown looked at again after pauses, the state as the call left it: one the
  // call caused is still there, one the machine caused is not.
  for (int pause_ms = 10; c.after > 1.2 * c.before && pause_ms <= 320; pause_ms *= 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    const double later = sse2_loop_seconds();
    if (later < c.after) c.after = later;
    c.in_use_later = upper_state_in_use();
  }
  // The clean loop again, just after: a machine that got busier during the call slows both.
  clear_upper_state();
  const double again = sse2_loop_seconds();
  if (again < c.before) c.before = again;
  return c;
}

/// The SSE2 loop timed each time control reaches the caller's code in the middle of a run (a
/// stepper's forward step, a PETSc callback): what rewind left on the thread just before,
/// against the same loop right after clearing the upper state, so that both see the machine as
/// loaded as it is at that moment. Single looks are still noisy under load: one that seems slow
/// against the fastest clean loop so far is taken again after short pauses, the state untouched,
/// and the verdict is over all of them: at most a tenth may be more than `limit` times slower,
/// and where the CPU reports it none may find the upper state in use.
struct CallbackWatch {
  int seen = 0, slow = 0, in_use = 0;
  double worst = 0.0;
  std::string worst_where;
  double limit = 1.5;
  double clean = 0.0;  // the fastest clean loop seen, seconds

  // `where` is a C string: building a std::string before the look would run glibc's string
  // functions, whose AVX2 variants (chosen on AMD EPYC, say) end with vzeroupper and would clear
  // the state before it is read.
  void look(const char* where) {
    const auto used = upper_state_in_use();
    double as_left = sse2_loop_seconds(5);
    // Against the fastest clean loop so far, a look that seems slow is taken again after pauses,
    // the state untouched (a slowdown rewind left lasts; one from a busy machine passes).
    for (int pause_ms = 2; clean > 0 && as_left > limit * clean && pause_ms <= 32; pause_ms *= 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      as_left = std::min(as_left, sse2_loop_seconds(5));
    }
    clear_upper_state();
    const double now_clean = sse2_loop_seconds(5);
    if (clean == 0 || now_clean < clean) clean = now_clean;
    const double ratio = as_left / now_clean;
    ++seen;
    if (used && *used) ++in_use;
    if (ratio > limit) ++slow;
    if (ratio > worst) {
      worst = ratio;
      worst_where = where;
    }
  }
  bool reported() const { return upper_state_in_use().has_value(); }
  bool passed() const { return seen > 0 && 10 * slow <= seen && in_use == 0; }
  std::string describe() const {
    return std::to_string(seen) + " looks, " + std::to_string(slow) + " more than " +
           std::to_string(limit) + "x slower than with the upper state cleared (worst " +
           std::to_string(worst) + "x, " + worst_where + "), upper state in use in " +
           std::to_string(in_use) + (reported() ? "" : " (not reported by this CPU)");
  }
};

}  // namespace rwd::testing
