# Kills a run holding an HDF5 store with SIGKILL, SIGTERM and SIGINT, then checks that the next
# store opened in the directory removes the partial file it left (stale_partial_main.cpp).
# -DMPIEXEC=... -DPROGRAM=... -DWORK=<scratch directory>
foreach(sig KILL TERM INT)
  set(dir ${WORK}/${sig})
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
  execute_process(COMMAND ${MPIEXEC} -n 1 ${PROGRAM} die ${sig} ${dir}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR out MATCHES "still alive")
    message(FATAL_ERROR "SIG${sig}: the run was not killed (rc ${rc}):\n${out}${err}")
  endif()
  execute_process(COMMAND ${MPIEXEC} -n 1 ${PROGRAM} clean ${dir}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "SIG${sig}: the stale partial file was not cleaned (rc ${rc}):\n${out}${err}")
  endif()
  message(STATUS "SIG${sig}: ${out}")
  file(REMOVE_RECURSE ${dir})
endforeach()

# A run that exits on an error without destroying its store leaves no partial file at all.
set(dir ${WORK}/exit)
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir})
execute_process(COMMAND ${MPIEXEC} -n 1 ${PROGRAM} exit ${dir}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT out MATCHES "exiting with status 3")
  message(FATAL_ERROR "exit: the run did not exit as planned (rc ${rc}):\n${out}${err}")
endif()
file(GLOB left ${dir}/*)
if(left)
  message(FATAL_ERROR "exit: the run left ${left}:\n${out}${err}")
endif()
message(STATUS "exit: nothing left after std::exit with a live store")
file(REMOVE_RECURSE ${dir})
