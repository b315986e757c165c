// FP8 e4m3 row quantization for the engine's FP8 weights: each row gets its own scale
// (amax / 448, floored like the fused norms' per-token scales), so one outlier costs the precision of
// its row only. The same kernel quantizes weight rows at load (per output channel) and activation
// rows before a GEMM (per token); the embedding lookup dequantizes a row of an e4m3 table. At load a
// weight can be multiplied column by column first (an RMSNorm's weight folded into the GEMM after it).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/device_utils.cuh"

namespace tunable::kernels {

template <class T>
struct QuantRowsParams {
  const T* x;           ///< [rows, x_stride]
  fp8_e4m3* out;        ///< [rows, out_stride]
  float* scales;        ///< [rows]: x ~= out * scale
  std::int64_t x_stride, out_stride;
  int cols;             ///< a multiple of 8 (16-byte loads of 16-bit types), strides too
  /// Or null: element c of every row is multiplied by (col_offset + col_mul[c]) in fp32 before it
  /// is quantized (a norm weight folded into the weight; Gemma's norms multiply by 1 + w).
  const T* col_mul;
  float col_offset;
};

/// Element e of vector i of a row, times its column's factor when the launch folds one in.
template <class T, class V>
__device__ __forceinline__ float quant_value(const QuantRowsParams<T>& p, const V& v, int i, int e) {
  const float f = to_float(v.v[e]);
  return p.col_mul ? f * (p.col_offset + to_float(p.col_mul[i + e])) : f;
}

/// One block per row. A row of at most kQuantHold vectors per thread (every activation row of the
/// models served, at 1024 threads) is read once into registers; a longer one (a weight row at
/// load) is read twice, the second time from L2. A launch at decode is a chain of latencies: one
/// read, a block reduction, the stores.
inline constexpr int kQuantHold = 2;

template <class T>
__global__ void __launch_bounds__(1024) quantize_rows_kernel(const __grid_constant__ QuantRowsParams<T> p) {
  constexpr int kV = kVec16<T>;
  using V = Vec<T, kV>;
  using VO = Vec<fp8_e4m3, kV>;
  pdl_launch_dependents();
  pdl_wait();
  const T* x = p.x + static_cast<std::int64_t>(blockIdx.x) * p.x_stride;
  fp8_e4m3* out = p.out + static_cast<std::int64_t>(blockIdx.x) * p.out_stride;
  const int nvec = p.cols / kV;
  const bool held = nvec <= static_cast<int>(blockDim.x) * kQuantHold;
  __shared__ float scratch[32];
  float amax = 0.f;  // NaN is ignored here (fmaxf) and stays NaN in the output
  if (held) {
    V v[kQuantHold];
#pragma unroll
    for (int h = 0; h < kQuantHold; ++h) {
      const int i = threadIdx.x + h * blockDim.x;
      if (i < nvec) v[h] = load_vec<V>(x + i * kV);
    }
#pragma unroll
    for (int h = 0; h < kQuantHold; ++h)
      if (threadIdx.x + h * blockDim.x < nvec)
#pragma unroll
        for (int e = 0; e < kV; ++e) amax = fmaxf(amax, fabsf(quant_value(p, v[h], (threadIdx.x + h * blockDim.x) * kV, e)));
    amax = group_reduce(amax, static_cast<int>(blockDim.x) / 32, scratch, MaxOp{});
    const float s = fmaxf(amax / kFp8E4M3Max, kFp8MinScale);
    if (threadIdx.x == 0) p.scales[blockIdx.x] = s;
    const float inv = 1.f / s;
#pragma unroll
    for (int h = 0; h < kQuantHold; ++h) {
      const int i = threadIdx.x + h * blockDim.x;
      if (i >= nvec) continue;
      VO o;
#pragma unroll
      for (int e = 0; e < kV; ++e) o.v[e] = from_float<fp8_e4m3>(quant_value(p, v[h], i * kV, e) * inv);
      store_vec(out + i * kV, o);
    }
    return;
  }
  for (int i = threadIdx.x * kV; i < p.cols; i += blockDim.x * kV) {
    const V v = load_vec<V>(x + i);
#pragma unroll
    for (int e = 0; e < kV; ++e) amax = fmaxf(amax, fabsf(quant_value(p, v, i, e)));
  }
  amax = group_reduce(amax, static_cast<int>(blockDim.x) / 32, scratch, MaxOp{});
  const float s = fmaxf(amax / kFp8E4M3Max, kFp8MinScale);
  if (threadIdx.x == 0) p.scales[blockIdx.x] = s;
  const float inv = 1.f / s;
  for (int i = threadIdx.x * kV; i < p.cols; i += blockDim.x * kV) {
    const V v = load_vec<V>(x + i);
    VO o;
#pragma unroll
    for (int e = 0; e < kV; ++e) o.v[e] = from_float<fp8_e4m3>(quant_value(p, v, i, e) * inv);
    store_vec(out + i, o);
  }
}

template <class T>
struct EmbedFp8Params {
  const int* ids;            ///< [rows]
  const fp8_e4m3* table;     ///< [vocab, hidden]
  const float* row_scales;   ///< [vocab]
  T* out;                    ///< [rows, hidden]
  int hidden;                ///< a multiple of 8
  float scale;               ///< as EmbedParams: applied after rounding the dequantized row to T
};

/// The e4m3 table's row, dequantized and rounded to T as a bf16/fp16 table would hold it, then
/// scaled (Gemma's sqrt(hidden)) and rounded again, as the module does.
template <class T>
__global__ void __launch_bounds__(256) embed_fp8_kernel(const __grid_constant__ EmbedFp8Params<T> p) {
  constexpr int kV = 8;
  using VI = Vec<fp8_e4m3, kV>;
  using VO = Vec<T, kV>;
  pdl_launch_dependents();
  pdl_wait();
  const int id = p.ids[blockIdx.x];
  const fp8_e4m3* src = p.table + static_cast<std::int64_t>(id) * p.hidden;
  T* dst = p.out + static_cast<std::int64_t>(blockIdx.x) * p.hidden;
  const float rs = __ldg(p.row_scales + id);
  for (int i = threadIdx.x * kV; i < p.hidden; i += blockDim.x * kV) {
    const VI v = load_vec<VI, LoadPolicy::kReadOnly>(src + i);
    VO o;
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      float f = to_float(from_float<T>(static_cast<float>(v.v[e]) * rs));
      if (p.scale != 1.f) f *= p.scale;
      o.v[e] = from_float<T>(f);
    }
    store_vec(dst + i, o);
  }
}

}  // namespace tunable::kernels
