#pragma once
// The table behind make_store(): each store's name, factory and whether it is collective.

#include <functional>
#include <memory>
#include <string_view>

#include "rewind/storage/store.hpp"

namespace rwd::storage::detail {

struct StoreInfo {
  std::string_view name;
  bool collective = false;  ///< put/get/erase are collective on StoreConfig::comm
  std::function<std::unique_ptr<Store>(const StoreConfig&)> factory;
};

/// Throws Error(InvalidArgument) "unknown store 'x'; known: ram, hdf5".
const StoreInfo& find_store(std::string_view name);

}  // namespace rwd::storage::detail
