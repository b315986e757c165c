// Instantiates the activation-and-mul kernels and launches one configuration for the library.
#include "kernels/activation/act_and_mul.cuh"
#include "core/cuda_check.hpp"
#include "ops/ops_workload.hpp"

namespace tunable {

Status launch_fused_op(const ActArgs& a, const ActConfig& c, Stream stream) {
  kernels::ActAndMulParams p{};
  p.x = a.x;
  p.out = a.out;
  p.scale = a.scale;
  p.rows = a.prob.rows;
  p.x_stride = a.x_stride;
  p.out_stride = a.out_stride;
  p.d = static_cast<int>(a.prob.d);
  p.act = a.prob.act == Activation::kSilu ? kernels::ActKind::kSilu : kernels::ActKind::kGeluTanh;
  p.fp8 = a.prob.fp8 != Fp8Scaling::kNone;
  kernels::ActAndMulLaunch l;
  l.vec16 = c.vec16;
  l.threads = c.threads;
  l.items = c.items;
  l.fast = c.fast;
  l.rows_per_thread = c.rows_per_thread;
  TUNABLE_CUDA_CHECK(kernels::launch_act_and_mul(p, kernel_float_type(a.prob.dtype), l, stream));
  return Status::ok();
}

}  // namespace tunable
