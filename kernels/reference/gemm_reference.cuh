// Naive GEMM in double precision: the numerics reference of GPU tuning and tests.
// C = epilogue(alpha * scale_a * scale_b * op(A) op(B) + beta * C + bias), written as type R (scales
// one float each, or rowwise: scale_a[i] * scale_b[j]; optionally each column RMS-normalized)
// (float or double) into a dense m x n x batch array; 16 x 16 shared-memory tiles.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tunable::kernels {

struct ReferenceGemmArgs {
  const void* a;
  const void* b;
  const void* c;     ///< read when beta != 0 (type TC)
  const void* bias;  ///< m elements of TC or null
  const float* scale_a;
  const float* scale_b;
  bool rowwise;      ///< scale_a holds m floats (per row of C), scale_b n (per column)
  void* out;         ///< dense R[batch][n][m] (column-major per batch)
  std::int64_t m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, batch;
  bool trans_a, trans_b;
  double alpha, beta;
  int epilogue;  ///< 0 none, 1 bias, 2 bias+relu, 3 bias+gelu(tanh)
  /// Column j of the product also times 1 / sqrt(mean over k of op(B)[k][j]^2 + rms_eps)
  /// (ScaleMode::kRowwiseRms).
  bool rms;
  double rms_eps;
};

template <class T>
__device__ __forceinline__ double ref_load(const void* p, std::int64_t i) {
  return static_cast<double>(static_cast<float>(static_cast<const T*>(p)[i]));
}
template <>
__device__ __forceinline__ double ref_load<double>(const void* p, std::int64_t i) {
  return static_cast<const double*>(p)[i];
}

/// One 16 x 16 tile of C: rows [16 tx, 16 tx + 16), columns [16 ty, 16 ty + 16) of batch bt.
template <class TA, class TB, class TC, class R>
__device__ __forceinline__ void reference_gemm_tile(const ReferenceGemmArgs& g, double (&as)[16][17],
                                                    double (&bs)[16][17], std::int64_t bt, std::int64_t tx,
                                                    std::int64_t ty) {
  constexpr int kTile = 16;
  const std::int64_t i = tx * kTile + threadIdx.x;  // row of C
  const std::int64_t j = ty * kTile + threadIdx.y;  // column of C
  const std::int64_t a0 = bt * g.stride_a, b0 = bt * g.stride_b;
  double acc = 0, ss = 0;
  for (std::int64_t p0 = 0; p0 < g.k; p0 += kTile) {
    // as[x][y] = op(A)(block row x, k p0+y); bs[x][y] = op(B)(k p0+x, block col y)
    {
      const std::int64_t r = i, p = p0 + threadIdx.y;
      double v = 0;
      if (r < g.m && p < g.k)
        v = ref_load<TA>(g.a, a0 + (g.trans_a ? p + r * g.lda : r + p * g.lda));
      as[threadIdx.x][threadIdx.y] = v;
    }
    {
      const std::int64_t p = p0 + threadIdx.x, c = j;
      double v = 0;
      if (c < g.n && p < g.k)
        v = ref_load<TB>(g.b, b0 + (g.trans_b ? c + p * g.ldb : p + c * g.ldb));
      bs[threadIdx.x][threadIdx.y] = v;
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kTile; ++q) acc += as[threadIdx.x][q] * bs[q][threadIdx.y];
    if (g.rms) {
#pragma unroll
      for (int q = 0; q < kTile; ++q) ss += bs[q][threadIdx.y] * bs[q][threadIdx.y];
    }
    __syncthreads();
  }
  if (i >= g.m || j >= g.n) return;
  double scale = g.alpha;
  if (g.scale_a) scale *= static_cast<double>(g.scale_a[g.rowwise ? i : 0]);
  if (g.scale_b) scale *= static_cast<double>(g.scale_b[g.rowwise ? j : 0]);
  if (g.rms) scale /= sqrt(ss / static_cast<double>(g.k) + g.rms_eps);
  double v = scale * acc;
  if (g.beta != 0) v += g.beta * ref_load<TC>(g.c, bt * g.stride_c + i + j * g.ldc);
  if (g.epilogue >= 1) v += ref_load<TC>(g.bias, i);
  if (g.epilogue == 2) v = v > 0 ? v : 0;
  if (g.epilogue == 3) {
    const double kS = 0.7978845608028654;  // sqrt(2/pi)
    v = 0.5 * v * (1.0 + tanh(kS * (v + 0.044715 * v * v * v)));
  }
  static_cast<R*>(g.out)[bt * g.m * g.n + i + j * g.m] = static_cast<R>(v);
}

/// Column tiles and batches past the grid's 65535 limit in y and z are walked in strides, so a
/// batch of 10^5 or a million columns is checked like any other problem.
template <class TA, class TB, class TC, class R>
__global__ void __launch_bounds__(256) kernel_reference_gemm(const __grid_constant__ ReferenceGemmArgs g) {
  __shared__ double as[16][17];
  __shared__ double bs[16][17];
  const std::int64_t col_tiles = (g.n + 15) / 16;
  for (std::int64_t bt = blockIdx.z; bt < g.batch; bt += gridDim.z)
    for (std::int64_t ty = blockIdx.y; ty < col_tiles; ty += gridDim.y)
      reference_gemm_tile<TA, TB, TC, R>(g, as, bs, bt, blockIdx.x, ty);
}

template <class TA, class TB, class TC, class R>
cudaError_t launch_reference_gemm(const ReferenceGemmArgs& g, cudaStream_t stream) {
  const std::int64_t row_tiles = (g.m + 15) / 16, col_tiles = (g.n + 15) / 16;
  if (row_tiles < 1 || col_tiles < 1 || g.batch < 1 || row_tiles > 0x7fffffff) return cudaErrorInvalidConfiguration;
  const dim3 block(16, 16);
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(col_tiles < 65535 ? col_tiles : 65535),
                  static_cast<unsigned>(g.batch < 65535 ? g.batch : 65535));
  kernel_reference_gemm<TA, TB, TC, R><<<grid, block, 0, stream>>>(g);
  return cudaGetLastError();
}

/// Compares a typed strided matrix with a dense reference; accumulates into CompareTotals.
struct CompareTotals {
  unsigned long long bad, nonfinite, max_abs_bits, max_rel_bits;
  double sumsq;
};

template <class T, class R>
__global__ void kernel_sumsq_ref(const R* ref, std::int64_t n, CompareTotals* out) {
  double s = 0;
  for (std::int64_t x = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x; x < n;
       x += (std::int64_t)gridDim.x * blockDim.x)
    s += static_cast<double>(ref[x]) * static_cast<double>(ref[x]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(&out->sumsq, s);
}

template <class T, class R>
__global__ void kernel_compare_matrix(const void* got, std::int64_t m, std::int64_t n, std::int64_t ld,
                                      std::int64_t stride, std::int64_t batch, const R* ref,
                                      double abs_bound, double rtol, CompareTotals* out) {
  const std::int64_t total = m * n * batch;
  unsigned long long bad = 0, nonfin = 0;
  double max_abs = 0, max_rel = 0;
  for (std::int64_t x = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x; x < total;
       x += (std::int64_t)gridDim.x * blockDim.x) {
    const std::int64_t i = x % m, j = (x / m) % n, bt = x / (m * n);
    const double g = ref_load<T>(got, bt * stride + i + j * ld), r = static_cast<double>(ref[x]);
    if (!isfinite(g)) {
      ++nonfin;
      ++bad;
      max_abs = INFINITY;
      max_rel = INFINITY;
      continue;
    }
    const double d = fabs(g - r), bound = abs_bound + rtol * fabs(r);
    max_abs = fmax(max_abs, d);
    max_rel = fmax(max_rel, bound > 0 ? d / bound : (d > 0 ? INFINITY : 0.0));
    if (d > bound) ++bad;
  }
  if (bad) atomicAdd(&out->bad, bad);
  if (nonfin) atomicAdd(&out->nonfinite, nonfin);
  atomicMax(&out->max_abs_bits, static_cast<unsigned long long>(__double_as_longlong(max_abs)));
  atomicMax(&out->max_rel_bits, static_cast<unsigned long long>(__double_as_longlong(max_rel)));
}

}  // namespace tunable::kernels
