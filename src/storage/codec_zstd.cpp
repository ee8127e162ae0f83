// zstd: Zstandard at level 1 (or CodecSpec::level), one frame per block. Compression and
// decompression contexts are made once and reused (a context costs more to make than a small block
// to compress): each is taken from a pool under a lock and given back, so the caller's thread and
// the I/O thread never share one. Not thread_local: librewind is often dlopen()ed (PETSc's
// -dll_append), where thread-local objects live in dynamic TLS, which costs a __tls_get_addr call
// on every access and whose blocks AddressSanitizer's leak checker mis-tracked and crashed on at
// exit.
#include <zstd.h>

#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "codec_impl.hpp"

namespace rwd::storage::detail {

namespace {

constexpr int kLevel = 1;

// Contexts of one kind: take() gives a free one (or a new one), give() puts it back.
template <class Ctx, Ctx* (*Create)(), std::size_t (*Free)(Ctx*)>
class Pool {
 public:
  using Owned = std::unique_ptr<Ctx, std::size_t (*)(Ctx*)>;
  Owned take() {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        Owned ctx = std::move(free_.back());
        free_.pop_back();
        return ctx;
      }
    }
    return Owned(Create(), Free);
  }
  void give(Owned ctx) {
    if (!ctx) return;
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(ctx));
  }

 private:
  std::mutex mutex_;
  std::vector<Owned> free_;
};

using Compressors = Pool<ZSTD_CCtx, &ZSTD_createCCtx, &ZSTD_freeCCtx>;
using Decompressors = Pool<ZSTD_DCtx, &ZSTD_createDCtx, &ZSTD_freeDCtx>;

// A context taken from its pool for one call and given back at the end of it.
template <class P>
class Lease {
 public:
  explicit Lease(P& pool) : pool_(pool), ctx_(pool.take()) {}
  ~Lease() { pool_.give(std::move(ctx_)); }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  auto* get() const { return ctx_.get(); }

 private:
  P& pool_;
  typename P::Owned ctx_;
};

class Zstd final : public CodecImpl {
 public:
  bool encode(const CodecSpec& spec, std::span<const double> values, const Grid&,
              std::vector<std::byte>& out, std::size_t limit) const override {
    const Lease ctx(compressors_);
    if (!ctx.get()) return false;  // no memory for a context: raw
    const std::size_t start = out.size();
    const std::size_t capacity = std::min(limit, ZSTD_compressBound(values.size_bytes()));
    out.resize(start + capacity);
    const std::size_t n =
        ZSTD_compressCCtx(ctx.get(), out.data() + start, capacity, values.data(),
                          values.size_bytes(), spec.level > 0 ? spec.level : kLevel);
    if (ZSTD_isError(n)) return false;  // longer than the limit (or no memory): raw
    out.resize(start + n);
    return true;
  }

  bool decode(const CodecSpec&, std::span<const std::byte> payload,
              std::span<double> values) const override {
    if (ZSTD_getFrameContentSize(payload.data(), payload.size()) != values.size_bytes()) {
      return false;
    }
    const Lease ctx(decompressors_);
    if (!ctx.get()) throw std::bad_alloc();  // not a corrupt block
    const std::size_t n = ZSTD_decompressDCtx(ctx.get(), values.data(), values.size_bytes(),
                                              payload.data(), payload.size());
    return !ZSTD_isError(n) && n == values.size_bytes();
  }

 private:
  mutable Compressors compressors_;
  mutable Decompressors decompressors_;
};

}  // namespace

const CodecImpl& zstd_codec() {
  static Zstd codec;
  return codec;
}

}  // namespace rwd::storage::detail
