# No rewind library may have thread-local storage:
#   cmake -DLIBS=<shared library>[,...] -P check_tls.cmake
# librewind is usually dlopen()ed (PETSc's -dll_append, petsc4py), where a library's
# thread-local objects live in dynamic TLS: every access costs a __tls_get_addr call, and
# AddressSanitizer's leak checker mis-tracked such a block and crashed at exit (the zstd
# contexts were thread_local until then). A library with a TLS program header fails, named.
cmake_minimum_required(VERSION 3.22)
if(NOT LIBS)
  message(FATAL_ERROR "usage: cmake -DLIBS=<lib>[,<lib>...] -P check_tls.cmake")
endif()
string(REPLACE "," ";" LIBS "${LIBS}")
set(violations "")
foreach(lib IN LISTS LIBS)
  execute_process(COMMAND readelf -lW ${lib} OUTPUT_VARIABLE headers RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT headers MATCHES "LOAD")
    message(FATAL_ERROR "readelf -lW ${lib} failed (is it a shared library?)")
  endif()
  if(headers MATCHES "\n  TLS ")
    list(APPEND violations "${lib} has thread-local storage (a TLS segment)")
  endif()
endforeach()
if(violations)
  list(JOIN violations "\n" text)
  message(FATAL_ERROR "${text}\nUse state owned by an object (a pool, a context) instead.")
endif()
list(LENGTH LIBS n)
message(STATUS "${n} libraries, none with thread-local storage")
