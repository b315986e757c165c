// Weight-only FP8 GEMV on CUDA cores (n <= 8 tokens): the weight-only problem of skinny_wo.cuh
// (e4m3 weights with row scales, bf16/fp16 tokens) in the shape of skinny_gemv.cuh, whose bf16
// kernels stream decode weights at the copy rate with less per-call cost than the MMA kernels
// (no cross-warp reduction in shared memory, one warp per row from the first load).
//
// Warp w of a block owns RPW consecutive weight rows; lane l reads 16-byte vectors (16 e4m3) l,
// l + 32, ... of each, kU * RPW loads in flight. Each weight vector is converted once (the byte
// trick of E4M3Traits: value * 2^-8, undone by acc_scale) and meets the 32 bytes of each token at
// the same K offset, converted once for the warp's RPW rows. Sums are reduced once per warp
// (transpose-reduction); splits leave fp32 partials for the split-K reduction, which applies the
// row scale as the unsplit epilogue does.
#pragma once

#include <cuda_runtime.h>

#include "kernels/gemv/common.cuh"
#include "kernels/gemv/skinny_gemv.cuh"

namespace tunable::kernels {

/// X: the tokens' traits (Bf16Traits, F16Traits); MT: token tile (n <= MT), RPW: weight rows per
/// warp, WARPS: warps per block; RMS: SkinnyParams::rms (every warp reads each token's whole row,
/// so it sums the squares of the values it converts anyway and needs no other load). 128 registers
/// (16 warps per SM), as skinny_gemv_kernel.
template <class X, int MT, int RPW, int WARPS, bool RMS>
__global__ void __launch_bounds__(WARPS * 32, 16 / WARPS)
    skinny_wov_kernel(const __grid_constant__ SkinnyParams p) {
  using namespace skinny_detail;
  static_assert(RPW * MT <= 32, "one warp reduces at most 32 sums");
  constexpr int kVec = E4M3Traits::kVec;  // weight elements per 16-byte load
  constexpr int kU = skinny_gemv_unroll(MT, RPW);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row0 = (blockIdx.x * WARPS + warp) * RPW;
  const int kb = blockIdx.y * p.kc;
  const int ke = min(p.k, kb + p.kc);
  const int ve = ke / kVec;  // k and kc are multiples of 16
  skinny_prologue(p, blockIdx.x * WARPS * RPW, WARPS * RPW, kb, ke, 1);

  // Rows past m and tokens past n read a valid row (the last); their sums are never written.
  const unsigned char* wrow[RPW];
#pragma unroll
  for (int r = 0; r < RPW; ++r)
    wrow[r] = static_cast<const unsigned char*>(p.w) + static_cast<size_t>(min(row0 + r, p.m - 1)) * p.lda;
  const unsigned char* xrow[MT];
#pragma unroll
  for (int j = 0; j < MT; ++j)
    xrow[j] = static_cast<const unsigned char*>(p.x) + static_cast<size_t>(min(j, p.n - 1)) * p.ldb * 2;

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
      for (int r = 0; r < RPW; ++r) E4M3Traits::to_float(w[u][r], wf[r]);
#pragma unroll
      for (int j = 0; j < MT; ++j) {
        static_assert(2 * X::kVec == kVec, "one weight vector meets two token vectors");
        float lo[X::kVec], hi[X::kVec];  // the token's elements 0-7 and 8-15 of this vector
        const unsigned char* xp = xrow[j] + static_cast<size_t>(v) * 32;
        X::to_float(ld_cached16(xp, v < ve), lo);
        X::to_float(ld_cached16(xp + 16, v < ve), hi);
        if constexpr (RMS) {
#pragma unroll
          for (int e = 0; e < X::kVec; ++e) ss[j] = fmaf(hi[e], hi[e], fmaf(lo[e], lo[e], ss[j]));
        }
#pragma unroll
        for (int r = 0; r < RPW; ++r) {
#pragma unroll
          for (int e = 0; e < X::kVec; ++e) {
            acc[r * MT + j] = fmaf(wf[r][e], lo[e], acc[r * MT + j]);
            acc[r * MT + j] = fmaf(wf[r][X::kVec + e], hi[e], acc[r * MT + j]);
          }
        }
      }
    }
  }

  warp_sum_transposed<RPW * MT>(acc, lane);
  constexpr int kGroup = 32 / (RPW * MT);
  const int idx = lane / kGroup;
  const int row = row0 + idx / MT, j = idx % MT;
  float f = 1.f;  // RMS: token j's factor; the launcher allows one split only, so ss covers all of k
  if constexpr (RMS) {
#pragma unroll
    for (int jj = 0; jj < MT; ++jj) {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) ss[jj] += __shfl_xor_sync(0xffffffffu, ss[jj], off);
      if (jj == j) f = rms_factor(p, ss[jj]);
    }
  }
  if (lane % kGroup == 0 && row < p.m && j < p.n) emit(p, row, j, acc[0] * f, result_scale(p));
  skinny_trace_exit(p.w);
}

template <class X, int MT, int RPW, int WARPS, bool RMS>
cudaError_t skinny_wov_launch(const SkinnyLaunch& l, const SkinnyDevice& dev, SkinnyKernelCache* cache,
                              cudaStream_t stream) {
  const auto kernel = skinny_wov_kernel<X, MT, RPW, WARPS, RMS>;
  constexpr int kThreads = WARPS * 32;
  SkinnyParams p = l.p;
  const long long blocks0 = (static_cast<long long>(p.m) + RPW * WARPS - 1) / (RPW * WARPS);
  if (blocks0 > 0x7fffffffLL) return cudaErrorInvalidValue;
  int per_sm = 0;
  cudaError_t e = skinny_blocks_per_sm(kernel, kThreads, 0, cache, &per_sm);
  if (e != cudaSuccess) return e;
  const SkinnySplit sp = skinny_plan(l, p.k, skinny_gemv_granule(skinny_detail::E4M3Traits::kVec), blocks0,
                                     static_cast<long long>(per_sm) * dev.sms);
  if ((e = skinny_apply_plan(sp, l, &p)) != cudaSuccess) return e;
  if (RMS && p.splits != 1) return cudaErrorInvalidValue;  // a split sees part of each token
  p.acc_scale = 256.f;  // the weight's conversion gives value * 2^-8; the tokens' is exact
  e = skinny_launch_main(kernel, dim3(static_cast<unsigned>(blocks0), static_cast<unsigned>(p.splits)), kThreads,
                         0, 1, p, dev, stream);
  return e != cudaSuccess ? e : skinny_finish(p, dev, stream);
}

/// Runs the weight-only GEMV on `stream`: rows_per_warp in {1, 2, 4}, 256 threads, l.p.n <= 8,
/// l.p.out bf16 or fp16 (the tokens' type), l.p.row_scale set and l.p.col_scale null; with l.p.rms
/// one split (l.splits 1).
inline cudaError_t skinny_wov(int rows_per_warp, int threads, const SkinnyLaunch& l, const SkinnyDevice& dev,
                              SkinnyKernelCache* cache, cudaStream_t stream) {
  using namespace skinny_detail;
  if (threads != 256 || l.p.n < 1 || l.p.n > 8 || l.p.row_scale == nullptr || l.p.col_scale != nullptr)
    return cudaErrorInvalidValue;
  auto run = [&](auto x) {
    using X = decltype(x);
    return skinny_dispatch_int<1, 2, 4, 8>(skinny_gemv_token_tile(l.p.n), [&](auto mt) {
      return skinny_dispatch_int<1, 2, 4>(rows_per_warp, [&](auto rpw) {
        return l.p.rms ? skinny_wov_launch<X, mt.value, rpw.value, 8, true>(l, dev, cache, stream)
                       : skinny_wov_launch<X, mt.value, rpw.value, 8, false>(l, dev, cache, stream);
      });
    });
  };
  if (l.p.out == SkinnyOut::kBF16) return run(Bf16Traits{});
  if (l.p.out == SkinnyOut::kF16) return run(F16Traits{});
  return cudaErrorInvalidValue;
}

}  // namespace tunable::kernels
