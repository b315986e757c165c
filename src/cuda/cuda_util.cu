#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "cuda/cuda_util.hpp"

namespace tunable {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
  return static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535u * 8));
}

__device__ __forceinline__ float hash_uniform(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <class T>
__device__ __forceinline__ T from_float(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ __forceinline__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }
template <>
__device__ __forceinline__ __nv_fp8_e5m2 from_float<__nv_fp8_e5m2>(float v) { return __nv_fp8_e5m2(v); }

template <class T>
__device__ __forceinline__ double to_dbl(T v) {
  return static_cast<double>(static_cast<float>(v));
}
template <>
__device__ __forceinline__ double to_dbl<double>(double v) { return v; }

template <class T>
__global__ void kernel_fill_random(T* p, std::size_t n, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x)
    p[i] = from_float<T>(scale * hash_uniform(seed, i));
}

template <class T>
__global__ void kernel_fill_bits(T* p, std::size_t n, T bits) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x)
    p[i] = bits;
}

template <class T>
__global__ void kernel_to_double(const T* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                 double* dst) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x) {
    const std::int64_t r = i % rows, c = i / rows;
    dst[i] = to_dbl(src[r + c * ld]);
  }
}

template <class Fn>
Status dispatch_type(DataType t, Fn fn) {
  switch (t) {
    case DataType::kF64: return fn(double{});
    case DataType::kF32:
    case DataType::kTF32: return fn(float{});
    case DataType::kF16: return fn(__half{});
    case DataType::kBF16: return fn(__nv_bfloat16{});
    case DataType::kF8E4M3: return fn(__nv_fp8_e4m3{});
    case DataType::kF8E5M2: return fn(__nv_fp8_e5m2{});
  }
  return Status(StatusCode::kNotSupported, "unknown data type");
}

}  // namespace

Status DeviceBuffer::allocate(std::size_t bytes) {
  reset();
  cudaError_t e = cudaMalloc(&p_, std::max<std::size_t>(bytes, 1));
  if (e != cudaSuccess) {
    p_ = nullptr;
    (void)cudaGetLastError();
    return Status(StatusCode::kCudaError,
                  fmt::format("cudaMalloc of {} bytes failed: {}", bytes, cuda_error_text(e)));
  }
  n_ = bytes;
  return Status::ok();
}

void DeviceBuffer::reset() noexcept {
  if (p_) cudaFree(p_);
  p_ = nullptr;
  n_ = 0;
}

Status fill_random(void* p, DataType t, std::size_t n, std::uint64_t seed, float scale,
                   cudaStream_t stream) {
  if (n == 0) return Status::ok();
  return dispatch_type(t, [&](auto tag) -> Status {
    using T = decltype(tag);
    kernel_fill_random<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(p), n, seed, scale);
    TUNABLE_CUDA_CHECK_LAUNCH();
    return Status::ok();
  });
}

Status fill_nan(void* p, DataType t, std::size_t n, cudaStream_t stream) {
  if (n == 0) return Status::ok();
  const std::size_t es = size_of(t);
  const int blocks = blocks_for(n);
  switch (es) {
    case 8:
      kernel_fill_bits<<<blocks, kThreads, 0, stream>>>(static_cast<std::uint64_t*>(p), n,
                                                        (std::uint64_t)0x7ff8000000000000ull);
      break;
    case 4:
      kernel_fill_bits<<<blocks, kThreads, 0, stream>>>(static_cast<std::uint32_t*>(p), n,
                                                        (std::uint32_t)0x7fc00000u);
      break;
    case 2:
      kernel_fill_bits<<<blocks, kThreads, 0, stream>>>(
          static_cast<std::uint16_t*>(p), n,
          static_cast<std::uint16_t>(t == DataType::kF16 ? 0x7e00u : 0x7fc0u));
      break;
    case 1:
      kernel_fill_bits<<<blocks, kThreads, 0, stream>>>(
          static_cast<std::uint8_t*>(p), n,
          static_cast<std::uint8_t>(t == DataType::kF8E4M3 ? 0x7fu : 0x7fu));
      break;
    default:  // an output left unpoisoned could pass the check with stale values
      return Status(StatusCode::kInternal, fmt::format("fill_nan: no NaN pattern for {}-byte elements", es));
  }
  TUNABLE_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

Status to_double(const void* src, DataType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                 double* dst, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  if (n == 0) return Status::ok();
  return dispatch_type(t, [&](auto tag) -> Status {
    using T = decltype(tag);
    kernel_to_double<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src), rows,
                                                                cols, ld, dst);
    TUNABLE_CUDA_CHECK_LAUNCH();
    return Status::ok();
  });
}

const cudaDeviceProp& device_properties(int ordinal) {
  static std::mutex mu;
  static std::map<int, cudaDeviceProp> cache;
  static const cudaDeviceProp unread{};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(ordinal);
  if (it != cache.end()) return it->second;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return unread;  // not cached: a failed read (a bad ordinal, a driver hiccup) is tried again next time
  }
  return cache.emplace(ordinal, p).first->second;
}

Status require_current_device(int ordinal) {
  int current = -1;
  TUNABLE_CUDA_CHECK(cudaGetDevice(&current));
  if (current != ordinal)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("the context is for cuda:{} but cuda:{} is the current device; make the "
                              "context's device current (cudaSetDevice) before calling",
                              ordinal, current));
  return Status::ok();
}

}  // namespace tunable
