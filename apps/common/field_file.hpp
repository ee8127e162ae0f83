#pragma once
// The apps' -gradient_out file (field_file.cpp).
#include <petscdmda.h>

#include <string>
#include <utility>
#include <vector>

namespace rwd::apps {

/// Writes fields of the DMDA `dm` to the HDF5 file `file` as 2D datasets in natural ordering
/// (my rows of mx * dof values), each named by its name, and the attributes `app` and
/// `objective` on the first. Collective on the DM's communicator; every rank throws if the
/// file could not be written.
void write_fields(const char* file, DM dm, const std::vector<std::pair<Vec, std::string>>& fields,
                  const char* app, PetscReal objective);

}  // namespace rwd::apps
