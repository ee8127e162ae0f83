file(GLOB_RECURSE files ${SOURCE_DIR}/include/*.hpp ${SOURCE_DIR}/src/*.cpp ${SOURCE_DIR}/src/*.hpp
     ${SOURCE_DIR}/apps/*.cpp ${SOURCE_DIR}/apps/*.hpp ${SOURCE_DIR}/tests/*.cpp
     ${SOURCE_DIR}/tests/*.hpp ${SOURCE_DIR}/bench/*.cpp)
execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${files} RESULT_VARIABLE rc
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "files are not clang-formatted (run clang-format -i):\n${err}")
endif()
list(LENGTH files n)
message("${n} files formatted")
