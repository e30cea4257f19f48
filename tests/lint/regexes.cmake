# Fails when a test's pass or fail expression repeats a group, as in
# "(.|\n)*".  CTest's regular expressions match a repeated group by
# recursion, once per character, and backtrack through every way to split
# the text: on a few hundred lines of output CTest spins for ever with the
# test's process already gone, and the whole run hangs instead of failing.
# "." matches a newline there, so ".*" says the same thing in linear time.
#   cmake -DROOT=<source dir> -P regexes.cmake
file(GLOB_RECURSE files "${ROOT}/tests/*CMakeLists.txt" "${ROOT}/tests/*.cmake")
set(bad "")
foreach(f IN LISTS files)
  file(STRINGS "${f}" lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "REGULAR_EXPRESSION" AND line MATCHES "\\)[*+]")
      file(RELATIVE_PATH rel "${ROOT}" "${f}")
      string(APPEND bad "  ${rel}:${n}: ${line}\n")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "a test expression repeats a group (use .* instead of (.|\\n)*):\n${bad}")
endif()
message(STATUS "no test expression repeats a group (${ROOT}/tests)")
