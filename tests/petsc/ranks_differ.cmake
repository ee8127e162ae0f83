# Options that differ between ranks are refused by name on every rank, never a hang: the two
# ranks of an MPMD launch get different values of one option each time, and each rank's
# output must name that option (the test's timeout catches a hang). The checkpoint directory
# rewind made must not outlive the refused run (PETSc ends it with MPI_Abort).
# Variables: EXE, LIB, MPIEXEC, WORK_DIR, ENSEMBLE_EXE (the ensemble front end's test program),
# ENSEMBLE_APP (rewind-ensemble; its cases are left out when it is not built).
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(base -ts_max_steps 20 -dll_append ${LIB} -ts_trajectory_type rewind)
# expect_refused(<option> <value on rank 0> <value on rank 1> [options both get]): a value "-"
# leaves the option out on that rank. Both ranks write to ckpt unless the option is the directory.
function(expect_refused option a b)
  set(common ${base})
  if(NOT option STREQUAL "-ts_trajectory_dirname")
    list(APPEND common -ts_trajectory_dirname ckpt)
  endif()
  set(opt_a ${option} ${a})
  set(opt_b ${option} ${b})
  if(a STREQUAL "-")
    set(opt_a)
  endif()
  if(b STREQUAL "-")
    set(opt_b)
  endif()
  # Each rank raises the error at the same collective, but the first to reach PETSc's
  # MPI_Abort may kill the other before PETSc printed its message there (seen under heavy load):
  # a run where a rank's message is missing is run again, up to 3 times in all, and the option
  # must be named by each rank in one run.
  foreach(attempt 1 2 3)
    set(outdir out-${option}-${a}-${b}-${attempt})
    execute_process(COMMAND ${MPIEXEC} -n 1 --oversubscribe --output-filename ${outdir}
                            ${EXE} ${common} ${ARGN} ${opt_a}
                            : -n 1 ${EXE} ${common} ${ARGN} ${opt_b}
                    WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE err TIMEOUT 120)
    if(rc EQUAL 0)
      message(FATAL_ERROR "${option} ${a} / ${b}: the run succeeded:\n${out}\n${err}")
    endif()
    set(missing)
    foreach(rank 0 1)
      file(GLOB_RECURSE files "${WORK_DIR}/${outdir}/*/rank.${rank}/*")
      set(text "")
      foreach(f ${files})
        file(READ "${f}" part)
        string(APPEND text "${part}")
      endforeach()
      string(FIND "${text}" "${option} differs between ranks" at)
      if(at EQUAL -1)
        set(missing "rank ${rank} did not name the option (rc ${rc}):\n${text}\n${out}\n${err}")
      endif()
    endforeach()
    if(NOT missing)
      break()
    endif()
    message(STATUS "${option} ${a} / ${b}: attempt ${attempt}: ${missing}")
  endforeach()
  if(missing)
    message(FATAL_ERROR "${option} ${a} / ${b}: in 3 runs, ${missing}")
  endif()
  file(GLOB left "${WORK_DIR}/ckpt*")
  if(left)
    message(FATAL_ERROR "${option} ${a} / ${b}: the refused run left ${left}")
  endif()
  message(STATUS "${option} ${a} / ${b}: refused by name on both ranks")
endfunction()
expect_refused(-ts_trajectory_max_cps_ram 3 4)
expect_refused(-ts_trajectory_max_cps_disk 2 3 -ts_trajectory_max_cps_ram 2)
expect_refused(-ts_trajectory_rewind_schedule revolve twolevel -ts_trajectory_max_cps_ram 3
               -ts_trajectory_max_cps_disk 2)
expect_refused(-ts_trajectory_rewind_ram_bytes 1e6 2e6)
# The stores' settings, in a run that writes to the disk.
set(disk -ts_trajectory_max_cps_ram 2 -ts_trajectory_max_cps_disk 8)
expect_refused(-ts_trajectory_rewind_async 0 1 ${disk})
expect_refused(-ts_trajectory_rewind_max_staged_bytes 1e6 2e6 ${disk})
expect_refused(-ts_trajectory_dirname ckpt-a ckpt-b ${disk})
# Measured costs on one rank only (measuring is collective), or given costs that differ.
expect_refused(-ts_trajectory_rewind_write_cost auto 1 ${disk})
expect_refused(-ts_trajectory_rewind_read_cost 1 2 ${disk})
# A directory on one rank only, a disk budget on one rank only: refused before any rank makes a
# directory (these hung, each rank in a different collective).
expect_refused(-ts_trajectory_dirname - ckpt-b ${disk})
expect_refused(-ts_trajectory_max_cps_disk 0 8 -ts_trajectory_max_cps_ram 2)
expect_refused(-ts_trajectory_max_cps_disk 8 0 -ts_trajectory_max_cps_ram 2)
# One rank resumable and the other not, or at other intervals.
expect_refused(-ts_trajectory_rewind_resume 1 0 -ts_trajectory_max_cps_ram 3
               -ts_trajectory_max_cps_disk 8)
expect_refused(-ts_trajectory_rewind_resume_interval 4 5 -ts_trajectory_rewind_resume
               -ts_trajectory_max_cps_ram 3 -ts_trajectory_max_cps_disk 8)
# Settings that do not change a collective, refused all the same (the view and the bits would be
# one rank's).
expect_refused(-ts_trajectory_rewind_fsal_restart 0 1 -ts_trajectory_max_cps_ram 3)
expect_refused(-ts_trajectory_rewind_compress zstd none -ts_trajectory_max_cps_ram 3)
expect_refused(-ts_trajectory_rewind_compress_level 1 3 -ts_trajectory_rewind_compress zstd
               -ts_trajectory_max_cps_ram 3)
# A value one rank alone would refuse (out of range, malformed) stopped that rank only: the
# other printed nothing and waited until mpirun killed it. The texts are agreed first now.
expect_refused(-ts_trajectory_rewind_compress_level 3 40 -ts_trajectory_rewind_compress zstd
               -ts_trajectory_max_cps_ram 3)
expect_refused(-ts_trajectory_rewind_compress_tolerance 1e-6 -1 -ts_trajectory_rewind_compress zfp
               -ts_trajectory_max_cps_ram 3)
expect_refused(-ts_trajectory_max_cps_ram 3 4294967295)
# A ratio that differs would plan different budgets (and the budget check is collective).
expect_refused(-ts_trajectory_rewind_compress_ratio 1 2 -ts_trajectory_rewind_compress zstd
               -ts_trajectory_max_cps_ram 3)
# The ensemble front end's options (tests/petsc/ensemble_test.cpp): these hung in the forward or
# crashed in the backward.
set(EXE ${ENSEMBLE_EXE})
set(base -ts_trajectory_max_cps_ram 3)
expect_refused(-rewind_ensemble_assign static dynamic)
expect_refused(-rewind_ensemble_group_size 1 2)
expect_refused(-rewind_ensemble_group_size 2 3)
expect_refused(-rewind_ensemble_max_cps_ram 5 6)
expect_refused(-rewind_ensemble_max_cps_disk 4 - -rewind_ensemble_dirname ens-ckpt)
expect_refused(-rewind_ensemble_async 0 1)
expect_refused(-rewind_ensemble_compress zstd blosc)
expect_refused(-rewind_ensemble_compress_tolerance 1e-6 1e-8 -rewind_ensemble_compress zfp)
expect_refused(-rewind_ensemble_compress_level 3 4 -rewind_ensemble_compress zstd)
expect_refused(-rewind_ensemble_view 0 1)
# The rewind-ensemble app's own options (-compare_serial on one rank hung).
if(ENSEMBLE_APP)
  set(EXE ${ENSEMBLE_APP})
  set(base -ensemble_tasks 4 -ensemble_steps_max 30)
  expect_refused(-compare_serial 0 1)
  expect_refused(-ensemble_tasks 4 5)
endif()
message("ranks differ: every option was refused by name on every rank")
