# Skinny GEMM kernels (issue 4): GPU numerics of every variant (label gpu, skipped without a
# device) and the CPU test of the provider's names and enumeration (label cpu).
tunable_gpu_test(tunable_gpu_skinny_tests gpu/skinny_gpu_test.cpp)

add_executable(tunable_skinny_names_tests gemm/skinny_names_test.cpp)
tunable_sees_all(tunable_skinny_names_tests)
target_link_libraries(tunable_skinny_names_tests PRIVATE tunable GTest::gtest_main fmt::fmt-header-only)
gtest_discover_tests(tunable_skinny_names_tests PROPERTIES LABELS cpu DISCOVERY_TIMEOUT 60)
