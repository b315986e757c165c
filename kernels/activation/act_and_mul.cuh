// Activation-and-mul for gated MLPs: out = act(gate) * up, each x row being [gate (d) | up (d)],
// with SiLU (Llama's SwiGLU) or tanh-GELU (Gemma's GeGLU) and an optional FP8 e4m3 output with a
// static per-tensor scale.
//
// Elementwise and memory-bound: blockIdx.y walks rows, blockIdx.x a chunk of
// blockDim.x * ITEMS vectors of the row; each thread issues all its loads before any math. The
// accurate activations use expf/tanhf; the fast ones are one exp2-based sigmoid
// (ex2.approx + rcp.approx), tanh-GELU through 0.5 (1 + tanh(z)) = sigmoid(2 z). Both are
// separate tuning candidates and must pass the same numerics check.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/device_utils.cuh"
#include "kernels/norm/rms_norm_limits.hpp"

namespace tunable::kernels {

enum class ActKind : int { kSilu, kGeluTanh };

/// One launch's problem. Strides are in elements between row starts.
struct ActAndMulParams {
  const void* x;       // [rows, x_stride] of T: gate = x[:, 0:d], up = x[:, d:2d]
  void* out;           // [rows, out_stride] of T, or e4m3 when fp8
  const float* scale;  // fp8: one float; out = sat(act(gate) * up / *scale)
  std::int64_t rows;
  std::int64_t x_stride, out_stride;
  int d;
  ActKind act;
  bool fp8;
};

struct ActAndMulLaunch {
  bool vec16 = true;  // 16-byte accesses (d, pointers and strides aligned); else one element
  int threads = 256;
  int items = 1;      // vectors per thread (1, 2, 4)
  bool fast = false;  // exp2-based sigmoid
  /// > 1 (2 or 4; vec16, items 1): the rows kernel, each thread owning one vector column of
  /// `rows_per_thread` consecutive rows and issuing all their loads before any math.
  int rows_per_thread = 1;
};

// ---- device helpers ---------------------------------------------------------------------------------

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// 1 / (1 + 2^(-x log2 e)); -> 0 for x -> -inf (rcp of inf), never NaN for finite x.
__device__ __forceinline__ float sigmoid_fast(float x) {
  return rcp_approx(1.0f + exp2_approx(-1.4426950408889634f * x));
}

__device__ __forceinline__ float sigmoid_accurate(float x) { return 1.0f / (1.0f + expf(-x)); }

template <ActKind A, bool FAST>
__device__ __forceinline__ float activate(float x) {
  if constexpr (A == ActKind::kSilu) {
    return x * (FAST ? sigmoid_fast(x) : sigmoid_accurate(x));
  } else {
    constexpr float kAlpha = 0.7978845608028654f;  // sqrt(2 / pi)
    constexpr float kBeta = 0.044715f;
    const float z = kAlpha * fmaf(kBeta * x, x * x, x);
    if constexpr (FAST) return x * sigmoid_fast(2.0f * z);
    else return 0.5f * x * (1.0f + tanhf(z));
  }
}

// ---- kernel -------------------------------------------------------------------------------------------

/// The kernels' PDL prologue: pulls vectors [v0, v0 + nv) (clamped to the row) of gate and of up of
/// rows [r0, r1) (clamped to p.rows) into L2.
template <class T, int VEC>
__device__ __forceinline__ void prefetch_gate_up(const ActAndMulParams& p, std::int64_t r0, std::int64_t r1,
                                                 std::int64_t v0, std::int64_t nv) {
  const std::int64_t bytes = min(nv, p.d / VEC - v0) * VEC * static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t r = r0; r < r1 && r < p.rows; ++r) {
    const T* gate = static_cast<const T*>(p.x) + r * p.x_stride + v0 * VEC;
    prefetch_l2(gate, bytes);
    prefetch_l2(gate + p.d, bytes);
  }
}

template <class T, class OutT, int VEC, int ITEMS, ActKind A, bool FAST>
__global__ void __launch_bounds__(kActMaxThreads)
kernel_act_and_mul(const __grid_constant__ ActAndMulParams p) {
  using V = Vec<T, VEC>;
  using VO = Vec<OutT, VEC>;
  const int nvec = p.d / VEC;
  pdl_prologue([&] {  // this block's vectors of its first row
    prefetch_gate_up<T, VEC>(p, blockIdx.y, blockIdx.y + 1ll, static_cast<std::int64_t>(blockIdx.x) * blockDim.x * ITEMS,
                             static_cast<std::int64_t>(blockDim.x) * ITEMS);
  });
  const int first = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
  float qinv = 1.0f;
  if constexpr (kIsFp8<OutT>) qinv = 1.0f / __ldg(p.scale);
  for (std::int64_t row = blockIdx.y; row < p.rows; row += gridDim.y) {
    const T* gate = static_cast<const T*>(p.x) + row * p.x_stride;
    const T* up = gate + p.d;
    OutT* out = static_cast<OutT*>(p.out) + row * p.out_stride;
    V g[ITEMS], u[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int v = first + i * blockDim.x;
      if (v < nvec) {
        g[i] = load_vec<V>(gate + v * VEC);
        u[i] = load_vec<V>(up + v * VEC);
      }
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int v = first + i * blockDim.x;
      if (v < nvec) {
        VO o;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float y = activate<A, FAST>(to_float(g[i].v[j])) * to_float(u[i].v[j]);
          o.v[j] = from_float<OutT>(kIsFp8<OutT> ? y * qinv : y);
        }
        store_vec(out + v * VEC, o);
      }
    }
  }
}

/// Several rows per thread: blockIdx.x picks blockDim.x vectors of the row, blockIdx.y a group of
/// ROWS consecutive rows; each thread loads gate and up of its vector for all ROWS rows (2 ROWS
/// independent 16-byte loads in flight) before the first activation: 4x fewer, fatter blocks
/// (ROWS 4: 60 registers, 128 bytes in flight per thread) churn through the SMs in ~2 waves at
/// 1024 x 8192 instead of ~4.
template <class T, class OutT, int VEC, int ROWS, ActKind A, bool FAST>
__global__ void __launch_bounds__(kActMaxThreads)
kernel_act_and_mul_rows(const __grid_constant__ ActAndMulParams p) {
  using V = Vec<T, VEC>;
  using VO = Vec<OutT, VEC>;
  const int nvec = p.d / VEC;
  pdl_prologue([&] {  // this block's vectors of its first ROWS rows
    prefetch_gate_up<T, VEC>(p, static_cast<std::int64_t>(blockIdx.y) * ROWS, (blockIdx.y + 1ll) * ROWS,
                             static_cast<std::int64_t>(blockIdx.x) * blockDim.x, blockDim.x);
  });
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= nvec) return;
  float qinv = 1.0f;
  if constexpr (kIsFp8<OutT>) qinv = 1.0f / __ldg(p.scale);
  for (std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * ROWS; r0 < p.rows;
       r0 += static_cast<std::int64_t>(gridDim.y) * ROWS) {
    V g[ROWS], u[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      if (r0 + i < p.rows) {
        const T* gate = static_cast<const T*>(p.x) + (r0 + i) * p.x_stride;
        g[i] = load_vec<V>(gate + v * VEC);
        u[i] = load_vec<V>(gate + p.d + v * VEC);
      }
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      if (r0 + i < p.rows) {
        VO o;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float y = activate<A, FAST>(to_float(g[i].v[j])) * to_float(u[i].v[j]);
          o.v[j] = from_float<OutT>(kIsFp8<OutT> ? y * qinv : y);
        }
        store_vec(static_cast<OutT*>(p.out) + (r0 + i) * p.out_stride + v * VEC, o);
      }
    }
  }
}

// ---- launchers ----------------------------------------------------------------------------------------

/// Rows per launch along grid.y (its hardware limit); further rows are walked by the kernel.
inline constexpr std::int64_t kMaxGridY = 65535;

template <class T, class OutT, int VEC, int ITEMS>
cudaError_t launch_act_and_mul(const ActAndMulParams& p, const ActAndMulLaunch& l,
                               cudaStream_t stream) {
  const std::int64_t per_block = static_cast<std::int64_t>(l.threads) * ITEMS;
  const dim3 grid(static_cast<unsigned>(ceil_div(p.d / VEC, per_block)),
                  static_cast<unsigned>(p.rows < kMaxGridY ? p.rows : kMaxGridY));
  auto go = [&](auto kernel) { return launch_kernel(kernel, grid, dim3(l.threads), 0, stream, p); };
  if (p.act == ActKind::kSilu) {
    return l.fast ? go(kernel_act_and_mul<T, OutT, VEC, ITEMS, ActKind::kSilu, true>)
                  : go(kernel_act_and_mul<T, OutT, VEC, ITEMS, ActKind::kSilu, false>);
  }
  return l.fast ? go(kernel_act_and_mul<T, OutT, VEC, ITEMS, ActKind::kGeluTanh, true>)
                : go(kernel_act_and_mul<T, OutT, VEC, ITEMS, ActKind::kGeluTanh, false>);
}

template <class T, class OutT, int VEC, int ROWS>
cudaError_t launch_act_and_mul_rows(const ActAndMulParams& p, const ActAndMulLaunch& l,
                                    cudaStream_t stream) {
  const std::int64_t groups = ceil_div(p.rows, ROWS);
  const dim3 grid(static_cast<unsigned>(ceil_div(p.d / VEC, l.threads)),
                  static_cast<unsigned>(groups < kMaxGridY ? groups : kMaxGridY));
  auto go = [&](auto kernel) { return launch_kernel(kernel, grid, dim3(l.threads), 0, stream, p); };
  if (p.act == ActKind::kSilu) {
    return l.fast ? go(kernel_act_and_mul_rows<T, OutT, VEC, ROWS, ActKind::kSilu, true>)
                  : go(kernel_act_and_mul_rows<T, OutT, VEC, ROWS, ActKind::kSilu, false>);
  }
  return l.fast ? go(kernel_act_and_mul_rows<T, OutT, VEC, ROWS, ActKind::kGeluTanh, true>)
                : go(kernel_act_and_mul_rows<T, OutT, VEC, ROWS, ActKind::kGeluTanh, false>);
}

template <class T, class OutT, int VEC>
cudaError_t launch_act_and_mul(const ActAndMulParams& p, const ActAndMulLaunch& l,
                               cudaStream_t stream) {
  if (l.rows_per_thread > 1) {
    if constexpr (VEC == 1) {
      return cudaErrorInvalidValue;  // 16-byte vectors only
    } else {
      if (l.items != 1) return cudaErrorInvalidValue;
      switch (l.rows_per_thread) {
        case 2: return launch_act_and_mul_rows<T, OutT, VEC, 2>(p, l, stream);
        case 4: return launch_act_and_mul_rows<T, OutT, VEC, 4>(p, l, stream);
        default: return cudaErrorInvalidValue;
      }
    }
  }
  switch (l.items) {
    case 1: return launch_act_and_mul<T, OutT, VEC, 1>(p, l, stream);
    case 2: return launch_act_and_mul<T, OutT, VEC, 2>(p, l, stream);
    case 4: return launch_act_and_mul<T, OutT, VEC, 4>(p, l, stream);
    default: return cudaErrorInvalidValue;
  }
}

/// The one runtime-to-template dispatch: element type, output type, vector width, items,
/// activation and sigmoid flavour.
inline cudaError_t launch_act_and_mul(const ActAndMulParams& p, FloatType dtype,
                                      const ActAndMulLaunch& l, cudaStream_t stream) {
  return dispatch_float_type(dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    constexpr int kV = kVec16<T>;
    if (p.fp8) {
      return l.vec16 ? launch_act_and_mul<T, fp8_e4m3, kV>(p, l, stream)
                     : launch_act_and_mul<T, fp8_e4m3, 1>(p, l, stream);
    }
    return l.vec16 ? launch_act_and_mul<T, T, kV>(p, l, stream)
                   : launch_act_and_mul<T, T, 1>(p, l, stream);
  });
}

}  // namespace tunable::kernels
