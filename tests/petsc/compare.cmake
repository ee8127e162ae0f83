# Runs one PETSc tutorial twice under mpiexec with the same rank count, once with the baseline
# trajectory options and once with the candidate's, and checks that the candidate reproduces the
# baseline bit for bit.
#
#   cmake -DCONFIG=<file> -P compare.cmake       (what ctest runs; <file> sets the variables)
#   cmake -DEXE=... -DRANKS=2 "-DCOMMON_ARGS=..." "-DCANDIDATE_ARGS=..." -DWORK_DIR=... -P compare.cmake
#
# Variables (lists are CMake lists):
#   EXE             the tutorial executable
#   RANKS           number of MPI ranks (default 1)
#   COMMON_ARGS     options for both runs
#   BASELINE_ARGS   options for the baseline run only (default: PETSc's store-all memory type)
#   CANDIDATE_ARGS  options for the candidate run only
#   WORK_DIR        scratch directory; wiped, then <WORK_DIR>/baseline and <WORK_DIR>/candidate
#                   are each run's working directory (relative -ts_trajectory_dirname lands there)
#   VIEW_REGEX      optional: the candidate runs with -ts_trajectory_view and its stdout must
#                   match this regex
#   STDERR_REGEX    optional: the candidate's stderr must match this regex (a warning)
#   STDOUT_LINES    optional: the stdout lines matching this regex (e.g. the sensitivities a
#                   tutorial prints) must be the same in both runs, and there must be some
#   MPIEXEC, MPIEXEC_NUMPROC_FLAG, MPIEXEC_PREFLAGS, MPIEXEC_POSTFLAGS, MPIEXEC_FLAGS
#                   how to launch (default: mpiexec -n)
#   RUN_ENV         VAR=VALUE entries set in the environment of both runs
#   RUN_TIMEOUT     seconds each run may take (default 120)
#   RUN_FILES       optional: files (absolute paths) copied into each run's directory first, e.g.
#                   the data files and the petscoptions file a tutorial reads from its working
#                   directory
#   OUTPUT_FILES    optional: more files a tutorial writes into its working directory, compared
#                   byte for byte like lambda.bin and solution.bin
#   EMPTY_DIR       optional: a directory (relative to the candidate's working directory) that
#                   must be empty or absent after the candidate run
#   FEWER_STEPS     optional, ON: both runs write PETSc's -log_view to log_view.txt, and the
#                   candidate's TSStep count (forward steps, recomputations included) must not
#                   exceed the baseline's (rewind against PETSc's memory trajectory with CAMS)
#   MODE            "baseline": only run the baseline, into <WORK_DIR>/baseline (a ctest fixture
#                   that many comparisons share)
#   BASELINE_DIR    optional: take the baseline from this directory (a MODE=baseline run's
#                   <WORK_DIR>/baseline) instead of running it again
#   RTOL, VEC_CLOSE optional: lambda.bin and solution.bin may differ from the baseline's within
#                   RTOL, normwise, as the vec_close program VEC_CLOSE says (for a candidate the
#                   user let differ in the last bits); everything else is still bitwise
#
# Each run also gets -ts_adjoint_view_solution binary:lambda.bin (lambda[0] after
# TSAdjointSolve, the only cost gradient PETSc 3.18 can write from the options database),
# -ts_view_solution binary:solution.bin (the forward solution after TSSolve) and
# -viewer_binary_skip_info; both files are compared byte for byte.
cmake_minimum_required(VERSION 3.22)

if(DEFINED CONFIG)
  include(${CONFIG})
endif()
foreach(var EXE WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "compare.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT EXISTS "${EXE}")
  message(FATAL_ERROR "compare.cmake: the tutorial ${EXE} does not exist (not built?)")
endif()
if(NOT DEFINED RANKS)
  set(RANKS 1)
endif()
if(NOT DEFINED BASELINE_ARGS)
  set(BASELINE_ARGS -ts_trajectory_type memory -ts_trajectory_solution_only 0)
endif()
if(NOT DEFINED MPIEXEC OR "${MPIEXEC}" STREQUAL "")
  set(MPIEXEC mpiexec)
endif()
if(NOT DEFINED MPIEXEC_NUMPROC_FLAG OR "${MPIEXEC_NUMPROC_FLAG}" STREQUAL "")
  set(MPIEXEC_NUMPROC_FLAG -n)
endif()
if(NOT DEFINED RUN_TIMEOUT)
  set(RUN_TIMEOUT 120)
endif()
foreach(entry IN LISTS RUN_ENV)
  if(entry MATCHES "^([^=]+)=(.*)$")
    set(ENV{${CMAKE_MATCH_1}} "${CMAKE_MATCH_2}")
  endif()
endforeach()

set(outputs lambda.bin solution.bin ${OUTPUT_FILES})
set(output_args -ts_adjoint_view_solution binary:lambda.bin -ts_view_solution binary:solution.bin
                -viewer_binary_skip_info)
if(FEWER_STEPS)
  list(APPEND output_args -log_view :log_view.txt)
endif()

file(REMOVE_RECURSE "${WORK_DIR}")

# run(<role> <role args...>): runs the tutorial in <WORK_DIR>/<role>; sets <role>_out.
function(run role)
  set(dir "${WORK_DIR}/${role}")
  file(MAKE_DIRECTORY "${dir}")
  foreach(f IN LISTS RUN_FILES)
    file(COPY "${f}" DESTINATION "${dir}")
  endforeach()
  set(cmd ${MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} ${RANKS} ${MPIEXEC_FLAGS} ${MPIEXEC_PREFLAGS} ${EXE}
          ${MPIEXEC_POSTFLAGS} ${COMMON_ARGS} ${ARGN} ${output_args})
  list(JOIN cmd " " cmd_line)
  file(WRITE "${dir}/command" "${cmd_line}\n")
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${cmd} WORKING_DIRECTORY "${dir}" TIMEOUT ${RUN_TIMEOUT}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(TIMESTAMP t1 "%s")
  math(EXPR secs "${t1} - ${t0}")
  file(WRITE "${dir}/stdout" "${out}")
  file(WRITE "${dir}/stderr" "${err}")
  message("${role}: ${cmd_line}\n${role}: exit ${rc} after about ${secs} s (${dir})")
  if(NOT "${rc}" STREQUAL "0")
    string(LENGTH "${out}" n)
    if(n GREATER 3000)
      math(EXPR from "${n} - 3000")
      string(SUBSTRING "${out}" ${from} -1 out)
      set(out "...${out}")
    endif()
    message("---- ${role} stdout ----\n${out}\n---- ${role} stderr ----\n${err}")
    message(FATAL_ERROR "the ${role} run failed (exit ${rc}): ${cmd_line}")
  endif()
  foreach(f IN LISTS outputs)
    if(NOT EXISTS "${dir}/${f}")
      message(FATAL_ERROR "the ${role} run wrote no ${f}: does the tutorial call TSAdjointSolve "
                          "(or write ${f} into its working directory)?")
    endif()
  endforeach()
  set(${role}_out "${out}" PARENT_SCOPE)
  set(${role}_err "${err}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "baseline")
  run(baseline ${BASELINE_ARGS})
  file(WRITE "${WORK_DIR}/baseline/complete" "")
  message("baseline written to ${WORK_DIR}/baseline")
  return()
endif()
if(DEFINED BASELINE_DIR AND NOT "${BASELINE_DIR}" STREQUAL "")
  if(NOT EXISTS "${BASELINE_DIR}/complete")
    message(FATAL_ERROR "no baseline in ${BASELINE_DIR}: run its fixture test (ctest -R "
                        "petsc.baseline) first")
  endif()
  file(STRINGS "${BASELINE_DIR}/command" baseline_cmd)
  message("baseline: reused from ${BASELINE_DIR}, run as: ${baseline_cmd}")
  file(READ "${BASELINE_DIR}/stdout" baseline_out)
else()
  set(BASELINE_DIR "${WORK_DIR}/baseline")
  run(baseline ${BASELINE_ARGS})
endif()
set(view_args)
if(NOT "${VIEW_REGEX}" STREQUAL "")
  set(view_args -ts_trajectory_view)
endif()
run(candidate ${CANDIDATE_ARGS} ${view_args})

# Byte-for-byte comparison of each output; on a mismatch, report the first differing Vec entry
# (PETSc binary Vec files: 4-byte class id, 4-byte length, then big-endian 8-byte reals).
set(failures)
foreach(f IN LISTS outputs)
  set(a "${BASELINE_DIR}/${f}")
  set(b "${WORK_DIR}/candidate/${f}")
  file(SHA256 "${a}" sha_a)
  file(SHA256 "${b}" sha_b)
  if(sha_a STREQUAL sha_b)
    file(SIZE "${a}" size)
    message("${f}: identical (${size} bytes, sha256 ${sha_a})")
    continue()
  endif()
  if(NOT "${RTOL}" STREQUAL "" AND f MATCHES "^(lambda|solution)\\.bin$")
    execute_process(COMMAND "${VEC_CLOSE}" "${a}" "${b}" "${RTOL}" RESULT_VARIABLE close
                    OUTPUT_VARIABLE said ERROR_VARIABLE said OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(close EQUAL 0)
      message("${f}: not identical, ${said}")
      continue()
    endif()
    list(APPEND failures "${f} differs: ${said}")
    continue()
  endif()
  file(READ "${a}" hex_a HEX)
  file(READ "${b}" hex_b HEX)
  string(LENGTH "${hex_a}" len_a)
  string(LENGTH "${hex_b}" len_b)
  set(lo 0)
  if(len_a LESS len_b)
    set(hi ${len_a})
  else()
    set(hi ${len_b})
  endif()
  while(lo LESS hi) # first differing hex digit: largest common prefix, by bisection
    math(EXPR mid "(${lo} + ${hi} + 1) / 2")
    string(SUBSTRING "${hex_a}" 0 ${mid} pa)
    string(SUBSTRING "${hex_b}" 0 ${mid} pb)
    if(pa STREQUAL pb)
      set(lo ${mid})
    else()
      math(EXPR hi "${mid} - 1")
    endif()
  endwhile()
  math(EXPR byte "${lo} / 2")
  math(EXPR size_a "${len_a} / 2")
  math(EXPR size_b "${len_b} / 2")
  set(where "first difference at byte ${byte}")
  if(byte GREATER_EQUAL 8 AND f MATCHES "^(lambda|solution)\\.bin$")
    math(EXPR entry "(${byte} - 8) / 8")
    math(EXPR at "16 + ${entry} * 16")
    string(SUBSTRING "${hex_a}" ${at} 16 va)
    string(SUBSTRING "${hex_b}" ${at} 16 vb)
    string(APPEND where ", Vec entry ${entry} (global natural index): baseline 0x${va}, candidate 0x${vb}")
  elseif(NOT f MATCHES "\\.bin$" AND size_a LESS 2000 AND size_b LESS 2000)
    file(READ "${a}" text_a)
    file(READ "${b}" text_b)
    string(APPEND where ":\n baseline:\n${text_a}\n candidate:\n${text_b}")
  endif()
  list(APPEND failures "${f} differs: baseline ${size_a} bytes sha256 ${sha_a}, candidate ${size_b} bytes sha256 ${sha_b}; ${where}")
endforeach()

if(NOT "${STDOUT_LINES}" STREQUAL "")
  file(STRINGS "${BASELINE_DIR}/stdout" lines_a REGEX "${STDOUT_LINES}")
  file(STRINGS "${WORK_DIR}/candidate/stdout" lines_b REGEX "${STDOUT_LINES}")
  list(LENGTH lines_a n_a)
  if(n_a EQUAL 0)
    list(APPEND failures "no baseline stdout line matches STDOUT_LINES '${STDOUT_LINES}'")
  elseif(NOT lines_a STREQUAL lines_b)
    list(JOIN lines_a "\n  " show_a)
    list(JOIN lines_b "\n  " show_b)
    list(APPEND failures "printed results differ (stdout lines matching '${STDOUT_LINES}'):\n baseline:\n  ${show_a}\n candidate:\n  ${show_b}")
  else()
    message("stdout: the ${n_a} lines matching '${STDOUT_LINES}' are identical")
  endif()
endif()

if(FEWER_STEPS)
  # The TSStep line of -log_view: its first number is the call count (the rank maximum).
  function(tsstep_count role out)
    file(READ "${WORK_DIR}/${role}/log_view.txt" log)
    if(NOT log MATCHES "\nTSStep +([0-9]+) ")
      message(FATAL_ERROR "no TSStep line in the ${role}'s ${WORK_DIR}/${role}/log_view.txt")
    endif()
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  endfunction()
  tsstep_count(baseline base_steps)
  tsstep_count(candidate cand_steps)
  message("TSStep calls: baseline ${base_steps}, candidate ${cand_steps}")
  if(cand_steps GREATER base_steps)
    list(APPEND failures "the candidate took ${cand_steps} TSStep calls, the baseline ${base_steps}")
  endif()
endif()

if(NOT "${EMPTY_DIR}" STREQUAL "")
  file(GLOB left "${WORK_DIR}/candidate/${EMPTY_DIR}/*")
  if(left)
    list(APPEND failures "the candidate left files in ${EMPTY_DIR}: ${left}")
  endif()
endif()

# The candidate's `stream` (stdout or stderr, in `text`) must match the regex in variable `name`
# when it is set; a mismatch is added to `failures`.
function(expect_match stream text name)
  if("${${name}}" STREQUAL "")
    return()
  endif()
  if(text MATCHES "${${name}}")
    message("candidate ${stream} matches ${name} '${${name}}': ${CMAKE_MATCH_0}")
  else()
    list(APPEND failures "the candidate's ${stream} does not match ${name} '${${name}}':\n${text}")
    set(failures "${failures}" PARENT_SCOPE)
  endif()
endfunction()
expect_match(stdout "${candidate_out}" VIEW_REGEX)
expect_match(stderr "${candidate_err}" STDERR_REGEX)

if(failures)
  list(JOIN failures "\n" text)
  message(FATAL_ERROR "the candidate does not reproduce the baseline:\n${text}")
endif()
message("the candidate reproduces the baseline bit for bit")
