# Installs rewind into a scratch prefix and builds separate projects against it with
# find_package(rewind):
#   cmake -DWORK_DIR=<dir> -DCONSUMERS=<tests/install> -DKIND=shared|static
#         (-DBUILD_DIR=<rewind build tree to install> |
#          -DSOURCE_DIR=<rewind source> [-DGENERATOR=..] [-DCXX=..] [-DC=..] [-DWERROR=ON|OFF])
#         -DMPIEXEC=<mpiexec> [-DMPIEXEC_FLAGS=<flags;...>]
#         [-DFULL_COMPONENTS=<c,...>] [-DJOBS=<n>] -P check.cmake
# With SOURCE_DIR it first configures and builds rewind's libraries alone (no tests, benchmarks or
# apps) in <WORK_DIR>/rewind-build, kept between runs so that a rerun only rebuilds what changed.
# That build is unoptimised (CMAKE_BUILD_TYPE None): what it checks is the install and the link,
# and on a clean checkout the test took 173 s so against 247 s optimised (2 cores, 2026-11-29).
# Then:
#  (a) a rewind::schedule consumer is configured where pkg-config cannot find PETSc, built and
#      run; asking for rewind::petsc there must fail with a message naming PETSc;
#  (b) the full consumer (rewind::engine with a disk checkpoint, rewind::petsc) is configured
#      asking for FULL_COMPONENTS (empty: everything), built and run;
#  (c) a PETSc user's C program (c_consumer/adjoint.c: its adjoint under a rewind RAM budget set
#      in the code must equal PETSc's store-all bit for bit) is built by a project(... C) with
#      find_package(rewind COMPONENTS petsc), and by a plain makefile with pkg-config
#      (rewind-petsc.pc, and rewind.pc for the engine program of (b)); each is run under mpiexec.
#      Against a static install the C project must first be refused with a message saying to
#      enable C++.
# KIND says which libraries the install must hold, and the consumers must (not) load shared
# rewind libraries accordingly.
cmake_minimum_required(VERSION 3.22)

foreach(var WORK_DIR CONSUMERS KIND MPIEXEC)
  if(NOT ${var})
    message(FATAL_ERROR "check.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT JOBS)
  set(JOBS 2)
endif()
string(TIMESTAMP t_start "%s")
set(timings "")

# step(<name> <command...>): runs a command, fails with its output if it fails, times it.
function(step name)
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(TIMESTAMP t1 "%s")
  math(EXPR dt "${t1} - ${t0}")
  set(step_output "${out}${err}" PARENT_SCOPE)
  if(NOT rc EQUAL 0)
    message("${out}${err}")
    message(FATAL_ERROR "${name} failed (exit ${rc})")
  endif()
  set(timings "${timings}  ${name}: ${dt} s\n" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)

# check_loads(<exe>): a shared install is loaded from the prefix, a static one not at all.
function(check_loads exe)
  execute_process(COMMAND ldd ${exe} OUTPUT_VARIABLE deps)
  if(KIND STREQUAL "static" AND deps MATCHES "librewind")
    message(FATAL_ERROR "${exe} built against the static install loads a rewind library:\n${deps}")
  endif()
  if(KIND STREQUAL "shared" AND NOT deps MATCHES "librewind[^\n]*=> ${prefix}/")
    message(FATAL_ERROR "${exe} does not load rewind from ${prefix}:\n${deps}")
  endif()
endfunction()

file(REMOVE_RECURSE ${prefix} ${WORK_DIR}/schedule_consumer ${WORK_DIR}/full_consumer
     ${WORK_DIR}/c_consumer ${WORK_DIR}/make_consumer ${WORK_DIR}/run ${WORK_DIR}/no-pkg-config)
file(MAKE_DIRECTORY ${WORK_DIR}/run ${WORK_DIR}/no-pkg-config ${WORK_DIR}/make_consumer)

set(compilers "")
if(CXX)
  list(APPEND compilers -DCMAKE_CXX_COMPILER=${CXX})
endif()
if(SOURCE_DIR)
  set(BUILD_DIR ${WORK_DIR}/rewind-build)
  if(KIND STREQUAL "static")
    set(shared OFF)
  else()
    set(shared ON)
  endif()
  set(generator "")
  if(GENERATOR)
    set(generator -G ${GENERATOR})
  endif()
  if(C)
    list(APPEND compilers -DCMAKE_C_COMPILER=${C})
  endif()
  if(NOT WERROR)
    set(WERROR OFF)
  endif()
  step("configure rewind (${KIND}, libraries only)" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR}
       ${generator} ${compilers} -DBUILD_SHARED_LIBS=${shared} -DCMAKE_BUILD_TYPE=None -DREWIND_BUILD_TESTS=OFF
       -DREWIND_BUILD_BENCHMARKS=OFF -DREWIND_BUILD_APPS=OFF -DREWIND_WERROR=${WERROR})
  step("build rewind (${KIND})" ${CMAKE_COMMAND} --build ${BUILD_DIR} -j ${JOBS})
  list(REMOVE_ITEM compilers -DCMAKE_C_COMPILER=${C})
endif()
set(c_compilers ${compilers})
if(C)
  list(APPEND c_compilers -DCMAKE_C_COMPILER=${C})
endif()
if(NOT BUILD_DIR)
  message(FATAL_ERROR "check.cmake: -DBUILD_DIR=... or -DSOURCE_DIR=... is required")
endif()
step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# The install holds the kind of libraries asked for, one per layer.
file(GLOB libs RELATIVE ${prefix} ${prefix}/lib*/librewind*)
foreach(lib rewind_core rewind_comm rewind_schedule rewind_storage rewind_record rewind_engine rewind)
  if(KIND STREQUAL "static")
    set(want "lib${lib}\\.a")
  else()
    set(want "lib${lib}\\.so")
  endif()
  if(NOT libs MATCHES "/${want}(;|$)")
    message(FATAL_ERROR "the ${KIND} install has no lib${lib} (${want}): ${libs}")
  endif()
endforeach()
if(KIND STREQUAL "static" AND libs MATCHES "\\.so")
  message(FATAL_ERROR "the static install holds shared libraries: ${libs}")
endif()

# (a) rewind::schedule where PETSc cannot be found. First make sure it really cannot.
find_program(PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf REQUIRED)
set(no_petsc ${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${WORK_DIR}/no-pkg-config
             --unset=PKG_CONFIG_PATH)
execute_process(COMMAND ${no_petsc} ${PKG_CONFIG_EXECUTABLE} --exists PETSc RESULT_VARIABLE rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "pkg-config still finds PETSc with PKG_CONFIG_LIBDIR set to an empty dir")
endif()
step("configure the schedule consumer without PETSc" ${no_petsc} ${CMAKE_COMMAND}
     -S ${CONSUMERS}/schedule_consumer -B ${WORK_DIR}/schedule_consumer ${compilers}
     -DCMAKE_PREFIX_PATH=${prefix} -DREWIND_EXPECT_NO_PETSC=ON)
foreach(expected "as expected, rewind::petsc is not available here"
                 "as expected, an unknown component is refused")
  string(FIND "${step_output}" "${expected}" at)
  if(at EQUAL -1)
    message("${step_output}")
    message(FATAL_ERROR "the schedule consumer's configure did not say '${expected}'")
  endif()
endforeach()
step("build the schedule consumer" ${no_petsc} ${CMAKE_COMMAND}
     --build ${WORK_DIR}/schedule_consumer -j ${JOBS})
step("run the schedule consumer" ${WORK_DIR}/schedule_consumer/consumer)
message("${step_output}")
if(NOT step_output MATCHES "revolve n=10 s=2 fwd_total=30"
   OR NOT step_output MATCHES "core: invalid argument: ")
  message(FATAL_ERROR "the schedule consumer printed the wrong result")
endif()

# (b) the whole stack.
step("configure the full consumer" ${CMAKE_COMMAND} -S ${CONSUMERS}/full_consumer
     -B ${WORK_DIR}/full_consumer ${compilers} -DCMAKE_PREFIX_PATH=${prefix}
     "-DREWIND_COMPONENTS=${FULL_COMPONENTS}")
step("build the full consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/full_consumer -j ${JOBS})
foreach(exe consumer_engine consumer_petsc)
  check_loads(${WORK_DIR}/full_consumer/${exe})
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E chdir ${WORK_DIR}/run
                        ${WORK_DIR}/full_consumer/consumer_engine
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "engine n=10 adjoint=0.0009765625 disk_writes=[1-9]")
  message(FATAL_ERROR "the engine consumer did not run correctly (exit ${rc})")
endif()
file(GLOB left ${WORK_DIR}/run/*)
if(left)
  message(FATAL_ERROR "the engine consumer left files behind: ${left}")
endif()
step("run the PETSc consumer" ${WORK_DIR}/full_consumer/consumer_petsc)
message("${step_output}")
if(NOT step_output MATCHES "rewind trajectory registered")
  message(FATAL_ERROR "the PETSc consumer did not run correctly")
endif()

# (c) C consumers of rewind::petsc, run at 2 ranks.
# run_adjoint(<name> <exe>): the C program under mpiexec; it must say PASSED and exit 0.
function(run_adjoint name exe)
  execute_process(COMMAND ${CMAKE_COMMAND} -E chdir ${WORK_DIR}/run
                          ${MPIEXEC} -n 2 ${MPIEXEC_FLAGS} ${exe}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${name}: ${out}${err}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "bitwise equal to store-all: PASSED")
    message(FATAL_ERROR "${name} failed (exit ${rc}): its adjoint under rewind's budget is not "
                        "PETSc's store-all one, or it did not build and run correctly")
  endif()
endfunction()

if(KIND STREQUAL "static")
  set(expect_static ON)
else()
  set(expect_static OFF)
endif()
step("configure the C consumer (project C)" ${CMAKE_COMMAND} -S ${CONSUMERS}/c_consumer
     -B ${WORK_DIR}/c_consumer ${c_compilers} -DCMAKE_PREFIX_PATH=${prefix}
     -DREWIND_EXPECT_STATIC=${expect_static})
if(expect_static AND NOT step_output MATCHES "as expected, a static rewind::petsc asks for C\\+\\+")
  message("${step_output}")
  message(FATAL_ERROR "the C consumer's configure did not check the static refusal")
endif()
step("build the C consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/c_consumer -j ${JOBS})
check_loads(${WORK_DIR}/c_consumer/c_adjoint)
run_adjoint("the C consumer (CMake)" ${WORK_DIR}/c_consumer/c_adjoint)

file(GLOB_RECURSE pc_files ${prefix}/*.pc)
foreach(pc rewind.pc rewind-petsc.pc rewind-engine.pc rewind-schedule.pc)
  if(NOT pc_files MATCHES "/pkgconfig/${pc}(;|$)")
    message(FATAL_ERROR "the install has no ${pc}: ${pc_files}")
  endif()
endforeach()
list(GET pc_files 0 pc_dir)
get_filename_component(pc_dir ${pc_dir} DIRECTORY)
find_program(MAKE_EXECUTABLE NAMES make gmake REQUIRED)
step("build the makefile consumer (pkg-config)"
     ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${pc_dir}:$ENV{PKG_CONFIG_PATH}"
     ${MAKE_EXECUTABLE} -C ${WORK_DIR}/make_consumer -f ${CONSUMERS}/c_consumer/Makefile)
message("${step_output}")
foreach(exe c_adjoint cxx_engine)
  check_loads(${WORK_DIR}/make_consumer/${exe})
endforeach()
run_adjoint("the C consumer (makefile)" ${WORK_DIR}/make_consumer/c_adjoint)
execute_process(COMMAND ${CMAKE_COMMAND} -E chdir ${WORK_DIR}/run
                        ${MPIEXEC} -n 1 ${MPIEXEC_FLAGS} ${WORK_DIR}/make_consumer/cxx_engine
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "engine n=10 adjoint=0.0009765625 disk_writes=[1-9]")
  message(FATAL_ERROR "the engine program built from rewind.pc did not run correctly (exit ${rc})")
endif()
file(GLOB left ${WORK_DIR}/run/*)
if(left)
  message(FATAL_ERROR "the consumers run under mpiexec left files behind: ${left}")
endif()

string(TIMESTAMP t_end "%s")
math(EXPR total "${t_end} - ${t_start}")
message("install test (${KIND}) passed in ${total} s:\n${timings}")
