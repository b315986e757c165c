// The references the fused-op benchmark measures its few-row rows against, timed the same ways:
// - a kernel that does nothing, launched plainly and as the fused ops launch theirs (programmatic
//   dependent launch where supported): the denominator of issue 5's <= 1.5x target;
// - a kernel that moves the same bytes as the op and nothing else (output vector j the XOR of vector
//   j of each of RATIO contiguous input planes, as the ops read x and the residual or gate and up, so
//   every store waits for its loads as the op's do), launched and
//   prefetched as the fused ops are: what moving those bytes alone takes, so a miss
//   of the ratio target can be told apart from a miss the bytes alone force.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/device_utils.cuh"

namespace tunable::bench {

__global__ void kernel_empty() {}

__global__ void kernel_empty_pdl() {
  kernels::pdl_prologue([] {});
}

cudaError_t launch_empty_kernel(cudaStream_t stream, bool pdl) {
  if (pdl) return kernels::launch_kernel(kernel_empty_pdl, dim3(1), dim3(32), 0, stream);
  kernel_empty<<<1, 32, 0, stream>>>();
  return cudaGetLastError();
}

// Launched with at most 1024 / ITEMS threads (launch_same_bytes' shapes), so ITEMS x RATIO vectors in
// flight per thread fit the registers.
template <int RATIO, int ITEMS>
__global__ void __launch_bounds__(1024 / ITEMS) kernel_same_bytes(const uint4* in, uint4* out, std::int64_t n_out) {
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x * ITEMS;
  kernels::pdl_prologue([&] {
    const std::int64_t n = n_out - first < blockDim.x * ITEMS ? n_out - first : blockDim.x * ITEMS;
#pragma unroll
    for (int k = 0; k < RATIO; ++k)
      kernels::prefetch_l2(in + k * n_out + first, n * static_cast<std::int64_t>(sizeof(uint4)));
  });
  uint4 v[ITEMS][RATIO];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const std::int64_t j = first + i * blockDim.x + threadIdx.x;
#pragma unroll
    for (int k = 0; k < RATIO; ++k)
      if (j < n_out) v[i][k] = in[k * n_out + j];
  }
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const std::int64_t j = first + i * blockDim.x + threadIdx.x;
    if (j >= n_out) continue;
    uint4 o = v[i][0];
#pragma unroll
    for (int k = 1; k < RATIO; ++k) o = make_uint4(o.x ^ v[i][k].x, o.y ^ v[i][k].y, o.z ^ v[i][k].z, o.w ^ v[i][k].w);
    out[j] = o;
  }
}

template <int RATIO>
cudaError_t launch_same_bytes_ratio(const void* in, void* out, std::int64_t n_out, int threads, int items,
                                    cudaStream_t stream) {
  const auto blocks = [&](int per_thread) {
    return dim3(static_cast<unsigned>((n_out + static_cast<std::int64_t>(threads) * per_thread - 1) /
                                      (static_cast<std::int64_t>(threads) * per_thread)));
  };
  const auto* src = static_cast<const uint4*>(in);
  auto* dst = static_cast<uint4*>(out);
  switch (items) {
    case 1: return kernels::launch_kernel(kernel_same_bytes<RATIO, 1>, blocks(1), dim3(threads), 0, stream, src, dst, n_out);
    case 2: return kernels::launch_kernel(kernel_same_bytes<RATIO, 2>, blocks(2), dim3(threads), 0, stream, src, dst, n_out);
    case 4: return kernels::launch_kernel(kernel_same_bytes<RATIO, 4>, blocks(4), dim3(threads), 0, stream, src, dst, n_out);
    default: return cudaErrorInvalidValue;
  }
}

/// out[j] = XOR over k of in[k n_out + j] for `n_out` 16-byte vectors (`in`: RATIO planes of n_out
/// vectors), `threads` per block, `items` output vectors per thread. RATIO 1, 2 or 4, threads x items
/// <= 1024; the pointers 16-byte aligned; anything else is cudaErrorInvalidValue.
cudaError_t launch_same_bytes(const void* in, void* out, std::int64_t n_out, int ratio, int threads, int items,
                              cudaStream_t stream) {
  if (n_out <= 0 || threads <= 0 || items <= 0 || threads * items > 1024 || threads % 32 != 0 ||
      reinterpret_cast<std::uintptr_t>(in) % 16 != 0 || reinterpret_cast<std::uintptr_t>(out) % 16 != 0)
    return cudaErrorInvalidValue;
  switch (ratio) {
    case 1: return launch_same_bytes_ratio<1>(in, out, n_out, threads, items, stream);
    case 2: return launch_same_bytes_ratio<2>(in, out, n_out, threads, items, stream);
    case 4: return launch_same_bytes_ratio<4>(in, out, n_out, threads, items, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace tunable::bench
