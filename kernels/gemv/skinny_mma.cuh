// Tensor-core split-K skinny GEMM for decode (n <= 64 tokens), "swap A/B": the weight sits on the
// MMA's M side (16 rows per mma) and the tokens on its N side (8 per mma), so a handful of tokens
// wastes at most 7/8 of an MMA instead of 15/16 of a 16-row tile, and the tensor cores do the
// bf16/fp16/fp8 -> fp32 conversions the CUDA-core GEMV pays for.
//
// Block = KW warps on the same kBM = 16 * WM weight rows; the block's K range (one split) is cut
// into chunks of 4 * kVec elements (64 bytes per row) and warp w takes chunks w, w + KW, ... so the
// block streams each row contiguously (or, in the warp-contiguous variants, one contiguous part of
// the range per warp: SkinnyKOrder). Operands go straight from global memory into MMA registers
// (no shared-memory staging): lane (g, t) loads 16 bytes of rows g and g + 8 of each 16-row tile and
// of token g of each 8-token tile (the K permutation that makes this valid is explained at the
// element traits in common.cuh). kU chunks are loaded before any is used, so each lane keeps
// kU * WM * 2 = 8 weight loads in flight: the register-level equivalent of a multi-stage cp.async
// pipeline, without its shared-memory round trip. At the end the KW warps' accumulators are added in
// shared memory in warp order (deterministic), then written as y or as a split's fp32 partial.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "kernels/gemv/common.cuh"
#include "kernels/gemv/mma_epilogue.cuh"

namespace tunable::kernels {

/// Chunks a warp loads before using any: kU * WM * 2 = 8 weight loads in flight per lane.
constexpr int skinny_mma_unroll(int wm) { return 4 / wm; }

/// The K order of a block's warps over the block's range [kb, ke), cut into chunks of 4 * kVec
/// elements: stage s of a warp holds kU chunks. Interleaved (WC false): stages s = warp,
/// warp + kU * KW, ... hold chunks s + u * KW, so the KW warps stream each row together in 64-byte
/// pieces. Warp-contiguous (WC true): warp w owns chunks [w * per_warp, (w + 1) * per_warp) and
/// stage s = 0, 1, ... holds its local chunks s * kU + u, so each warp streams kU * 64 contiguous
/// bytes of a row per stage (faster per block when one wave covers the weight). elem() is lane t's
/// first K element of chunk u, or ke (predicated off, read as zero) past the range or the warp's
/// share.
template <bool WC, int kU, int KW, int kVec>
struct SkinnyKOrder {
  static constexpr int kChunk = 4 * kVec;
  int kb, ke, warp, t, per_warp;
  __device__ SkinnyKOrder(int kb_, int ke_, int warp_, int t_)
      : kb(kb_), ke(ke_), warp(warp_), t(t_), per_warp((chunks() + KW - 1) / KW) {}
  __device__ int chunks() const { return (ke - kb + kChunk - 1) / kChunk; }
  __device__ int first() const { return WC ? 0 : warp; }
  __device__ int step() const { return WC ? 1 : kU * KW; }
  __device__ int end() const { return WC ? (per_warp + kU - 1) / kU : chunks(); }
  __device__ int elem(int s, int u) const {
    if constexpr (WC) {
      const int local = s * kU + u;
      return local < per_warp ? kb + (warp * per_warp + local) * kChunk + t * kVec : ke;
    } else {
      return kb + (s + u * KW) * kChunk + t * kVec;
    }
  }
};

/// Blocks per SM the register allocation must allow: a 128-register budget (16 warps per SM),
/// except for fp8 with 32 x 64 tiles, whose operand conversions (sm_90 runs e4m3 mma.sync as
/// f16 HMMA) need more and would spill.
template <class Tr>
constexpr int skinny_mma_min_blocks(int wm, int wn, int kw) {
  return Tr::kBytes == 1 && wm * wn >= 16 ? 1 : 16 / kw;
}

/// WM: 16-row MMA tiles per block (rows = 16 * WM), WN: 8-token MMA tiles (n <= 8 * WN),
/// KW: warps splitting the block's K range, WC: warp-contiguous K order (SkinnyKOrder).
template <class Tr, int WM, int WN, int KW, bool WC>
__global__ void __launch_bounds__(KW * 32, skinny_mma_min_blocks<Tr>(WM, WN, KW))
    skinny_mma_kernel(const __grid_constant__ SkinnyParams p) {
  using namespace skinny_detail;
  constexpr int kVec = Tr::kVec;
  constexpr int kBM = 16 * WM;
  constexpr int kU = skinny_mma_unroll(WM);  // chunks in flight per warp
  extern __shared__ float red[];         // mma_block_epilogue's buffers

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * kBM;
  const int kb = blockIdx.y * p.kc;
  const int ke = min(p.k, kb + p.kc);
  const SkinnyKOrder<WC, kU, KW, kVec> ko(kb, ke, warp, t);
  skinny_prologue(p, row0, kBM, kb, ke, Tr::kBytes);

  // Rows past m and tokens past n read a valid row (the last); their sums are never written.
  const unsigned char* wrow[WM][2];
#pragma unroll
  for (int mt = 0; mt < WM; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = min(row0 + mt * 16 + h * 8 + g, p.m - 1);
      wrow[mt][h] = static_cast<const unsigned char*>(p.w) + static_cast<size_t>(row) * p.lda * Tr::kBytes;
    }
  }
  const unsigned char* xrow[WN];
#pragma unroll
  for (int nt = 0; nt < WN; ++nt) {
    xrow[nt] = static_cast<const unsigned char*>(p.x) +
               static_cast<size_t>(min(nt * 8 + g, p.n - 1)) * p.ldb * Tr::kBytes;
  }

  float acc[WM][WN][4];
#pragma unroll
  for (int mt = 0; mt < WM; ++mt) {
#pragma unroll
    for (int nt = 0; nt < WN; ++nt) {
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[mt][nt][q] = 0.f;
    }
  }

  for (int s = ko.first(); s < ko.end(); s += ko.step()) {
    uint4 a[kU][WM][2];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      // k and kc are multiples of kVec: a lane's 16 bytes are wholly inside [kb, ke) or outside.
      const int e = ko.elem(s, u);
      const size_t off = static_cast<size_t>(e) * Tr::kBytes;
#pragma unroll
      for (int mt = 0; mt < WM; ++mt) {
        a[u][mt][0] = ld_stream16(wrow[mt][0] + off, e < ke);
        a[u][mt][1] = ld_stream16(wrow[mt][1] + off, e < ke);
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int e = ko.elem(s, u);
      const size_t off = static_cast<size_t>(e) * Tr::kBytes;
#pragma unroll
      for (int nt = 0; nt < WN; ++nt) {
        // Past ke both operands are zero; every lane still joins the warp-wide mma.
        const uint4 b = ld_cached16(xrow[nt] + off, e < ke);
#pragma unroll
        for (int mt = 0; mt < WM; ++mt) mma_vec<Tr>(acc[mt][nt], a[u][mt][0], a[u][mt][1], b);
      }
    }
  }

  mma_block_epilogue<WM, WN, KW, 1>(p, acc, red, row0);
  skinny_trace_exit(p.w);
}

/// Rows of W one block covers.
constexpr int skinny_mma_block_rows(int wm) { return 16 * wm; }

/// K granule of one split: one chunk per warp.
constexpr int skinny_mma_granule(int vec, int kw) { return 4 * vec * kw; }

// ---- register double-buffered variant ("mmap") -------------------------------------------------
//
// Same tiling, K permutation, reduction and epilogue as skinny_mma_kernel, but the weight loads are
// software-pipelined over two register stages: the loads of iteration i + 1 are issued before the
// MMAs of iteration i, so a lane never waits with an empty queue (the plain kernel drains its 8
// loads before issuing the next 8). Up to 2 x kU x WM x 2 = 16 16-byte weight loads in flight per
// lane, 8 at the least, instead of 8 falling to 0 once per iteration.

/// Blocks per SM the pipelined kernel's register allocation must allow: the two stages take 64
/// registers, so small accumulator tiles (WM * WN <= 2: n <= 16 at 16 rows, n <= 8 at 32) keep the
/// 128-register budget (16 warps per SM) and larger ones get 255 registers (8 warps per SM).
template <class Tr>
constexpr int skinny_mmap_min_blocks(int wm, int wn, int kw) {
  const int per_sm_warps = wm * wn <= 2 && !(Tr::kBytes == 1 && wm * wn == 2) ? 16 : 8;
  // KW = 16 with the large tiles: one block of 16 warps, so 128 registers and spills (those
  // variants are named and tested, not offered: candidate_configs keeps mmap wk16 to 16 rows and
  // n <= 16).
  return per_sm_warps / kw > 0 ? per_sm_warps / kw : 1;
}

/// CS > 1: cluster split-K. The CS blocks of a (1, CS, 1) thread-block cluster (sm_90) take the CS
/// K ranges of one row block (gridDim.y == CS, p.kc per range, p.splits == 1); each leaves its
/// block sums in shared memory and cluster rank 0 adds them over distributed shared memory in rank
/// order (deterministic) and writes y: split-K without partials in global memory and without the
/// second (reduction) kernel.
/// WC: warp-contiguous K order (SkinnyKOrder).
template <class Tr, int WM, int WN, int KW, int CS, bool WC>
__global__ void __launch_bounds__(KW * 32, skinny_mmap_min_blocks<Tr>(WM, WN, KW))
    skinny_mmap_kernel(const __grid_constant__ SkinnyParams p) {
  using namespace skinny_detail;
  constexpr int kVec = Tr::kVec;
  constexpr int kBM = 16 * WM;
  constexpr int kU = skinny_mma_unroll(WM);
  extern __shared__ float red[];         // mma_block_epilogue's buffers

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * kBM;
  const int kb = blockIdx.y * p.kc;
  const int ke = min(p.k, kb + p.kc);
  const SkinnyKOrder<WC, kU, KW, kVec> ko(kb, ke, warp, t);
  skinny_prologue(p, row0, kBM, kb, ke, Tr::kBytes);

  const unsigned char* wrow[WM][2];
#pragma unroll
  for (int mt = 0; mt < WM; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = min(row0 + mt * 16 + h * 8 + g, p.m - 1);
      wrow[mt][h] = static_cast<const unsigned char*>(p.w) + static_cast<size_t>(row) * p.lda * Tr::kBytes;
    }
  }
  const unsigned char* xrow[WN];
#pragma unroll
  for (int nt = 0; nt < WN; ++nt) {
    xrow[nt] = static_cast<const unsigned char*>(p.x) +
               static_cast<size_t>(min(nt * 8 + g, p.n - 1)) * p.ldb * Tr::kBytes;
  }

  float acc[WM][WN][4];
#pragma unroll
  for (int mt = 0; mt < WM; ++mt) {
#pragma unroll
    for (int nt = 0; nt < WN; ++nt) {
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[mt][nt][q] = 0.f;
    }
  }

  // Stage s's loads (SkinnyKOrder); past ke they are predicated off and read as 0.
  auto load = [&](uint4 (&a)[kU][WM][2], int s) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int e = ko.elem(s, u);
      const size_t off = static_cast<size_t>(e) * Tr::kBytes;
#pragma unroll
      for (int mt = 0; mt < WM; ++mt) {
        a[u][mt][0] = ld_stream16(wrow[mt][0] + off, e < ke);
        a[u][mt][1] = ld_stream16(wrow[mt][1] + off, e < ke);
      }
    }
  };
  auto compute = [&](const uint4 (&a)[kU][WM][2], int s) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int e = ko.elem(s, u);
      const size_t off = static_cast<size_t>(e) * Tr::kBytes;
#pragma unroll
      for (int nt = 0; nt < WN; ++nt) {
        const uint4 b = ld_cached16(xrow[nt] + off, e < ke);
#pragma unroll
        for (int mt = 0; mt < WM; ++mt) mma_vec<Tr>(acc[mt][nt], a[u][mt][0], a[u][mt][1], b);
      }
    }
  };

  // Two named stages and a loop unrolled by two, so no register moves between stages.
  const int step = ko.step(), end = ko.end();
  uint4 s0[kU][WM][2], s1[kU][WM][2];
  int s = ko.first();
  if (s < end) load(s0, s);
  while (s < end) {
    if (s + step < end) load(s1, s + step);
    compute(s0, s);
    s += step;
    if (s >= end) break;
    if (s + step < end) load(s0, s + step);
    compute(s1, s);
    s += step;
  }

  mma_block_epilogue<WM, WN, KW, CS>(p, acc, red, row0);
  skinny_trace_exit(p.w);
}

/// Launches either MMA kernel (`kernel`: WM row tiles, KW warps, CS-block clusters): an unsplit,
/// split-K (partials and the reduction kernel) or cluster split-K grid.
template <class Tr, int WM, int KW, int CS, class Kernel>
cudaError_t skinny_mma_family_launch(Kernel kernel, std::size_t smem, const SkinnyLaunch& l,
                                     const SkinnyDevice& dev, SkinnyKernelCache* cache, cudaStream_t stream) {
  constexpr int kThreads = KW * 32;
  // bf16/fp16 mma.sync exists from sm_80 on, e4m3 from sm_89, clusters from sm_90; code built for
  // older targets traps.
  const int need = CS > 1 ? 90 : Tr::kBytes == 1 ? 89 : 80;
  if (dev.cc < need || dev.ptx_version < need) return cudaErrorNotSupported;
  SkinnyParams p = l.p;
  const long long blocks0 = (static_cast<long long>(p.m) + 16 * WM - 1) / (16 * WM);
  if (blocks0 > 0x7fffffffLL) return cudaErrorInvalidValue;
  // Also raises the dynamic shared-memory limit when the tile needs more than 48 KiB (bm32 x 64).
  int per_sm = 0;
  cudaError_t e = skinny_blocks_per_sm(kernel, kThreads, smem, cache, &per_sm);
  if (e != cudaSuccess) return e;
  const int granule = skinny_mma_granule(Tr::kVec, KW);
  if constexpr (CS > 1) {
    const int granules = (p.k + granule - 1) / granule;
    p.kc = (granules + CS - 1) / CS * granule;  // ranks past the last granule add zeros
    p.splits = 1;
  } else {
    const SkinnySplit sp = skinny_plan(l, p.k, granule, blocks0, static_cast<long long>(per_sm) * dev.sms);
    if ((e = skinny_apply_plan(sp, l, &p)) != cudaSuccess) return e;
  }
  p.acc_scale = 1.f;
  const dim3 grid(static_cast<unsigned>(blocks0), CS > 1 ? CS : static_cast<unsigned>(p.splits));
  std::size_t launch_smem = smem;
  if (CS == 1 && l.spread &&
      (e = skinny_spread_smem(kernel, l.spread_per_sm(blocks0 * p.splits, dev.sms), per_sm, smem, dev, cache,
                              &launch_smem)) != cudaSuccess)
    return e;
  e = skinny_launch_main(kernel, grid, kThreads, launch_smem, CS, p, dev, stream);
  return e != cudaSuccess ? e : skinny_finish(p, dev, stream);
}

/// Calls fn(integral_constant<KW>) for k_warps in {4, 8, 16}; 16 only where `with16`. 16 warps on
/// one block hold a whole SM's 16 warps (the 128-register budget), so grids of 128-264 row blocks
/// fill the device without split-K, and every row of a 16-row block has 4 KB of loads in flight.
template <bool with16, class Fn>
cudaError_t skinny_dispatch_k_warps(int k_warps, Fn&& fn) {
  if constexpr (with16) return skinny_dispatch_int<4, 8, 16>(k_warps, std::forward<Fn>(fn));
  return skinny_dispatch_int<4, 8>(k_warps, std::forward<Fn>(fn));
}

/// Runs the pipelined MMA kernel on `stream`: block_rows in {16, 32}, k_warps in {4, 8} (and 16 at
/// 16 rows), n <= 64;
/// l.cluster in {0, 1, 2, 4}: > 1 splits K over a thread-block cluster (sm_90; l.splits ignored);
/// warp_contiguous: the warp-contiguous K order (SkinnyKOrder). `dev` and `cache` are the caller's
/// facts of the current device (skinny_device.hpp).
inline cudaError_t skinny_mmap(SkinnyIn in, int block_rows, int k_warps, bool warp_contiguous,
                               const SkinnyLaunch& l, const SkinnyDevice& dev, SkinnyKernelCache* cache,
                               cudaStream_t stream) {
  if (block_rows % 16 != 0) return cudaErrorInvalidValue;
  return skinny_dispatch_in(in, [&](auto tr) {
    using Tr = decltype(tr);
    return skinny_dispatch_int<1, 2>(block_rows / 16, [&](auto wm) {
      return skinny_dispatch_int<1, 2, 4, 8>(skinny_mma_token_tiles(l.p.n), [&](auto wn) {
        return skinny_dispatch_k_warps<wm.value == 1>(k_warps, [&](auto kw) {
          return skinny_dispatch_int<1, 2, 4>(l.cluster > 1 ? l.cluster : 1, [&](auto cs) {
            constexpr int WM = wm.value, WN = wn.value, KW = kw.value, CS = cs.value;
            constexpr std::size_t smem = skinny_detail::mma_epilogue_smem(WM, WN, KW, CS);
            const auto kernel = warp_contiguous ? skinny_mmap_kernel<Tr, WM, WN, KW, CS, true>
                                                : skinny_mmap_kernel<Tr, WM, WN, KW, CS, false>;
            return skinny_mma_family_launch<Tr, WM, KW, CS>(kernel, smem, l, dev, cache, stream);
          });
        });
      });
    });
  });
}

/// Runs the MMA kernel on `stream`: block_rows in {16, 32}, k_warps in {4, 8, 16}, l.p.n <= 64;
/// warp_contiguous: the warp-contiguous K order (SkinnyKOrder). `dev` and `cache` are the caller's
/// facts of the current device (skinny_device.hpp).
inline cudaError_t skinny_mma(SkinnyIn in, int block_rows, int k_warps, bool warp_contiguous,
                              const SkinnyLaunch& l, const SkinnyDevice& dev, SkinnyKernelCache* cache,
                              cudaStream_t stream) {
  if (block_rows % 16 != 0) return cudaErrorInvalidValue;
  return skinny_dispatch_in(in, [&](auto tr) {
    using Tr = decltype(tr);
    return skinny_dispatch_int<1, 2>(block_rows / 16, [&](auto wm) {
      return skinny_dispatch_int<1, 2, 4, 8>(skinny_mma_token_tiles(l.p.n), [&](auto wn) {
        return skinny_dispatch_k_warps<true>(k_warps, [&](auto kw) {
          constexpr int WM = wm.value, WN = wn.value, KW = kw.value;
          constexpr std::size_t smem = skinny_detail::mma_epilogue_smem(WM, WN, KW, 1);
          if (l.cluster > 1) return cudaErrorInvalidValue;
          const auto kernel = warp_contiguous ? skinny_mma_kernel<Tr, WM, WN, KW, true>
                                              : skinny_mma_kernel<Tr, WM, WN, KW, false>;
          return skinny_mma_family_launch<Tr, WM, KW, 1>(kernel, smem, l, dev, cache, stream);
        });
      });
    });
  });
}

}  // namespace tunable::kernels
