# Fused-op benchmark (issue 5): tunable_fused_bench. Included from bench/CMakeLists.txt.
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
add_executable(tunable_fused_bench
  ${CMAKE_CURRENT_LIST_DIR}/fused_ops_bench.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reference_kernels.cu)
target_include_directories(tunable_fused_bench PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR})
target_link_libraries(tunable_fused_bench PRIVATE tunable CLI11::CLI11 nlohmann_json::nlohmann_json
                                                  fmt::fmt-header-only CUDA::cudart)
target_compile_options(tunable_fused_bench PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
