// Weight-only FP8 skinny GEMM for decode (n <= 8 tokens): e4m3 weights with one fp32 scale per
// output row, 16-bit tokens (bf16 or fp16, the output's type), fp32 accumulation.
//
// Why it exists: with W8A8 every GEMM input must be quantized per token first (a launch after the
// attention and after the activation, fp8 norms), which costs a decode step more than the halved
// weight bytes save on the smaller layers. Here the tokens stay 16-bit and only the weight is
// converted, in registers, right after its load.
//
// Tiling, K order, load pattern and epilogue are skinny_mma_kernel's (16 * WM weight rows on the
// MMA's M side, one 8-token tile on its N side, KW warps along K, register-direct operands): lane
// (g, t) loads 16 bytes (16 e4m3) of rows g and g + 8 at K offset t * 16 of each 64-element chunk
// and the 32 bytes of token g at the same offset. Each weight vector becomes two 16-bit vectors
// (K elements 0-7 and 8-15) that meet the token's two vectors in the 16-bit m16n8k16 MMA; the K
// permutation argument of common.cuh holds per pair, since both operands of each MMA come from the
// same K positions. The conversion is exact:
//   - fp16 tokens: cvt.rn.f16x2.e4m3x2 (sm_89+; every e4m3 value is an fp16 value);
//   - bf16 tokens: the byte's 7 exponent/mantissa bits moved 4 places right inside a 16-bit lane
//     give bf16's fields for value * 2^-120 (normals and subnormals alike: e4m3's exponent bias is 7,
//     bf16's 127), and one bf16x2 multiply by 2^120 restores the value. Left at 2^-120 the products
//     would fall below fp32's normal range in the accumulator. The two NaN codes (0x7f, 0xff) come
//     out as +-480 on this path (NaN on the fp16 one); quantized weights never hold them.
// The row scale applies in the shared epilogue (SkinnyParams::row_scale without col_scale).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "kernels/gemv/common.cuh"
#include "kernels/gemv/mma_epilogue.cuh"
#include "kernels/gemv/skinny_mma.cuh"

namespace tunable::kernels {

namespace skinny_detail {

/// e4m3 weights meeting bf16 tokens.
struct WoBf16 {
  using Mma = Bf16Traits;
  static constexpr SkinnyOut kOut = SkinnyOut::kBF16;
  /// Two e4m3 bytes, each in the high byte of a 16-bit lane, to the bf16 pair of their values.
  __device__ __forceinline__ static unsigned pair(unsigned hi_bytes) {
    const unsigned scaled = (hi_bytes & 0x80008000u) | ((hi_bytes & 0x7f007f00u) >> 4);  // value * 2^-120
    __nv_bfloat162 v, k;
    memcpy(&v, &scaled, 4);
    const unsigned two120 = 0x7b807b80u;  // bf16 2^120 in both lanes
    memcpy(&k, &two120, 4);
    v = __hmul2(v, k);
    unsigned r;
    memcpy(&r, &v, 4);
    return r;
  }
  /// Bytes 0-1 / 2-3 of `w` to two bf16 each (byte 0 in the low lane, as in memory).
  __device__ __forceinline__ static unsigned lo(unsigned w) { return pair(__byte_perm(w, 0u, 0x1404u)); }
  __device__ __forceinline__ static unsigned hi(unsigned w) { return pair(__byte_perm(w, 0u, 0x3424u)); }
};

/// e4m3 weights meeting fp16 tokens.
struct WoF16 {
  using Mma = F16Traits;
  static constexpr SkinnyOut kOut = SkinnyOut::kF16;
  __device__ __forceinline__ static unsigned cvt(unsigned short two) {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
    unsigned r;
    memcpy(&r, &h, 4);
    return r;
  }
  __device__ __forceinline__ static unsigned lo(unsigned w) { return cvt(static_cast<unsigned short>(w & 0xffffu)); }
  __device__ __forceinline__ static unsigned hi(unsigned w) { return cvt(static_cast<unsigned short>(w >> 16)); }
};

/// 16 e4m3 weights (K elements 0-15) to 16-bit vectors of elements 0-7 (`first`) and 8-15 (`second`).
template <class X>
__device__ __forceinline__ void wo_convert(const uint4& w, uint4& first, uint4& second) {
  first = make_uint4(X::lo(w.x), X::hi(w.x), X::lo(w.y), X::hi(w.y));
  second = make_uint4(X::lo(w.z), X::hi(w.z), X::lo(w.w), X::hi(w.w));
}

}  // namespace skinny_detail

/// WM: 16-row MMA tiles per block, KW: warps splitting the block's K range, WC: warp-contiguous K
/// order (SkinnyKOrder). X: the token type's conversion (WoBf16, WoF16). n <= 8. RMS:
/// SkinnyParams::rms; one more MMA per token vector takes the tokens' fragments as both operands
/// (token g as row g of A, rows g + 8 zero), so C[g][j] sums x_g . x_j and its diagonal each token's
/// squares, with no conversion on the CUDA cores; the block adds the warps' diagonals beside the
/// accumulators.
template <class X, int WM, int KW, bool WC, bool RMS>
__global__ void __launch_bounds__(KW * 32, 16 / KW) skinny_wo_kernel(const __grid_constant__ SkinnyParams p) {
  using namespace skinny_detail;
  using Mma = typename X::Mma;
  constexpr int kVec = E4M3Traits::kVec;  // weight elements per 16-byte load
  constexpr int kBM = 16 * WM;
  constexpr int kU = skinny_mma_unroll(WM);  // chunks in flight per warp
  extern __shared__ float red[];             // mma_block_epilogue's buffers

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * kBM;
  const int kb = blockIdx.y * p.kc;
  const int ke = min(p.k, kb + p.kc);
  const SkinnyKOrder<WC, kU, KW, kVec> ko(kb, ke, warp, t);
  skinny_prologue(p, row0, kBM, kb, ke, 1);

  // Rows past m and tokens past n read a valid row (the last); their sums are never written.
  const unsigned char* wrow[WM][2];
#pragma unroll
  for (int mt = 0; mt < WM; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = min(row0 + mt * 16 + h * 8 + g, p.m - 1);
      wrow[mt][h] = static_cast<const unsigned char*>(p.w) + static_cast<size_t>(row) * p.lda;
    }
  }
  const unsigned char* xrow = static_cast<const unsigned char*>(p.x) + static_cast<size_t>(min(g, p.n - 1)) * p.ldb * 2;

  float acc[WM][1][4];
#pragma unroll
  for (int mt = 0; mt < WM; ++mt) {
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[mt][0][q] = 0.f;
  }
  float ssacc[4] = {0.f, 0.f, 0.f, 0.f};  // RMS: C[g][2t..2t+1] and C[g+8][..] of the tokens' Gram MMA

  for (int s = ko.first(); s < ko.end(); s += ko.step()) {
    uint4 a[kU][WM][2];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      // k and kc are multiples of 16: a lane's 16 weight bytes are wholly inside [kb, ke) or outside.
      const int e = ko.elem(s, u);
#pragma unroll
      for (int mt = 0; mt < WM; ++mt) {
        a[u][mt][0] = ld_stream16(wrow[mt][0] + e, e < ke);
        a[u][mt][1] = ld_stream16(wrow[mt][1] + e, e < ke);
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int e = ko.elem(s, u);
      const unsigned char* xp = xrow + static_cast<size_t>(e) * 2;
      // Past ke both operands are zero; every lane still joins the warp-wide mma.
      const uint4 b0 = ld_cached16(xp, e < ke), b1 = ld_cached16(xp + 16, e < ke);
      if constexpr (RMS) {
        const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
        mma_vec<Mma>(ssacc, b0, zero, b0);
        mma_vec<Mma>(ssacc, b1, zero, b1);
      }
#pragma unroll
      for (int mt = 0; mt < WM; ++mt) {
        uint4 r0a, r0b, r1a, r1b;
        wo_convert<X>(a[u][mt][0], r0a, r0b);
        wo_convert<X>(a[u][mt][1], r1a, r1b);
        mma_vec<Mma>(acc[mt][0], r0a, r1a, b0);
        mma_vec<Mma>(acc[mt][0], r0b, r1b, b1);
      }
    }
  }

  float* tok_ss = nullptr;  // RMS: [KW][8] sums of squares per warp and token, after the epilogue's buffer
  if constexpr (RMS) {
    tok_ss = red + mma_epilogue_smem(WM, 1, KW, 1) / sizeof(float);
    // C[g][g] sits in lane (g, g / 2), element g % 2; the epilogue's barrier publishes it.
    if (t == g / 2) tok_ss[warp * 8 + g] = ssacc[g & 1];
  }
  mma_block_epilogue<WM, 1, KW, 1, RMS>(p, acc, red, row0, 16 * WM, tok_ss);
  skinny_trace_exit(p.w);
}

/// Runs the weight-only kernel on `stream`: block_rows in {16, 32}, k_warps in {4, 8, 16},
/// l.p.n <= 8, l.p.out bf16 or fp16 (the tokens' type), l.p.row_scale set and l.p.col_scale null;
/// with l.p.rms one split (l.splits 1).
/// `dev` and `cache` are the caller's facts of the current device (skinny_device.hpp).
inline cudaError_t skinny_wo(int block_rows, int k_warps, bool warp_contiguous, const SkinnyLaunch& l,
                             const SkinnyDevice& dev, SkinnyKernelCache* cache, cudaStream_t stream) {
  using namespace skinny_detail;
  if (block_rows % 16 != 0 || l.p.n < 1 || l.p.n > 8 || l.cluster > 1) return cudaErrorInvalidValue;
  if (l.p.row_scale == nullptr || l.p.col_scale != nullptr) return cudaErrorInvalidValue;
  if (l.p.rms && l.splits != 1) return cudaErrorInvalidValue;  // a split sees part of each token
  auto run = [&](auto x) {
    using X = decltype(x);
    return skinny_dispatch_int<1, 2>(block_rows / 16, [&](auto wm) {
      return skinny_dispatch_int<4, 8, 16>(k_warps, [&](auto kw) {
        constexpr int WM = wm.value, KW = kw.value;
        // E4M3Traits: the weight's 16-element vectors set the split granule; sm_89+ (cvt e4m3x2).
        auto go = [&](auto rms) {
          constexpr bool R = rms.value;
          constexpr std::size_t smem = mma_epilogue_smem(WM, 1, KW, 1) + (R ? KW * 8 * sizeof(float) : 0);
          const auto kernel = warp_contiguous ? skinny_wo_kernel<X, WM, KW, true, R> : skinny_wo_kernel<X, WM, KW, false, R>;
          return skinny_mma_family_launch<E4M3Traits, WM, KW, 1>(kernel, smem, l, dev, cache, stream);
        };
        return l.p.rms ? go(std::true_type{}) : go(std::false_type{});
      });
    });
  };
  if (l.p.out == SkinnyOut::kBF16) return run(WoBf16{});
  if (l.p.out == SkinnyOut::kF16) return run(WoF16{});
  return cudaErrorInvalidValue;
}

}  // namespace tunable::kernels
