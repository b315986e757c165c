# Skinny GEMM kernels for decode (kernels/gemv) and their tuning provider: sources of the gemm layer,
# relative to src/. One bridge file per kernel family (skinny_<family>.cu) instantiates that family's
# kernels, so they build in parallel, and holds its tables; the others are shared by every family.
set(TUNABLE_SKINNY_SOURCES
  gemm/cuda/skinny_config.cpp
  gemm/cuda/skinny_provider.cu
  gemm/cuda/skinny_state.cu
  gemm/cuda/skinny_gemv.cu
  gemm/cuda/skinny_mma.cu
  gemm/cuda/skinny_mmap.cu
  gemm/cuda/skinny_mmt.cu
  gemm/cuda/skinny_wgt.cu
  gemm/cuda/skinny_wo.cu
  gemm/cuda/skinny_wov.cu)
