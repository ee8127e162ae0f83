#include "registry.hpp"

#include <array>
#include <string>

#include "hdf5_store.hpp"
#include "ram_store.hpp"
#include "rewind/error.hpp"

namespace rwd::storage {

namespace detail {
namespace {

const std::array<StoreInfo, 2>& stores() {
  static const std::array<StoreInfo, 2> table = {
      StoreInfo{"ram", false,
                [](const StoreConfig& c) -> std::unique_ptr<Store> {
                  return std::make_unique<RamStore>(c);
                }},
      StoreInfo{"hdf5", true,
                [](const StoreConfig& c) -> std::unique_ptr<Store> {
                  return std::make_unique<Hdf5Store>(c);
                }},
  };
  return table;
}

}  // namespace

const StoreInfo& find_store(std::string_view name) {
  for (const auto& info : stores()) {
    if (info.name == name) return info;
  }
  throw Error(ErrorCode::InvalidArgument,
              "unknown store '" + std::string(name) + "'; known: " + store_names());
}

}  // namespace detail

std::string to_string(const Key& key) {
  const char* kind = key.kind == Kind::Restart    ? "restart "
                     : key.kind == Kind::Pullback ? "pullback "
                                                  : "final ";
  std::string out = kind + std::to_string(key.step);
  if (key.recording != 0) out += " of recording " + std::to_string(key.recording);
  return out;
}

std::unique_ptr<Store> make_store(std::string_view name, const StoreConfig& config) {
  return detail::find_store(name).factory(config);
}

std::string store_names() {
  std::string out;
  for (const auto& info : detail::stores()) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

}  // namespace rwd::storage
