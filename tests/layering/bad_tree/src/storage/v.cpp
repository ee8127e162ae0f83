// Breaks the rules: inside storage, only registry.cpp and the store's own files include a store's
// header (naming the class inside storage is allowed).
#include "hdf5_store.hpp"

int rows(rwd::storage::Hdf5Store& s);
