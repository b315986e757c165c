# Fused LLM ops (issue 5): entry points and tuning glue in src/ops, kernels in kernels/norm and
# kernels/activation (instantiated by the two *_kernels.cu files). Included by the top-level
# CMakeLists.txt right after add_library(tunable).
target_sources(tunable PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/signature.cpp
  ${CMAKE_CURRENT_LIST_DIR}/configs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ops_solutions.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ops.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ops_workload.cu
  ${CMAKE_CURRENT_LIST_DIR}/rms_norm_kernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/act_and_mul_kernels.cu)
