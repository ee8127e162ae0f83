# A link graph that breaks the layer rules on purpose, for layering.detects_link_violations;
# bad_links_expected.txt lists what check_links.cmake must report about it.
set(LINKS_core "MPI::MPI_CXX")
set(LINKS_schedule "rewind::core;Threads::Threads;$<BUILD_INTERFACE:rewind_warnings>")
set(LINKS_storage "rewind::core;rewind::schedule;MPI::MPI_CXX;HDF5::HDF5;Threads::Threads")
set(LINKS_record "rewind::schedule;rewind::storage")
set(LINKS_engine "rewind::core;rewind::record;$<BUILD_INTERFACE:rewind_hdf5>")
set(LINKS_petsc "rewind::core;rewind::engine;PkgConfig::PETSC;$<LINK_ONLY:MPI::MPI_C>;fancy::lib")
