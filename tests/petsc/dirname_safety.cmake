# rewind never deletes what it did not create (PETSc's TSTrajectoryDestroy removes the whole
# -ts_trajectory_dirname tree otherwise). Runs a tutorial with the rewind trajectory three ways
# and checks the file system afterwards:
#   existing  a directory holding a user's file, disk checkpoints in it: the file and the
#             directory stay, rewind's checkpoint file is gone
#   ram_only  the same directory given to a RAM-only run: everything stays
#   fresh     a directory that did not exist: rewind made it, and removes it (empty) at the end
#   nested    a/b/c where none exists: rewind makes all three and removes them; existing/d/e:
#             rewind makes d and e and removes them, and the user's directory stays; up/../down:
#             rewind makes up and down and removes both
#   empty     an empty directory the user made, as the directory and as a parent (empty/d/e):
#             it stays, d and e go
# Variables: EXE, LIB, MPIEXEC, WORK_DIR.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/existing")
file(WRITE "${WORK_DIR}/existing/user-results.txt" "the user's own file\n")
function(run name)
  execute_process(COMMAND ${MPIEXEC} -n 2 --oversubscribe ${EXE} -ts_max_steps 20
                          -dll_append ${LIB} -ts_trajectory_type rewind ${ARGN}
                  WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: the run failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()
run(existing -ts_trajectory_max_cps_ram 2 -ts_trajectory_max_cps_disk 4
             -ts_trajectory_dirname existing)
if(NOT EXISTS "${WORK_DIR}/existing/user-results.txt")
  message(FATAL_ERROR "existing: the user's file in -ts_trajectory_dirname was deleted")
endif()
file(GLOB left "${WORK_DIR}/existing/*")
list(LENGTH left n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "existing: rewind left files behind: ${left}")
endif()
run(ram_only -ts_trajectory_max_cps_ram 3 -ts_trajectory_dirname existing)
if(NOT EXISTS "${WORK_DIR}/existing/user-results.txt")
  message(FATAL_ERROR "ram_only: the user's file in -ts_trajectory_dirname was deleted")
endif()
run(fresh -ts_trajectory_max_cps_ram 2 -ts_trajectory_max_cps_disk 4 -ts_trajectory_dirname fresh)
if(EXISTS "${WORK_DIR}/fresh")
  file(GLOB left "${WORK_DIR}/fresh/*")
  message(FATAL_ERROR "fresh: the directory rewind made is still there (holding: ${left})")
endif()
run(nested -ts_trajectory_max_cps_ram 2 -ts_trajectory_max_cps_disk 4 -ts_trajectory_dirname a/b/c)
if(EXISTS "${WORK_DIR}/a")
  file(GLOB_RECURSE left LIST_DIRECTORIES true "${WORK_DIR}/a/*")
  message(FATAL_ERROR "nested: the directories rewind made are still there: ${WORK_DIR}/a ${left}")
endif()
run(nested_in_existing -ts_trajectory_max_cps_ram 2 -ts_trajectory_max_cps_disk 4
                       -ts_trajectory_dirname existing/d/e)
file(GLOB left LIST_DIRECTORIES true "${WORK_DIR}/existing/*")
if(NOT left STREQUAL "${WORK_DIR}/existing/user-results.txt")
  message(FATAL_ERROR "nested_in_existing: expected only the user's file in existing/, found ${left}")
endif()
# As mkdir -p, component by component: up/../down makes up, then down beside it.
run(dotted -ts_trajectory_max_cps_ram 2 -ts_trajectory_max_cps_disk 4
           -ts_trajectory_dirname up/../down)
foreach(d up down)
  if(EXISTS "${WORK_DIR}/${d}")
    message(FATAL_ERROR "dotted: the directory '${d}' rewind made is still there")
  endif()
endforeach()
file(MAKE_DIRECTORY "${WORK_DIR}/empty")
run(empty -ts_trajectory_max_cps_ram 2 -ts_trajectory_max_cps_disk 4 -ts_trajectory_dirname empty)
run(empty_parent -ts_trajectory_max_cps_ram 2 -ts_trajectory_max_cps_disk 4
                 -ts_trajectory_dirname empty/d/e)
if(NOT IS_DIRECTORY "${WORK_DIR}/empty")
  message(FATAL_ERROR "empty: the user's empty directory was removed")
endif()
file(GLOB left LIST_DIRECTORIES true "${WORK_DIR}/empty/*")
if(left)
  message(FATAL_ERROR "empty_parent: rewind left ${left}")
endif()
message("dirname safety: the user's files stayed, rewind's own directory and files went")
