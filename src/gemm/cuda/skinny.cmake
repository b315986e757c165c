# Skinny GEMM kernels for decode (kernels/gemv) and their tuning provider. Included from the
# top-level CMakeLists right after add_library(tunable ...).
set(TUNABLE_SKINNY_SOURCES ${PROJECT_SOURCE_DIR}/src/gemm/cuda/skinny_provider.cu
                            ${PROJECT_SOURCE_DIR}/src/gemm/cuda/skinny_wgt.cu)
target_sources(tunable PRIVATE ${TUNABLE_SKINNY_SOURCES})
