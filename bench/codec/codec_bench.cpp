// What compression would buy rewind's checkpoints (issue: compressed checkpoints), measured
// before building it: the ratio, speed and error of candidate codecs on a program's own states.
//
//   rewind-bench-codec FILE [--grid NX,NY,DOF] [--states K]
//
// FILE holds PETSc binary vectors (what -ts_monitor_solution binary:FILE writes, one a step);
// K of them, evenly spaced, are compressed one at a time (each a checkpoint) by every codec and
// decompressed again. Lossless codecs must give the bits back (the program exits 1 otherwise);
// zfp's fixed-accuracy mode is given tolerances relative to the largest |value|, and its largest
// error is printed, for the values as one 1D array (what rewind's zfp codec does) and, with
// --grid, for each of DOF interleaved components as an NX x NY field (zfp's 2D transform). Speeds
// are single-threaded, in MB/s of uncompressed data, the best of 5 passes.
#include <blosc.h>
#include <zfp.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<unsigned char>;
using State = std::vector<double>;

constexpr std::uint32_t kVecClassId = 1211214;  // PETSc's VEC_FILE_CLASSID

std::uint64_t big_endian(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

std::vector<State> read_states(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  const std::vector<char> raw((std::istreambuf_iterator<char>(f)), {});
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  std::vector<State> out;
  std::size_t at = 0;
  while (at + 8 <= raw.size() && big_endian(p + at, 4) == kVecClassId) {
    const std::size_t n = big_endian(p + at + 4, 4);
    at += 8;
    if (at + 8 * n > raw.size()) break;
    State v(n);
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t u = big_endian(p + at + 8 * k, 8);
      std::memcpy(&v[k], &u, 8);
    }
    at += 8 * n;
    out.push_back(std::move(v));
  }
  return out;
}

struct Codec {
  std::string name;
  bool lossless;
  std::function<Bytes(const State&)> encode;
  std::function<void(const Bytes&, State&)> decode;
};

Codec zstd_codec(int level) {
  return {"zstd -" + std::to_string(level), true,
          [level](const State& v) {
            Bytes out(ZSTD_compressBound(v.size() * 8));
            out.resize(ZSTD_compress(out.data(), out.size(), v.data(), v.size() * 8, level));
            return out;
          },
          [](const Bytes& in, State& v) {
            ZSTD_decompress(v.data(), v.size() * 8, in.data(), in.size());
          }};
}

Codec blosc_codec(const char* compressor, int level, int filter, const char* filter_name) {
  return {std::string("blosc ") + filter_name + " + " + compressor + " " + std::to_string(level),
          true,
          [=](const State& v) {
            blosc_set_compressor(compressor);
            Bytes out(v.size() * 8 + BLOSC_MAX_OVERHEAD);
            const int n =
                blosc_compress(level, filter, 8, v.size() * 8, v.data(), out.data(), out.size());
            out.resize(static_cast<std::size_t>(std::max(n, 0)));
            return out;
          },
          [](const Bytes& in, State& v) { blosc_decompress(in.data(), v.data(), v.size() * 8); }};
}

// zfp in fixed-accuracy mode, on one 1D array or on each of `dof` interleaved components as an
// nx x ny field.
struct Grid {
  std::size_t nx = 0, ny = 0, dof = 1;
};

Codec zfp_codec(double tolerance, const std::string& label, Grid grid) {
  const auto run = [tolerance, grid](double* data, std::size_t n, Bytes* out, const Bytes* in) {
    std::vector<double> component;
    const std::size_t parts = grid.nx > 0 ? grid.dof : 1;
    std::size_t offset = 0;
    for (std::size_t c = 0; c < parts; ++c) {
      zfp_field* field = nullptr;
      if (grid.nx > 0) {
        component.resize(grid.nx * grid.ny);
        if (out) {
          for (std::size_t k = 0; k < component.size(); ++k) component[k] = data[k * parts + c];
        }
        field = zfp_field_2d(component.data(), zfp_type_double, grid.nx, grid.ny);
      } else {
        field = zfp_field_1d(data, zfp_type_double, n);
      }
      zfp_stream* z = zfp_stream_open(nullptr);
      zfp_stream_set_accuracy(z, tolerance);
      if (out) {
        const std::size_t bound = zfp_stream_maximum_size(z, field);
        out->resize(offset + 8 + bound);
        bitstream* bs = stream_open(out->data() + offset + 8, bound);
        zfp_stream_set_bit_stream(z, bs);
        zfp_stream_rewind(z);
        const std::uint64_t size = zfp_compress(z, field);
        std::memcpy(out->data() + offset, &size, 8);
        offset += 8 + size;
        out->resize(offset);
        stream_close(bs);
      } else {
        std::uint64_t size = 0;
        std::memcpy(&size, in->data() + offset, 8);
        bitstream* bs = stream_open(const_cast<unsigned char*>(in->data()) + offset + 8, size);
        zfp_stream_set_bit_stream(z, bs);
        zfp_stream_rewind(z);
        zfp_decompress(z, field);
        offset += 8 + size;
        stream_close(bs);
        if (grid.nx > 0) {
          for (std::size_t k = 0; k < component.size(); ++k) data[k * parts + c] = component[k];
        }
      }
      zfp_stream_close(z);
      zfp_field_free(field);
    }
  };
  return {label, false,
          [run](const State& v) {
            Bytes out;
            run(const_cast<double*>(v.data()), v.size(), &out, nullptr);
            return out;
          },
          [run](const Bytes& in, State& v) { run(v.data(), v.size(), nullptr, &in); }};
}

struct Result {
  double ratio = 0, encode_mbs = 0, decode_mbs = 0, max_error = 0;
  bool exact = true;
};

Result measure(const Codec& codec, const std::vector<State>& states) {
  Result r;
  double raw = 0, stored = 0, best_encode = 1e30, best_decode = 1e30;
  for (int pass = 0; pass < 5; ++pass) {
    double encode_s = 0, decode_s = 0;
    raw = stored = 0;
    for (const State& v : states) {
      State back(v.size());
      const auto t0 = Clock::now();
      const Bytes b = codec.encode(v);
      const auto t1 = Clock::now();
      codec.decode(b, back);
      const auto t2 = Clock::now();
      encode_s += std::chrono::duration<double>(t1 - t0).count();
      decode_s += std::chrono::duration<double>(t2 - t1).count();
      raw += 8.0 * static_cast<double>(v.size());
      stored += static_cast<double>(b.size());
      if (pass == 0) {
        r.exact = r.exact && std::memcmp(back.data(), v.data(), 8 * v.size()) == 0;
        for (std::size_t k = 0; k < v.size(); ++k) {
          r.max_error = std::max(r.max_error, std::fabs(v[k] - back[k]));
        }
      }
    }
    best_encode = std::min(best_encode, encode_s);
    best_decode = std::min(best_decode, decode_s);
  }
  r.ratio = raw / stored;
  r.encode_mbs = raw / best_encode / 1e6;
  r.decode_mbs = raw / best_decode / 1e6;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rewind-bench-codec FILE [--grid NX,NY,DOF] [--states K]\n");
    return 2;
  }
  Grid grid;
  std::size_t wanted = 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "--grid") {
      if (std::sscanf(argv[i + 1], "%zu,%zu,%zu", &grid.nx, &grid.ny, &grid.dof) != 3) return 2;
    } else if (opt == "--states") {
      wanted = std::stoul(argv[i + 1]);
    } else {
      std::fprintf(stderr, "rewind-bench-codec: unknown option %s\n", opt.c_str());
      return 2;
    }
  }
  const std::vector<State> all = read_states(argv[1]);
  if (all.empty()) {
    std::fprintf(stderr, "rewind-bench-codec: no PETSc vector in %s\n", argv[1]);
    return 2;
  }
  std::vector<State> states;
  const std::size_t stride = std::max<std::size_t>(1, all.size() / wanted);
  for (std::size_t k = 0; k < all.size() && states.size() < wanted; k += stride) {
    states.push_back(all[k]);
  }
  if (grid.nx > 0 && grid.nx * grid.ny * grid.dof != states[0].size()) {
    std::fprintf(stderr, "rewind-bench-codec: --grid does not match %zu values\n",
                 states[0].size());
    return 2;
  }
  double largest = 0;
  for (const State& v : states) {
    for (double x : v) largest = std::max(largest, std::fabs(x));
  }
  blosc_init();
  blosc_set_nthreads(1);
  std::vector<Codec> codecs = {zstd_codec(1),
                               zstd_codec(3),
                               blosc_codec("lz4", 5, BLOSC_SHUFFLE, "shuffle"),
                               blosc_codec("zstd", 1, BLOSC_SHUFFLE, "shuffle"),
                               blosc_codec("lz4", 5, BLOSC_BITSHUFFLE, "bitshuffle"),
                               blosc_codec("zstd", 1, BLOSC_BITSHUFFLE, "bitshuffle")};
  // 1D: what rewind's zfp codec does (a store does not know the grid); 2D with --grid.
  std::vector<Grid> grids = {Grid{}};
  if (grid.nx > 0) grids.push_back(grid);
  for (const Grid& g : grids) {
    for (const double rel : {1e-12, 1e-8, 1e-6, 1e-4}) {
      char label[64];
      std::snprintf(label, sizeof label, "zfp %s, tolerance %.0e x max", g.nx ? "2D" : "1D", rel);
      codecs.push_back(zfp_codec(rel * largest, label, g));
    }
  }
  std::printf("# %s: %zu of %zu states, %zu values each, max |value| %.3g\n", argv[1],
              states.size(), all.size(), states[0].size(), largest);
  std::printf("| codec | ratio | encode MB/s | decode MB/s | max error |\n|---|---|---|---|---|\n");
  int status = 0;
  for (const Codec& c : codecs) {
    const Result r = measure(c, states);
    std::printf(
        "| %s | %.3f | %.0f | %.0f | %s |\n", c.name.c_str(), r.ratio, r.encode_mbs, r.decode_mbs,
        c.lossless ? (r.exact ? "bitwise" : "NOT BITWISE") : [&] {
          static char buf[32];
          std::snprintf(buf, sizeof buf, "%.2g", r.max_error);
          return buf;
        }());
    if (c.lossless && !r.exact) status = 1;
  }
  blosc_destroy();
  return status;
}
