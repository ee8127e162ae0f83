// Breaks the rules: the schedule layer includes MPI.
#include <mpi.h>

#include "rewind/error.hpp"
#include "rewind/schedule/action.hpp"
