// CUDA-core split-K GEMV for decode with very few tokens (n <= 8): y[j][i] = sum_p W[i][p] x[j][p],
// W and x of one type (bf16, fp16, e4m3) or e4m3 weights with 16-bit tokens (skinny_wov.cuh).
//
// Block = WARPS warps; warp w owns RPW consecutive weight rows and walks its split's K range in
// 16-byte vectors (lane l reads vectors l, l + 32, ...: 512 contiguous bytes of a row per load
// instruction), with kU * RPW = 8 loads of W in flight per lane. x (MT tokens, a few KB reused by
// every row block) is read through L1; each x vector is converted once and used for RPW rows, each
// W vector once and used for MT tokens. A lane carries RPW * MT fp32 sums, reduced once per warp
// at the end (transpose-reduction). With splits (gridDim.y) the sums go to fp32 partials that the
// split-K reduction kernel adds in split order.
#pragma once

#include <cuda_runtime.h>

#include "kernels/gemv/common.cuh"

namespace tunable::kernels {

/// Vectors per row a lane loads before using any: 8 loads of W in flight per lane (4 from 4
/// tokens on, where the x vectors of every unrolled step would not fit the 128-register budget).
constexpr int skinny_gemv_unroll(int mt, int rpw) {
  const int loads = mt >= 4 ? 4 : 8;
  return loads / rpw > 0 ? loads / rpw : 1;
}

/// W, X: the weight's and the tokens' traits (the same type, or e4m3 weights with bf16/fp16 tokens:
/// the weight-only problem, where one 16-element weight vector meets two 8-element token vectors);
/// MT: token tile (n <= MT), RPW: weight rows per warp, WARPS: warps per block; RMS:
/// SkinnyParams::rms (every warp reads each token's whole row, so it sums the squares of the values
/// it converts anyway and needs no other load). The register budget is 128 (16 / WARPS blocks per
/// SM: 16 warps), enough to keep 64 KB of loads in flight per SM.
template <class W, class X, int MT, int RPW, int WARPS, bool RMS>
__global__ void __launch_bounds__(WARPS * 32, 16 / WARPS)
    skinny_gemv_kernel(const __grid_constant__ SkinnyParams p) {
  using namespace skinny_detail;
  static_assert(RPW * MT <= 32, "one warp reduces at most 32 sums");
  static_assert(W::kVec % X::kVec == 0, "a weight vector meets whole token vectors");
  constexpr int kVec = W::kVec;            // weight elements per 16-byte load
  constexpr int kXV = W::kVec / X::kVec;   // token vectors per weight vector
  constexpr int kU = skinny_gemv_unroll(MT, RPW);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row0 = (blockIdx.x * WARPS + warp) * RPW;
  const int kb = blockIdx.y * p.kc;
  const int ke = min(p.k, kb + p.kc);
  const int ve = ke / kVec;  // k and kc are multiples of kVec
  skinny_prologue(p, blockIdx.x * WARPS * RPW, WARPS * RPW, kb, ke, W::kBytes);

  // Rows past m and tokens past n read a valid row (the last); their sums are never written.
  const unsigned char* wrow[RPW];
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const int row = min(row0 + r, p.m - 1);
    wrow[r] = static_cast<const unsigned char*>(p.w) + static_cast<size_t>(row) * p.lda * W::kBytes;
  }
  const unsigned char* xrow[MT];
#pragma unroll
  for (int j = 0; j < MT; ++j) {
    xrow[j] = static_cast<const unsigned char*>(p.x) +
              static_cast<size_t>(min(j, p.n - 1)) * p.ldb * X::kBytes;
  }

  float acc[RPW * MT];  // acc[r * MT + j]
#pragma unroll
  for (int i = 0; i < RPW * MT; ++i) acc[i] = 0.f;
  float ss[MT];  // RMS: this lane's sums of squares of each token
#pragma unroll
  for (int j = 0; j < MT; ++j) ss[j] = 0.f;

  for (int v0 = kb / kVec + lane; v0 < ve; v0 += 32 * kU) {
    uint4 w[kU][RPW];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int v = v0 + 32 * u;
#pragma unroll
      for (int r = 0; r < RPW; ++r) w[u][r] = ld_stream16(wrow[r] + static_cast<size_t>(v) * 16, v < ve);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int v = v0 + 32 * u;
      // Past ve both operands load as zero, so the products add nothing.
      float wf[RPW][kVec];
#pragma unroll
      for (int r = 0; r < RPW; ++r) W::to_float(w[u][r], wf[r]);
#pragma unroll
      for (int j = 0; j < MT; ++j) {
#pragma unroll
        for (int h = 0; h < kXV; ++h) {  // the token's elements [h * X::kVec, (h + 1) * X::kVec) of this vector
          float xf[X::kVec];
          X::to_float(ld_cached16(xrow[j] + (static_cast<size_t>(v) * kXV + h) * 16, v < ve), xf);
          if constexpr (RMS) {
#pragma unroll
            for (int e = 0; e < X::kVec; ++e) ss[j] = fmaf(xf[e], xf[e], ss[j]);
          }
#pragma unroll
          for (int r = 0; r < RPW; ++r) {
#pragma unroll
            for (int e = 0; e < X::kVec; ++e)
              acc[r * MT + j] = fmaf(wf[r][h * X::kVec + e], xf[e], acc[r * MT + j]);
          }
        }
      }
    }
  }

  warp_sum_transposed<RPW * MT>(acc, lane);
  constexpr int kGroup = 32 / (RPW * MT);
  const int idx = lane / kGroup;
  const int row = row0 + idx / MT, tok = idx % MT;
  float f = 1.f;  // RMS: token tok's factor; the launcher allows one split only, so ss covers all of k
  if constexpr (RMS) {
#pragma unroll
    for (int j = 0; j < MT; ++j) {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) ss[j] += __shfl_xor_sync(0xffffffffu, ss[j], off);
      if (j == tok) f = rms_factor(p, ss[j]);
    }
  }
  if (lane % kGroup == 0 && row < p.m && tok < p.n) emit(p, row, tok, acc[0] * f, result_scale(p));
  skinny_trace_exit(p.w);
}

/// Rows of W one block covers.
constexpr int skinny_gemv_block_rows(int rows_per_warp, int threads) {
  return rows_per_warp * (threads / 32);
}

/// K granule of one split: one pass of a warp over a row (32 lanes x 16 bytes).
constexpr int skinny_gemv_granule(int vec) { return 32 * vec; }

/// Smallest token tile (1, 2, 4, 8) holding n tokens; 0 when n > 8.
constexpr int skinny_gemv_token_tile(int n) {
  return n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : n <= 8 ? 8 : 0;
}

template <class W, class X, int MT, int RPW, int WARPS, bool RMS>
cudaError_t skinny_gemv_launch(const SkinnyLaunch& l, const SkinnyDevice& dev, SkinnyKernelCache* cache,
                               cudaStream_t stream) {
  const auto kernel = skinny_gemv_kernel<W, X, MT, RPW, WARPS, RMS>;
  constexpr int kThreads = WARPS * 32;
  SkinnyParams p = l.p;
  const long long blocks0 = (static_cast<long long>(p.m) + RPW * WARPS - 1) / (RPW * WARPS);
  if (blocks0 > 0x7fffffffLL) return cudaErrorInvalidValue;
  int per_sm = 0;
  cudaError_t e = skinny_blocks_per_sm(kernel, kThreads, 0, cache, &per_sm);
  if (e != cudaSuccess) return e;
  const SkinnySplit sp = skinny_plan(l, p.k, skinny_gemv_granule(W::kVec), blocks0,
                                     static_cast<long long>(per_sm) * dev.sms);
  if ((e = skinny_apply_plan(sp, l, &p)) != cudaSuccess) return e;
  if (RMS && p.splits != 1) return cudaErrorInvalidValue;  // a split sees part of each token
  // E4M3Traits::to_float returns value * 2^-8; each input's traits say what undoes its conversion.
  p.acc_scale = W::kAccScale * X::kAccScale;
  std::size_t smem = 0;
  if (l.spread &&
      (e = skinny_spread_smem(kernel, l.spread_per_sm(blocks0 * p.splits, dev.sms), per_sm, 0, dev, cache,
                              &smem)) != cudaSuccess)
    return e;
  e = skinny_launch_main(kernel, dim3(static_cast<unsigned>(blocks0), static_cast<unsigned>(p.splits)),
                         kThreads, smem, 1, p, dev, stream);
  return e != cudaSuccess ? e : skinny_finish(p, dev, stream);
}

/// Runs the GEMV on `stream`: rows_per_warp in {1, 2, 4}, threads in {128, 256}, l.p.n <= 8; `dev`
/// and `cache` are the caller's facts of the current device (skinny_device.hpp).
inline cudaError_t skinny_gemv(SkinnyIn in, int rows_per_warp, int threads, const SkinnyLaunch& l,
                               const SkinnyDevice& dev, SkinnyKernelCache* cache, cudaStream_t stream) {
  if (threads % 32 != 0) return cudaErrorInvalidValue;
  return skinny_dispatch_in(in, [&](auto tr) {
    using Tr = decltype(tr);
    return skinny_dispatch_int<1, 2, 4, 8>(skinny_gemv_token_tile(l.p.n), [&](auto mt) {
      return skinny_dispatch_int<1, 2, 4>(rows_per_warp, [&](auto rpw) {
        return skinny_dispatch_int<4, 8>(threads / 32, [&](auto warps) {
          return skinny_gemv_launch<Tr, Tr, mt.value, rpw.value, warps.value, false>(l, dev, cache, stream);
        });
      });
    });
  });
}

}  // namespace tunable::kernels
