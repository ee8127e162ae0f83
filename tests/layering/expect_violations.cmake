# Negative test of a layering checker: runs it on input that breaks the rules and passes only if
# the checker fails and reports exactly the expected violations:
#   cmake -DCHECKER=<check_includes.cmake> -DSOURCE_DIR=<tree> -DEXPECTED=<file> -P <this file>
#   cmake -DCHECKER=<check_links.cmake> -DLINKS_FILE=<file> -DEXPECTED=<file> -P <this file>
# EXPECTED lists one violation per line (the start of the checker's line for it).
cmake_minimum_required(VERSION 3.22)

set(input "")
foreach(var SOURCE_DIR LINKS_FILE)
  if(${var})
    list(APPEND input -D${var}=${${var}})
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} ${input} -P ${CHECKER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(out "${out}${err}")
message("${out}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the checker passed a tree that breaks the layer rules")
endif()

file(STRINGS ${EXPECTED} expected)
list(LENGTH expected n_expected)
if(n_expected EQUAL 0)
  message(FATAL_ERROR "${EXPECTED} lists no violations")
endif()
set(missing "")
foreach(line IN LISTS expected)
  string(FIND "${out}" "\n${line}" at)
  if(at EQUAL -1)
    string(FIND "${out}" "${line}" at)
    if(NOT at EQUAL 0)
      list(APPEND missing "${line}")
    endif()
  endif()
endforeach()
if(missing)
  string(REPLACE ";" "\n  " missing "${missing}")
  message(FATAL_ERROR "the checker failed but did not report:\n  ${missing}")
endif()
# Nothing else: the allowed includes of the same files are not reported.
if(NOT out MATCHES "([0-9]+) layering violations in")
  message(FATAL_ERROR "the checker did not say how many violations it found")
endif()
if(NOT CMAKE_MATCH_1 EQUAL n_expected)
  message(FATAL_ERROR "the checker reported ${CMAKE_MATCH_1} violations, expected ${n_expected}")
endif()
message("the checker reported the ${n_expected} expected violations and nothing else")
