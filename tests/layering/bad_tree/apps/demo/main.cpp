// Breaks the rules: a second file that includes PETSc's private TS header.
#include <petsc/private/tsimpl.h>
