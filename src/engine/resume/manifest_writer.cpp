#include "manifest_format.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "rewind/engine/manifest.hpp"

namespace rwd::engine {

namespace detail {

std::uint64_t text_checksum(std::string_view text) {
  return XXH3_64bits(text.data(), text.size());
}

}  // namespace detail

namespace {

using detail::hex64;
using detail::hex_of;

void append_entry(std::string& out, const char* kind, const ManifestEntry& e) {
  out += std::string(kind) + " " + std::to_string(e.step) + " " + hex_of(e.file) + "\n";
  for (std::size_t r = 0; r < e.blocks.size(); ++r) {
    for (std::size_t f = 0; f < e.blocks[r].size(); ++f) {
      const storage::SealedBlock& b = e.blocks[r][f];
      out += "block " + std::to_string(r) + " " + std::to_string(f) + " " + std::to_string(b.at) +
             " " + std::to_string(b.count) + " " + hex64(b.checksum) +
             (b.stored > 0 ? " " + std::to_string(b.stored) : std::string()) + "\n";
    }
  }
}

}  // namespace

std::string to_text(const Manifest& m) {
  bool compressed = false;
  const auto any_stored = [&](const ManifestEntry& e) {
    for (const auto& rank : e.blocks) {
      for (const storage::SealedBlock& b : rank) compressed = compressed || b.stored > 0;
    }
  };
  for (const ManifestEntry& e : m.states) any_stored(e);
  for (const ManifestEntry& e : m.reached) any_stored(e);
  if (m.final_state) any_stored(*m.final_state);
  if (m.reverse) any_stored(*m.reverse);
  std::string out(compressed ? detail::kMagicCompressed : detail::kMagic);
  out += "\nidentity " + hex_of(m.identity) + "\nlabel " + hex_of(m.label) + "\nranks " +
         std::to_string(m.ranks) + "\nsteps " + std::to_string(m.steps) + "\ninterval " +
         std::to_string(m.interval) + "\ngeneration " + std::to_string(m.generation) + "\n";
  for (bool adjoint : {false, true}) {
    const auto& fields = adjoint ? m.adjoint : m.state;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      out += "field " + std::string(detail::kind_name(adjoint)) + " " + std::to_string(f) + " " +
             hex_of(fields[f].name) + " " + std::to_string(fields[f].global_size) + "\n";
    }
  }
  for (bool adjoint : {false, true}) {
    const auto& fields = adjoint ? m.adjoint : m.state;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      for (std::size_t r = 0; r < fields[f].offsets.size(); ++r) {
        out += "layout " + std::string(detail::kind_name(adjoint)) + " " + std::to_string(r) + " " +
               std::to_string(f) + " " + std::to_string(fields[f].offsets[r]) + " " +
               std::to_string(fields[f].counts[r]) + "\n";
      }
    }
  }
  for (const ManifestEntry& e : m.states) append_entry(out, "state", e);
  if (m.final_state) append_entry(out, "final", *m.final_state);
  for (const ManifestEntry& e : m.reached) append_entry(out, "reached", e);
  if (m.reverse) append_entry(out, "adjoint", *m.reverse);
  out += "end " + hex64(detail::text_checksum(out)) + "\n";
  return out;
}

}  // namespace rwd::engine
