# Finds what the layers above the schedule need. The schedule layer itself needs none of it.

find_package(MPI REQUIRED COMPONENTS C CXX)

# Parallel HDF5 (Debian: libhdf5-openmpi-dev). A serial HDF5 cannot write one file from many
# ranks, so refuse it.
set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
include(CheckSymbolExists)
set(CMAKE_REQUIRED_INCLUDES ${HDF5_INCLUDE_DIRS})
check_symbol_exists(H5_HAVE_PARALLEL "H5pubconf.h" REWIND_HDF5_IS_PARALLEL)
unset(CMAKE_REQUIRED_INCLUDES)
if(NOT REWIND_HDF5_IS_PARALLEL)
  message(FATAL_ERROR "rewind needs a parallel HDF5 (H5_HAVE_PARALLEL), found a serial one in "
                      "${HDF5_INCLUDE_DIRS}; on Debian install libhdf5-openmpi-dev "
                      "(scripts/install-deps.sh does)")
endif()
# HDF5 for rewind::storage (privately) and the apps. It is installed (as rewind::hdf5, in
# rewindTargets) because a static rewind::storage exports $<LINK_ONLY:rewind::hdf5>: a consumer
# then links the HDF5 libraries rewind was built with, by path, without finding HDF5 itself
# (FindHDF5 needs the C language enabled in the consumer's project). The include directories
# are for rewind's own build only.
if(NOT TARGET rewind_hdf5)
  add_library(rewind_hdf5 INTERFACE)
  set_target_properties(rewind_hdf5 PROPERTIES EXPORT_NAME hdf5)
  foreach(dir IN LISTS HDF5_INCLUDE_DIRS)
    target_include_directories(rewind_hdf5 SYSTEM INTERFACE $<BUILD_INTERFACE:${dir}>)
  endforeach()
  foreach(definition IN LISTS HDF5_DEFINITIONS)
    target_compile_definitions(rewind_hdf5 INTERFACE $<BUILD_INTERFACE:${definition}>)
  endforeach()
  target_link_libraries(rewind_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
  install(TARGETS rewind_hdf5 EXPORT rewindTargets)
endif()

find_package(PkgConfig REQUIRED)
pkg_check_modules(PETSC REQUIRED IMPORTED_TARGET PETSc>=3.18)
# The PETSc releases rewind is tested against (scripts/test-petsc.sh VERSION runs the PETSc label
# against each; docs/petsc.md, "PETSc versions"). rewind reads PETSc's private TS structures
# (src/petsc/private_access.cpp), whose layout changes between releases: another release is
# refused here rather than found wrong at run time.
set(REWIND_PETSC_TESTED 3.18 3.22 3.25)
option(REWIND_PETSC_UNTESTED "Build against a PETSc release outside the tested set" OFF)
string(REGEX MATCH "^[0-9]+\\.[0-9]+" REWIND_PETSC_MINOR "${PETSC_VERSION}")
if(NOT REWIND_PETSC_MINOR IN_LIST REWIND_PETSC_TESTED)
  list(JOIN REWIND_PETSC_TESTED ", " _tested)
  if(REWIND_PETSC_UNTESTED)
    message(WARNING "PETSc ${PETSC_VERSION} is outside the releases rewind is tested against "
                    "(${_tested}); building anyway (REWIND_PETSC_UNTESTED is on): run the PETSc "
                    "label (ctest -L petsc) before trusting a gradient")
  else()
    message(FATAL_ERROR "PETSc ${PETSC_VERSION} (${PETSC_PREFIX}) is outside the releases rewind "
                        "is tested against: ${_tested}. Point PKG_CONFIG_PATH at one of those "
                        "(scripts/build-petsc.sh 3.25.4 builds one), or configure with "
                        "-DREWIND_PETSC_UNTESTED=ON to build and test it yourself")
  endif()
endif()
# PETSc 3.25 renamed -ts_dt to -ts_time_step (the old name is still read, with a deprecation
# notice on stdout): the tests give the step size by the name of the PETSc they run against.
if(PETSC_VERSION VERSION_GREATER_EQUAL 3.25)
  set(REWIND_TS_DT -ts_time_step)
else()
  set(REWIND_TS_DT -ts_dt)
endif()
# xxHash (Debian: libxxhash-dev). The engine's resume manifest checksums its own text with the
# header inline (XXH_INLINE_ALL). rewind::storage links the library privately for the checkpoint
# checksum: its XXH3 *_dispatch functions pick AVX-512, AVX2 or SSE2 at run time (3.6 times the
# speed of the SSE2 code a header-only build gets on the development VM). Like rewind::hdf5, the
# library is installed as rewind::xxhash, by path, for a static rewind::storage's consumers.
find_path(REWIND_XXHASH_INCLUDE_DIR xxhash.h)
find_library(REWIND_XXHASH_LIBRARY xxhash)
if(NOT REWIND_XXHASH_INCLUDE_DIR OR NOT REWIND_XXHASH_LIBRARY)
  message(FATAL_ERROR "xxHash was not found (xxhash.h: ${REWIND_XXHASH_INCLUDE_DIR}, library: "
                      "${REWIND_XXHASH_LIBRARY}); on Debian install libxxhash-dev "
                      "(scripts/install-deps.sh does)")
endif()
if(NOT TARGET rewind_xxhash)
  add_library(rewind_xxhash INTERFACE)
  set_target_properties(rewind_xxhash PROPERTIES EXPORT_NAME xxhash)
  target_include_directories(rewind_xxhash SYSTEM INTERFACE
                             $<BUILD_INTERFACE:${REWIND_XXHASH_INCLUDE_DIR}>)
  target_link_libraries(rewind_xxhash INTERFACE ${REWIND_XXHASH_LIBRARY})
  install(TARGETS rewind_xxhash EXPORT rewindTargets)
endif()

# The checkpoint codecs (rewind/storage/codec.hpp): zstd, Blosc and zfp (Debian: libzstd-dev,
# libblosc-dev, libzfp-dev). rewind::storage links them privately; like rewind::xxhash they are
# installed as rewind::codecs, by path, for a static rewind::storage's consumers.
set(_rewind_codec_libs "")
foreach(_rewind_codec zstd blosc zfp)
  string(TOUPPER ${_rewind_codec} _rewind_codec_upper)
  find_path(REWIND_${_rewind_codec_upper}_INCLUDE_DIR ${_rewind_codec}.h)
  find_library(REWIND_${_rewind_codec_upper}_LIBRARY ${_rewind_codec})
  if(NOT REWIND_${_rewind_codec_upper}_INCLUDE_DIR OR NOT REWIND_${_rewind_codec_upper}_LIBRARY)
    message(FATAL_ERROR "${_rewind_codec} was not found (${_rewind_codec}.h: "
                        "${REWIND_${_rewind_codec_upper}_INCLUDE_DIR}, library: "
                        "${REWIND_${_rewind_codec_upper}_LIBRARY}); on Debian install "
                        "libzstd-dev, libblosc-dev and libzfp-dev (scripts/install-deps.sh does)")
  endif()
  list(APPEND _rewind_codec_libs ${REWIND_${_rewind_codec_upper}_LIBRARY})
endforeach()
if(NOT TARGET rewind_codecs)
  add_library(rewind_codecs INTERFACE)
  set_target_properties(rewind_codecs PROPERTIES EXPORT_NAME codecs)
  target_include_directories(rewind_codecs SYSTEM INTERFACE
                             $<BUILD_INTERFACE:${REWIND_ZSTD_INCLUDE_DIR}>
                             $<BUILD_INTERFACE:${REWIND_BLOSC_INCLUDE_DIR}>
                             $<BUILD_INTERFACE:${REWIND_ZFP_INCLUDE_DIR}>)
  target_link_libraries(rewind_codecs INTERFACE ${_rewind_codec_libs})
  install(TARGETS rewind_codecs EXPORT rewindTargets)
endif()

if(REWIND_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(REWIND_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
