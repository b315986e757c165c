// Instantiates the RMSNorm kernels and launches one configuration for the library.
#include "kernels/norm/rms_norm.cuh"
#include "core/cuda_check.hpp"
#include "ops/ops_workload.hpp"

namespace tunable {

Status launch_fused_op(const NormArgs& a, const NormConfig& c, Stream stream) {
  kernels::RmsNormParams p{};
  p.x = a.x;
  p.residual = a.prob.fused ? a.residual : nullptr;
  p.weight = a.weight;
  p.out = a.out;
  p.scale = a.scale;
  p.token_scales = a.token_scales;
  p.rows = a.prob.rows;
  p.x_stride = a.x_stride;
  p.residual_stride = a.residual_stride;
  p.out_stride = a.out_stride;
  p.hidden = static_cast<int>(a.prob.hidden);
  p.eps = a.eps;
  p.gemma = a.prob.weight == NormWeight::kGemma;
  p.quant = a.prob.fp8 == Fp8Scaling::kNone     ? kernels::NormQuant::kNone
            : a.prob.fp8 == Fp8Scaling::kStatic ? kernels::NormQuant::kFp8Static
                                                : kernels::NormQuant::kFp8Dynamic;
  kernels::RmsNormLaunch l;
  l.vec16 = c.vec16;
  l.staged = c.staged;
  l.threads_per_row = c.threads_per_row;
  l.rows_per_block = c.rows_per_block;
  l.items = c.items;
  l.early_weight = c.early_weight;
  l.cluster = c.cluster;
  l.stream = c.stream;
  TUNABLE_CUDA_CHECK(kernels::launch_rms_norm(p, kernel_float_type(a.prob.dtype), l, stream));
  return Status::ok();
}

bool cluster_candidates_supported() {
  return kernels::rms_norm_cluster_supported();  // caches the build half, queries the device
}

}  // namespace tunable
