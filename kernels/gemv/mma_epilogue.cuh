// The end of every tensor-core skinny kernel (skinny_mma.cuh: mma and mmap): the warps'
// accumulators added across the block, then written, left as a split's partial, or added across a
// thread-block cluster.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/gemv/common.cuh"

namespace tunable::kernels {

/// Smallest number of 8-token tiles (1, 2, 4, 8) holding n tokens; 0 when n > 64.
constexpr int skinny_mma_token_tiles(int n) {
  return n <= 8 ? 1 : n <= 16 ? 2 : n <= 32 ? 4 : n <= 64 ? 8 : 0;
}

namespace skinny_detail {

/// End of every MMA kernel (block of KW warps on 16 * WM rows and 8 * WN tokens, each warp holding
/// the sums of its own K range): the warps' accumulators meet in shared memory (`red`, of
/// mma_epilogue_smem bytes) and are added in warp order;
/// CS == 1 emits the block's sums (y, or split blockIdx.y's partial), CS > 1 adds the CS blocks of
/// the (1, CS, 1) cluster over distributed shared memory in rank order and rank 0 writes y. Fixed
/// order throughout, so deterministic. Only the block's first `rows` rows are written (the paired
/// TMA kernel's single-tile blocks hold 16 rows of a 32-row buffer). RMS (SkinnyParams::rms, one
/// token tile and no cluster): `tok_ss` holds the shared [KW][8] sums of squares of each warp's share
/// of each token, written before the call; token j's sums scale by rms_factor.
template <int WM, int WN, int KW, int CS, bool RMS = false>
__device__ __forceinline__ void mma_block_epilogue(const SkinnyParams& p, const float (&acc)[WM][WN][4],
                                                   float* red, int row0, int rows = 16 * WM,
                                                   const float* tok_ss = nullptr) {
  static_assert(!RMS || (WN == 1 && CS == 1), "the RMS sums are per 8-token tile, reduced in one block");
  constexpr int kBM = 16 * WM, kTok = 8 * WN;
  constexpr int kSB = kBM + 4;  // padded row of the reduction buffer: conflict-free stores
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  // Accumulator (mt, nt) of lane (g, t): rows mt*16 + g (+8), tokens nt*8 + 2t (+1).
  // Warps past KW (the TMA kernel's producer) hold no sums; they only join the barriers.
  const bool mma_warp = warp < KW;
  float* mine = red + warp * kTok * kSB;
  if (mma_warp) {
#pragma unroll
    for (int mt = 0; mt < WM; ++mt) {
#pragma unroll
      for (int nt = 0; nt < WN; ++nt) {
        const int r = mt * 16 + g, j = nt * 8 + 2 * t;
        mine[j * kSB + r] = acc[mt][nt][0];
        mine[(j + 1) * kSB + r] = acc[mt][nt][1];
        mine[j * kSB + r + 8] = acc[mt][nt][2];
        mine[(j + 1) * kSB + r + 8] = acc[mt][nt][3];
      }
    }
  }
  __syncthreads();
  const int ntok = min(kTok, p.n);
  const float scale = result_scale(p);
  if constexpr (CS == 1) {
    for (int o = threadIdx.x; mma_warp && o < kBM * ntok; o += KW * 32) {
      const int r = o % kBM, j = o / kBM, row = row0 + r;
      if (row >= p.m || r >= rows) continue;
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < KW; ++w) s += red[(w * kTok + j) * kSB + r];
      if constexpr (RMS) {
        float q = 0.f;
#pragma unroll
        for (int w = 0; w < KW; ++w) q += tok_ss[w * 8 + j];
        s *= rms_factor(p, q);
      }
      emit(p, row, j, s, scale);
    }
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    float* fin = red + KW * kTok * kSB;  // [kTok][kBM]: this block's sums over its K range
    for (int o = threadIdx.x; mma_warp && o < kBM * ntok; o += KW * 32) {
      const int r = o % kBM, j = o / kBM;
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < KW; ++w) s += red[(w * kTok + j) * kSB + r];
      fin[j * kBM + r] = s;
    }
    cluster.sync();  // every rank's fin is written and visible cluster-wide
    if (cluster.block_rank() == 0) {
      const float* src[CS];
#pragma unroll
      for (int c = 0; c < CS; ++c) src[c] = cluster.map_shared_rank(fin, c);
      for (int o = threadIdx.x; mma_warp && o < kBM * ntok; o += KW * 32) {
        const int r = o % kBM, j = o / kBM, row = row0 + r;
        if (row >= p.m) continue;
        float s = 0.f;
#pragma unroll
        for (int c = 0; c < CS; ++c) s += src[c][j * kBM + r];
        write_result(p, row, j, s, scale);
      }
    }
    cluster.sync();  // no rank exits while rank 0 may still read its shared memory
#else
    __trap();  // launchers refuse cluster variants below sm_90
#endif
  }
}

/// Dynamic shared memory of mma_block_epilogue: the cross-warp buffer, plus the block's sums that
/// the cluster reads when CS > 1.
constexpr std::size_t mma_epilogue_smem(int wm, int wn, int kw, int cs) {
  return (static_cast<std::size_t>(kw) * 8 * wn * (16 * wm + 4) + (cs > 1 ? std::size_t{8} * wn * 16 * wm : 0)) *
         sizeof(float);
}

}  // namespace skinny_detail

}  // namespace tunable::kernels
