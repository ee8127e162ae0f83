# rewind against PETSc's own optimal multistage scheduler, CAMS (-ts_trajectory_memory_type
# cams), when the PETSc built against has it (scripts/build-petsc.sh VERSION cams; the Debian
# package does not): the same tutorial and -ts_trajectory_max_cps_ram, baseline PETSc's memory
# trajectory with CAMS, candidate rewind; the bits must agree and rewind may not take more
# TSStep calls (forward steps, recomputations included). PETSc turns N checkpoints into
# N x (stages + 1) units (N x stages for a stiffly accurate method); rewind's auto plans the
# same bytes with each checkpoint's own size.
find_file(_petscconf petscconf.h PATHS ${PETSC_INCLUDE_DIRS} NO_DEFAULT_PATH)
set(_have_cams OFF)
if(_petscconf)
  file(STRINGS "${_petscconf}" _cams_line REGEX "^#define PETSC_HAVE_CAMS 1")
  if(_cams_line)
    set(_have_cams ON)
  endif()
endif()
if(NOT _have_cams)
  message(STATUS "PETSc ${PETSC_VERSION} has no CAMS: the rewind-vs-CAMS tutorial tests "
                 "(petsc.cams.*) are not registered (scripts/test-petsc.sh 3.25.4-cams runs them)")
  return()
endif()
message(STATUS "PETSc ${PETSC_VERSION} has CAMS: registering petsc.cams.*")

set(_cams_fixed -da_grid_x 32 -da_grid_y 32 -ts_max_steps 300 -ts_adapt_type none)
set(_cams_cn -ts_type cn)
set(_cams_beuler -ts_type beuler)
set(_cams_rk4 -implicitform 0 -ts_type rk -ts_rk_type 4)
# A first-same-as-last method (its next step reuses the last stage's derivative) whose last stage
# is the solution bit for bit: restarted after a restore as CAMS's are.
set(_cams_rk3bs -implicitform 0 -ts_type rk -ts_rk_type 3bs)
foreach(label cn beuler rk4 rk3bs)
  foreach(budget 5 10 20)
    rewind_petsc_tutorial_test(
      NAME petsc.cams.ex5adj.${label}.cps${budget} TUTORIAL petsc_ex5adj RANKS 1 FEWER_STEPS
      ARGS ${_cams_fixed} ${_cams_${label}} -ts_trajectory_max_cps_ram ${budget}
      BASELINE -ts_trajectory_type memory -ts_trajectory_memory_type cams
               -ts_trajectory_solution_only 0
      CANDIDATE ${_rewind})
  endforeach()
endforeach()
# Two ranks and a finer grid, as in the issue's table.
rewind_petsc_tutorial_test(
  NAME petsc.cams.ex5adj.cn.np2.grid64 TUTORIAL petsc_ex5adj RANKS 2 FEWER_STEPS
  ARGS -da_grid_x 64 -da_grid_y 64 -ts_max_steps 300 -ts_adapt_type none -ts_type cn
       -ts_trajectory_max_cps_ram 10
  BASELINE -ts_trajectory_type memory -ts_trajectory_memory_type cams -ts_trajectory_solution_only 0
  CANDIDATE ${_rewind})
# 5dp's last stage differs from its solution in the last bits, so restarting a restored step, as
# PETSc's memory trajectory does, does not give store-all's gradient (CAMS's differs from it);
# rewind keeps the last stage and takes more steps for the same bits (5 checkpoints: 837 TSStep
# calls, CAMS 770), or, given a tolerance, restarts too and takes fewer, within it.
foreach(budget 5 10 20)
  rewind_petsc_tutorial_test(
    NAME petsc.cams.ex5adj.rk5dp.cps${budget}.tolerance TUTORIAL petsc_ex5adj RANKS 1 FEWER_STEPS
    RTOL 1e-11
    ARGS ${_cams_fixed} -implicitform 0 -ts_type rk -ts_rk_type 5dp
         -ts_trajectory_max_cps_ram ${budget}
    BASELINE -ts_trajectory_type memory -ts_trajectory_memory_type cams
             -ts_trajectory_solution_only 0
    CANDIDATE ${_rewind} -ts_trajectory_rewind_verify_tolerance 1e-12)
endforeach()
