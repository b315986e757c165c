# Skinny GEMM kernels for decode (kernels/gemv) and their tuning provider. Included from the
# top-level CMakeLists right after add_library(tunable ...). One bridge file per kernel family
# (skinny_<family>.cu) instantiates that family's kernels, so they build in parallel, and holds its
# tables; the others are shared by every family.
set(TUNABLE_SKINNY_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/skinny_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/skinny_provider.cu
  ${CMAKE_CURRENT_LIST_DIR}/skinny_state.cu
  ${CMAKE_CURRENT_LIST_DIR}/skinny_gemv.cu
  ${CMAKE_CURRENT_LIST_DIR}/skinny_mma.cu
  ${CMAKE_CURRENT_LIST_DIR}/skinny_mmap.cu
  ${CMAKE_CURRENT_LIST_DIR}/skinny_mmt.cu
  ${CMAKE_CURRENT_LIST_DIR}/skinny_wgt.cu)
target_sources(tunable PRIVATE ${TUNABLE_SKINNY_SOURCES})
