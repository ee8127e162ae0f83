// Breaks the rules: the storage layer includes the engine, which is above it.
#include <hdf5.h>
#include <mpi.h>

#include "rewind/engine/engine.hpp"
#include "rewind/storage/store.hpp"
#include "rewind/timing.hpp"
