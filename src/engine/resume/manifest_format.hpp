#pragma once
// What the manifest's writer and reader share (docs/resume.md, include/rewind/engine/manifest.hpp):
// the first line, the bounds a manifest never exceeds, text as hex and the text's checksum.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "rewind/engine/durable_files.hpp"

namespace rwd::engine::detail {

// Version 2: block checksums are XXH3-64 (the HDF5 store's, format 5); version 1 had rwd64.
inline constexpr std::string_view kMagic = "rewind resume manifest 2";
/// A manifest with compressed blocks (a 7th value on their lines): version 3, so that a rewind
/// that reads version 2 only refuses it by its version rather than as damaged.
inline constexpr std::string_view kMagicCompressed = "rewind resume manifest 3";
// Bounds a manifest never exceeds, so that a damaged one cannot ask for absurd allocations.
inline constexpr std::int64_t kMaxRanks = 1 << 20;
inline constexpr std::int64_t kMaxFields = 1 << 12;
inline constexpr std::int64_t kMaxBlocks = 1 << 22;  // fields times ranks
inline constexpr std::size_t kMaxName = 4096;        // a field's or a file's name, bytes

inline std::string hex_of(std::string_view text) {
  return hex_text(text);
}

inline std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

/// XXH3-64 of the text (libxxhash's plain code, inlined: a few hundred bytes).
std::uint64_t text_checksum(std::string_view text);

inline const char* kind_name(bool adjoint) {
  return adjoint ? "adjoint" : "state";
}

}  // namespace rwd::engine::detail
