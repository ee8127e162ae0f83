# Test registration helpers. MPI tests run once per rank count under mpiexec, with PROCESSORS
# set so that `ctest -j` does not oversubscribe the machine, and with what OpenMPI needs to run
# as root and with more ranks than cores.
include(GoogleTest)

set(REWIND_MPI_RANKS "1;2;4" CACHE STRING "Rank counts every MPI test runs with")
set(REWIND_TEST_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl_vader_single_copy_mechanism=none")
# Under REWIND_SANITIZE (top-level CMakeLists.txt): report leaks at exit, suppressing only what
# the uninstrumented MPI, HDF5 and PETSc libraries leak (tests/sanitizers/lsan.supp), and fail on
# the first error. mpiexec passes the environment on to the ranks.
if(REWIND_SANITIZE)
  set(REWIND_LSAN_SUPPRESSIONS ${PROJECT_SOURCE_DIR}/tests/sanitizers/lsan.supp)
  list(APPEND REWIND_TEST_ENV
       "ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:fast_unwind_on_malloc=0"
       # Leak stacks through the uninstrumented libraries need the slow unwinder (they have no
       # frame pointers), and OpenMPI's plug-ins must stay loaded at exit for their frames to
       # have names the suppressions can match.
       "OMPI_MCA_mca_base_component_disable_dlclose=1"
       "PMIX_MCA_mca_base_component_disable_dlclose=1"
       "LSAN_OPTIONS=suppressions=${REWIND_LSAN_SUPPRESSIONS}:print_suppressions=0"
       "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()

execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _rewind_mpiexec_version
                ERROR_QUIET)
if(_rewind_mpiexec_version MATCHES "Open MPI|OpenRTE")
  set(REWIND_MPIEXEC_FLAGS "--oversubscribe" CACHE STRING "Extra mpiexec flags for tests")
else()
  set(REWIND_MPIEXEC_FLAGS "" CACHE STRING "Extra mpiexec flags for tests")
endif()

# rewind_add_unit_test(<target> [TIMEOUT <seconds>]): every GoogleTest case of <target> becomes a
# ctest labelled unit (with that timeout each, if given).
function(rewind_add_unit_test target)
  cmake_parse_arguments(ARG "" "TIMEOUT" "" ${ARGN})
  set(_timeout "")
  if(ARG_TIMEOUT)
    set(_timeout TIMEOUT ${ARG_TIMEOUT})
  endif()
  # ENVIRONMENT last: gtest_discover_tests flattens its list, so what follows it would pair wrongly.
  gtest_discover_tests(${target} PROPERTIES LABELS unit ${_timeout} ENVIRONMENT "${REWIND_TEST_ENV}"
                       DISCOVERY_TIMEOUT 120)
endfunction()

# rewind_add_mpi_test(NAME <name> COMMAND <exe> [args...] [RANKS 1 2 4] [LABELS ...]
#                     [WORK_DIR <dir>] [PROPERTIES ...])
# WORK_DIR: each test <name>.np<n> runs in its own directory <dir>/<name>.np<n> (files a test
# writes in its working directory then never collide with another test's).
function(rewind_add_mpi_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT;WORK_DIR" "COMMAND;RANKS;LABELS;PROPERTIES" ${ARGN})
  if(NOT ARG_RANKS)
    set(ARG_RANKS ${REWIND_MPI_RANKS})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  list(GET ARG_COMMAND 0 _exe)
  list(REMOVE_AT ARG_COMMAND 0)
  if(TARGET ${_exe})
    set(_exe $<TARGET_FILE:${_exe}>)
  endif()
  foreach(np IN LISTS ARG_RANKS)
    set(_name ${ARG_NAME}.np${np})
    add_test(NAME ${_name}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${REWIND_MPIEXEC_FLAGS}
                     ${MPIEXEC_PREFLAGS} ${_exe} ${MPIEXEC_POSTFLAGS} ${ARG_COMMAND})
    set_tests_properties(${_name} PROPERTIES PROCESSORS ${np} LABELS "mpi;${ARG_LABELS}"
                                             ENVIRONMENT "${REWIND_TEST_ENV}"
                                             TIMEOUT ${ARG_TIMEOUT} ${ARG_PROPERTIES})
    if(ARG_WORK_DIR)
      file(MAKE_DIRECTORY ${ARG_WORK_DIR}/${_name})
      set_tests_properties(${_name} PROPERTIES WORKING_DIRECTORY ${ARG_WORK_DIR}/${_name})
    endif()
  endforeach()
endfunction()
