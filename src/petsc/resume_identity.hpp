#pragma once
// What makes a resumable PETSc run "the same problem" as a killed one (docs/resume.md,
// "PETSc"): the program (its name and a hash of its executable), the TS type, and the options
// that can change the run's results, sorted, with path values canonical. Left out is what cannot
// change them: the trajectory's own options (every budget, schedule, directory and check gives
// the same bits; what a resumed run must share of them, its interval and step count, the manifest
// compares on its own), and output-only options (viewers, monitors, -log_*, -info, ...).

#include <petscts.h>

#include <string>
#include <vector>

namespace rwd::petsc {

/// False for an option (its name, with the leading '-') that cannot change a run's results:
/// any -[prefix]ts_trajectory_* option; a name with a component "view" or "monitor"
/// (-ts_adjoint_view_solution, -ts_adapt_monitor, -mat_view) or ending in "converged_reason";
/// and PETSc's output and run-time ones (-log_*, -info, -viewer_*, -draw_*, -options_*, -help,
/// -version, -malloc*, -memory_*, -history, -on_error_*, -checkstack, -dll_*, -objects_*).
bool changes_results(const std::string& name);

/// A value compared as a path when it holds a '/': absolute, with symbolic links, "." and ".."
/// resolved as far as the path exists (the same directory given relative once and absolute
/// once, or through a link, is the same). Other values (numbers, names, a bare file name,
/// "type:file" viewer specifications) are returned as they are.
std::string canonical_value(const std::string& value);

/// The options of `all` (PetscOptionsGetAll()'s text) that can change results, each "-name
/// value..." with its values canonical, sorted.
std::vector<std::string> identity_options(const std::string& all);

/// "program <name> <hash>; PETSc TS <type>; <options>": the identity a resumable run of `ts`
/// writes in its manifest and compares with a killed run's. Not collective.
std::string resume_identity(TS ts);

/// "program <name> <hash>; ensemble; <options>": the identity a resumable PETSc ensemble
/// (-rewind_ensemble_resume) gives its manifest. The ensemble's own options (-rewind_ensemble_*)
/// are left out: none changes a bit of the gradient (the group size, which would, the
/// manifest compares on its own). Not collective.
std::string ensemble_identity();

}  // namespace rwd::petsc
