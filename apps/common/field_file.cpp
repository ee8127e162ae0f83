// write_fields(): the apps' -gradient_out file, written with HDF5's own C API rather than
// PETSc's HDF5 viewer, so that the apps build against a PETSc configured without HDF5 (the
// usual configure line of a PETSc built by hand has none). Each field is gathered in natural
// ordering to the first rank, which writes the file; the file is small (a 2D field a dataset).
#include <hdf5.h>

#include <vector>

#include "field_file.hpp"
#include "handles.hpp"
#include "rewind/error.hpp"

namespace rwd::apps {

namespace {

// The field `x` of `dm` in natural ordering, on rank 0 (empty elsewhere). Collective.
std::vector<double> gather_natural(DM dm, Vec x) {
  OwnedVec natural;
  REWIND_APP_CALL(DMDACreateNaturalVector(dm, natural.out()));
  REWIND_APP_CALL(DMDAGlobalToNaturalBegin(dm, x, INSERT_VALUES, natural));
  REWIND_APP_CALL(DMDAGlobalToNaturalEnd(dm, x, INSERT_VALUES, natural));
  VecScatter to_zero = nullptr;
  OwnedVec all;
  REWIND_APP_CALL(VecScatterCreateToZero(natural, &to_zero, all.out()));
  REWIND_APP_CALL(VecScatterBegin(to_zero, natural, all, INSERT_VALUES, SCATTER_FORWARD));
  REWIND_APP_CALL(VecScatterEnd(to_zero, natural, all, INSERT_VALUES, SCATTER_FORWARD));
  REWIND_APP_CALL(VecScatterDestroy(&to_zero));
  PetscInt n = 0;
  const PetscScalar* a = nullptr;
  REWIND_APP_CALL(VecGetLocalSize(all, &n));
  REWIND_APP_CALL(VecGetArrayRead(all, &a));
  std::vector<double> out(a, a + n);
  REWIND_APP_CALL(VecRestoreArrayRead(all, &a));
  return out;
}

// Writes the file on one rank; returns what failed, or an empty string.
std::string write_file(const char* file, hsize_t my, hsize_t mx,
                       const std::vector<std::pair<std::vector<double>, std::string>>& fields,
                       const char* app, double objective) {
  const hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) return "cannot create it";
  std::string failed;
  const hsize_t dims[2] = {my, mx};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  for (const auto& [data, name] : fields) {
    const hid_t d = H5Dcreate2(f, name.c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0) {
      failed = "cannot write the dataset " + name;
    }
    if (d >= 0) H5Dclose(d);
    if (!failed.empty()) break;
  }
  if (failed.empty() && !fields.empty()) {
    const hid_t d = H5Dopen2(f, fields.front().second.c_str(), H5P_DEFAULT);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t text = H5Tcopy(H5T_C_S1);
    H5Tset_size(text, std::string(app).size() + 1);
    const hid_t a1 = H5Acreate2(d, "app", text, scalar, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t a2 =
        H5Acreate2(d, "objective", H5T_NATIVE_DOUBLE, scalar, H5P_DEFAULT, H5P_DEFAULT);
    if (a1 < 0 || a2 < 0 || H5Awrite(a1, text, app) < 0 ||
        H5Awrite(a2, H5T_NATIVE_DOUBLE, &objective) < 0) {
      failed = "cannot write its attributes";
    }
    if (a1 >= 0) H5Aclose(a1);
    if (a2 >= 0) H5Aclose(a2);
    H5Tclose(text);
    H5Sclose(scalar);
    H5Dclose(d);
  }
  H5Sclose(space);
  if (H5Fclose(f) < 0 && failed.empty()) failed = "cannot close it";
  return failed;
}

}  // namespace

void write_fields(const char* file, DM dm, const std::vector<std::pair<Vec, std::string>>& fields,
                  const char* app, PetscReal objective) {
  const MPI_Comm comm = PetscObjectComm((PetscObject)dm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  DMDALocalInfo info;
  REWIND_APP_CALL(DMDAGetLocalInfo(dm, &info));
  std::vector<std::pair<std::vector<double>, std::string>> gathered;
  for (const auto& [x, name] : fields) gathered.emplace_back(gather_natural(dm, x), name);
  std::string failed;
  if (rank == 0) {
    failed = write_file(file, static_cast<hsize_t>(info.my),
                        static_cast<hsize_t>(info.mx * info.dof), gathered, app, objective);
  }
  // Every rank learns the first rank's verdict and fails with it.
  int length = static_cast<int>(failed.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  failed.resize(static_cast<std::size_t>(length));
  MPI_Bcast(failed.data(), length, MPI_CHAR, 0, comm);
  rwd::require(failed.empty(), std::string("-gradient_out ") + file + ": " + failed);
}

}  // namespace rwd::apps
