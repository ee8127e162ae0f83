// zfp: the values as one 1D array (the store does not know a field's grid), in fixed-accuracy
// mode (every value within spec.tolerance) or fixed-precision mode (spec.precision bits), serial.
// zfp has no infinities or NaNs: a block with one is stored raw, as it is.
#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "codec_impl.hpp"

namespace rwd::storage::detail {

namespace {

struct Stream {
  std::unique_ptr<zfp_field, decltype(&zfp_field_free)> field;
  std::unique_ptr<zfp_stream, decltype(&zfp_stream_close)> zfp;
  Stream(double* data, std::size_t n, const CodecSpec& spec)
      : field(zfp_field_1d(data, zfp_type_double, n), &zfp_field_free),
        zfp(zfp_stream_open(nullptr), &zfp_stream_close) {
    if (spec.name == "zfp-precision") {
      zfp_stream_set_precision(zfp.get(), static_cast<unsigned>(spec.precision));
    } else {
      zfp_stream_set_accuracy(zfp.get(), spec.tolerance);
    }
  }
  // Runs `f` with the zfp stream reading or writing `bytes` bytes at `at`.
  template <class F>
  std::size_t on(void* at, std::size_t bytes, F f) {
    std::unique_ptr<bitstream, decltype(&stream_close)> bits(stream_open(at, bytes), &stream_close);
    zfp_stream_set_bit_stream(zfp.get(), bits.get());
    zfp_stream_rewind(zfp.get());
    return f(zfp.get(), field.get());
  }
};

class Zfp final : public CodecImpl {
 public:
  bool encode(const CodecSpec& spec, std::span<const double> values, std::vector<std::byte>& out,
              std::size_t limit) const override {
    // zfp has no infinities or NaNs: a block with one is stored raw.
    if (!std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); })) {
      return false;
    }
    Stream s(const_cast<double*>(values.data()), values.size(), spec);
    const std::size_t start = out.size();
    const std::size_t bound = zfp_stream_maximum_size(s.zfp.get(), s.field.get());
    out.resize(start + bound);
    const std::size_t n = s.on(out.data() + start, bound, zfp_compress);
    if (n == 0 || n > limit) return false;
    out.resize(start + n);
    return true;
  }

  bool decode(const CodecSpec& spec, std::span<const std::byte> payload,
              std::span<double> values) const override {
    Stream s(values.data(), values.size(), spec);
    const std::size_t n =
        s.on(const_cast<std::byte*>(payload.data()), payload.size(), zfp_decompress);
    return n != 0 && n <= payload.size();
  }
};

}  // namespace

const CodecImpl& zfp_codec() {
  static const Zfp codec;
  return codec;
}

}  // namespace rwd::storage::detail
