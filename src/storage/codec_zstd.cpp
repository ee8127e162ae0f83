// zstd: Zstandard at level 1, one frame per block, a compression and a decompression context
// per thread (made once: a context costs more to make than a small block to compress).
#include <zstd.h>

#include <memory>

#include "codec_impl.hpp"

namespace rwd::storage::detail {

namespace {

constexpr int kLevel = 1;

class Zstd final : public CodecImpl {
 public:
  bool encode(const CodecSpec&, std::span<const double> values, std::vector<std::byte>& out,
              std::size_t limit) const override {
    thread_local const std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> ctx(ZSTD_createCCtx(),
                                                                                &ZSTD_freeCCtx);
    const std::size_t start = out.size();
    const std::size_t capacity = std::min(limit, ZSTD_compressBound(values.size_bytes()));
    out.resize(start + capacity);
    const std::size_t n = ZSTD_compressCCtx(ctx.get(), out.data() + start, capacity, values.data(),
                                            values.size_bytes(), kLevel);
    if (ZSTD_isError(n)) return false;  // longer than the limit (or no memory): raw
    out.resize(start + n);
    return true;
  }

  bool decode(const CodecSpec&, std::span<const std::byte> payload,
              std::span<double> values) const override {
    thread_local const std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(),
                                                                                &ZSTD_freeDCtx);
    if (ZSTD_getFrameContentSize(payload.data(), payload.size()) != values.size_bytes()) {
      return false;
    }
    const std::size_t n = ZSTD_decompressDCtx(ctx.get(), values.data(), values.size_bytes(),
                                              payload.data(), payload.size());
    return !ZSTD_isError(n) && n == values.size_bytes();
  }
};

}  // namespace

const CodecImpl& zstd_codec() {
  static const Zstd codec;
  return codec;
}

}  // namespace rwd::storage::detail
