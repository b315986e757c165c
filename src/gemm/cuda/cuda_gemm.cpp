// CUDA GEMM module: per-context resources, validators and the hooks of a GEMM TunableOp.
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

bool stream_capturing(Stream stream) {
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(stream), &cs) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return cs != cudaStreamCaptureStatusNone;
}

}  // namespace

Status cuda_validators(int ordinal, std::vector<Validator>* out) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return Status(StatusCode::kNoDevice,
                  fmt::format("no CUDA device visible ({})",
                              e == cudaSuccess ? "0 devices" : cuda_error_text(e)));
  }
  if (ordinal < 0 || ordinal >= count)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("CUDA device ordinal {} out of range ({} devices)", ordinal, count));
  int rt = 0, drv = 0, major = 0, minor = 0, patch = 0;
  TUNABLE_CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  TUNABLE_CUDA_CHECK(cudaDriverGetVersion(&drv));
  TUNABLE_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
  TUNABLE_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
  TUNABLE_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
  const cudaDeviceProp& p = device_properties(ordinal);
  if (p.multiProcessorCount <= 0)
    return Status(StatusCode::kCudaError, fmt::format("could not read the properties of cuda:{}", ordinal));
  out->emplace_back("CUDA_RUNTIME_VERSION", std::to_string(rt));
  out->emplace_back("CUDA_DRIVER_VERSION", std::to_string(drv));
  out->emplace_back("CUBLAS_VERSION", fmt::format("{}.{}.{}", major, minor, patch));
  out->emplace_back("CUBLASLT_VERSION", std::to_string(cublasLtGetVersion()));
  out->emplace_back("GPU_NAME", sanitize_field(p.name));
  out->emplace_back("GPU_CC", fmt::format("{}.{}", p.major, p.minor));
  out->emplace_back("GPU_SM_COUNT", std::to_string(p.multiProcessorCount));
  return Status::ok();
}

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
  h->default_solution = make_cuda_default(res, d);
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
