# Fused LLM ops: entry points and tuning glue in src/ops, kernels in kernels/norm and
# kernels/activation (instantiated by the two *_kernels.cu bridges). Paths relative to src/.
set(TUNABLE_OPS_SOURCES
  ops/signature.cpp ops/configs.cpp ops/ops_solutions.cpp ops/ops.cpp ops/ops_workload.cu
  ops/rms_norm_kernels.cu ops/act_and_mul_kernels.cu)
