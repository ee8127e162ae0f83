#pragma once
// The files of a resumable run: its manifest, written atomically, and the links that keep the
// checkpoint files of earlier (killed) runs alive. Rank-local; the callers decide which rank.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rwd::engine::detail {

/// The label as file names hold it (rwd::engine::file_label).
std::string sanitized(const std::string& label);
/// `<directory>/rewind-<label>.resume`, the label sanitised as the HDF5 store does it.
std::string manifest_path(const std::string& directory, const std::string& label);
/// The name, in the directory, of the link generation `g` keeps to its checkpoint file:
/// `rewind-<label>.resume-<g>.h5`.
std::string data_link_name(const std::string& label, std::int64_t generation);
/// The file's text, or nothing when it does not exist. Throws Error(Io) with the OS's reason
/// for anything else.
std::optional<std::string> read_text(const std::string& path);
/// Replaces `path` by `text` so that a kill leaves the old or the new file, never a torn one:
/// written to `<path>.tmp-<pid>`, synced, renamed over `path`, and the directory synced.
/// Throws Error(Io) with the OS's reason (the temporary is removed).
void write_atomically(const std::string& path, std::string_view text);
/// "rewind-<label>.resume-*.h5", the label sanitised: how the links are named, for messages.
std::string data_links_pattern(const std::string& label);
/// A hard link `to` of `from`. Throws Error(Io) with the OS's reason (a file system without
/// hard links cannot keep a killed run's checkpoints).
void hard_link(const std::string& from, const std::string& to);
/// Makes `to` a second name of the file `from` unless it is one already (the same device and
/// inode); a `to` that names another file is replaced. Returns false where the file system
/// cannot (`to` on another file system, or no hard links there); throws Error(Io) with the OS's
/// reason for anything else.
bool link_once(const std::string& from, const std::string& to);
/// Takes `path` (created if need be) with an exclusive advisory lock (flock) and returns its
/// descriptor, held for as long as the run is live. Throws Error(InvalidArgument) when another
/// process holds it (for more than a second: is_locked() takes it for an instant): a live run
/// with this label in this directory; the message ends "give this run <elsewhere>". Error(Io)
/// with the OS's reason if the file cannot be made.
int lock_run(const std::string& path, const std::string& elsewhere);
/// Whether another process holds the lock `path` (a live run); false if there is no such file.
/// Takes a shared lock for an instant when it is free, and never creates or removes the file.
bool is_locked(const std::string& path);
/// Removes the file if it exists; throws Error(Io) if it exists and cannot be removed.
void remove_file(const std::string& path);
/// The names in `directory` of every generation's link (`rewind-<label>.resume-<g>.h5`, exactly
/// that pattern, regular files only).
std::vector<std::string> data_links(const std::string& directory, const std::string& label);

/// Removes, in `directory`, the HDF5 store's partial files of this label
/// (`rewind-<label>-*.h5.partial`) that are the same file as one of `links` (the same device and
/// inode): a killed run's store file, kept by its link, left under its partial name by a run on
/// another host (whose cleanup of stale partial files cannot tell whether that process lives).
/// Returns the names removed. Never throws.
std::vector<std::string> remove_partial_names_of(const std::string& directory,
                                                 const std::string& label,
                                                 const std::vector<std::string>& links);

}  // namespace rwd::engine::detail
