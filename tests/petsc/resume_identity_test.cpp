// The identity of a resumable PETSc run (src/petsc/resume_identity.cpp): which options are left
// out because they cannot change the results, and path values compared canonically.
#include "resume_identity.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using rwd::petsc::canonical_value;
using rwd::petsc::changes_results;
using rwd::petsc::identity_options;

TEST(ResumeIdentity, OptionsThatChangeResultsStay) {
  for (const char* name : {"-ts_type", "-ts_dt", "-ts_max_steps", "-ts_rtol", "-ts_adapt_type",
                           "-snes_rtol", "-ksp_type", "-pc_type", "-da_grid_x", "-mu", "-my_data",
                           "-ts_exact_final_time", "-ksp_error_if_not_converged"}) {
    EXPECT_TRUE(changes_results(name)) << name;
  }
}

TEST(ResumeIdentity, OutputAndTrajectoryOptionsAreLeftOut) {
  for (const char* name : {"-ts_trajectory_dirname",
                           "-ts_trajectory_max_cps_disk",
                           "-ts_trajectory_max_cps_ram",
                           "-ts_trajectory_rewind_resume_interval",
                           "-ts_trajectory_keep_files",
                           "-ts_trajectory_view",
                           "-a_ts_trajectory_dirname",
                           "-ts_adjoint_view_solution",
                           "-ts_view_solution",
                           "-dm_view",
                           "-mat_view",
                           "-ksp_view_pre",
                           "-ts_monitor",
                           "-ts_adapt_monitor",
                           "-ksp_monitor_true_residual",
                           "-tao_monitor",
                           "-snes_converged_reason",
                           "-ksp_converged_reason",
                           "-log_view",
                           "-info",
                           "-viewer_binary_skip_info",
                           "-options_left",
                           "-help",
                           "-malloc_debug",
                           "-on_error_abort",
                           "-dll_append",
                           "-history",
                           "-checkstack"}) {
    EXPECT_FALSE(changes_results(name)) << name;
  }
}

TEST(ResumeIdentity, PathsAreCanonical) {
  const fs::path dir = fs::temp_directory_path() / ("rewind-identity-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "data");
  fs::create_directory_symlink(dir / "data", dir / "link");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir);
  const std::string real = fs::canonical(dir).string() + "/data/in.txt";
  EXPECT_EQ(canonical_value("data/in.txt"), real);
  EXPECT_EQ(canonical_value("./data/in.txt"), real);
  EXPECT_EQ(canonical_value(dir.string() + "/data/../data/in.txt"), real);
  EXPECT_EQ(canonical_value("link/in.txt"), real);  // through a link, not yet existing
  // Not paths: numbers, names, viewer specifications, a bare file name.
  for (const char* same : {"1e-4", "cn", "binary:out/lambda.bin", "in.txt", "-1", "http://x/y"}) {
    EXPECT_EQ(canonical_value(same), same);
  }
  // The options of one run given two ways are the same identity.
  const std::vector<std::string> a = identity_options(
      "-ts_type cn -my_data ./data/in.txt -ts_trajectory_dirname ckpt -ts_monitor -mu 1e3");
  const std::vector<std::string> b = identity_options(
      "-mu 1e3 -ts_trajectory_dirname " + dir.string() +
      "/link -ts_trajectory_max_cps_disk 40 -my_data " + dir.string() +
      "/link/in.txt -ts_type cn -dm_view ascii:dm.txt -ts_adjoint_view_solution binary:/x/l.bin");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, (std::vector<std::string>{"-mu 1e3", "-my_data " + real, "-ts_type cn"}));
  // Another input is another problem.
  EXPECT_NE(a, identity_options("-ts_type cn -my_data ./data/other.txt -mu 1e3"));
  fs::current_path(cwd);
  fs::remove_all(dir);
}
