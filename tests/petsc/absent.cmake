# Fails if DIR exists: what rewind made and left empty must be gone (cmake -DDIR=... -P absent.cmake).
if(EXISTS "${DIR}")
  file(GLOB_RECURSE left LIST_DIRECTORIES true "${DIR}/*")
  message(FATAL_ERROR "${DIR} is still there: ${left}")
endif()
message("${DIR} is gone")
