# Fused-op tests (issue 5), included from tests/CMakeLists.txt.
# CPU: signatures, names, validation, Default and candidate choice (no GPU needed; label cpu).
add_executable(tunable_ops_cpu_tests ${CMAKE_CURRENT_LIST_DIR}/../ops/ops_cpu_test.cpp)
tunable_sees_all(tunable_ops_cpu_tests)
target_include_directories(tunable_ops_cpu_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(tunable_ops_cpu_tests PRIVATE tunable GTest::gtest GTest::gtest_main
                                                    fmt::fmt-header-only)
gtest_discover_tests(tunable_ops_cpu_tests PROPERTIES LABELS cpu DISCOVERY_TIMEOUT 60)

# GPU: every op, dtype, convention and candidate against an fp64 host reference (label gpu;
# skipped with exit code 77 without a device). TUNABLE_TEST_FULL=1 runs the full sweep.
tunable_gpu_test(tunable_gpu_ops_tests gpu/ops_gpu_test.cpp gpu/planted_kernels.cu)
