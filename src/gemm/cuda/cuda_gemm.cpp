// CUDA GEMM module: validators now; providers land with the GPU GEMM issue.
#include "gemm/cuda/cuda_gemm.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <fmt/format.h>

#include "core/cuda_check.hpp"

namespace tunable {

Status cuda_validators(int ordinal, std::vector<Validator>* out) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    return Status(StatusCode::kNoDevice,
                  fmt::format("no CUDA device visible ({})", e == cudaSuccess ? "0 devices" : cuda_error_text(e)));
  if (ordinal < 0 || ordinal >= count)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("CUDA device ordinal {} out of range ({} devices)", ordinal, count));
  int rt = 0, drv = 0;
  TUNABLE_CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  TUNABLE_CUDA_CHECK(cudaDriverGetVersion(&drv));
  cudaDeviceProp p{};
  TUNABLE_CUDA_CHECK(cudaGetDeviceProperties(&p, ordinal));
  out->emplace_back("CUDA_RUNTIME_VERSION", std::to_string(rt));
  out->emplace_back("CUDA_DRIVER_VERSION", std::to_string(drv));
  out->emplace_back("CUBLAS_VERSION", std::to_string(cublasGetCudartVersion()) + "/" +
                                          std::to_string(CUBLAS_VERSION));
  out->emplace_back("CUBLASLT_VERSION", std::to_string(cublasLtGetVersion()));
  out->emplace_back("GPU_NAME", sanitize_field(p.name));
  out->emplace_back("GPU_CC", fmt::format("{}.{}", p.major, p.minor));
  out->emplace_back("GPU_SM_COUNT", std::to_string(p.multiProcessorCount));
  return Status::ok();
}

Status cuda_gemm_hooks(ContextImpl&, const GemmDesc&, OpHooks<GemmArgs>*) {
  return Status(StatusCode::kNotSupported, "CUDA GEMM providers are not built yet");
}

}  // namespace tunable
