#pragma once
// PETSc error codes in C++ code: a failed PETSc call becomes an rwd::Error that carries PETSc's
// own message of the error (what a callback of the program set with SETERRQ, say), then the
// call that failed. PETSc has already printed its error stack.

#include <petscsys.h>

#include <string>

#include "rewind/error.hpp"

namespace rwd::petsc {

namespace detail {
// PETSc's message of the first error of the current stack: PetscErrorMessage's specific text
// is `const char**` from PETSc 3.25 (`char**` before), so its type is read off the function.
template <class Code, class Text>
std::string petsc_error_text(PetscErrorCode (*message)(Code, const char*[], Text**),
                             PetscErrorCode ierr) {
  Text* specific = nullptr;
  if (message(ierr, nullptr, &specific) || !specific) return {};
  return specific;
}
}  // namespace detail

inline void check(PetscErrorCode ierr, const char* what) {
  if (!ierr) return;
  const std::string text = detail::petsc_error_text(PetscErrorMessage, ierr);
  throw Error(ErrorCode::Internal, text.empty() ? std::string("PETSc call failed: ") + what
                                                : text + " (in " + what + ")");
}

}  // namespace rwd::petsc

#define REWIND_PETSC(call) ::rwd::petsc::check((call), #call)
