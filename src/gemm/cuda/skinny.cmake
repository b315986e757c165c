# Skinny GEMM kernels for decode (kernels/gemv) and their tuning provider: the sources of the gemm
# layer's CUDA part that instantiate them (paths relative to src/).
set(TUNABLE_SKINNY_SOURCES gemm/cuda/skinny_provider.cu gemm/cuda/skinny_wgt.cu)
