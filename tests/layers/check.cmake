# Builds each layer probe (cmake/layers.cmake) and checks the outcome: a header of the layer itself
# or of a layer below compiles; a header of a layer above must not. Arguments: BUILD, PROBES (a list
# of target=expect pairs, expect "ok" or "fail").
set(failures "")
foreach(pair IN LISTS PROBES)
  string(REPLACE "=" ";" kv "${pair}")
  list(GET kv 0 target)
  list(GET kv 1 expect)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} --target ${target}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect STREQUAL "ok" AND NOT rc EQUAL 0)
    string(APPEND failures "${target}: a permitted include failed to compile:\n${out}\n${err}\n")
  elseif(expect STREQUAL "fail" AND rc EQUAL 0)
    string(APPEND failures "${target}: an include of a higher layer compiled\n")
  elseif(expect STREQUAL "fail" AND NOT "${out}${err}" MATCHES "No such file")
    string(APPEND failures "${target}: failed for another reason than the include path:\n${out}\n${err}\n")
  else()
    message(STATUS "${target}: ${expect} as expected")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
