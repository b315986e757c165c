// The skinny kernels' per-context host state (skinny_state.hpp): every driver query the launchers
// need, made once and kept, and the balanced grid's per-stream counters.
#include "gemm/cuda/skinny_state.hpp"

#include <fmt/format.h>

#include "core/cuda_check.hpp"
#include "kernels/gemv/common.cuh"

namespace tunable {

Status SkinnyState::device(kernels::SkinnyDevice* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!device_read_) {
    const cudaDeviceProp& p = device_properties(ordinal_);
    if (p.multiProcessorCount <= 0)
      return Status(StatusCode::kCudaError,
                    fmt::format("could not read the properties of cuda:{}", ordinal_));
    kernels::SkinnyDevice d;
    d.ordinal = ordinal_;
    d.sms = p.multiProcessorCount;
    d.cc = p.major * 10 + p.minor;
    d.smem_per_sm = static_cast<int>(p.sharedMemPerMultiprocessor);
    d.smem_optin = static_cast<int>(p.sharedMemPerBlockOptin);
    d.smem_reserved = static_cast<int>(p.reservedSharedMemPerBlock);
    TUNABLE_CUDA_CHECK(kernels::skinny_loaded_ptx_version(&d.ptx_version));
    // From the driver the runtime loaded, so the library needs no link-time libcuda.
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      d.encode_tensor_map = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    else
      (void)cudaGetLastError();  // the TMA kernels then refuse with cudaErrorNotSupported
    device_ = d;
    device_read_ = true;
  }
  *out = device_;
  return Status::ok();
}

Status SkinnyState::bal_counters(cudaStream_t stream, std::size_t count, unsigned** out) {
  *out = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = bal_counters_.find(stream);
  if (it == bal_counters_.end()) {
    if (stream_capturing(stream))
      return Status(
          StatusCode::kNotSupported,
          "the balanced grid's arrival counters for this stream are allocated at the stream's "
          "first call outside CUDA graph capture; run it once on this stream before capturing");
    DeviceBuffer buf;
    TUNABLE_RETURN_IF_ERROR(buf.allocate(count * sizeof(unsigned)));
    TUNABLE_CUDA_CHECK(cudaMemsetAsync(buf.get(), 0, count * sizeof(unsigned), stream));
    it = bal_counters_.emplace(stream, std::move(buf)).first;
  }
  if (it->second.size() < count * sizeof(unsigned))
    return Status(StatusCode::kInternal,
                  fmt::format("arrival counter set of {} bytes, {} counters asked for",
                              it->second.size(), count));
  *out = it->second.as<unsigned>();
  return Status::ok();
}

cudaError_t SkinnyState::blocks_per_sm(const void* kernel, int threads, std::size_t smem,
                                       int* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_per_sm_.find(kernel);
  if (it == blocks_per_sm_.end()) {
    cudaError_t e = cudaSuccess;
    if (smem > 48 * 1024 &&
        (e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem))) != cudaSuccess) {
      (void)cudaGetLastError();
      return e;
    }
    int blocks = 0;
    if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem)) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return e;
    }
    if (blocks < 1) return cudaErrorInvalidConfiguration;
    it = blocks_per_sm_.emplace(kernel, blocks).first;
  }
  *out = it->second;
  return cudaSuccess;
}

cudaError_t SkinnyState::max_dynamic_smem(const void* kernel, long long* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = max_dynamic_.find(kernel);
  if (it == max_dynamic_.end()) {
    cudaFuncAttributes fa{};
    cudaError_t e = cudaFuncGetAttributes(&fa, kernel);
    const long long optin = device_properties(ordinal_).sharedMemPerBlockOptin;
    const long long max_dynamic = optin - static_cast<long long>(fa.sharedSizeBytes);
    if (e == cudaSuccess && optin <= 0) e = cudaErrorInvalidDevice;
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(max_dynamic));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return e;
    }
    it = max_dynamic_.emplace(kernel, max_dynamic).first;
  }
  *out = it->second;
  return cudaSuccess;
}

cudaError_t SkinnyState::code_flag(const void* symbol, int* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = code_flags_.find(symbol);
  if (it == code_flags_.end()) {
    int v = 0;
    const cudaError_t e = cudaMemcpyFromSymbol(&v, symbol, sizeof v);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return e;
    }
    it = code_flags_.emplace(symbol, v).first;
  }
  *out = it->second;
  return cudaSuccess;
}

}  // namespace tunable
