// zfp in fixed-accuracy mode (every value within spec.tolerance) or fixed-precision mode
// (spec.precision bits), serial. Each component of the block's grid (FieldView::grid: `dof`
// interleaved components over nx x ny x nz points) is compressed as an array of as many
// dimensions as the grid has, read in place with zfp's strides; a block without a grid is one
// 1-D array. The payload says how it was cut, so decoding needs nothing else:
//   u64 0, then zfp's stream (no grid: one 1-D array), or
//   u64 1, the grid as 4 x i64 (dof, nx, ny, nz), then per component: u64 bytes, zfp's stream.
// zfp has no infinities or NaNs: a block with one is stored raw, as it is.
#include <zfp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>

#include "codec_impl.hpp"

namespace rwd::storage::detail {

namespace {

constexpr std::size_t kTagBytes = sizeof(std::uint64_t);
constexpr std::size_t kGridBytes = 4 * sizeof(std::int64_t);

// Component `c` of `grid` over `data`, as zfp sees it: 3-D, 2-D or 1-D by the grid's extents.
std::unique_ptr<zfp_field, decltype(&zfp_field_free)> component(double* data, const Grid& g,
                                                                std::int64_t c) {
  const auto nx = static_cast<std::size_t>(g.nx), ny = static_cast<std::size_t>(g.ny),
             nz = static_cast<std::size_t>(g.nz);
  const auto sx = static_cast<std::ptrdiff_t>(g.dof);
  zfp_field* f = nullptr;
  if (nz > 1) {
    f = zfp_field_3d(data + c, zfp_type_double, nx, ny, nz);
    zfp_field_set_stride_3d(f, sx, sx * g.nx, sx * g.nx * g.ny);
  } else if (ny > 1) {
    f = zfp_field_2d(data + c, zfp_type_double, nx, ny);
    zfp_field_set_stride_2d(f, sx, sx * g.nx);
  } else {
    f = zfp_field_1d(data + c, zfp_type_double, nx);
    zfp_field_set_stride_1d(f, sx);
  }
  return {f, &zfp_field_free};
}

std::unique_ptr<zfp_stream, decltype(&zfp_stream_close)> stream_for(const CodecSpec& spec) {
  std::unique_ptr<zfp_stream, decltype(&zfp_stream_close)> zfp(zfp_stream_open(nullptr),
                                                               &zfp_stream_close);
  if (spec.name == "zfp-precision") {
    zfp_stream_set_precision(zfp.get(), static_cast<unsigned>(spec.precision));
  } else {
    zfp_stream_set_accuracy(zfp.get(), spec.tolerance);
  }
  return zfp;
}

// Runs zfp_compress or zfp_decompress on `field` with the stream over `bytes` bytes at `at`.
template <class F>
std::size_t run(zfp_stream* zfp, zfp_field* field, void* at, std::size_t bytes, F f) {
  std::unique_ptr<bitstream, decltype(&stream_close)> bits(stream_open(at, bytes), &stream_close);
  zfp_stream_set_bit_stream(zfp, bits.get());
  zfp_stream_rewind(zfp);
  return f(zfp, field);
}

class Zfp final : public CodecImpl {
 public:
  bool encode(const CodecSpec& spec, std::span<const double> values, const Grid& given,
              std::vector<std::byte>& out, std::size_t limit) const override {
    // zfp has no infinities or NaNs: a block with one is stored raw.
    if (!std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); })) {
      return false;
    }
    const std::size_t start = out.size();
    const std::uint64_t tag = given.empty() ? 0 : 1;
    out.resize(start + kTagBytes);
    std::memcpy(out.data() + start, &tag, kTagBytes);
    const Grid g = given.empty() ? Grid{1, static_cast<std::int64_t>(values.size()), 1, 1} : given;
    if (tag == 1) {
      const std::array<std::int64_t, 4> head = {g.dof, g.nx, g.ny, g.nz};
      out.resize(out.size() + kGridBytes);
      std::memcpy(out.data() + start + kTagBytes, head.data(), kGridBytes);
    }
    auto zfp = stream_for(spec);
    auto* data = const_cast<double*>(values.data());
    for (std::int64_t c = 0; c < g.dof; ++c) {
      auto field = component(data, g, c);
      const std::size_t at = out.size();
      const std::size_t size_bytes = tag == 1 ? sizeof(std::uint64_t) : 0;
      const std::size_t bound = zfp_stream_maximum_size(zfp.get(), field.get());
      out.resize(at + size_bytes + bound);
      const std::size_t n =
          run(zfp.get(), field.get(), out.data() + at + size_bytes, bound, zfp_compress);
      if (n == 0) return false;
      if (tag == 1) {
        const std::uint64_t bytes = n;
        std::memcpy(out.data() + at, &bytes, sizeof bytes);
      }
      out.resize(at + size_bytes + n);
      if (out.size() - start > limit) return false;
    }
    return true;
  }

  bool decode(const CodecSpec& spec, std::span<const std::byte> payload,
              std::span<double> values) const override {
    std::uint64_t tag = 2;
    if (payload.size() < kTagBytes) return false;
    std::memcpy(&tag, payload.data(), kTagBytes);
    auto zfp = stream_for(spec);
    if (tag == 0) {  // one 1-D array
      const Grid g{1, static_cast<std::int64_t>(values.size()), 1, 1};
      auto field = component(values.data(), g, 0);
      const std::size_t bytes = payload.size() - kTagBytes;
      const std::size_t n =
          run(zfp.get(), field.get(), const_cast<std::byte*>(payload.data() + kTagBytes), bytes,
              zfp_decompress);
      return n != 0 && n <= bytes;
    }
    if (tag != 1 || payload.size() < kTagBytes + kGridBytes) return false;
    std::array<std::int64_t, 4> head{};
    std::memcpy(head.data(), payload.data() + kTagBytes, kGridBytes);
    const Grid g{head[0], head[1], head[2], head[3]};
    if (g.dof < 1 || g.nx < 1 || g.ny < 1 || g.nz < 1 || g.dof > (1 << 20) ||
        g.size() != static_cast<std::int64_t>(values.size())) {
      return false;
    }
    std::size_t at = kTagBytes + kGridBytes;
    for (std::int64_t c = 0; c < g.dof; ++c) {
      std::uint64_t bytes = 0;
      if (payload.size() - at < sizeof bytes) return false;
      std::memcpy(&bytes, payload.data() + at, sizeof bytes);
      at += sizeof bytes;
      if (bytes > payload.size() - at) return false;
      auto field = component(values.data(), g, c);
      const std::size_t n = run(zfp.get(), field.get(), const_cast<std::byte*>(payload.data() + at),
                                static_cast<std::size_t>(bytes), zfp_decompress);
      if (n == 0 || n > bytes) return false;
      at += static_cast<std::size_t>(bytes);
    }
    return at == payload.size();
  }
};

}  // namespace

const CodecImpl& zfp_codec() {
  static const Zfp codec;
  return codec;
}

}  // namespace rwd::storage::detail
