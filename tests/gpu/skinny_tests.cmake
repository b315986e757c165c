# Skinny GEMM kernels: GPU numerics of every variant on every case, and the completeness sweep that
# runs every parsable name against the fp64 reference (label gpu, skipped without a device); the
# CPU test of the provider's names and enumeration (label cpu).
tunable_gpu_test(tunable_gpu_skinny_tests gpu/skinny_gpu_test.cpp gpu/skinny_completeness_test.cpp)

add_executable(tunable_skinny_names_tests gemm/skinny_names_test.cpp)
tunable_sees_all(tunable_skinny_names_tests)
target_link_libraries(tunable_skinny_names_tests PRIVATE tunable GTest::gtest_main fmt::fmt-header-only)
gtest_discover_tests(tunable_skinny_names_tests PROPERTIES LABELS cpu DISCOVERY_TIMEOUT 60)
