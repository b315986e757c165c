# ctest helper (label cpu) for the GPU binaries' main() (tests/gpu/gpu_main.cpp, gpu_main.hpp).
#   cmake -DBIN=<binary> -DMODE=hidden_gpu -P gpu_main_check.cmake
#     BIN is a GPU test binary, run with the GPU hidden (CUDA_VISIBLE_DEVICES empty; a machine
#     without a GPU or driver is the same case): with TUNABLE_REQUIRE_GPU=1 it must fail (not exit 0,
#     not the skip code 77) and say why; without it (unset, or 0) it must skip with exit 77.
#   cmake -DBIN=<probe> -DMODE=skip_report -P gpu_main_check.cmake
#     BIN is tunable_skip_report_probe (one test passes, two skip): the report counts and names
#     the skips, and with TUNABLE_REQUIRE_GPU=1 repeats them on stderr with a warning.
function(run_bin out_rc out_stdout out_stderr)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o
                  ERROR_VARIABLE e TIMEOUT 120)
  set(${out_rc} "${rc}" PARENT_SCOPE)
  set(${out_stdout} "${o}" PARENT_SCOPE)
  set(${out_stderr} "${e}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "hidden_gpu")
  # --gtest_filter=-* : should a device be visible after all, nothing runs.
  run_bin(rc o e CUDA_VISIBLE_DEVICES= TUNABLE_REQUIRE_GPU=1 ${BIN} --gtest_filter=-*)
  if(NOT rc MATCHES "^[0-9]+$" OR rc EQUAL 0 OR rc EQUAL 77)
    message(FATAL_ERROR "TUNABLE_REQUIRE_GPU=1 with no GPU visible: exit '${rc}', want a failure "
                        "(not 0, not 77, not a crash)\nstdout: ${o}\nstderr: ${e}")
  endif()
  if(NOT e MATCHES "FAILED: TUNABLE_REQUIRE_GPU=1 and no usable CUDA device")
    message(FATAL_ERROR "required mode failed without saying why on stderr\nstdout: ${o}\nstderr: ${e}")
  endif()
  foreach(setting --unset=TUNABLE_REQUIRE_GPU TUNABLE_REQUIRE_GPU=0)
    run_bin(rc o e CUDA_VISIBLE_DEVICES= ${setting} ${BIN} --gtest_filter=-*)
    if(NOT rc EQUAL 77 OR NOT o MATCHES "SKIPPED: GPU tests need a CUDA device")
      message(FATAL_ERROR "${setting} with no GPU visible: exit '${rc}', want the skip code 77 and a "
                          "SKIPPED line\nstdout: ${o}\nstderr: ${e}")
    endif()
  endforeach()
elseif(MODE STREQUAL "skip_report")
  foreach(setting --unset=TUNABLE_REQUIRE_GPU TUNABLE_REQUIRE_GPU=1)
    run_bin(rc o e ${setting} ${BIN})
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${setting}: the probe exited '${rc}'\nstdout: ${o}\nstderr: ${e}")
    endif()
    foreach(want "tunable-gpu-tests: 2 of 3 tests skipped:"
                 "tunable-gpu-tests:   SKIPPED SkipReportProbe.SkipsForWantOfASecondGpu: needs two GPUs"
                 "tunable-gpu-tests:   SKIPPED SkipReportProbe.SkipsWithoutAReason")
      string(FIND "${o}" "${want}" at)
      if(at EQUAL -1)
        message(FATAL_ERROR "${setting}: stdout lacks '${want}'\nstdout: ${o}\nstderr: ${e}")
      endif()
    endforeach()
    string(FIND "${e}" "TUNABLE_REQUIRE_GPU is set and 2 tests SKIPPED" loud)
    if(setting STREQUAL "TUNABLE_REQUIRE_GPU=1" AND loud EQUAL -1)
      message(FATAL_ERROR "required mode: the skips were not repeated on stderr\nstderr: ${e}")
    elseif(setting STREQUAL "--unset=TUNABLE_REQUIRE_GPU" AND NOT loud EQUAL -1)
      message(FATAL_ERROR "without required mode the skips went to stderr as a warning\nstderr: ${e}")
    endif()
  endforeach()
else()
  message(FATAL_ERROR "MODE must be hidden_gpu or skip_report, got '${MODE}'")
endif()
