#pragma once
// Thin, checked wrappers over the HDF5 C API for the HDF5 store: ids that close themselves,
// HDF5's error stack turned into rwd::Error messages, and attributes.

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rwd::storage::detail {

/// Silences HDF5's automatic error printing for the duration of one store call; the error stack
/// is turned into the rwd::Error message instead. Restores the caller's setting afterwards.
class QuietHdf5 {
 public:
  QuietHdf5();
  ~QuietHdf5();
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// Throws Error(Io) "<what> failed; HDF5 says: <the error stack, innermost entries last>".
[[noreturn]] void h5_fail(const std::string& what);

inline void h5_check(herr_t rc, const std::string& what) {
  if (rc < 0) h5_fail(what);
}

/// Owns one HDF5 id and closes it with the matching H5?close.
class Hid {
 public:
  using Close = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Close close) : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept;
  Hid& operator=(Hid&& o) noexcept;
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid() { reset(); }

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  /// Lets go of the id without closing it (HDF5 closed it, or will at library shutdown).
  void forget() noexcept { id_ = -1; }
  herr_t reset() noexcept;

 private:
  hid_t id_ = -1;
  Close close_ = nullptr;
};

/// Hid(id, close), or h5_fail(what) if id < 0.
Hid make_hid(hid_t id, Hid::Close close, const std::string& what);

/// A 1-D dataspace of `count` elements, or a scalar one without a count.
Hid make_space(std::optional<hsize_t> count);

/// Attributes are written collectively: every rank passes the same value.
void attribute_i64(hid_t object, const std::string& name, std::int64_t value);
void attribute_f64(hid_t object, const std::string& name, double value);
void attribute_i64s(hid_t object, const std::string& name, const std::vector<std::int64_t>& v);
void attribute_u64s(hid_t object, const std::string& name, const std::vector<std::uint64_t>& v);
void attribute_f64s(hid_t object, const std::string& name, const std::vector<double>& v);
void attribute_string(hid_t object, const std::string& name, const std::string& value);

/// Overwrites existing attribute `name` of `object` (same type and size as when created).
void rewrite_attribute_i64s(hid_t object, const std::string& name,
                            const std::vector<std::int64_t>& v);
void rewrite_attribute_u64s(hid_t object, const std::string& name,
                            const std::vector<std::uint64_t>& v);
void rewrite_attribute_f64s(hid_t object, const std::string& name, const std::vector<double>& v);

}  // namespace rwd::storage::detail
