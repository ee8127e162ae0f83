#include "made_dirs.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace rwd::petsc {

PetscErrorCode make_dirs(MPI_Comm comm, const char* dir, const char* option,
                         std::vector<MadeDir>& made) {
  PetscFunctionBegin;
  PetscMPIInt rank = 0;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  int exists = 0;  // an int: PetscBool is an enum before PETSc 3.24, a C bool since
  std::string why;
  if (rank == 0) {
    // As mkdir -p: each component in turn, as written ("a/../b" makes a, then b).
    std::filesystem::path at;
    for (const auto& part : std::filesystem::path(dir)) {
      at /= part;
      std::error_code ec;
      if (part.empty() || std::filesystem::exists(at, ec)) continue;
      if (!std::filesystem::create_directory(at, ec) || ec) {
        why = ": creating '" + at.string() + "': " + (ec ? ec.message() : "it appeared");
        break;
      }
      // Remembered by absolute name and identity: only this directory is ever removed, even
      // after a chdir, a changed symbolic link or a directory made again under the same name.
      struct stat st {};
      const std::string path = std::filesystem::absolute(at, ec).string();
      if (!ec && ::lstat(path.c_str(), &st) == 0) made.push_back({path, st.st_dev, st.st_ino});
    }
    // Not PetscCall: an error here on rank 0 alone would leave the others in the broadcast.
    std::error_code ec;
    exists = ::access(dir, W_OK | X_OK) == 0 && std::filesystem::is_directory(dir, ec) ? 1 : 0;
    if (!exists && why.empty()) {
      why = !std::filesystem::exists(dir, ec)         ? ": it does not exist"
            : !std::filesystem::is_directory(dir, ec) ? ": it is not a directory"
                                                      : ": it is not writable";
    }
  }
  PetscCallMPI(MPI_Bcast(&exists, 1, MPI_INT, 0, comm));
  if (!exists) {  // every rank's error gives rank 0's reason
    char text[512] = {};
    why.copy(text, sizeof text - 1);
    PetscCallMPI(MPI_Bcast(text, sizeof text, MPI_CHAR, 0, comm));
    why = text;
  }
  PetscCheck(exists, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN,
             "%s '%s' is not a writable directory and could not be made one%s; give a writable "
             "directory",
             option, dir, why.c_str());
  PetscFunctionReturn(0);
}

void remove_empty(std::vector<MadeDir>& made) noexcept {
  while (!made.empty()) {
    const MadeDir& d = made.back();
    struct stat st {};
    if (::lstat(d.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == d.dev &&
        st.st_ino == d.ino && ::rmdir(d.path.c_str()) != 0) {
      return;  // not empty (or not ours to remove): it and its parents stay
    }
    made.pop_back();
  }
}

}  // namespace rwd::petsc
