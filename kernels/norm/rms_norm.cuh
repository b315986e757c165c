// RMSNorm and residual add + RMSNorm, with an optional FP8 e4m3 output (static per-tensor scale
// or dynamic per-token scales computed in the same kernel).
//
// y = x / sqrt(mean(x^2) + eps) * w (Llama) or * (1 + w) (Gemma), in fp32, rounded once. Fused:
// residual <- T(x + residual) first, and that rounded value is what gets normalized (as vLLM).
// A group of threads (a multiple of 32) normalizes one row. The register kernel keeps each
// thread's slice of the row and of the weight in registers between the sum of squares and the
// output, so every byte is read from global memory once; a block holds several rows when the
// row is short (one warp per row for small hidden sizes). The staged kernel serves any hidden
// size with one block per row and the row kept in shared memory (re-read from global memory only
// when it does not fit there). Launches are programmatic (PDL) on sm_90: a kernel's first-wave
// blocks only prefetch their inputs into L2 until the predecessor has finished (pdl_prologue), so
// the launch and the DRAM latency overlap the predecessor's tail.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <set>

#include "kernels/common/device_utils.cuh"
#include "kernels/norm/rms_norm_limits.hpp"

namespace tunable::kernels {

enum class NormQuant : int { kNone, kFp8Static, kFp8Dynamic };

/// One launch's problem. Strides are in elements between row starts.
struct RmsNormParams {
  const void* x;           // [rows, x_stride] of T
  void* residual;          // [rows, residual_stride] of T, read and written; nullptr: plain RMSNorm
  const void* weight;      // [hidden] of T
  void* out;               // [rows, out_stride] of T, or e4m3 when quant != kNone; may equal x
  const float* scale;      // kFp8Static: one float; out = sat(y / *scale)
  float* token_scales;     // kFp8Dynamic: [rows], written
  std::int64_t rows;
  std::int64_t x_stride, residual_stride, out_stride;
  int hidden;
  float eps;
  bool gemma;              // weight applied as (1 + w)
  NormQuant quant;
};

/// Launch shape. Register kernel: `threads_per_row` threads (a multiple of 32) per row,
/// `rows_per_block` rows per block, each thread caching up to `items` vectors of the row.
/// Staged kernel: one row per block of `threads_per_row` threads.
struct RmsNormLaunch {
  bool vec16 = true;  // 16-byte accesses (hidden, pointers and strides aligned); else one element
  bool staged = false;
  int threads_per_row = 256;
  int rows_per_block = 1;
  int items = 1;
  /// Register kernel: the weight's loads are issued together with the row's (one round trip
  /// before the reduction instead of two); the cluster kernel always does this.
  bool early_weight = false;
  /// > 1: the cluster kernel, one row split over `cluster` blocks of `threads_per_row` threads
  /// (a thread-block cluster, sm_90), each thread holding up to `items` vectors.
  int cluster = 1;
  /// > 0: the streaming kernel, ceil(rows / `stream`) blocks of `threads_per_row` threads, each
  /// walking up to `stream` rows (blockIdx.x, + gridDim.x, ...) with the next row's loads in flight
  /// (`items` vectors per thread; 16-byte vectors only).
  int stream = 0;
};

// ---- device helpers ---------------------------------------------------------------------------------

/// One normalized element in fp32 (identical arithmetic wherever it is recomputed).
template <class T>
__device__ __forceinline__ float rms_norm_value(T x, T w, float inv_rms, bool gemma) {
  const float wf = to_float(w);
  return to_float(x) * inv_rms * (gemma ? 1.0f + wf : wf);
}

/// x <- T(x + r) for one vector (the rounded sum is the new residual).
template <class T, int N>
__device__ __forceinline__ void add_residual(Vec<T, N>& x, const Vec<T, N>& r) {
#pragma unroll
  for (int j = 0; j < N; ++j) x.v[j] = from_float<T>(to_float(x.v[j]) + to_float(r.v[j]));
}

/// 1 / (the scale the row is quantized with); 1 without FP8. Dynamic: reduces max|y| over the
/// group (all threads of the block must call it) and writes token_scales[row].
template <class OutT, class MaxOfRow>
__device__ __forceinline__ float rms_norm_quant_inverse(const RmsNormParams& p, std::int64_t row,
                                                        bool writer, int group_warps,
                                                        float* scratch, MaxOfRow max_of_row) {
  if constexpr (!kIsFp8<OutT>) {
    return 1.0f;
  } else {
    if (p.quant == NormQuant::kFp8Static) return 1.0f / __ldg(p.scale);
    const float amax = group_reduce(max_of_row(), group_warps, scratch, MaxOp{});
    const float s = fmaxf(amax / kFp8E4M3Max, kFp8MinScale);
    if (writer) p.token_scales[row] = s;
    return 1.0f / s;
  }
}

/// A row held in registers by a group of threads (thread `t` of `group` holds vectors t, t + group,
/// ...; ITEMS of them), x already loaded (and the residual in `rv` when p.residual): residual <-
/// T(x + residual) stored, the sum of squares reduced over the group, the output stored.
/// `after_squares()` runs between the squares and their reduction (the register kernel issues its
/// weight loads there); `wv` must hold the weight by the output loop. `live`: false for a group
/// past the last row, which still takes part in the barriers. `scratch` holds 2 x 32 floats.
template <class T, class OutT, int VEC, int ITEMS, class AfterSquares>
__device__ __forceinline__ void rms_norm_row_in_registers(const RmsNormParams& p, std::int64_t row, bool live,
                                                          int group, int t, Vec<T, VEC> (&xv)[ITEMS],
                                                          const Vec<T, VEC> (&rv)[ITEMS],
                                                          const Vec<T, VEC> (&wv)[ITEMS], float (*scratch)[32],
                                                          AfterSquares&& after_squares) {
  const int nvec = p.hidden / VEC;
  const std::int64_t r = live ? row : 0;
  T* res = p.residual ? static_cast<T*>(p.residual) + r * p.residual_stride : nullptr;
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int v = i * group + t;
    if (live && v < nvec) {
      if (res) {
        add_residual(xv[i], rv[i]);
        store_vec(res + v * VEC, xv[i]);
      }
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float f = to_float(xv[i].v[j]);
        ss = fmaf(f, f, ss);
      }
    }
  }
  after_squares();
  const int group_warps = group >> 5;
  ss = group_reduce(ss, group_warps, scratch[0], SumOp{});
  const float inv_rms = rsqrtf(ss / static_cast<float>(p.hidden) + p.eps);

  const float qinv = rms_norm_quant_inverse<OutT>(p, row, live && t == 0, group_warps, scratch[1], [&] {
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int v = i * group + t;
      if (live && v < nvec) {
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          amax = fmaxf(amax, fabsf(rms_norm_value(xv[i].v[j], wv[i].v[j], inv_rms, p.gemma)));
      }
    }
    return amax;
  });

  OutT* out = static_cast<OutT*>(p.out) + r * p.out_stride;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int v = i * group + t;
    if (live && v < nvec) {
      Vec<OutT, VEC> o;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float y = rms_norm_value(xv[i].v[j], wv[i].v[j], inv_rms, p.gemma);
        o.v[j] = from_float<OutT>(kIsFp8<OutT> ? y * qinv : y);
      }
      store_vec(out + v * VEC, o);
    }
  }
}

// ---- kernels ----------------------------------------------------------------------------------------

/// The register kernel's body; EARLY_W: the weight's loads are issued with the row's.
template <class T, class OutT, int VEC, int ITEMS, bool EARLY_W>
__device__ __forceinline__ void rms_norm_regs_body(const RmsNormParams& p, int threads_per_row) {
  using V = Vec<T, VEC>;
  __shared__ float scratch[2][32];
  pdl_prologue([&] {
    const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / threads_per_row);
    const std::int64_t bytes = static_cast<std::int64_t>(p.hidden) * sizeof(T);
    for (std::int64_t r = row0; r < row0 + blockDim.x / threads_per_row && r < p.rows; ++r) {
      prefetch_l2(static_cast<const T*>(p.x) + r * p.x_stride, bytes);
      if (p.residual) prefetch_l2(static_cast<const T*>(p.residual) + r * p.residual_stride, bytes);
    }
    prefetch_l2_share(p.weight, bytes);
  });
  const int group = threads_per_row;
  const int t = threadIdx.x % group;
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  // Rows past the end still take part in the block's barriers; they only skip memory.
  const bool live = row < p.rows;
  const std::int64_t r = live ? row : 0;
  const int nvec = p.hidden / VEC;
  const T* x = static_cast<const T*>(p.x) + r * p.x_stride;
  const T* w = static_cast<const T*>(p.weight);
  T* res = p.residual ? static_cast<T*>(p.residual) + r * p.residual_stride : nullptr;

  // Every load of the row is issued before any math, so they are in flight together; the
  // weight follows once the residual registers are free and arrives during the reduction.
  V xv[ITEMS], wv[ITEMS], rv[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int v = i * group + t;
    if (live && v < nvec) {
      xv[i] = load_vec<V>(x + v * VEC);
      if (res) rv[i] = load_vec<V>(res + v * VEC);
      if constexpr (EARLY_W) wv[i] = load_vec<V, LoadPolicy::kReadOnly>(w + v * VEC);
    }
  }
  rms_norm_row_in_registers<T, OutT, VEC, ITEMS>(p, row, live, group, t, xv, rv, wv, scratch, [&] {
    if constexpr (!EARLY_W) {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int v = i * group + t;
        if (live && v < nvec) wv[i] = load_vec<V, LoadPolicy::kReadOnly>(w + v * VEC);
      }
    }
  });
}

template <class T, class OutT, int VEC, int ITEMS>
__global__ void __launch_bounds__(rms_norm_max_threads(ITEMS * VEC * static_cast<int>(sizeof(T))))
kernel_rms_norm_regs(const __grid_constant__ RmsNormParams p, int threads_per_row) {
  rms_norm_regs_body<T, OutT, VEC, ITEMS, false>(p, threads_per_row);
}

/// The register kernel with the weight loaded early. Its x, residual and weight registers are live
/// together, so it is held to 64 registers per thread (two 512-thread blocks or one 1024-thread
/// block per SM, as the plain kernel gets at 4 items) rather than losing occupancy: a single wave
/// at 1024 rows needs it.
template <class T, class OutT, int VEC, int ITEMS>
__global__ void __launch_bounds__(rms_norm_max_threads(ITEMS * VEC * static_cast<int>(sizeof(T))),
                                  65536 / (64 * rms_norm_max_threads(ITEMS * VEC * static_cast<int>(sizeof(T)))))
kernel_rms_norm_regs_ew(const __grid_constant__ RmsNormParams p, int threads_per_row) {
  rms_norm_regs_body<T, OutT, VEC, ITEMS, true>(p, threads_per_row);
}

/// Many rows: each block normalizes a few rows blockIdx.x, blockIdx.x +
/// gridDim.x, ... . The next row's x and residual are loaded into a second set of registers before
/// the current row is reduced, and the row after that is prefetched into L2, so a block
/// keeps loads in flight through its reduction and stores, where a one-row block leaves its SM's
/// share of the bandwidth to the other resident blocks. The weight is loaded once per block.
template <class T, class OutT, int VEC, int ITEMS>
__global__ void __launch_bounds__(rms_norm_stream_max_threads(ITEMS))
kernel_rms_norm_stream(const __grid_constant__ RmsNormParams p) {
  using V = Vec<T, VEC>;
  // Two sets, alternated per row: a warp that runs ahead into the next row's reduction writes the
  // other set while slower warps still read this one (group_reduce has one barrier).
  __shared__ float scratch[2][2][32];
  const std::int64_t bytes = static_cast<std::int64_t>(p.hidden) * sizeof(T);
  std::int64_t row = blockIdx.x;
  pdl_prologue([&] {
    prefetch_l2(static_cast<const T*>(p.x) + row * p.x_stride, bytes);
    if (p.residual) prefetch_l2(static_cast<const T*>(p.residual) + row * p.residual_stride, bytes);
    prefetch_l2_share(p.weight, bytes);
  });
  const int t = threadIdx.x;
  const int group = blockDim.x;
  const int nvec = p.hidden / VEC;
  const T* w = static_cast<const T*>(p.weight);

  V xv[ITEMS], rv[ITEMS], wv[ITEMS];
  auto load_row = [&](std::int64_t r, V (&xs)[ITEMS], V (&rs)[ITEMS]) {
    const T* x = static_cast<const T*>(p.x) + r * p.x_stride;
    const T* res = p.residual ? static_cast<const T*>(p.residual) + r * p.residual_stride : nullptr;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int v = i * group + t;
      if (v < nvec) {
        xs[i] = load_vec<V>(x + v * VEC);
        if (res) rs[i] = load_vec<V>(res + v * VEC);
      }
    }
  };
  if (row < p.rows) load_row(row, xv, rv);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int v = i * group + t;
    if (v < nvec) wv[i] = load_vec<V, LoadPolicy::kReadOnly>(w + v * VEC);
  }

  for (int it = 0; row < p.rows; ++it, row += gridDim.x) {
    const std::int64_t next = row + gridDim.x;
    V xn[ITEMS], rn[ITEMS];
    if (next < p.rows) load_row(next, xn, rn);
    const std::int64_t ahead = next + gridDim.x;
    if (ahead < p.rows) {
      prefetch_l2(static_cast<const T*>(p.x) + ahead * p.x_stride, bytes);
      if (p.residual) prefetch_l2(static_cast<const T*>(p.residual) + ahead * p.residual_stride, bytes);
    }
    rms_norm_row_in_registers<T, OutT, VEC, ITEMS>(p, row, true, group, t, xv, rv, wv, scratch[it & 1], [] {});
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      xv[i] = xn[i];
      rv[i] = rn[i];
    }
  }
}

/// Any hidden size: one row per block. `stage`: the row (after the residual add) is kept in
/// dynamic shared memory, [hidden / VEC] vectors; otherwise the second pass re-reads it from global
/// memory (each thread reads back only what it wrote itself, so the residual stays coherent).
template <class T, class OutT, int VEC>
__global__ void __launch_bounds__(1024)
kernel_rms_norm_staged(const __grid_constant__ RmsNormParams p, bool stage) {
  using V = Vec<T, VEC>;
  using VO = Vec<OutT, VEC>;
  extern __shared__ uint4 smem_row[];
  __shared__ float scratch[2][32];
  V* cache = reinterpret_cast<V*>(smem_row);
  const std::int64_t row = blockIdx.x;
  pdl_prologue([&] {
    const std::int64_t bytes = static_cast<std::int64_t>(p.hidden) * sizeof(T);
    prefetch_l2(static_cast<const T*>(p.x) + row * p.x_stride, bytes);
    if (p.residual) prefetch_l2(static_cast<const T*>(p.residual) + row * p.residual_stride, bytes);
    prefetch_l2_share(p.weight, bytes);
  });
  const int nvec = p.hidden / VEC;
  const int warps = blockDim.x >> 5;
  const T* x = static_cast<const T*>(p.x) + row * p.x_stride;
  const T* w = static_cast<const T*>(p.weight);
  T* res = p.residual ? static_cast<T*>(p.residual) + row * p.residual_stride : nullptr;

  float ss = 0.0f;
  for (int v = threadIdx.x; v < nvec; v += blockDim.x) {
    V xv = load_vec<V>(x + v * VEC);
    if (res) {
      add_residual(xv, load_vec<V>(res + v * VEC));
      store_vec(res + v * VEC, xv);
    }
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const float f = to_float(xv.v[j]);
      ss = fmaf(f, f, ss);
    }
    if (stage) cache[v] = xv;
  }
  ss = group_reduce(ss, warps, scratch[0], SumOp{});
  const float inv_rms = rsqrtf(ss / static_cast<float>(p.hidden) + p.eps);

  const T* src = res ? res : x;
  auto row_vec = [&](int v) { return stage ? cache[v] : load_vec<V>(src + v * VEC); };
  const float qinv = rms_norm_quant_inverse<OutT>(p, row, threadIdx.x == 0, warps, scratch[1], [&] {
    float amax = 0.0f;
    for (int v = threadIdx.x; v < nvec; v += blockDim.x) {
      const V xv = row_vec(v);
      const V wv = load_vec<V, LoadPolicy::kReadOnly>(w + v * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j)
        amax = fmaxf(amax, fabsf(rms_norm_value(xv.v[j], wv.v[j], inv_rms, p.gemma)));
    }
    return amax;
  });

  OutT* out = static_cast<OutT*>(p.out) + row * p.out_stride;
  for (int v = threadIdx.x; v < nvec; v += blockDim.x) {
    const V xv = row_vec(v);
    const V wv = load_vec<V, LoadPolicy::kReadOnly>(w + v * VEC);
    VO o;
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const float y = rms_norm_value(xv.v[j], wv.v[j], inv_rms, p.gemma);
      o.v[j] = from_float<OutT>(kIsFp8<OutT> ? y * qinv : y);
    }
    store_vec(out + v * VEC, o);
  }
}

/// Few rows, long rows: one row split over the `gridDim.x / rows` blocks of a thread-block cluster
/// (sm_90), so a single row keeps up to 8 SMs busy. Block `rank` of row `row` owns the contiguous
/// vectors [rank * span, (rank + 1) * span) of the row; each thread issues the loads of x, the
/// residual and the weight of its up-to-ITEMS vectors together (one memory round trip), and the
/// sum of squares is pushed through distributed shared memory into every block of the cluster
/// (cluster_push_reduce; the dynamic FP8 amax likewise), its setup done before the PDL wait.
/// PER_WARP: every warp pushes its own sum (no block barrier; cluster x warps <= 64); otherwise
/// each block its block's sum. Needs a cluster launch.
template <class T, class OutT, int VEC, int ITEMS, bool PER_WARP>
__global__ void __launch_bounds__(rms_norm_max_threads(ITEMS * VEC * static_cast<int>(sizeof(T))))
kernel_rms_norm_cluster(const __grid_constant__ RmsNormParams p, int cluster_blocks) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using V = Vec<T, VEC>;
  using VO = Vec<OutT, VEC>;
  __shared__ float scratch[2][32];
  __shared__ ClusterPushSlot push[2];
  const bool dynamic = kIsFp8<OutT> && p.quant == NormQuant::kFp8Dynamic;
  cluster_push_init<PER_WARP>(push, dynamic ? 2 : 1);
  const int rank = static_cast<int>(blockIdx.x % cluster_blocks);  // == the block's cluster rank
  const std::int64_t row = blockIdx.x / cluster_blocks;
  const int warps = blockDim.x >> 5;
  const int nvec = p.hidden / VEC;
  const int span = static_cast<int>(ceil_div(nvec, cluster_blocks));
  const int begin = rank * span;
  const int end = min(nvec, begin + span);
  pdl_prologue([&] {
    const std::int64_t bytes = static_cast<std::int64_t>(end - begin) * VEC * sizeof(T);
    prefetch_l2(static_cast<const T*>(p.x) + row * p.x_stride + begin * VEC, bytes);
    if (p.residual) prefetch_l2(static_cast<const T*>(p.residual) + row * p.residual_stride + begin * VEC, bytes);
    if (row == 0) prefetch_l2(static_cast<const T*>(p.weight) + begin * VEC, bytes);
  });
  const int t = threadIdx.x;
  const T* x = static_cast<const T*>(p.x) + row * p.x_stride;
  const T* w = static_cast<const T*>(p.weight);
  T* res = p.residual ? static_cast<T*>(p.residual) + row * p.residual_stride : nullptr;

  V xv[ITEMS], wv[ITEMS], rv[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int v = begin + i * static_cast<int>(blockDim.x) + t;
    if (v < end) {
      xv[i] = load_vec<V>(x + v * VEC);
      if (res) rv[i] = load_vec<V>(res + v * VEC);
      wv[i] = load_vec<V, LoadPolicy::kReadOnly>(w + v * VEC);
    }
  }
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int v = begin + i * static_cast<int>(blockDim.x) + t;
    if (v < end) {
      if (res) {
        add_residual(xv[i], rv[i]);
        store_vec(res + v * VEC, xv[i]);
      }
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float f = to_float(xv[i].v[j]);
        ss = fmaf(f, f, ss);
      }
    }
  }
  ss = PER_WARP ? warp_reduce(ss, SumOp{}) : group_reduce(ss, warps, scratch[0], SumOp{});
  ss = cluster_push_reduce<PER_WARP>(ss, &push[0], true, SumOp{});
  const float inv_rms = rsqrtf(ss / static_cast<float>(p.hidden) + p.eps);

  float qinv = 1.0f;
  if constexpr (kIsFp8<OutT>) {
    if (!dynamic) {
      qinv = 1.0f / __ldg(p.scale);
    } else {
      float amax = 0.0f;
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int v = begin + i * static_cast<int>(blockDim.x) + t;
        if (v < end) {
#pragma unroll
          for (int j = 0; j < VEC; ++j)
            amax = fmaxf(amax, fabsf(rms_norm_value(xv[i].v[j], wv[i].v[j], inv_rms, p.gemma)));
        }
      }
      amax = PER_WARP ? warp_reduce(amax, MaxOp{}) : group_reduce(amax, warps, scratch[1], MaxOp{});
      amax = cluster_push_reduce<PER_WARP>(amax, &push[1], false, MaxOp{});
      const float s = fmaxf(amax / kFp8E4M3Max, kFp8MinScale);
      if (rank == 0 && t == 0) p.token_scales[row] = s;
      qinv = 1.0f / s;
    }
  }

  OutT* out = static_cast<OutT*>(p.out) + row * p.out_stride;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int v = begin + i * static_cast<int>(blockDim.x) + t;
    if (v < end) {
      VO o;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float y = rms_norm_value(xv[i].v[j], wv[i].v[j], inv_rms, p.gemma);
        o.v[j] = from_float<OutT>(kIsFp8<OutT> ? y * qinv : y);
      }
      store_vec(out + v * VEC, o);
    }
  }
#else
  (void)p;
  (void)cluster_blocks;
  __trap();  // cluster launches are refused on the host below sm_90
#endif
}

/// Whether the cluster kernel can run on the current device (sm_90 code, compute capability 9+).
inline bool rms_norm_cluster_supported() {
  return pdl_supported(kernel_rms_norm_cluster<float, float, 4, 1, true>);
}

// ---- launchers ----------------------------------------------------------------------------------------

/// Bytes of the dynamic shared memory every block may use without an opt-in attribute.
inline constexpr std::size_t kDefaultDynamicSmem = 48 * 1024 - 2 * 32 * sizeof(float);

template <class T, class OutT, int VEC>
cudaError_t launch_rms_norm(const RmsNormParams& p, const RmsNormLaunch& l, cudaStream_t stream) {
  if (l.staged) {
    auto* kernel = kernel_rms_norm_staged<T, OutT, VEC>;
    const std::size_t row_bytes = static_cast<std::size_t>(ceil_div(p.hidden * sizeof(T), 16)) * 16;
    std::size_t smem = row_bytes;
    if (row_bytes > kDefaultDynamicSmem) {
      // Larger rows need the opt-in limit of this device; beyond it the row is re-read instead.
      int dev = 0, optin = 0;
      cudaError_t e = cudaGetDevice(&dev);
      if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
      if (e != cudaSuccess) return e;
      const std::size_t limit = static_cast<std::size_t>(optin) - 2 * 32 * sizeof(float);
      smem = row_bytes <= limit ? row_bytes : 0;
      if (smem > 0) {
        // Raised once per device to the whole limit: the attribute belongs to the kernel, so
        // setting it per call to this row's size would race with another thread's larger row.
        static std::mutex mu;
        static std::set<int> raised;
        std::lock_guard<std::mutex> lock(mu);
        if (!raised.count(dev)) {
          e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(limit));
          if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return e;
          }
          raised.insert(dev);
        }
      }
    }
    return launch_kernel(kernel, dim3(static_cast<unsigned>(p.rows)), dim3(l.threads_per_row), smem,
                         stream, p, smem > 0);
  }
  if constexpr (VEC == 1) {
    // The cluster, early-weight and streaming kernels exist for 16-byte vectors only.
    if (l.cluster > 1 || l.early_weight || l.stream > 0) return cudaErrorInvalidValue;
  } else if (l.stream > 0) {
    const dim3 grid(static_cast<unsigned>(ceil_div(p.rows, static_cast<std::int64_t>(l.stream))));
    const dim3 block(l.threads_per_row);
    switch (l.items) {
      case 1: return launch_kernel(kernel_rms_norm_stream<T, OutT, VEC, 1>, grid, block, 0, stream, p);
      case 2: return launch_kernel(kernel_rms_norm_stream<T, OutT, VEC, 2>, grid, block, 0, stream, p);
      case 4: return launch_kernel(kernel_rms_norm_stream<T, OutT, VEC, 4>, grid, block, 0, stream, p);
      default: return cudaErrorInvalidValue;
    }
  } else if (l.cluster > 1) {
    if (l.cluster > 8) return cudaErrorInvalidValue;
    const dim3 grid(static_cast<unsigned>(p.rows * l.cluster));
    const dim3 block(l.threads_per_row);
    const unsigned c = static_cast<unsigned>(l.cluster);
    // Every warp pushes its own sum where the slots hold them all (H100: 0.2-0.5 us
    // faster per call than a block barrier first).
    const bool per_warp = static_cast<unsigned>(l.cluster * ceil_div(l.threads_per_row, 32)) <=
                          ClusterPushSlot::kMaxSenders;
    switch (l.items * 2 + (per_warp ? 1 : 0)) {
      case 2: return launch_kernel_cluster(kernel_rms_norm_cluster<T, OutT, VEC, 1, false>, grid, block, 0, stream, c, p, l.cluster);
      case 3: return launch_kernel_cluster(kernel_rms_norm_cluster<T, OutT, VEC, 1, true>, grid, block, 0, stream, c, p, l.cluster);
      case 4: return launch_kernel_cluster(kernel_rms_norm_cluster<T, OutT, VEC, 2, false>, grid, block, 0, stream, c, p, l.cluster);
      case 5: return launch_kernel_cluster(kernel_rms_norm_cluster<T, OutT, VEC, 2, true>, grid, block, 0, stream, c, p, l.cluster);
      default: return cudaErrorInvalidValue;
    }
  }
  const dim3 grid(static_cast<unsigned>(ceil_div(p.rows, l.rows_per_block)));
  const dim3 block(l.threads_per_row * l.rows_per_block);
  if constexpr (VEC > 1) {
    if (l.early_weight) {
      switch (l.items) {
        case 1: return launch_kernel(kernel_rms_norm_regs_ew<T, OutT, VEC, 1>, grid, block, 0, stream, p, l.threads_per_row);
        case 2: return launch_kernel(kernel_rms_norm_regs_ew<T, OutT, VEC, 2>, grid, block, 0, stream, p, l.threads_per_row);
        case 4: return launch_kernel(kernel_rms_norm_regs_ew<T, OutT, VEC, 4>, grid, block, 0, stream, p, l.threads_per_row);
        default: return cudaErrorInvalidValue;
      }
    }
  }
  switch (l.items) {
    case 1: return launch_kernel(kernel_rms_norm_regs<T, OutT, VEC, 1>, grid, block, 0, stream, p, l.threads_per_row);
    case 2: return launch_kernel(kernel_rms_norm_regs<T, OutT, VEC, 2>, grid, block, 0, stream, p, l.threads_per_row);
    case 4: return launch_kernel(kernel_rms_norm_regs<T, OutT, VEC, 4>, grid, block, 0, stream, p, l.threads_per_row);
    case 8: return launch_kernel(kernel_rms_norm_regs<T, OutT, VEC, 8>, grid, block, 0, stream, p, l.threads_per_row);
    default: return cudaErrorInvalidValue;
  }
}

/// The one runtime-to-template dispatch: element type, output type, vector width.
inline cudaError_t launch_rms_norm(const RmsNormParams& p, FloatType dtype, const RmsNormLaunch& l,
                                   cudaStream_t stream) {
  return dispatch_float_type(dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    constexpr int kV = kVec16<T>;
    if (p.quant != NormQuant::kNone) {
      return l.vec16 ? launch_rms_norm<T, fp8_e4m3, kV>(p, l, stream)
                     : launch_rms_norm<T, fp8_e4m3, 1>(p, l, stream);
    }
    return l.vec16 ? launch_rms_norm<T, T, kV>(p, l, stream) : launch_rms_norm<T, T, 1>(p, l, stream);
  });
}

}  // namespace tunable::kernels
