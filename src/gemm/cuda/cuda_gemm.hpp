// CUDA GEMM providers (cuBLAS, cuBLASLt, the project's kernels) behind one function that builds
// the hooks of a GEMM TunableOp for a CUDA context.
#pragma once

#include <vector>

#include "gemm/gemm_args.hpp"

namespace tunable {

/// Fills the hooks (Default, providers, workload, capture check) of the GEMM op `desc` belongs to.
Status cuda_gemm_hooks(ContextImpl& ctx, const GemmDesc& desc, OpHooks<GemmArgs>* hooks);

class CudaGemmResources;
/// Rotated device copies with random data, the double-accumulated reference and the numerics
/// check for tuning one GEMM problem on the GPU.
Status make_cuda_gemm_workload(CudaGemmResources* res, const GemmArgs& args, const Options& opt,
                               std::unique_ptr<Workload<GemmArgs>>* out);

}  // namespace tunable
