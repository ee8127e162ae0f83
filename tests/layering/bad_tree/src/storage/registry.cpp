// Allowed: the registry includes and names every store.
#include "hdf5_store.hpp"
#include "ram_store.hpp"

auto* make_ram() {
  return new rwd::storage::RamStore({});
}
auto* make_hdf5() {
  return new rwd::storage::Hdf5Store({});
}
