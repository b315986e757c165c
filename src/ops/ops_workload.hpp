// CUDA side of the fused ops outside the kernels: the tuning workloads (fresh random inputs in
// rotated copies, an fp64 reference, the numerics check), the launch of one configuration, and
// the stream-capture test of the TunableOp hooks.
#pragma once

#include <memory>

#include "ops/ops_args.hpp"
#include "tune/context_impl.hpp"
#include "tune/workload.hpp"

namespace tunable {
namespace kernels {
enum class FloatType;  // kernels/common/device_utils.cuh
}

/// Launches configuration `c` on `stream` (kCudaError naming the launch on failure).
Status launch_fused_op(const NormArgs& a, const NormConfig& c, Stream stream);
Status launch_fused_op(const ActArgs& a, const ActConfig& c, Stream stream);

/// Whether the cluster candidates (NormConfig::cluster > 1) can run on the current device: sm_90
/// device code and compute capability >= 9.0 (of the current device).
bool cluster_candidates_supported();

/// Default's configuration on the current device (the norm's few-row default is a cluster kernel on
/// sm_90): default_config with the device's answer.
inline NormConfig default_here(const NormArgs& a) { return default_config(a, cluster_candidates_supported()); }
inline ActConfig default_here(const ActArgs& a) { return default_config(a); }

/// Per-dtype tolerance of outputs in the input dtype (in units of rms(reference), relative).
/// FP8 outputs are checked differently: within one e4m3 ULP of the reference's quantization.
Tolerance fused_tolerance(DataType dtype);

/// Tuning inputs for the problem of `a` (its signatures: rows_bucket rows, dense strides; a's
/// pointers and strides are not used) on the context's stream.
Status make_norm_workload(ContextImpl& ctx, const NormArgs& a, const Options& opt,
                          std::unique_ptr<Workload<NormArgs>>* out);
Status make_act_workload(ContextImpl& ctx, const ActArgs& a, const Options& opt,
                         std::unique_ptr<Workload<ActArgs>>* out);

/// The kernels' element type of a validated fused-op dtype (bf16, fp16, fp32).
kernels::FloatType kernel_float_type(DataType dtype);

}  // namespace tunable
