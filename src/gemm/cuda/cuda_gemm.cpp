// CUDA GEMM module: per-context resources and the hooks of a GEMM TunableOp.
#include "gemm/cuda/cuda_gemm.hpp"

#include <fmt/format.h>

#include "gemm/cuda/cublaslt.hpp"
#include "gemm/cuda/cuda_resources.hpp"
#include "gemm/cuda/skinny_provider.hpp"

namespace tunable {
namespace {

// Creation can fail (no device, out of memory); the status is kept so every later call reports
// the same clear error instead of retrying.
struct CudaGemmState {
  Status status;
  std::unique_ptr<CudaGemmResources> res;
};

}  // namespace

Status cuda_gemm_hooks(ContextImpl& ctx, const GemmDesc& d, OpHooks<GemmArgs>* h) {
  const Options o = ctx.options();
  const int ordinal = ctx.device().ordinal;
  CudaGemmState& state = ctx.resource<CudaGemmState>([&] {
    auto s = std::make_unique<CudaGemmState>();
    s->status = CudaGemmResources::create(ordinal, static_cast<std::size_t>(o.workspace_mib) << 20, &s->res);
    return s;
  });
  TUNABLE_RETURN_IF_ERROR(state.status);
  CudaGemmResources* res = state.res.get();
  // cuBLAS(Lt) has no kernel for e4m3 weights with 16-bit tokens: Default is ours there.
  h->default_solution = is_weight_only(d) ? skinny_weight_only_default(&res->skinny()) : make_cuda_default(res, d);
  h->providers = {make_lt_heuristic_provider(res),
                  make_lt_exhaustive_provider(res, o.exhaustive_candidates),
                  skinny_gemm_provider(&res->skinny())};
  h->make_workload = [res](const GemmArgs& a, const Options& opt,
                           std::unique_ptr<Workload<GemmArgs>>* out) {
    return make_cuda_gemm_workload(res, a, opt, out);
  };
  h->capturing = stream_capturing;
  h->dispatch_workspace = [res](std::size_t bytes, Stream stream, void** p) {
    return res->workspace(reinterpret_cast<cudaStream_t>(stream), bytes, p);
  };
  return Status::ok();
}

}  // namespace tunable
