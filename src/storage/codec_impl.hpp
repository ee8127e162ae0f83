#pragma once
// Private: one codec's compression, behind the block format of codec.cpp. Each lives in its own
// file (codec_zstd.cpp, codec_blosc.cpp, codec_zfp.cpp).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rewind/storage/codec.hpp"

namespace rwd::storage::detail {

class CodecImpl {
 public:
  virtual ~CodecImpl() = default;
  /// Appends the compressed form of `values` to `out` (at most `limit` bytes; returns false if
  /// it would be longer, and `out` is then unspecified past its old size).
  /// `grid` is empty or holds values.size() values (checked).
  virtual bool encode(const CodecSpec& spec, std::span<const double> values, const Grid& grid,
                      std::vector<std::byte>& out, std::size_t limit) const = 0;
  /// Decodes `payload` into exactly `values`; false if it does not decode to that many.
  virtual bool decode(const CodecSpec& spec, std::span<const std::byte> payload,
                      std::span<double> values) const = 0;
};

const CodecImpl& zstd_codec();
const CodecImpl& blosc_codec();
const CodecImpl& zfp_codec();  // fixed accuracy (spec.tolerance) or precision (spec.precision)

}  // namespace rwd::storage::detail
