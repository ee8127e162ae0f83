#include "checksum.hpp"

#if defined(__x86_64__) || defined(__i386__)
#define XXH_DISPATCH_DISABLE_REPLACE  // the *_dispatch names are called by name below
#include <xxh_x86dispatch.h>
#define REWIND_XXH3(name) name##_dispatch
#else
#define REWIND_XXH3(name) name  // libxxhash has no dispatch off x86; its code is the CPU's
#endif

namespace rwd::storage::detail {

Checksum::Checksum() noexcept {
  XXH3_64bits_reset(&state_);
}

void Checksum::update(std::span<const std::byte> bytes) noexcept {
  // XXH_ERROR only for a null state, which state_ never is (an empty span may have a null
  // pointer; XXH3 then hashes nothing).
  if (!bytes.empty()) REWIND_XXH3(XXH3_64bits_update)(&state_, bytes.data(), bytes.size());
}

std::uint64_t Checksum::value() const noexcept {
  return XXH3_64bits_digest(&state_);
}

std::uint64_t checksum(std::span<const std::byte> bytes) noexcept {
  return REWIND_XXH3(XXH3_64bits)(bytes.data(), bytes.size());
}

}  // namespace rwd::storage::detail
