# pkg-config files for makefile users: rewind-<layer>.pc for every layer library and rewind.pc for
# all of them, installed in <libdir>/pkgconfig, e.g.
#   CC = $(shell pkg-config --variable=ccompiler PETSc)          # mpicc, as for PETSc itself
#   LDLIBS = $(shell pkg-config --libs rewind-petsc PETSc)
# Each file is written from its target's link items, so it cannot drift from the CMake link graph:
#   rewind::<layer>     Requires rewind-<layer>
#   PkgConfig::PETSC    Requires PETSc of the minor release rewind was built against (librewind
#                       reads PETSc's private structures, so another release needs a rebuild)
#   rewind_hdf5, rewind_xxhash, rewind_codecs, Threads::Threads   their libraries (by path, as in
#                       rewindTargets)
#   MPI::*              nothing: like PETSc.pc, the files leave MPI to the MPI compiler wrappers
# A shared library's private items go to Requires.private and Libs.private (used by --static); a
# static library's items are all public, and rewind-core adds the C++ runtime, so the same
# `pkg-config --libs rewind-petsc PETSc` links either kind, with a C compiler too. The prefix is
# found from the file's own place (${pcfiledir}), so an install can be moved.
include_guard(GLOBAL)
# src/storage finds Threads for rewind::storage; its imported target is visible there only.
find_package(Threads REQUIRED)

# The libraries the C++ compiler links and the C compiler does not (libstdc++, libm): what a C
# program needs beside a static rewind.
set(_rewind_pc_cxx_runtime "")
foreach(lib IN LISTS CMAKE_CXX_IMPLICIT_LINK_LIBRARIES)
  if(NOT lib IN_LIST CMAKE_C_IMPLICIT_LINK_LIBRARIES AND NOT lib IN_LIST _rewind_pc_cxx_runtime)
    list(APPEND _rewind_pc_cxx_runtime ${lib})
  endif()
endforeach()

# _rewind_pc_libs(<out> <items>): link flags for library paths, names and flags.
function(_rewind_pc_libs out)
  set(flags "")
  foreach(lib IN LISTS ARGN)
    if(lib MATCHES "^-" OR IS_ABSOLUTE "${lib}")
      list(APPEND flags "${lib}")
    elseif(lib)
      list(APPEND flags "-l${lib}")
    endif()
  endforeach()
  string(REPLACE ";" " " flags "${flags}")
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# rewind_install_pkgconfig(<layer>...): writes and installs rewind-<layer>.pc for each layer that
# was built, and rewind.pc requiring them all.
function(rewind_install_pkgconfig)
  file(RELATIVE_PATH to_prefix "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
  string(REGEX REPLACE "/$" "" to_prefix "${to_prefix}")
  foreach(dir LIBDIR INCLUDEDIR)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
      set(pc_${dir} "${CMAKE_INSTALL_${dir}}")
    else()
      set(pc_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
    endif()
  endforeach()
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" petsc_minor "${PETSC_VERSION}")
  string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)$" "\\1" petsc_major "${petsc_minor}")
  string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)$" "\\2" petsc_next "${petsc_minor}")
  math(EXPR petsc_next "${petsc_next} + 1")
  set(petsc_requires "PETSc >= ${petsc_minor}, PETSc < ${petsc_major}.${petsc_next}")

  set(all "")
  foreach(layer IN LISTS ARGN)
    if(NOT TARGET rewind_${layer})
      continue()
    endif()
    set(target rewind_${layer})
    list(APPEND all rewind-${layer})
    get_target_property(type ${target} TYPE)
    get_target_property(name ${target} OUTPUT_NAME)
    if(NOT name)
      set(name ${target})
    endif()
    get_target_property(items ${target} LINK_LIBRARIES)
    get_target_property(public ${target} INTERFACE_LINK_LIBRARIES)
    if(NOT items)
      set(items "")
    endif()
    if(NOT public)
      set(public "")
    endif()
    set(requires "")
    set(requires_private "")
    set(libs "")
    set(libs_private "")
    foreach(item IN LISTS items)
      set(is_public FALSE)
      if(item IN_LIST public OR type STREQUAL "STATIC_LIBRARY")
        set(is_public TRUE)
      endif()
      if(item MATCHES "^\\$<BUILD_INTERFACE:(.*)>$")
        set(item "${CMAKE_MATCH_1}")
      endif()
      set(req "")
      set(lib "")
      if(item STREQUAL "rewind_warnings" OR item MATCHES "^MPI::")
        continue()
      elseif(item MATCHES "^rewind(::|_)(core|comm|schedule|storage|record|engine|ensemble|petsc)$")
        set(req "rewind-${CMAKE_MATCH_2}")
      elseif(item STREQUAL "PkgConfig::PETSC")
        set(req "${petsc_requires}")
      elseif(item STREQUAL "rewind_hdf5" OR item STREQUAL "rewind_xxhash"
             OR item STREQUAL "rewind_codecs" OR item STREQUAL "Threads::Threads")
        get_target_property(lib ${item} INTERFACE_LINK_LIBRARIES)
        if(NOT lib)
          set(lib "")
        endif()
      else()
        message(FATAL_ERROR "cmake/RewindPkgConfig.cmake: ${target} links '${item}', which it does "
                            "not know how to write in rewind-${layer}.pc; add it there")
      endif()
      if(is_public)
        list(APPEND requires ${req})
        list(APPEND libs ${lib})
      else()
        list(APPEND requires_private ${req})
        list(APPEND libs_private ${lib})
      endif()
    endforeach()
    # Every rewind library is C++: a static one needs the C++ runtime when a C compiler links it.
    if(layer STREQUAL "core" AND type STREQUAL "STATIC_LIBRARY")
      list(APPEND libs ${_rewind_pc_cxx_runtime})
    endif()
    list(REMOVE_DUPLICATES requires)
    list(REMOVE_DUPLICATES requires_private)
    string(REPLACE ";" ", " requires "${requires}")
    string(REPLACE ";" ", " requires_private "${requires_private}")
    _rewind_pc_libs(libs ${libs})
    _rewind_pc_libs(libs_private ${libs_private})
    if(layer STREQUAL "petsc")
      string(CONCAT description "rewind's PETSc front end: the rewind TSTrajectory type and "
                                "the RewindEnsemble C API (C headers)")
    else()
      set(description "rewind's ${layer} layer (C++20)")
    endif()
    string(CONCAT text "prefix=\${pcfiledir}/${to_prefix}\nlibdir=${pc_LIBDIR}\n"
                       "includedir=${pc_INCLUDEDIR}\n\nName: rewind-${layer}\n"
                       "Description: ${description}\nVersion: ${PROJECT_VERSION}\n")
    if(requires)
      string(APPEND text "Requires: ${requires}\n")
    endif()
    if(requires_private)
      string(APPEND text "Requires.private: ${requires_private}\n")
    endif()
    string(APPEND text "Cflags: -I\${includedir}\nLibs: -L\${libdir} -l${name}")
    if(libs)
      string(APPEND text " ${libs}")
    endif()
    string(APPEND text "\n")
    if(libs_private)
      string(APPEND text "Libs.private: ${libs_private}\n")
    endif()
    file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/pkgconfig/rewind-${layer}.pc CONTENT "${text}"
         @ONLY)
    install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/rewind-${layer}.pc
            DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  endforeach()

  # Top layer first, as a static link wants them.
  list(REVERSE all)
  string(REPLACE ";" ", " all "${all}")
  string(CONCAT text "prefix=\${pcfiledir}/${to_prefix}\nincludedir=${pc_INCLUDEDIR}\n\n"
                     "Name: rewind\n"
                     "Description: every rewind layer (C++20; rewind-petsc alone for the C API)\n"
                     "Version: ${PROJECT_VERSION}\nRequires: ${all}\n")
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/pkgconfig/rewind.pc CONTENT "${text}" @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/rewind.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
