#pragma once
/// @file
/// Small files that must survive a kill, for the layers above the engine that keep their own
/// manifests (the ensemble's resume, docs/ensemble.md): written atomically, read back, removed,
/// a run's advisory lock, and the checksum manifests end with. The same helpers the engine's
/// resumable runs use (docs/resume.md). Rank-local: the callers decide which rank.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rwd::engine {

/// A label as file names hold it: letters, digits, '.' and '_' kept, anything else '_' (as the
/// HDF5 store names its files); "_" for an empty label.
std::string file_label(const std::string& label);
/// The file's bytes, or nothing when it does not exist. Throws Error(Io) with the OS's reason
/// for anything else.
std::optional<std::string> read_durable(const std::string& path);
/// Replaces `path` by `bytes` so that a kill leaves the old or the new file, never a torn one:
/// written to a temporary beside it, synced, renamed over `path`, and the directory synced.
/// Throws Error(Io) with the OS's reason (the temporary is removed).
void write_durable(const std::string& path, std::string_view bytes);
/// Removes the file if it exists; throws Error(Io) if it exists and cannot be removed.
void remove_durable(const std::string& path);
/// Takes `path` (created if need be) with an exclusive advisory lock (flock) for as long as the
/// returned descriptor is open (close it to let go). Throws Error(InvalidArgument) when another
/// process holds it: a live run; the message ends "give this run <elsewhere>".
int lock_durable_run(const std::string& path, const std::string& elsewhere);
/// Text as lowercase hex digits, two a byte ("-" for empty): any name fits in one word of a
/// manifest line.
std::string hex_text(std::string_view text);
/// hex_text()'s text back, or nothing for a word it did not write.
std::optional<std::string> text_of_hex(std::string_view hex);
/// XXH3-64 of `bytes`: the checksum the manifests' last lines hold.
std::uint64_t durable_checksum(std::string_view bytes);

}  // namespace rwd::engine
