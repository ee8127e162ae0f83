// Allowed alone (the PETSc adapter), but apps/demo/main.cpp includes the private header too.
#include <petsc/private/tsimpl.h>
#include <petscts.h>

#include "rewind/engine/cursor.hpp"
