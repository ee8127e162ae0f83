#include "checksum.hpp"

#include <new>

#include "rewind/vector_state.hpp"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t's definition
#include <xxhash.h>

#if defined(__x86_64__)
#define XXH_DISPATCH_DISABLE_REPLACE  // the *_dispatch names are called by name below
#include <xxh_x86dispatch.h>
#define REWIND_XXH3(name) name##_dispatch
#else
#define REWIND_XXH3(name) name  // libxxhash has no dispatch off x86; its code is the CPU's
#endif

namespace rwd::storage::detail {
namespace {

static_assert(sizeof(XXH3_state_t) <= sizeof(Checksum) && alignof(XXH3_state_t) <= 64,
              "Checksum::state_ must hold an XXH3_state_t");

XXH3_state_t* state(unsigned char* bytes) {
  return std::launder(reinterpret_cast<XXH3_state_t*>(bytes));
}
const XXH3_state_t* state(const unsigned char* bytes) {
  return std::launder(reinterpret_cast<const XXH3_state_t*>(bytes));
}

// libxxhash's dispatched AVX-512 and AVX2 code returns with the upper halves of the vector
// registers in use (no VZEROUPPER): the caller's next SSE code would run several times slower
// (rewind/vector_state.hpp). Every dispatched call is followed by this.
template <class R>
R clean(R value) noexcept {
  clear_upper_vector_state();
  return value;
}

// libxxhash picks its code (AVX-512, AVX2, SSE2) at the first dispatched call, with a plain
// write: make that call while the library loads, before any I/O thread exists.
[[maybe_unused]] const XXH64_hash_t warm_dispatch = clean(REWIND_XXH3(XXH3_64bits)("", 0));

}  // namespace

Checksum::Checksum() noexcept {
  XXH3_64bits_reset(new (state_) XXH3_state_t);
}

void Checksum::update(std::span<const std::byte> bytes) noexcept {
  // XXH_ERROR only for a null state, which state_ never is (an empty span may have a null
  // pointer; XXH3 then hashes nothing).
  if (bytes.empty()) return;
  clean(REWIND_XXH3(XXH3_64bits_update)(state(state_), bytes.data(), bytes.size()));
}

std::uint64_t Checksum::value() const noexcept {
  return XXH3_64bits_digest(state(state_));
}

std::uint64_t checksum(std::span<const std::byte> bytes) noexcept {
  return clean(REWIND_XXH3(XXH3_64bits)(bytes.data(), bytes.size()));
}

}  // namespace rwd::storage::detail
