// Breaks the rules: the engine includes the HDF5 store's own header and names its class. What
// comments say of Hdf5Store and RamStore is not reported.
#include "rewind/storage/hdf5_store.hpp"
#include "rewind/storage/store.hpp"

/* RamStore in a block comment,
 * and RamStore on its next line */
void disk(rwd::storage::Store& s) {
  auto* h5 = dynamic_cast<rwd::storage::Hdf5Store*>(&s);  // not a RamStore
  (void)h5;
}
