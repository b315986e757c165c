// Shared pieces of the skinny GEMM kernels (decode, M <= 64): the one argument struct, guarded
// 16-byte loads, the element traits (bf16, fp16, fp8 e4m3: conversion to fp32, CUDA-core dot
// products and the tensor-core step), the warp transpose-reduction, the epilogue, the
// deterministic split-K reduction kernel, and the host helpers every launcher uses (occupancy and
// shared-memory limits from the caller's cache, split planning, programmatic dependent launch).
//
// Problem, as the kernels see it (cuBLAS "tn" with the weight on the MMA's M side):
//   y[j][i] = act(alpha * scale_a * scale_b * sum_p W[i][p] * x[j][p] + beta * y[j][i] + bias[i])
//   W: m rows of k elements, row stride lda (A of the GEMM); x: n rows of k, stride ldb (B);
//   y: column-major m x n with leading dimension ldc (C), so y[j][i] lives at y[i + j * ldc].
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/common/device_utils.cuh"
#include "kernels/gemv/skinny_device.hpp"

namespace tunable::kernels {

enum class SkinnyIn : int { kBF16, kF16, kE4M3 };
enum class SkinnyOut : int { kBF16, kF16, kF32 };
enum class SkinnyAct : int { kNone, kRelu, kGelu };

/// Arguments of every skinny kernel (passed as one __grid_constant__ struct).
struct SkinnyParams {
  const void* w = nullptr;        ///< W[m][k], row stride lda elements; rows 16-byte aligned
  const void* x = nullptr;        ///< x[n][k], row stride ldb elements; rows 16-byte aligned
  void* y = nullptr;              ///< y: m x n column-major, y[i + j * ldc], out type
  const void* bias = nullptr;     ///< m elements of the out type, or null
  const float* scale_a = nullptr; ///< device scalar multiplying the result, or null (fp8 only)
  const float* scale_b = nullptr; ///< device scalar multiplying the result, or null (fp8 only)
  /// Rowwise scales (fp8 weights only): y[i][j] also times row_scale[i] * col_scale[j] (per output
  /// channel and per token), applied with the other factors before bias and beta. col_scale needs
  /// row_scale; row_scale alone is the weight-only case (16-bit tokens carry no scale).
  const float* row_scale = nullptr;
  const float* col_scale = nullptr;
  float* partial = nullptr;       ///< [splits][n][m] fp32 partial sums when splits > 1
  long long lda = 0, ldb = 0, ldc = 0;  ///< elements
  int m = 0, n = 0, k = 0;        ///< weight rows, tokens (1..64), reduction length
  int kc = 0;                     ///< K elements per split, a multiple of the kernel's granule
  int splits = 1;                 ///< K splits (gridDim.y); 1 writes y directly
  int pairs = 0;                  ///< paired mmt only: leading blocks that take two 16-row tiles
  int bal_q = 0, bal_e = 0;       ///< balanced mmt only: whole tiles per block, tiles shared by a group
  /// Balanced mmt only: kSkinnyBalMaxShared arrival counters (one per shared tile), zero between
  /// launches, owned by the caller and used by one stream at a time.
  unsigned* bal_count = nullptr;
  float alpha = 1.f, beta = 0.f;  ///< beta == 0: y is never read (it may hold NaN)
  float acc_scale = 1.f;          ///< undoes a scaled conversion of the inputs (fp8 GEMV: 2^8 per input)
  int prefetch = 0;               ///< weight bytes a block hints into L2 before the PDL wait; 0: the kernel's default
  SkinnyOut out = SkinnyOut::kBF16;
  SkinnyAct act = SkinnyAct::kNone;
  /// Weight-only kernels only: y[i][j] also times rms_factor(sum over k of x[j][k]^2), the RMS
  /// normalization of token j (its weight folded into W by the caller), so a decode step needs no
  /// norm launch before the GEMM. The block needs the whole row: one split only.
  bool rms = false;
  float rms_eps = 0.f;
};

/// What a launcher is asked to do: the problem plus the K-split request.
struct SkinnyLaunch {
  SkinnyParams p;      ///< splits/kc/acc_scale are filled in by the launcher
  int splits = 0;      ///< requested K splits: >= 1 fixed, 0 = auto (fill the device)
  int max_splits = 1;  ///< cap for auto and wave-balanced splits (partial-traffic bound), >= 1
  int waves = 0;       ///< with splits == 0: > 0 picks splits for >= that many balanced waves
  int cluster = 0;     ///< mmap only: > 1 splits K over a cluster of that many blocks (sm_90)
  std::size_t partial_bytes = 0;  ///< capacity of p.partial; a plan needing more is refused
  /// Cap blocks per SM at ceil(blocks / SMs) by padding the block's shared memory
  /// (skinny_spread_smem), so a one-wave grid uses every SM instead of packing onto fewer. Ignored
  /// by cluster launches (the cluster scheduler places those). The provider sets it for mmt only:
  /// on the register-fed kernels it gained nothing the tuner did not already have and lost 12 % on
  /// 405b qkv (measured on the H100); on wgt it is not measured.
  bool spread = false;
  /// With spread: the blocks per SM to allow instead of ceil(blocks / SMs) (0). A measurement knob
  /// (tunable_skinny_trace --per-sm): one more slot than the grid needs lets the next call's blocks
  /// become resident while this grid still runs, at the risk of packing this grid.
  int spread_cap = 0;

  /// Blocks per SM the spread allows a grid of `blocks` blocks on `sms` SMs.
  long long spread_per_sm(long long blocks, int sms) const {
    return spread_cap > 0 ? spread_cap : (blocks + sms - 1) / sms;
  }
};

namespace skinny_detail {

// ---- loads -------------------------------------------------------------------------------------

// Both loads are volatile asm: the compiler keeps volatile asm in program order, so no load can move
// above griddepcontrol.wait (pdl_wait, also volatile asm) and read what the preceding grid is
// still writing. A plain asm has no memory semantics the compiler knows of: with one, nothing but
// the compiler's choice of schedule would keep these loads after the wait.

/// 16 bytes of the weight stream, read exactly once: read-only path, no L1 allocation. Zero when
/// !pred (the predicate lives inside the asm so the compiler can never speculate the access).
__device__ __forceinline__ uint4 ld_stream16(const void* p, bool pred) {
  uint4 r;
  asm volatile("{\n"
      " .reg .pred q;\n"
      " setp.ne.b32 q, %5, 0;\n"
      " mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
      " @q ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      "}\n"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p), "r"(static_cast<int>(pred)));
  return r;
}

/// 16 bytes of the activations, reused by every row block: read-only path, cached in L1.
__device__ __forceinline__ uint4 ld_cached16(const void* p, bool pred) {
  uint4 r;
  asm volatile("{\n"
      " .reg .pred q;\n"
      " setp.ne.b32 q, %5, 0;\n"
      " mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
      " @q ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      "}\n"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p), "r"(static_cast<int>(pred)));
  return r;
}

// ---- element traits --------------------------------------------------------------------------------
//
// Each traits type says how many elements one 16-byte vector holds (kVec), converts a vector to
// fp32 for the CUDA-core kernels, and runs one MMA of its type on fragments in the PTX register
// layout (mma_frag); mma_vec below is the MMA kernels' step on one 16-byte vector per thread, two
// MMAs. That step relies on the reduction being order-free: within a chunk of
// 4 * kVec K elements, lane (g, t) of a warp (g = lane / 4, t = lane % 4) loads the 16 bytes at
// K offset t * kVec of weight rows g and g + 8 and of token g. Its four 32-bit words feed two MMAs
// (words 0,1 the first, words 2,3 the second), and the register holding weight elements
// {p, p+1, ...} always meets the register holding x elements {p, p+1, ...}: the MMA pairs A
// column c with B row c, and the registers of lane t for A columns {2t, 2t+1 | 2t+8, 2t+9}
// (16-bit; {4t..4t+3 | 4t+16..4t+19} for 8-bit) are exactly B's rows for the same lane. So each MMA
// sums a permutation of 2 * kVec K elements, and the pair of MMAs covers the lane quad's 64 bytes.

struct Bf16Traits {
  static constexpr int kVec = 8;
  static constexpr int kBytes = 2;
  static constexpr float kAccScale = 1.f;  ///< to_float is exact
  __device__ __forceinline__ static void to_float(const uint4& v, float (&f)[kVec]) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
  /// One m16n8k16 MMA on fragments in the PTX register layout: c += A(16 x 16) * B(16 x 8).
  __device__ __forceinline__ static void mma_frag(float (&c)[4], unsigned a0, unsigned a1, unsigned a2,
                                                  unsigned a3, unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    // Launchers refuse MMA kernels whose code was built for a pre-sm_80 target (ptx_version).
    (void)c, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
    __trap();
#endif
  }
};

struct F16Traits {
  static constexpr int kVec = 8;
  static constexpr int kBytes = 2;
  static constexpr float kAccScale = 1.f;  ///< to_float is exact
  __device__ __forceinline__ static void to_float(const uint4& v, float (&f)[kVec]) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      __half2 h;
      memcpy(&h, &w[i], 4);
      const float2 p = __half22float2(h);
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
  __device__ __forceinline__ static void mma_frag(float (&c)[4], unsigned a0, unsigned a1, unsigned a2,
                                                  unsigned a3, unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    // Launchers refuse MMA kernels whose code was built for a pre-sm_80 target (ptx_version).
    (void)c, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
    __trap();
#endif
  }
};

/// fp8 e4m3 (bias 7, no infinities). to_float returns value * 2^-8: the byte's low 7 bits shifted
/// into an fp16's exponent/mantissa field give exactly value * 2^-8 for normals and subnormals
/// alike (fp16 keeps subnormals), so one shift and one LOP3 per two elements replace the
/// conversion instructions; kernels multiply their sums by kAccScale per fp8 input (acc_scale) to
/// undo the 2^-8. The tensor-core step needs sm_89+ (mma ... e4m3); older targets compile it out.
struct E4M3Traits {
  static constexpr int kVec = 16;
  static constexpr int kBytes = 1;
  static constexpr float kAccScale = 256.f;
  __device__ __forceinline__ static void to_float(const uint4& v, float (&f)[kVec]) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      // [b1 0 b0 0] and [b3 0 b2 0]: each byte in the high byte of a 16-bit lane.
      const unsigned lo = __byte_perm(w[i], 0u, 0x1404u);
      const unsigned hi = __byte_perm(w[i], 0u, 0x3424u);
      const unsigned hl = (lo & 0x80008000u) | ((lo >> 1) & 0x3f803f80u);
      const unsigned hh = (hi & 0x80008000u) | ((hi >> 1) & 0x3f803f80u);
      __half2 a, b;
      memcpy(&a, &hl, 4);
      memcpy(&b, &hh, 4);
      const float2 fa = __half22float2(a), fb = __half22float2(b);
      f[4 * i] = fa.x;
      f[4 * i + 1] = fa.y;
      f[4 * i + 2] = fb.x;
      f[4 * i + 3] = fb.y;
    }
  }
  /// One m16n8k32 e4m3 MMA (the same 32-byte rows as the 16-bit types' m16n8k16).
  __device__ __forceinline__ static void mma_frag(float (&c)[4], unsigned a0, unsigned a1, unsigned a2,
                                                  unsigned a3, unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    // Launchers refuse fp8 MMA kernels whose code was built for an older target (ptx_version).
    (void)c, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
    __trap();
#endif
  }
};

/// fp8 e4m3 converted to its exact values by the hardware: one cvt.rn.f16x2.e4m3x2 per two elements
/// on sm_89+ (every e4m3 value is an fp16 value; cuda_fp8.h emulates it on older targets), then
/// fp16 to fp32, and no scale to undo. Neither conversion wins everywhere in the weight-only GEMV
/// (docs/skinny-gemm.md), so both are candidates and the tuner picks per problem (suffix _cvt).
struct E4M3CvtTraits : E4M3Traits {
  static constexpr float kAccScale = 1.f;
  __device__ __forceinline__ static void to_float(const uint4& v, float (&f)[kVec]) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const __half2_raw ra = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w[i] & 0xffffu), __NV_E4M3);
      const __half2_raw rb = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w[i] >> 16), __NV_E4M3);
      const float2 fa = __half22float2(__half2(ra)), fb = __half22float2(__half2(rb));
      f[4 * i] = fa.x;
      f[4 * i + 1] = fa.y;
      f[4 * i + 2] = fb.x;
      f[4 * i + 3] = fb.y;
    }
  }
};

/// The register-direct MMA step of skinny_mma/skinny_mmap: c += A(16 x 2kVec) * B(2kVec x 8) as two
/// MMAs, a0/a1 the 16 bytes of weight rows g and g + 8, b those of token g (K permuted as above).
template <class Tr>
__device__ __forceinline__ void mma_vec(float (&c)[4], const uint4& a0, const uint4& a1, const uint4& b) {
  Tr::mma_frag(c, a0.x, a1.x, a0.y, a1.y, b.x, b.y);
  Tr::mma_frag(c, a0.z, a1.z, a0.w, a1.w, b.z, b.w);
}

template <SkinnyIn In>
struct TraitsOf;
template <>
struct TraitsOf<SkinnyIn::kBF16> {
  using type = Bf16Traits;
};
template <>
struct TraitsOf<SkinnyIn::kF16> {
  using type = F16Traits;
};
template <>
struct TraitsOf<SkinnyIn::kE4M3> {
  using type = E4M3Traits;
};

// ---- warp reduction --------------------------------------------------------------------------------

/// One halving step of warp_sum_transposed: lanes with bit OFF set keep the upper half of the
/// C values (summed with their partner's), the others the lower half.
template <int OFF, int C>
struct TransposeStep {
  __device__ __forceinline__ static void run(float* v, int lane) {
    if constexpr (OFF == 0) {
      return;
    } else if constexpr (C == 1) {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], OFF);
      TransposeStep<OFF / 2, 1>::run(v, lane);
    } else {
      constexpr int kH = C / 2;
      const bool upper = (lane & OFF) != 0;
#pragma unroll
      for (int i = 0; i < kH; ++i) {
        const float send = upper ? v[i] : v[i + kH];
        const float keep = upper ? v[i + kH] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
      }
      TransposeStep<OFF / 2, kH>::run(v, lane);
    }
  }
};

/// Sums N values (a power of two <= 32) over the warp with N - 1 + (5 - log2 N) shuffles instead
/// of 5 * N: each of the first log2 N steps halves the values a lane carries. Afterwards every lane
/// holds the warp total of value lane / (32 / N) in v[0]; the lanes of one group of 32 / N hold
/// identical bits. Fixed order, so deterministic.
template <int N>
__device__ __forceinline__ float warp_sum_transposed(float (&v)[N], int lane) {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "N must be a power of two <= 32");
  TransposeStep<16, N>::run(v, lane);
  return v[0];
}

// ---- epilogue ----------------------------------------------------------------------------------------

__device__ __forceinline__ float load_out(SkinnyOut t, const void* base, long long idx) {
  switch (t) {
    case SkinnyOut::kBF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[idx]);
    case SkinnyOut::kF16: return __half2float(static_cast<const __half*>(base)[idx]);
    default: return static_cast<const float*>(base)[idx];
  }
}

__device__ __forceinline__ void store_out(SkinnyOut t, void* base, long long idx, float v) {
  switch (t) {
    case SkinnyOut::kBF16: static_cast<__nv_bfloat16*>(base)[idx] = __float2bfloat16_rn(v); break;
    case SkinnyOut::kF16: static_cast<__half*>(base)[idx] = __float2half_rn(v); break;
    default: static_cast<float*>(base)[idx] = v; break;
  }
}

/// alpha * acc_scale * scale_a * scale_b: the factor applied to every accumulated sum.
__device__ __forceinline__ float result_scale(const SkinnyParams& p) {
  float s = p.alpha * p.acc_scale;
  if (p.scale_a) s *= *p.scale_a;
  if (p.scale_b) s *= *p.scale_b;
  return s;
}

/// y[i + j*ldc] = act(scale * acc + beta * y + bias[i]); y is read only when beta != 0.
__device__ __forceinline__ void write_result(const SkinnyParams& p, int i, int j, float acc,
                                             float scale) {
  const long long idx = static_cast<long long>(i) + static_cast<long long>(j) * p.ldc;
  float v = scale * acc;
  if (p.row_scale) v *= p.col_scale ? __ldg(p.row_scale + i) * __ldg(p.col_scale + j) : __ldg(p.row_scale + i);
  if (p.beta != 0.f) v = fmaf(p.beta, load_out(p.out, p.y, idx), v);
  if (p.bias) v += load_out(p.out, p.bias, i);
  if (p.act == SkinnyAct::kRelu) {
    v = fmaxf(v, 0.f);
  } else if (p.act == SkinnyAct::kGelu) {
    v = 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
  store_out(p.out, p.y, idx, v);
}

/// rsqrt(mean of squares + eps) of a token whose k squares sum to `ss` (SkinnyParams::rms): the
/// factor of an RMSNorm without its weight, as PyTorch's RMSNorm computes it in fp32.
__device__ __forceinline__ float rms_factor(const SkinnyParams& p, float ss) {
  return rsqrtf(ss / static_cast<float>(p.k) + p.rms_eps);
}

/// Where split `s` leaves its partial sum of y[j][i] (fp32, i fastest).
__device__ __forceinline__ float* partial_at(const SkinnyParams& p, int s, int i, int j) {
  return p.partial + (static_cast<size_t>(s) * p.n + j) * p.m + i;
}

/// A finished sum of split blockIdx.y: the result when there is one split, else a partial.
__device__ __forceinline__ void emit(const SkinnyParams& p, int i, int j, float acc, float scale) {
  if (p.splits == 1) write_result(p, i, j, acc, scale);
  else *partial_at(p, blockIdx.y, i, j) = acc;
}

/// Bytes of its weight rows one block pulls into L2 before it may read anything. Measured on the
/// H100 (docs/skinny-gemm.md): 16 KB beat 32 KB by 3-7 % at M = 1 on
/// 4-50 MB weights and 64 KB lost 2-5 %; more hints delay the block's own loads (and those of the
/// grid it overlaps) more than the early bytes save. 8 KB was within noise of 16 KB.
constexpr int kSkinnyPrefetchBytes = 16384;

// ---- timeline trace (bench/skinny_trace.cu builds with TUNABLE_SKINNY_TRACE; empty otherwise) ----
//
// Thread 0 of every block records when the block started, when its griddepcontrol.wait returned and
// when its last warp finished (%globaltimer: comparable across SMs), and which weight it read (which
// call it belongs to), so the per-call cost of back-to-back calls splits into the release after the
// predecessor, the streaming and the tail.

#ifdef TUNABLE_SKINNY_TRACE
struct SkinnyTraceRec {
  unsigned long long t_entry, t_wait, t_exit;  // ns
  const void* w;
  unsigned sm;  // %smid: which SM ran the block (per-SM finish times)
};
static __device__ SkinnyTraceRec* g_skinny_trace = nullptr;
static __device__ unsigned g_skinny_trace_n = 0, g_skinny_trace_cap = 0;
static __shared__ unsigned long long s_skinny_trace_t[2];

__device__ __forceinline__ unsigned long long skinny_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

/// Records this block's start (0) or wait release (1).
__device__ __forceinline__ void skinny_trace_mark(int what) {
#ifdef TUNABLE_SKINNY_TRACE
  if (threadIdx.x == 0) s_skinny_trace_t[what] = skinny_globaltimer();
#else
  (void)what;
#endif
}

/// Records the block's end once all its threads got here (the main kernels call it last).
__device__ __forceinline__ void skinny_trace_exit(const void* w) {
#ifdef TUNABLE_SKINNY_TRACE
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned i = atomicAdd(&g_skinny_trace_n, 1u);
    if (i < g_skinny_trace_cap) {
      unsigned sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      g_skinny_trace[i] = {s_skinny_trace_t[0], s_skinny_trace_t[1], skinny_globaltimer(), w, sm};
    }
  }
#else
  (void)w;
#endif
}

/// Hints up to `budget` bytes of weight rows [row0, row0 + rows) (clamped to m), K elements [kb, ke),
/// into L2, the same bytes of each row; returns the bytes hinted.
__device__ __forceinline__ long long skinny_prefetch_rows(const SkinnyParams& p, int row0, int rows, int kb, int ke,
                                                          int elem, long long budget) {
  const int live = min(rows, p.m - row0);
  if (live <= 0 || ke <= kb || budget <= 0) return 0;
  const long long seg = static_cast<long long>(ke - kb) * elem;
  long long per_row = budget / rows;
  if (per_row < 512) per_row = 512;
  if (per_row > seg) per_row = seg;
  prefetch_l2_rows(static_cast<const unsigned char*>(p.w) + (static_cast<size_t>(row0) * p.lda + kb) * elem,
                   static_cast<std::int64_t>(p.lda) * elem, live, per_row);
  return per_row * live;
}

/// The hint's size: SkinnyParams::prefetch when set (the timeline tool's --prefetch-kb), else the kernel's.
__device__ __forceinline__ long long skinny_prefetch_budget(const SkinnyParams& p, long long fallback) {
  return p.prefetch > 0 ? p.prefetch : fallback;
}

/// The PDL protocol of every skinny main kernel (pdl_hint_then_wait, every block hinting its own
/// first weight bytes), with the timeline marks around it.
template <class Hint>
__device__ __forceinline__ void skinny_pdl_prologue(Hint&& hint) {
  skinny_trace_mark(0);
  pdl_hint_then_wait(hint);
  skinny_trace_mark(1);
}

/// Prologue of every skinny main kernel, launched programmatic-dependent (sm_90). The weight is
/// almost never written by the preceding kernel, but it may be (a dequantization just before), so
/// before griddepcontrol.wait the block only *prefetches* its first weight bytes into L2 (a hint:
/// no data reaches registers or L1, and L2 is coherent with the preceding grid's writes); x, beta*C
/// and every load that produces a value wait. The early trigger lets the next kernel's blocks do
/// the same while this grid's last wave drains. Rows [row0, row0 + rows) of W (clamped to m), K
/// elements [kb, ke) of `elem` bytes each.
__device__ __forceinline__ void skinny_prologue(const SkinnyParams& p, int row0, int rows, int kb, int ke,
                                                int elem) {
  skinny_pdl_prologue(
      [&] { skinny_prefetch_rows(p, row0, rows, kb, ke, elem, skinny_prefetch_budget(p, kSkinnyPrefetchBytes)); });
}

}  // namespace skinny_detail

// ---- split-K reduction kernel ------------------------------------------------------------------------

/// Sums the splits of every y element in split order (deterministic) and applies the epilogue.
/// One thread per element, i fastest, so partial reads and y writes are coalesced.
template <int kThreads>
__global__ void __launch_bounds__(kThreads) skinny_splitk_reduce_kernel(const __grid_constant__ SkinnyParams p) {
  using namespace skinny_detail;
  pdl_launch_dependents();  // the next GEMM may start prefetching its weight while this one sums
  pdl_wait();
  const long long total = static_cast<long long>(p.m) * p.n;
  const float scale = result_scale(p);
  for (long long o = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; o < total;
       o += static_cast<long long>(gridDim.x) * kThreads) {
    float s = 0.f;
    for (int t = 0; t < p.splits; ++t) s += p.partial[t * total + o];
    write_result(p, static_cast<int>(o % p.m), static_cast<int>(o / p.m), s, scale);
  }
}

// ---- runtime-to-template helpers ---------------------------------------------------------------------

/// Calls fn(std::integral_constant<int, V>{}) for the V in Vs equal to v; cudaErrorInvalidValue
/// when none is.
template <int... Vs, class Fn>
cudaError_t skinny_dispatch_int(int v, Fn&& fn) {
  cudaError_t r = cudaErrorInvalidValue;
  (void)((v == Vs ? (r = fn(std::integral_constant<int, Vs>{}), true) : false) || ...);
  return r;
}

/// Calls fn(Traits{}) with the element traits of `in`.
template <class Fn>
cudaError_t skinny_dispatch_in(SkinnyIn in, Fn&& fn) {
  switch (in) {
    case SkinnyIn::kBF16: return fn(skinny_detail::Bf16Traits{});
    case SkinnyIn::kF16: return fn(skinny_detail::F16Traits{});
    case SkinnyIn::kE4M3: return fn(skinny_detail::E4M3Traits{});
  }
  return cudaErrorInvalidValue;
}

// ---- host helpers --------------------------------------------------------------------------------------
//
// The launchers keep no state: what costs a driver call to learn (the device's facts, each kernel's
// occupancy and shared-memory limit) comes from the caller as a SkinnyDevice and a
// SkinnyKernelCache (skinny_device.hpp), which the library reads once per context.

/// The virtual architecture the loaded skinny kernels were compiled for (cudaFuncAttributes::
/// ptxVersion of the split-K reduction, built with the same targets as every skinny kernel). Not
/// cached: the caller keeps it in its SkinnyDevice.
inline cudaError_t skinny_loaded_ptx_version(int* out) {
  cudaFuncAttributes fa{};
  const cudaError_t e = cudaFuncGetAttributes(&fa, skinny_splitk_reduce_kernel<256>);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return e;
  }
  *out = fa.ptxVersion;
  return cudaSuccess;
}

/// Resident blocks per SM of `kernel` at `threads` and `smem` bytes of dynamic shared memory, from
/// the caller's cache (which raises the kernel's dynamic shared-memory limit first when it needs more
/// than the default 48 KiB).
template <class Kernel>
cudaError_t skinny_blocks_per_sm(Kernel kernel, int threads, std::size_t smem, SkinnyKernelCache* cache,
                                 int* out) {
  if (cache == nullptr) return cudaErrorInvalidValue;
  return cache->blocks_per_sm(reinterpret_cast<const void*>(kernel), threads, smem, out);
}

/// Dynamic shared memory to launch `kernel` with at most `cap` blocks per SM (SkinnyLaunch::
/// spread_per_sm): the block scheduler packs a one-wave grid onto as few SMs as the occupancy allows
/// (2-3 blocks each) and leaves the rest idle, so when `per_sm` (the occupancy at `smem`) exceeds
/// the blocks per SM the grid needs, the block's shared memory is padded until one more block no
/// longer fits. Returns `smem` where the cap does not bind or the padding exceeds what the kernel
/// may be given beside its static shared memory (SkinnyKernelCache::max_dynamic_smem, which raises
/// the kernel's limit once, not on every launch).
template <class Kernel>
cudaError_t skinny_spread_smem(Kernel kernel, long long cap, int per_sm, std::size_t smem,
                               const SkinnyDevice& dev, SkinnyKernelCache* cache, std::size_t* out) {
  *out = smem;
  if (cap >= per_sm) return cudaSuccess;
  // cap + 1 blocks must not fit: each takes more than smem_per_sm / (cap + 1) with its reservation
  // (and its static shared memory, which only adds to it).
  const long long want = dev.smem_per_sm / (cap + 1) - dev.smem_reserved + 128;
  if (want <= static_cast<long long>(smem)) return cudaSuccess;
  if (cache == nullptr) return cudaErrorInvalidValue;
  long long max_dynamic = 0;
  const cudaError_t e = cache->max_dynamic_smem(reinterpret_cast<const void*>(kernel), &max_dynamic);
  if (e != cudaSuccess) return e;
  if (want <= max_dynamic) *out = static_cast<std::size_t>(want);
  return cudaSuccess;
}

struct SkinnySplit {
  int splits = 1;  ///< gridDim.y
  int kc = 0;      ///< K elements per split, a multiple of the granule
};

/// K splits for a grid of `blocks0` blocks per split on a device with `slots` resident blocks.
/// Fixed (requested >= 1): that many, fewer when k holds fewer granules. Auto (0): the smallest
/// power of two that makes the grid at least one full wave, capped by max_splits. Each split gets
/// a whole number of granules; the last may be shorter.
inline SkinnySplit skinny_plan_splits(int requested, int max_splits, int k, int granule,
                                      long long blocks0, long long slots) {
  const int granules = (k + granule - 1) / granule;
  int s = requested;
  if (s <= 0) {
    s = 1;
    while (blocks0 * s < slots && s * 2 <= max_splits) s *= 2;
  }
  if (s > granules) s = granules;
  if (s < 1) s = 1;
  SkinnySplit r;
  const int per = (granules + s - 1) / s;  // granules per split
  r.kc = per * granule;
  r.splits = (granules + per - 1) / per;
  return r;
}

/// Wave-balanced K splits: the grid of blocks0 * s blocks should give at least `waves` waves of
/// `slots` resident blocks with the last wave nearly full (fill = blocks / (waves_used * slots)
/// >= 0.9), so every SM streams about the same number of bytes. Any s in [1, max_splits] (not only
/// powers of two) is considered, smallest first; when no s reaches both the wave count and the fill,
/// the s with the best fill among those reaching the most waves possible is taken (ties: fewer
/// splits). The granule rounding of skinny_plan_splits then applies.
inline SkinnySplit skinny_plan_splits_waves(int waves, int max_splits, int k, int granule,
                                            long long blocks0, long long slots) {
  const int granules = (k + granule - 1) / granule;
  int cap = max_splits < granules ? max_splits : granules;
  if (cap < 1) cap = 1;
  if (slots < 1) slots = 1;
  // Effective split count after granule rounding (what the launch really gets).
  auto effective = [&](int s) {
    const int per = (granules + s - 1) / s;
    return (granules + per - 1) / per;
  };
  const long long want = static_cast<long long>(waves) * slots;
  int best = 1;
  double best_fill = -1.0;
  long long best_blocks = 0;
  for (int s = 1; s <= cap; ++s) {
    const int se = effective(s);
    const long long b = blocks0 * se;
    const long long w = (b + slots - 1) / slots;
    const double fill = static_cast<double>(b) / static_cast<double>(w * slots);
    if (b >= want && fill >= 0.9) {
      best = s;
      break;
    }
    const long long bb = b < want ? b : want;  // reaching more of the wanted waves counts first
    if (bb > best_blocks || (bb == best_blocks && fill > best_fill + 1e-9)) {
      best = s;
      best_fill = fill;
      best_blocks = bb;
    }
  }
  return skinny_plan_splits(best, max_splits, k, granule, blocks0, slots);
}

/// The split plan a launch asks for: wave-balanced when l.waves > 0 and no fixed count is given,
/// else skinny_plan_splits (fixed, or auto: smallest power of two filling one wave).
inline SkinnySplit skinny_plan(const SkinnyLaunch& l, int k, int granule, long long blocks0,
                               long long slots) {
  if (l.splits <= 0 && l.waves > 0)
    return skinny_plan_splits_waves(l.waves, l.max_splits, k, granule, blocks0, slots);
  return skinny_plan_splits(l.splits, l.max_splits, k, granule, blocks0, slots);
}

/// Fills p's split fields from a plan; cudaErrorInvalidValue when the plan needs more partial
/// storage than the launch provides or more splits than a grid dimension holds.
inline cudaError_t skinny_apply_plan(const SkinnySplit& sp, const SkinnyLaunch& l, SkinnyParams* p) {
  if (sp.splits > 65535) return cudaErrorInvalidValue;
  if (sp.splits > 1) {
    const std::size_t need = static_cast<std::size_t>(sp.splits) * p->n * p->m * sizeof(float);
    if (p->partial == nullptr || need > l.partial_bytes) return cudaErrorInvalidValue;
  }
  p->splits = sp.splits;
  p->kc = sp.kc;
  return cudaSuccess;
}

/// Whether the skinny kernels launch programmatic-dependent: device and loaded code sm_90+.
inline bool skinny_pdl(const SkinnyDevice& dev) { return dev.cc >= 90 && dev.ptx_version >= 90; }

/// Launches the split-K reduction of `p` (p.splits > 1) on `stream`. On sm_90 code the launch is
/// programmatic-dependent: its blocks may start while the main kernel drains and wait for it in
/// griddepcontrol.wait, which hides the launch gap between the two kernels.
inline cudaError_t skinny_launch_reduce(const SkinnyParams& p, const SkinnyDevice& dev,
                                        cudaStream_t stream) {
  constexpr int kThreads = 256;
  const long long total = static_cast<long long>(p.m) * p.n;
  long long blocks = (total + kThreads - 1) / kThreads;
  const long long cap = static_cast<long long>(dev.sms) * 8;
  if (blocks > cap) blocks = cap;
  // Only code built for sm_90+ contains griddepcontrol.wait; anything else launches plainly.
  const cudaError_t e = launch_kernel_ex(skinny_splitk_reduce_kernel<kThreads>, dim3(static_cast<unsigned>(blocks)),
                                         dim3(kThreads), 0, stream, skinny_pdl(dev), dim3(1, 1, 1), p);
  if (e != cudaSuccess) (void)cudaGetLastError();  // a refused launch must not leave its error to the next call
  return e;
}

/// Launches a skinny main kernel: programmatic-dependent on sm_90 code (its prologue waits in
/// griddepcontrol.wait), plainly elsewhere (code built for older targets contains no wait); with
/// cluster > 1 as (1, cluster, 1) thread-block clusters.
template <class Kernel>
cudaError_t skinny_launch_main(Kernel kernel, dim3 grid, int threads, std::size_t smem, int cluster,
                               const SkinnyParams& p, const SkinnyDevice& dev, cudaStream_t stream) {
  const cudaError_t e = launch_kernel_ex(kernel, grid, dim3(static_cast<unsigned>(threads)), smem, stream,
                                         skinny_pdl(dev), dim3(1, cluster > 1 ? cluster : 1, 1), p);
  if (e != cudaSuccess) (void)cudaGetLastError();  // a refused launch must not leave its error to the next call
  return e;
}

/// After the main kernel's successful launch: the reduction when there are splits. (Its launch
/// status is the caller's to check; cudaGetLastError here would report an older, unrelated error
/// of the thread as this GEMM's and skip the reduction.)
inline cudaError_t skinny_finish(const SkinnyParams& p, const SkinnyDevice& dev, cudaStream_t stream) {
  if (p.splits > 1) return skinny_launch_reduce(p, dev, stream);
  return cudaSuccess;
}

}  // namespace tunable::kernels
