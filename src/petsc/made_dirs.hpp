#pragma once
// Checkpoint directories rewind makes when they are missing (as mkdir -p), and removes again
// only if it made them and they are empty: the trajectory's -ts_trajectory_dirname and the
// ensemble's -rewind_ensemble_dirname.

#include <mpi.h>
#include <petscsys.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace rwd::petsc {

/// A directory rewind made: its absolute name and identity when made.
struct MadeDir {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
};

/// Collective on `comm`: rank 0 makes `dir` and any missing parents, appending those it made to
/// `made` (outermost first), then every rank fails alike, naming `option` and rank 0's reason,
/// unless `dir` is a writable directory.
PetscErrorCode make_dirs(MPI_Comm comm, const char* dir, const char* option,
                         std::vector<MadeDir>& made);

/// Removes the directories of `made` that are empty, innermost first, each only if it is still
/// the directory rewind made (same device and inode); what holds a file stays, with its
/// parents. No collective call, so it may run while an error unwinds.
void remove_empty(std::vector<MadeDir>& made) noexcept;

}  // namespace rwd::petsc
