#pragma once
// Calling PETSc and MPI from the apps' C++: a failed call becomes an rwd::Error
// (REWIND_APP_CALL; PETSc has printed its error stack already), and PETSc objects are owned by
// handles that destroy them.
#include <petscdm.h>
#include <petscmat.h>
#include <petscvec.h>

#include <string>
#include <utility>

#include "rewind/error.hpp"

namespace rwd::apps {

/// Throws rwd::Error if a PETSc call failed (PETSc has printed its error stack already).
inline void check(PetscErrorCode ierr, const char* what) {
  if (ierr) throw Error(ErrorCode::Internal, std::string("PETSc call failed: ") + what);
}
#define REWIND_APP_CALL(call) ::rwd::apps::check((call), #call)

/// MPI_Allreduce in place; throws rwd::Error if it failed. Collective on `comm`.
inline void allreduce(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (MPI_Allreduce(MPI_IN_PLACE, data, count, type, op, comm) != MPI_SUCCESS) {
    throw Error(ErrorCode::Mpi, "MPI_Allreduce failed");
  }
}

/// Owns one PETSc object and destroys it (ignoring errors) when it goes out of scope.
template <typename T, PetscErrorCode (*Destroy)(T*)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(T x) : x_(x) {}
  ~Owned() { reset(); }
  Owned(Owned&& o) noexcept : x_(std::exchange(o.x_, nullptr)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      x_ = std::exchange(o.x_, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  operator T() const { return x_; }  // NOLINT: used where PETSc wants the handle
  T get() const { return x_; }
  /// For PETSc's create functions: destroys what is held and returns the slot.
  T* out() {
    reset();
    return &x_;
  }
  void reset() {
    if (x_) (void)Destroy(&x_);
    x_ = nullptr;
  }

 private:
  T x_ = nullptr;
};
using OwnedVec = Owned<Vec, VecDestroy>;
using OwnedMat = Owned<Mat, MatDestroy>;
using OwnedDM = Owned<DM, DMDestroy>;

}  // namespace rwd::apps
