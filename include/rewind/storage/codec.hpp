#pragma once
/// @file
/// Checkpoint codecs: how a rank's block of a field is compressed, chosen by name, and the
/// self-describing block they write. A block is a 48-byte header (see below) and the payload; the
/// header says which codec wrote it, whether the payload is raw (a codec that does not make the
/// data smaller stores it as it is, so compression never costs more than the header), how many
/// values it holds and an XXH3-64 checksum of the block (the header but the checksum itself, and
/// the payload), which decoding checks before it decodes: damaged compressed bytes or a damaged
/// header are an error, never decoded into a wrong state.
///
/// Lossless codecs (`zstd`, `blosc`) give every bit back; `zfp` (fixed accuracy) gives values
/// within an absolute tolerance of the originals (one above zfp's precision limit, about
/// |value| * 2^-60), `zfp-precision` keeps a number of bits of each
/// value's block. Every call clears the calling thread's upper vector state before it returns
/// (rewind/vector_state.hpp): the codecs' libraries run AVX2 code.
///
/// Header, little-endian:
///   0 "RWCB"   4 version (1)   5 codec id   6 flags (bit 0: raw payload)   7 zero
///   8 values (u64)   16 payload bytes (u64)   24 XXH3-64 of bytes 0-23, 32-47 and the payload
///   32 tolerance (f64, zfp)   40 precision (u32, zfp-precision)   44 zero (u32)

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rwd::storage {

/// This rank's block of a field as a grid: a hint for codecs that use it (zfp compresses each
/// component as a 1-D, 2-D or 3-D array, which gains several times over a plain array on smooth
/// fields). `dof` components are interleaved at each point; points go x fastest, then y, then z.
/// All 0 (the default): a plain array. Otherwise dof * nx * ny * nz must be the block's length.
struct Grid {
  std::int64_t dof = 0, nx = 0, ny = 0, nz = 0;
  bool empty() const { return dof == 0 && nx == 0 && ny == 0 && nz == 0; }
  std::int64_t size() const { return dof * nx * ny * nz; }
};

/// A codec and its setting.
struct CodecSpec {
  std::string name = "none";  ///< a registered codec (codec_list())
  double tolerance = 0.0;     ///< zfp: the largest absolute error of a value (> 0)
  int precision = 0;          ///< zfp-precision: bits kept (1..64)
  /// zstd (1..19) and blosc (1..9): the compression level, higher for smaller blocks at more
  /// time; 0 for the codec's default (zstd 1, blosc 5). Decoding does not need it.
  int level = 0;
};

struct CodecInfo {
  std::string name;
  bool lossless;
  std::string summary;
};

/// The registered codecs: none, zstd, blosc, zfp, zfp-precision.
const std::vector<CodecInfo>& codec_list();

/// Whether `name` is a registered lossy codec (false for a lossless or an unknown one).
bool codec_is_lossy(std::string_view name);

/// The codec a store compresses a checkpoint with: `codec`, or zstd for a checkpoint put with
/// CheckpointView::exact (its bits kept) when `codec` is lossy. The one rule every store and the
/// planner's measured ratio follow.
CodecSpec codec_for(const CodecSpec& codec, bool exact);

/// Throws Error(InvalidArgument) naming `option`: an unknown codec (the message lists the
/// names), a tolerance that is negative or not finite, zfp without a tolerance > 0,
/// zfp-precision without a precision in 1..64, a level outside the codec's range, or a setting
/// the codec does not take. The settings that give the tolerance, the precision and the level
/// are named too where given.
void check_codec(const CodecSpec& spec, const std::string& option,
                 const std::string& tolerance_option = {}, const std::string& precision_option = {},
                 const std::string& level_option = {});

inline constexpr std::size_t kBlockHeaderBytes = 48;

/// Appends the block of `values` to `out`, compressed by `spec` (checked as check_codec does,
/// the option named "codec"), or raw where that is not smaller. Returns the block's bytes.
/// `grid` lets zfp compress each component in as many dimensions as it has; the
/// block records it (decoding needs nothing more). Throws Error(InvalidArgument) for a grid
/// that is not empty and does not hold exactly values.size() values.
std::size_t encode_block(const CodecSpec& spec, std::span<const double> values,
                         std::vector<std::byte>& out, const Grid& grid = {});

/// What a block's header says.
struct BlockHeader {
  std::string codec;  ///< the codec that wrote it
  bool raw = false;   ///< the payload is the values as they are
  std::uint64_t values = 0;
  std::uint64_t payload_bytes = 0;
  std::uint64_t checksum = 0;
  double tolerance = 0.0;
  int precision = 0;
  std::size_t bytes() const { return kBlockHeaderBytes + payload_bytes; }
};

/// Reads a block's header. Throws Error(Corrupt) if `block` does not start with a whole block
/// (wrong magic or version, an unknown codec, a payload longer than the bytes given).
BlockHeader read_block_header(std::span<const std::byte> block);

/// Checks the block's checksum, then decodes the payload into `values`, whose size must be the
/// block's value count. Throws Error(Corrupt) for a damaged block or a payload that does not decode
/// to exactly that many values, Error(InvalidArgument) for a `values` of another size.
void decode_block(std::span<const std::byte> block, std::span<double> values);

}  // namespace rwd::storage
