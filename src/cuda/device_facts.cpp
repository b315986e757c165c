// Device facts the layers above read: capture state and what invalidates a tuned result.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <fmt/format.h>

#include "cuda/cublas_check.hpp"
#include "cuda/cuda_util.hpp"

namespace tunable {

bool stream_capturing(Stream stream) {
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(stream), &cs) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;
  }
  return cs != cudaStreamCaptureStatusNone;
}

Status usable_device(int ordinal) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return Status(StatusCode::kNoDevice, fmt::format("no GPU: no CUDA device is usable ({})",
                                                     e == cudaSuccess ? "0 devices" : cuda_error_text(e)));
  }
  if (ordinal < 0 || ordinal >= count)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("CUDA device ordinal {} out of range ({} devices)", ordinal, count));
  return Status::ok();
}

Status cuda_validators(int ordinal, std::vector<std::pair<std::string, std::string>>* out) {
  TUNABLE_RETURN_IF_ERROR(usable_device(ordinal));
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
  out->emplace_back("GPU_NAME", p.name);
  out->emplace_back("GPU_CC", fmt::format("{}.{}", p.major, p.minor));
  out->emplace_back("GPU_SM_COUNT", std::to_string(p.multiProcessorCount));
  return Status::ok();
}

}  // namespace tunable
