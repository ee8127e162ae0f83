#pragma once
/// @file
/// The calling thread's vector unit as rewind leaves it. Code that runs 256- or 512-bit vector
/// instructions (libxxhash's AVX-512 and AVX2 checksums, picked at run time) and returns without
/// VZEROUPPER leaves the upper halves of the vector registers in use, and every later
/// legacy-encoded SSE instruction of the thread pays for it until something clears them: the
/// caller's own solver (PETSc's VecScale, a reference BLAS) ran 4 to 8 times slower after one
/// such call, while rewind's own timers saw nothing. Every rewind call that runs such code
/// clears the state before it returns (tests/engine/caller_state_test.cpp checks each).

namespace rwd {

/// Clears the upper halves of the vector registers (VZEROUPPER) where the CPU has AVX; does
/// nothing elsewhere. A few cycles. Thread-local in effect: it acts on the calling thread.
void clear_upper_vector_state() noexcept;

}  // namespace rwd
