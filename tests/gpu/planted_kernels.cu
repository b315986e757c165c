// Device helpers of the planted-candidate tests: see planted_kernels.hpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "planted_kernels.hpp"

namespace tunable::test {
namespace {

constexpr int kSamples = 64;

__device__ double to_dbl(double v) { return v; }
__device__ double to_dbl(float v) { return v; }
__device__ double to_dbl(__half v) { return __half2float(v); }
__device__ double to_dbl(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ T from_dbl(double v);
template <>
__device__ double from_dbl<double>(double v) { return v; }
template <>
__device__ float from_dbl<float>(double v) { return static_cast<float>(v); }
template <>
__device__ __half from_dbl<__half>(double v) { return __double2half(v); }
template <>
__device__ __nv_bfloat16 from_dbl<__nv_bfloat16>(double v) { return __double2bfloat16(v); }

/// The unsigned integer of T's size: one ulp away from zero is +1 on the encoding's magnitude.
template <class T>
struct Bits;
template <>
struct Bits<double> { using type = unsigned long long; };
template <>
struct Bits<float> { using type = unsigned int; };
template <>
struct Bits<__half> { using type = unsigned short; };
template <>
struct Bits<__nv_bfloat16> { using type = unsigned short; };

struct Layout {
  std::int64_t rows, cols, ld, batch, stride;
  __device__ std::int64_t total() const { return rows * cols * batch; }
  /// Element x of the dense (rows, cols, batch) order, as an offset into the strided storage.
  __device__ std::int64_t at(std::int64_t x) const {
    const std::int64_t i = x % rows, j = (x / rows) % cols, b = x / (rows * cols);
    return b * stride + i + j * ld;
  }
  __device__ std::int64_t target() const { return (batch - 1) * stride + rows / 2 + (cols - 1) * ld; }
};

/// e4m3 code `steps` steps further from zero (back toward zero where that would pass 448, the
/// largest finite value; 0x7f is NaN).
__device__ unsigned char fp8_steps(unsigned char c, int steps) {
  int mag = c & 0x7f;
  mag = mag + steps <= 0x7e ? mag + steps : mag - steps;
  return static_cast<unsigned char>((c & 0x80) | mag);
}

template <class T>
__global__ void kernel_spoil_one(T* p, Layout l) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  double sum = 0;
#pragma unroll 16
  for (int s = 0; s < kSamples; ++s) sum += fabs(to_dbl(p[l.at(s * l.total() / kSamples)]));
  const std::int64_t at = l.target();
  const double v = to_dbl(p[at]);
  p[at] = from_dbl<T>(v + copysign(0.5 * sum / kSamples, v));
}

template <class T>
__global__ void kernel_spoil_ulp(T* p, Layout l) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  using U = typename Bits<T>::type;
  U* u = reinterpret_cast<U*>(p);
  u[l.target()] += 1;
}

template <class T>
__global__ void kernel_spoil_all(T* p, Layout l, double factor) {
  for (std::int64_t x = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; x < l.total();
       x += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t o = l.at(x);
    p[o] = from_dbl<T>(to_dbl(p[o]) * factor);
  }
}

__global__ void kernel_spoil_fp8(unsigned char* p, Layout l, int how) {
  if (how == static_cast<int>(Spoil::kScaleAll)) {
    for (std::int64_t x = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; x < l.total();
         x += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
      p[l.at(x)] = fp8_steps(p[l.at(x)], 2);
    return;
  }
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  p[l.target()] = fp8_steps(p[l.target()], how == static_cast<int>(Spoil::kOneUlp) ? 1 : 6);
}

template <class T>
cudaError_t spoil(void* p, const Layout& l, Spoil how, double rel, cudaStream_t s) {
  T* q = static_cast<T*>(p);
  const std::int64_t total = l.rows * l.cols * l.batch;
  const int blocks = static_cast<int>(std::min<std::int64_t>((total + 255) / 256, 1024));
  switch (how) {
    case Spoil::kOneElement: kernel_spoil_one<T><<<1, 32, 0, s>>>(q, l); break;
    case Spoil::kOneUlp: kernel_spoil_ulp<T><<<1, 32, 0, s>>>(q, l); break;
    case Spoil::kScaleAll: kernel_spoil_all<T><<<blocks, 256, 0, s>>>(q, l, 1.0 + rel); break;
  }
  return cudaGetLastError();
}

__global__ void kernel_spin(unsigned long long ns) {
  unsigned long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

}  // namespace

const char* to_string(Spoil s) {
  switch (s) {
    case Spoil::kOneElement: return "one_element";
    case Spoil::kScaleAll: return "scale_all";
    case Spoil::kOneUlp: return "one_ulp";
  }
  return "?";
}

cudaError_t spoil_matrix(void* p, DataType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                         std::int64_t batch, std::int64_t stride, Spoil how, double rel, cudaStream_t stream) {
  if (p == nullptr || rows <= 0 || cols <= 0 || batch <= 0 || ld < rows) return cudaErrorInvalidValue;
  const Layout l{rows, cols, ld, batch, stride};
  switch (t) {
    case DataType::kF64: return spoil<double>(p, l, how, rel, stream);
    case DataType::kF32:
    case DataType::kTF32: return spoil<float>(p, l, how, rel, stream);
    case DataType::kF16: return spoil<__half>(p, l, how, rel, stream);
    case DataType::kBF16: return spoil<__nv_bfloat16>(p, l, how, rel, stream);
    case DataType::kF8E4M3: {
      const std::int64_t total = rows * cols * batch;
      const int blocks = how == Spoil::kScaleAll ? static_cast<int>(std::min<std::int64_t>((total + 255) / 256, 1024)) : 1;
      kernel_spoil_fp8<<<blocks, 256, 0, stream>>>(static_cast<unsigned char*>(p), l, static_cast<int>(how));
      return cudaGetLastError();
    }
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t spin_us(double us, cudaStream_t stream) {
  kernel_spin<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(us * 1000.0));
  return cudaGetLastError();
}

}  // namespace tunable::test
