// The codec registry and the block format (rewind/storage/codec.hpp).
#include "rewind/storage/codec.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "checksum.hpp"
#include "codec_impl.hpp"
#include "rewind/error.hpp"
#include "rewind/vector_state.hpp"

namespace rwd::storage {

namespace {

static_assert(std::endian::native == std::endian::little, "the block header is little-endian");

constexpr std::array<char, 4> kMagic = {'R', 'W', 'C', 'B'};
constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kRaw = 1;

// Ids are the header's codec byte: never renumber.
struct Entry {
  std::uint8_t id;
  CodecInfo info;
  const detail::CodecImpl* (*impl)();
  bool takes_tolerance;
  bool takes_precision;
  int max_level;  // 0: takes no level
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = {
      {0,
       {"none", true, "stored as it is"},
       [] { return (const detail::CodecImpl*)nullptr; },
       false,
       false,
       0},
      {1,
       {"zstd", true,
        "Zstandard, level 1 unless given (1-19): lossless; finds repeated values and runs "
        "(ex5adj's states: 2.05x at level 1, 2.71x at 3)"},
       [] { return &detail::zstd_codec(); },
       false,
       false,
       19},
      {2,
       {"blosc", true,
        "Blosc: byte shuffle and LZ4, lossless; the fastest (GB/s), for smooth "
        "fields whose bytes differ little"},
       [] { return &detail::blosc_codec(); },
       false,
       false,
       9},
      {3,
       {"zfp", false, "zfp fixed accuracy: every value within the tolerance (an absolute error)"},
       [] { return &detail::zfp_codec(); },
       true,
       false,
       0},
      {4,
       {"zfp-precision", false, "zfp fixed precision: the given number of bits of each block"},
       [] { return &detail::zfp_codec(); },
       false,
       true,
       0},
  };
  return all;
}

const Entry* by_name(std::string_view name) {
  for (const Entry& e : entries()) {
    if (e.info.name == name) return &e;
  }
  return nullptr;
}

const Entry* by_id(std::uint8_t id) {
  for (const Entry& e : entries()) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

template <class T>
void put(std::byte* at, T value) {
  std::memcpy(at, &value, sizeof value);
}

template <class T>
T get(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

// The block's checksum: the header but its checksum field, then the payload, so that a damaged
// flag or setting is caught as a damaged value is.
std::uint64_t checksum_of(const std::byte* header, std::span<const std::byte> payload) {
  detail::Checksum c;
  c.update(std::span(header, 24));
  c.update(std::span(header + 32, kBlockHeaderBytes - 32));
  c.update(payload);
  return c.value();
}

Error corrupt(const std::string& what) {
  return Error(ErrorCode::Corrupt, "checkpoint block: " + what);
}

}  // namespace

const std::vector<CodecInfo>& codec_list() {
  static const std::vector<CodecInfo> list = [] {
    std::vector<CodecInfo> out;
    for (const Entry& e : entries()) out.push_back(e.info);
    return out;
  }();
  return list;
}

bool codec_is_lossy(std::string_view name) {
  const Entry* e = by_name(name);
  return e != nullptr && !e->info.lossless;
}

CodecSpec codec_for(const CodecSpec& codec, bool exact) {
  return exact && codec_is_lossy(codec.name) ? CodecSpec{"zstd", 0.0, 0} : codec;
}

void check_codec(const CodecSpec& spec, const std::string& option,
                 const std::string& tolerance_option, const std::string& precision_option,
                 const std::string& level_option) {
  // The setting that sets the tolerance or the precision, where the caller names it.
  const auto setting = [](const std::string& name) {
    return name.empty() ? "" : " (" + name + ")";
  };
  char tolerance[32];
  std::snprintf(tolerance, sizeof tolerance, "%g", spec.tolerance);
  const Entry* e = by_name(spec.name);
  if (e == nullptr) {
    std::string names;
    for (const Entry& x : entries()) names += (names.empty() ? "" : ", ") + x.info.name;
    throw Error(ErrorCode::InvalidArgument,
                option + ": unknown codec '" + spec.name + "' (codecs: " + names + ")");
  }
  if (!std::isfinite(spec.tolerance) || spec.tolerance < 0) {
    throw Error(ErrorCode::InvalidArgument, option + ": the tolerance" + setting(tolerance_option) +
                                                " must be finite and >= 0, got " + tolerance);
  }
  if (e->takes_tolerance && spec.tolerance <= 0) {
    throw Error(ErrorCode::InvalidArgument, option + ": " + spec.name + " needs a tolerance > 0" +
                                                setting(tolerance_option) +
                                                ", the largest absolute error of a restored value");
  }
  if (!e->takes_tolerance && spec.tolerance != 0) {
    throw Error(ErrorCode::InvalidArgument,
                option + ": " + spec.name + " takes no tolerance" + setting(tolerance_option) +
                    (e->info.lossless ? ", it is lossless" : "") + "; got " + tolerance);
  }
  if (e->takes_precision && (spec.precision < 1 || spec.precision > 64)) {
    throw Error(ErrorCode::InvalidArgument,
                option + ": " + spec.name + " needs a precision of 1 to 64 bits" +
                    setting(precision_option) + ", got " + std::to_string(spec.precision));
  }
  if (!e->takes_precision && spec.precision != 0) {
    throw Error(ErrorCode::InvalidArgument,
                option + ": " + spec.name + " takes no precision" + setting(precision_option));
  }
  if (e->max_level == 0 && spec.level != 0) {
    throw Error(ErrorCode::InvalidArgument, option + ": " + spec.name + " takes no level" +
                                                setting(level_option) + "; got " +
                                                std::to_string(spec.level));
  }
  if (e->max_level > 0 && (spec.level < 0 || spec.level > e->max_level)) {
    throw Error(ErrorCode::InvalidArgument,
                option + ": " + spec.name + "'s level" + setting(level_option) + " must be 1 to " +
                    std::to_string(e->max_level) + " (0: its default), got " +
                    std::to_string(spec.level));
  }
}

std::size_t encode_block(const CodecSpec& spec, std::span<const double> values,
                         std::vector<std::byte>& out, const Grid& grid) {
  check_codec(spec, "codec");
  if (!grid.empty() && (grid.dof < 1 || grid.nx < 1 || grid.ny < 1 || grid.nz < 1 ||
                        grid.size() != static_cast<std::int64_t>(values.size()))) {
    throw Error(ErrorCode::InvalidArgument,
                "codec: a grid of " + std::to_string(grid.dof) + " x " + std::to_string(grid.nx) +
                    " x " + std::to_string(grid.ny) + " x " + std::to_string(grid.nz) +
                    " (dof x nx x ny x nz, each >= 1) for a block of " +
                    std::to_string(values.size()) + " values");
  }
  const Entry& e = *by_name(spec.name);
  const std::size_t start = out.size();
  const std::size_t raw_bytes = values.size_bytes();
  out.resize(start + kBlockHeaderBytes);
  bool raw = true;
  if (const detail::CodecImpl* impl = e.impl(); impl != nullptr && !values.empty()) {
    // Compressed only if smaller than the values: otherwise raw, the header the only cost.
    raw = !impl->encode(spec, values, grid, out, raw_bytes > 0 ? raw_bytes - 1 : 0);
    clear_upper_vector_state();
  }
  if (raw) {
    out.resize(start + kBlockHeaderBytes + raw_bytes);
    if (raw_bytes > 0)
      std::memcpy(out.data() + start + kBlockHeaderBytes, values.data(), raw_bytes);
  }
  const std::size_t payload = out.size() - start - kBlockHeaderBytes;
  std::byte* h = out.data() + start;
  std::memcpy(h, kMagic.data(), kMagic.size());
  put<std::uint8_t>(h + 4, kVersion);
  put<std::uint8_t>(h + 5, e.id);
  put<std::uint8_t>(h + 6, raw ? kRaw : 0);
  put<std::uint8_t>(h + 7, 0);
  put<std::uint64_t>(h + 8, values.size());
  put<std::uint64_t>(h + 16, payload);
  put<double>(h + 32, spec.tolerance);
  put<std::uint32_t>(h + 40, static_cast<std::uint32_t>(spec.precision));
  put<std::uint32_t>(h + 44, 0);
  put<std::uint64_t>(h + 24, checksum_of(h, {h + kBlockHeaderBytes, payload}));
  return out.size() - start;
}

BlockHeader read_block_header(std::span<const std::byte> block) {
  if (block.size() < kBlockHeaderBytes) {
    throw corrupt(std::to_string(block.size()) + " bytes, shorter than a header");
  }
  const std::byte* h = block.data();
  if (std::memcmp(h, kMagic.data(), kMagic.size()) != 0) throw corrupt("not a block (magic)");
  if (get<std::uint8_t>(h + 4) != kVersion) {
    throw corrupt("version " + std::to_string(get<std::uint8_t>(h + 4)) + ", this rewind reads " +
                  std::to_string(kVersion));
  }
  const Entry* e = by_id(get<std::uint8_t>(h + 5));
  if (e == nullptr) throw corrupt("unknown codec id " + std::to_string(get<std::uint8_t>(h + 5)));
  BlockHeader out;
  out.codec = e->info.name;
  out.raw = (get<std::uint8_t>(h + 6) & kRaw) != 0;
  out.values = get<std::uint64_t>(h + 8);
  out.payload_bytes = get<std::uint64_t>(h + 16);
  out.checksum = get<std::uint64_t>(h + 24);
  if (out.values > (std::uint64_t{1} << 60)) {
    throw corrupt("a count of " + std::to_string(out.values) + " values");
  }
  out.tolerance = get<double>(h + 32);
  out.precision = static_cast<int>(get<std::uint32_t>(h + 40));
  if (out.payload_bytes > block.size() - kBlockHeaderBytes) {
    throw corrupt("a payload of " + std::to_string(out.payload_bytes) + " bytes in " +
                  std::to_string(block.size() - kBlockHeaderBytes));
  }
  if ((out.raw || e->impl() == nullptr) && out.payload_bytes != 8 * out.values) {
    throw corrupt("a raw payload of " + std::to_string(out.payload_bytes) + " bytes for " +
                  std::to_string(out.values) + " values");
  }
  return out;
}

void decode_block(std::span<const std::byte> block, std::span<double> values) {
  const BlockHeader h = read_block_header(block);
  const std::span<const std::byte> payload = block.subspan(kBlockHeaderBytes, h.payload_bytes);
  const std::uint64_t sum = checksum_of(block.data(), payload);
  clear_upper_vector_state();
  if (sum != h.checksum) throw corrupt("the block fails its checksum (" + h.codec + ")");
  if (h.values != values.size()) {
    throw Error(ErrorCode::InvalidArgument, "checkpoint block: holds " + std::to_string(h.values) +
                                                " values, asked for " +
                                                std::to_string(values.size()));
  }
  if (h.raw || h.codec == "none") {
    if (!payload.empty()) std::memcpy(values.data(), payload.data(), payload.size());
    return;
  }
  const CodecSpec spec{h.codec, h.tolerance, h.precision};
  const bool ok = by_name(h.codec)->impl()->decode(spec, payload, values);
  clear_upper_vector_state();
  if (!ok)
    throw corrupt("the " + h.codec + " payload does not decode to " + std::to_string(h.values) +
                  " values");
}

}  // namespace rwd::storage
