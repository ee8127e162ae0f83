# The petsc4py example (examples/petsc4py/reaction_diffusion.py) under mpiexec at NP ranks:
#   cmake -DPYTHON=<python3 with petsc4py> -DSCRIPT=<example> -DLIB=<librewind.so>
#         -DMPIEXEC=<mpiexec> [-DMPIEXEC_FLAGS=<flags;...>] -DNP=<ranks> -DRAM=<checkpoints>
#         -DPETSC_VERSION=<the PETSc librewind was built against> -DWORK_DIR=<scratch dir>
#         -P check.cmake
# 1. petsc4py is importable and of PETSc's minor release (librewind and petsc4py must share one
#    PETSc);
# 2. the reference: PETSc's store-all `basic` trajectory, with the example's check of dJ/dk and
#    dJ/dr against central differences (so that the gradient compared below is a gradient);
# 3. rewind with options on the command line (petsc4py.init(sys.argv): -dll_append,
#    -ts_trajectory_type rewind, -ts_trajectory_max_cps_ram RAM);
# 4. rewind with the options set in the script (PETSc.Options().setValue before TS.setFromOptions),
#    the library loaded through the PETSC_OPTIONS environment variable.
# Runs 3 and 4 must show rewind's view with recomputations within the budget, and the gradient
# files of 2, 3 and 4 (J, dJ/dk, dJ/dr, dJ/du(0) as hexadecimal floats) must be equal byte for
# byte. PETSC_OPTIONS from the caller's environment is left out of every run.
cmake_minimum_required(VERSION 3.22)

foreach(var PYTHON SCRIPT LIB MPIEXEC NP RAM PETSC_VERSION WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "tests/petsc4py/check.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# 1. petsc4py, of the PETSc librewind was built against.
execute_process(COMMAND ${PYTHON} -c "import petsc4py; print(petsc4py.__version__)"
                RESULT_VARIABLE rc OUTPUT_VARIABLE version ERROR_VARIABLE err
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PYTHON} cannot import petsc4py (on Debian: python3-petsc4py, which "
                      "scripts/install-deps.sh installs; another Python: -DREWIND_PYTHON=...):\n"
                      "${err}")
endif()
string(REGEX MATCH "^[0-9]+\\.[0-9]+" petsc4py_minor "${version}")
string(REGEX MATCH "^[0-9]+\\.[0-9]+" petsc_minor "${PETSC_VERSION}")
if(NOT petsc4py_minor STREQUAL petsc_minor)
  message(FATAL_ERROR "${PYTHON}'s petsc4py is ${version}, librewind was built against PETSc "
                      "${PETSC_VERSION}: they must be of the same PETSc release")
endif()

# run(<name> <env...> -- <args...>): the example under mpiexec in WORK_DIR; fails unless it exits 0.
function(run name)
  set(env "")
  set(args "")
  set(in_args FALSE)
  foreach(a IN LISTS ARGN)
    if(a STREQUAL "--")
      set(in_args TRUE)
    elseif(in_args)
      list(APPEND args "${a}")
    else()
      list(APPEND env "${a}")
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PETSC_OPTIONS ${env}
                          ${MPIEXEC} -n ${NP} ${MPIEXEC_FLAGS} ${PYTHON} ${SCRIPT}
                          -gradient_out ${WORK_DIR}/${name}.txt ${args}
                  WORKING_DIRECTORY ${WORK_DIR}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(JOIN " " shown ${env} ${args})
  message("---- ${name} (${NP} ranks): ${shown}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: the example failed (exit ${rc})")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# check_rewind(<name>): the run's -ts_trajectory_view is rewind's, under the budget, recomputing.
function(check_rewind name)
  if(NOT out MATCHES "type: rewind"
     OR NOT out MATCHES "budget ${RAM} RAM \\+ 0 disk checkpoints"
     OR NOT out MATCHES "recomputations [1-9][0-9]*, adjoint steps"
     OR NOT out MATCHES "peak [1-${RAM}] \\(budget ${RAM}\\)")
    message(FATAL_ERROR "${name}: the view does not show the rewind trajectory recomputing within "
                        "${RAM} RAM checkpoints (were the options read?)")
  endif()
endfunction()

# 2. PETSc's store-all, and a gradient that is one.
run(basic -- -ts_trajectory_type basic -ts_trajectory_dirname ${WORK_DIR}/basic-checkpoints
    -check_gradient)
string(REGEX MATCHALL "relative difference [^\n]*: PASSED" passed "${out}")
list(LENGTH passed n_passed)
if(NOT n_passed EQUAL 2)
  message(FATAL_ERROR "basic: the adjoint's dJ/dk and dJ/dr do not match central differences")
endif()

# 3. Options on the command line.
run(argv -- -dll_append ${LIB} -ts_trajectory_type rewind -ts_trajectory_max_cps_ram ${RAM}
    -ts_trajectory_view)
check_rewind(argv)

# 4. Options set in the script, the library from PETSC_OPTIONS.
run(in_script "PETSC_OPTIONS=-dll_append ${LIB}" --
    -rewind_ram_in_script ${RAM} -ts_trajectory_view)
check_rewind(in_script)

file(STRINGS ${WORK_DIR}/basic.txt lines)
list(LENGTH lines n_lines)
if(n_lines LESS 4)
  message(FATAL_ERROR "basic.txt has ${n_lines} lines, not J, dJ/dk, dJ/dr and dJ/du(0)")
endif()
foreach(name argv in_script)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK_DIR}/basic.txt
                          ${WORK_DIR}/${name}.txt RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "${name}: the gradient under rewind differs from PETSc's basic trajectory "
                        "(${WORK_DIR}/${name}.txt against basic.txt)")
  endif()
endforeach()
message("petsc4py: the gradient (${n_lines} values) under rewind with ${RAM} RAM checkpoints, "
        "options from the command line and from the script, is basic's bit for bit")
