#include "hdf5_util.hpp"

#include <utility>

#include "rewind/error.hpp"

namespace rwd::storage::detail {
namespace {

herr_t collect_error(unsigned, const H5E_error2_t* e, void* out) {
  auto& lines = *static_cast<std::vector<std::string>*>(out);
  lines.push_back(std::string(e->func_name ? e->func_name : "?") +
                  "(): " + (e->desc ? e->desc : ""));
  return 0;
}

// The HDF5 error stack as one line: the API call, then the innermost entries, which carry what
// the OS or MPI reported (errno text, MPI error string).
std::string hdf5_errors() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &lines);
  H5Eclear2(H5E_DEFAULT);
  if (lines.empty()) return "HDF5 gave no details";
  std::string out = lines.front();
  const std::size_t from = lines.size() > 3 ? lines.size() - 2 : 1;
  if (from > 1) out += " ...";
  for (std::size_t i = from; i < lines.size(); ++i) out += " <- " + lines[i];
  return out;
}

void write_attribute(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type,
                     const void* data, std::optional<hsize_t> count) {
  Hid space = make_space(count);
  Hid attr =
      make_hid(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
               H5Aclose, "H5Acreate2('" + name + "')");
  h5_check(H5Awrite(attr.get(), memory_type, data), "H5Awrite('" + name + "')");
}

void rewrite_attribute(hid_t object, const std::string& name, hid_t memory_type, const void* data) {
  Hid attr =
      make_hid(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose, "H5Aopen('" + name + "')");
  h5_check(H5Awrite(attr.get(), memory_type, data), "H5Awrite('" + name + "')");
}

}  // namespace

QuietHdf5::QuietHdf5() {
  if (H5Eget_auto2(H5E_DEFAULT, &func_, &data_) < 0) func_ = nullptr;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietHdf5::~QuietHdf5() {
  H5Eset_auto2(H5E_DEFAULT, func_, data_);
}

void h5_fail(const std::string& what) {
  throw Error(ErrorCode::Io, what + " failed; HDF5 says: " + hdf5_errors());
}

Hid::Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}

Hid& Hid::operator=(Hid&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = std::exchange(o.id_, -1);
    close_ = o.close_;
  }
  return *this;
}

herr_t Hid::reset() noexcept {
  herr_t rc = 0;
  if (id_ >= 0 && close_ != nullptr) rc = close_(id_);
  id_ = -1;
  return rc;
}

Hid make_hid(hid_t id, Hid::Close close, const std::string& what) {
  if (id < 0) h5_fail(what);
  return Hid(id, close);
}

Hid make_space(std::optional<hsize_t> count) {
  if (!count) return make_hid(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate(H5S_SCALAR)");
  const hsize_t dims[1] = {*count};
  return make_hid(H5Screate_simple(1, dims, nullptr), H5Sclose, "H5Screate_simple");
}

void attribute_i64(hid_t object, const std::string& name, std::int64_t value) {
  write_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, std::nullopt);
}

void attribute_f64(hid_t object, const std::string& name, double value) {
  write_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, std::nullopt);
}

void attribute_i64s(hid_t object, const std::string& name, const std::vector<std::int64_t>& v) {
  write_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, v.data(), v.size());
}

void attribute_u64s(hid_t object, const std::string& name, const std::vector<std::uint64_t>& v) {
  write_attribute(object, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, v.data(), v.size());
}

void attribute_f64s(hid_t object, const std::string& name, const std::vector<double>& v) {
  write_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v.data(), v.size());
}

void attribute_string(hid_t object, const std::string& name, const std::string& value) {
  Hid type = make_hid(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  h5_check(H5Tset_size(type.get(), value.size() + 1), "H5Tset_size");
  h5_check(H5Tset_strpad(type.get(), H5T_STR_NULLTERM), "H5Tset_strpad");
  write_attribute(object, name, type.get(), type.get(), value.c_str(), std::nullopt);
}

void rewrite_attribute_i64s(hid_t object, const std::string& name,
                            const std::vector<std::int64_t>& v) {
  rewrite_attribute(object, name, H5T_NATIVE_INT64, v.data());
}

void rewrite_attribute_f64s(hid_t object, const std::string& name, const std::vector<double>& v) {
  rewrite_attribute(object, name, H5T_NATIVE_DOUBLE, v.data());
}

void rewrite_attribute_u64s(hid_t object, const std::string& name,
                            const std::vector<std::uint64_t>& v) {
  rewrite_attribute(object, name, H5T_NATIVE_UINT64, v.data());
}

}  // namespace rwd::storage::detail
