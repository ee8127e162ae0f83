#pragma once
// PETSc error codes in C++ code: a failed PETSc call becomes an rwd::Error (PETSc has already
// printed its error stack).

#include <petscsys.h>

#include <string>

#include "rewind/error.hpp"

namespace rwd::petsc {

inline void check(PetscErrorCode ierr, const char* what) {
  if (ierr) throw Error(ErrorCode::Internal, std::string("PETSc call failed: ") + what);
}

}  // namespace rwd::petsc

#define REWIND_PETSC(call) ::rwd::petsc::check((call), #call)
