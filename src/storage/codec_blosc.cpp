// blosc: Blosc's byte shuffle (the bytes of each double regrouped by significance) and LZ4,
// through the thread-safe *_ctx calls, one internal thread. Blosc takes at most 2 GiB a call, so
// the payload is a sequence of chunks of at most 64 MiB of values, each [u64 bytes][frame].
#include <blosc.h>

#include <algorithm>
#include <cstring>

#include "codec_impl.hpp"

namespace rwd::storage::detail {

namespace {

constexpr std::size_t kChunkValues = std::size_t{8} << 20;  // 64 MiB of doubles
constexpr int kLevel = 5;

class Blosc final : public CodecImpl {
 public:
  bool encode(const CodecSpec& spec, std::span<const double> values, const Grid&,
              std::vector<std::byte>& out, std::size_t limit) const override {
    const std::size_t start = out.size();
    for (std::size_t at = 0; at < values.size(); at += kChunkValues) {
      const std::span<const double> chunk =
          values.subspan(at, std::min(kChunkValues, values.size() - at));
      const std::size_t used = out.size() - start;
      if (used + 8 >= limit) return false;
      const std::size_t room = std::min(limit - used - 8, chunk.size_bytes() + BLOSC_MAX_OVERHEAD);
      const std::size_t head = out.size();
      out.resize(head + 8 + room);
      const int n = blosc_compress_ctx(spec.level > 0 ? spec.level : kLevel, BLOSC_SHUFFLE,
                                       sizeof(double), chunk.size_bytes(), chunk.data(),
                                       out.data() + head + 8, room, "lz4", 0, 1);
      if (n <= 0) return false;  // longer than the room left (or an error): raw
      const auto bytes = static_cast<std::uint64_t>(n);
      std::memcpy(out.data() + head, &bytes, 8);
      out.resize(head + 8 + bytes);
    }
    return out.size() - start <= limit;
  }

  bool decode(const CodecSpec&, std::span<const std::byte> payload,
              std::span<double> values) const override {
    std::size_t in = 0;
    for (std::size_t at = 0; at < values.size(); at += kChunkValues) {
      const std::span<double> chunk =
          values.subspan(at, std::min(kChunkValues, values.size() - at));
      std::uint64_t bytes = 0;
      if (payload.size() - in < 8) return false;
      std::memcpy(&bytes, payload.data() + in, 8);
      in += 8;
      if (bytes > payload.size() - in) return false;
      std::size_t holds = 0;
      if (blosc_cbuffer_validate(payload.data() + in, bytes, &holds) != 0 ||
          holds != chunk.size_bytes()) {
        return false;
      }
      const int n = blosc_decompress_ctx(payload.data() + in, chunk.data(), chunk.size_bytes(), 1);
      if (n < 0 || static_cast<std::size_t>(n) != chunk.size_bytes()) return false;
      in += bytes;
    }
    return in == payload.size();
  }
};

}  // namespace

const CodecImpl& blosc_codec() {
  static const Blosc codec;
  return codec;
}

}  // namespace rwd::storage::detail
