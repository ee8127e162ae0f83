#include "layout.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "checksum.hpp"
#include "rewind/error.hpp"

namespace rwd::storage::detail {

std::int64_t Layout::doubles() const {
  std::int64_t n = 0;
  for (const auto& f : fields) n += f.size;
  return n;
}

Layout layout_of(const CheckpointView& checkpoint) {
  Layout out;
  out.fields.reserve(checkpoint.fields.size());
  for (const auto& f : checkpoint.fields) {
    out.fields.push_back(
        {std::string(f.name), static_cast<std::int64_t>(f.data.size()), f.offset, f.global_size});
  }
  for (const auto& s : checkpoint.scalars) {
    out.scalar_names.emplace_back(s.name);
    out.scalar_values.push_back(s.value);
  }
  return out;
}

std::string where(std::string_view store, std::string_view call, const Key& key, int rank) {
  std::string out = std::string(store) + ", " + std::string(call) + "(" + to_string(key) + ")";
  if (rank >= 0) out += " on rank " + std::to_string(rank);
  return out;
}

namespace {

void check_name(const std::string& at, std::string_view what, std::string_view name,
                std::set<std::string_view>& seen) {
  require(!name.empty(), at + ": a " + std::string(what) + " has an empty name");
  require(name.find('/') == std::string_view::npos && name != "." && name != "..",
          at + ": " + std::string(what) + " name '" + std::string(name) +
              "' may not contain '/' or be '.' or '..'");
  require(seen.insert(name).second, at + ": " + std::string(what) + " name '" + std::string(name) +
                                        "' is used twice; names must be unique in a checkpoint");
}

}  // namespace

void validate_put(std::string_view store, const Key& key, const CheckpointView& checkpoint,
                  int rank) {
  const std::string at = where(store, "put", key, rank);
  std::set<std::string_view> seen;
  for (const auto& f : checkpoint.fields) {
    check_name(at, "field", f.name, seen);
    const auto size = static_cast<std::int64_t>(f.data.size());
    require(f.global_size >= 0 && f.offset >= 0 && f.offset <= f.global_size &&
                size <= f.global_size - f.offset,
            at + ": field '" + std::string(f.name) + "': this rank's block [" +
                std::to_string(f.offset) + ", " + std::to_string(f.offset + size) +
                ") does not lie inside the global array [0, " + std::to_string(f.global_size) +
                "); check offset and global_size");
  }
  seen.clear();
  for (const auto& s : checkpoint.scalars) check_name(at, "scalar", s.name, seen);
}

void validate_get(std::string_view store, const Key& key, const Layout& written,
                  const CheckpointSpan& out, int rank) {
  const std::string at = where(store, "get", key, rank);
  const std::string hint = "; read fields in the order, names and sizes they were written";
  require(out.fields.size() == written.fields.size(),
          at + ": asked for " + std::to_string(out.fields.size()) + " fields, the checkpoint has " +
              std::to_string(written.fields.size()) + hint);
  for (std::size_t i = 0; i < written.fields.size(); ++i) {
    const auto& w = written.fields[i];
    const auto& o = out.fields[i];
    const std::string field = at + ": field " + std::to_string(i) + " ('" + w.name + "')";
    require(o.name == w.name, at + ": field " + std::to_string(i) + " is '" + std::string(o.name) +
                                  "' but the checkpoint's field " + std::to_string(i) + " is '" +
                                  w.name + "'" + hint);
    require(static_cast<std::int64_t>(o.data.size()) == w.size,
            field + ": buffer holds " + std::to_string(o.data.size()) + " values, " +
                std::to_string(w.size) + " were written on this rank" + hint);
    require(o.offset == w.offset, field + ": offset " + std::to_string(o.offset) +
                                      " differs from the offset written on this rank, " +
                                      std::to_string(w.offset) + hint);
    require(o.global_size == w.global_size,
            field + ": global size " + std::to_string(o.global_size) + " differs from the " +
                std::to_string(w.global_size) + " written" + hint);
  }
  for (const auto& s : out.scalars) {
    bool found = false;
    for (const auto& n : written.scalar_names) found = found || n == s.name;
    std::string held;
    for (const auto& n : written.scalar_names) held += (held.empty() ? "" : ", ") + n;
    require(found, at + ": the checkpoint has no scalar '" + std::string(s.name) +
                       "' (it has: " + (held.empty() ? "none" : held) + ")");
  }
}

void pack(const CheckpointView& checkpoint, std::span<double> to) {
  std::size_t at = 0;
  for (const auto& f : checkpoint.fields) {
    if (f.data.empty()) continue;
    require(at + f.data.size() <= to.size(), "pack: the buffer is too small (a bug in rewind)");
    std::memcpy(to.data() + at, f.data.data(), f.data.size_bytes());
    at += f.data.size();
  }
}

void unpack(std::span<const double> from, const CheckpointSpan& out) {
  std::size_t at = 0;
  for (const auto& f : out.fields) {
    if (f.data.empty()) continue;
    require(at + f.data.size() <= from.size(), "unpack: the buffer is too small (a bug in rewind)");
    std::memcpy(f.data.data(), from.data() + at, f.data.size_bytes());
    at += f.data.size();
  }
}

void fill_scalars(const Layout& written, const CheckpointSpan& out) {
  for (auto& s : out.scalars) {
    for (std::size_t i = 0; i < written.scalar_names.size(); ++i) {
      if (written.scalar_names[i] == s.name) s.value = written.scalar_values[i];
    }
  }
}

std::uint64_t layout_hash(const CheckpointView& checkpoint) {
  std::vector<std::byte> bytes;
  auto add = [&bytes](const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes.insert(bytes.end(), b, b + n);
  };
  for (const auto& f : checkpoint.fields) {
    const std::uint64_t n = f.name.size();
    add(&n, sizeof n);
    add(f.name.data(), f.name.size());
    add(&f.global_size, sizeof f.global_size);
  }
  const std::uint64_t marker = ~0ull;
  add(&marker, sizeof marker);
  for (const auto& s : checkpoint.scalars) {
    const std::uint64_t n = s.name.size();
    add(&n, sizeof n);
    add(s.name.data(), s.name.size());
    const auto bits = std::bit_cast<std::uint64_t>(s.value);
    add(&bits, sizeof bits);
  }
  return checksum(std::span<const std::byte>(bytes));
}

void count_put(StoreStats& stats, std::int64_t bytes, std::int64_t live) {
  stats.writes += 1;
  stats.bytes_written += bytes;
  stats.live = live;
  stats.peak_live = std::max(stats.peak_live, live);
  stats.live_bytes += bytes;
  stats.peak_bytes = std::max(stats.peak_bytes, stats.live_bytes);
}

void count_get(StoreStats& stats, std::int64_t bytes) {
  stats.reads += 1;
  stats.bytes_read += bytes;
}

void count_erase(StoreStats& stats, std::int64_t bytes, std::int64_t live) {
  stats.live = live;
  stats.live_bytes -= bytes;
}

void throw_missing(std::string_view store, std::string_view call, const Key& key, int rank) {
  throw Error(ErrorCode::InvalidArgument, where(store, call, key, rank) + ": checkpoint " +
                                              to_string(key) +
                                              " is not held (never stored, or already erased)");
}

void throw_duplicate(std::string_view store, const Key& key, int rank) {
  throw Error(ErrorCode::InvalidArgument, where(store, "put", key, rank) + ": checkpoint " +
                                              to_string(key) +
                                              " is already held; erase it before storing it again");
}

}  // namespace rwd::storage::detail
