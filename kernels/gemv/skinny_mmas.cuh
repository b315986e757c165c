// Tensor-core skinny GEMM with the weight streamed through a deep shared-memory cp.async pipeline
// ("mmas"), the activations read through L1 as in the register kernels.
//
// Why (bench/NOTES-skinny.md, rounds 2-4): the register-direct MMA kernels (skinny_mma.cuh) hold at
// most 8-16 16-byte weight loads per lane, and only while the warp is not waiting for x. Here the
// weight goes global -> shared with cp.async (16 bytes per lane, L2 only, no register destination),
// S stages of 512 bytes per row ahead, so a block keeps (S - 1) * BM * 512 bytes of weight in
// flight whatever its warps are doing. Round 4 measured two other feeds first: x staged through
// the same cp.async pipeline (every block re-fetches x from L2, and the SM's total fill rate, x
// included, topped out near the copy rate) and one bulk copy (TMA) per 512-byte row (2-8x slower:
// small bulk copies are issue-bound). x stays on the L1-cached path, where the blocks of an SM
// share it.
//
// Block = KW warps on BM = 16 * WM weight rows and one K range (split blockIdx.y, or cluster rank).
// A stage is 8 chunks of 64 bytes per row; warp w takes chunks w, w + KW, ...; within a chunk lane
// (g, t) reads 16 bytes of weight rows g and g + 8 from shared memory and 16 bytes of token g from
// global memory at the same K offset t * 16 bytes, the K permutation the register kernels use
// (common.cuh, mma_vec). mma_block_epilogue adds the warps in warp order. Rows are padded to
// 528 bytes in shared memory so the lanes' 16-byte reads take the minimum 4 wavefronts. Weight
// bytes past the K range are zero-filled by cp.async (src-size 0: no read) and x past it reads as
// zero; rows past m read row m - 1 and tokens past n token n - 1, whose sums are never written.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "kernels/gemv/common.cuh"
#include "kernels/gemv/mma_epilogue.cuh"

namespace tunable::kernels {

namespace skinny_detail {

constexpr int kMmasRowBytes = 512;                // bytes of one weight row per stage
constexpr int kMmasPitch = kMmasRowBytes + 16;    // shared-memory row pitch (bank skew of 16 bytes)
constexpr int kMmasChunks = kMmasRowBytes / 64;   // 64-byte chunks (two MMAs each) per stage
constexpr std::size_t kMmasSmemBudget = 100 * 1024;  // stage memory per block: 2 blocks per SM

/// 16 bytes global -> shared, L2 only, evict-first (the weight is read once); zeros and no read
/// when !pred.
__device__ __forceinline__ void cp_async16_stream(unsigned dst, const void* src, bool pred,
                                                  unsigned long long policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(pred ? 16 : 0), "l"(policy));
#else
  (void)dst, (void)src, (void)pred, (void)policy;
  __trap();
#endif
}

__device__ __forceinline__ unsigned long long l2_policy_evict_first() {
  unsigned long long p = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
#endif
  return p;
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

__device__ __forceinline__ uint4 lds16(unsigned addr) {
  uint4 r;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(addr));
  return r;
}

}  // namespace skinny_detail

/// Pipeline depth: as many stages of 16 * wm padded weight rows as fit the per-block budget, 2 to 8.
constexpr int skinny_mmas_stages(int wm) {
  const std::size_t stage = static_cast<std::size_t>(16 * wm) * skinny_detail::kMmasPitch;
  const std::size_t s = skinny_detail::kMmasSmemBudget / stage;
  return s < 2 ? 2 : s > 8 ? 8 : static_cast<int>(s);
}

/// Dynamic shared memory of one block: the stages, reused by the epilogue once they are drained.
constexpr std::size_t skinny_mmas_smem(int wm, int wn, int kw, int cs) {
  const std::size_t stages = static_cast<std::size_t>(skinny_mmas_stages(wm)) * 16 * wm * skinny_detail::kMmasPitch;
  const std::size_t epi = skinny_detail::mma_epilogue_smem(wm, wn, kw, cs);
  return stages > epi ? stages : epi;
}

/// K granule of one split: one 64-byte chunk of every row for each of the 4 warps.
constexpr int skinny_mmas_granule(int vec) { return 16 * vec; }

/// WM: 16-row MMA tiles per block, WN: 8-token tiles (n <= 8 * WN), KW: warps sharing each stage's
/// k-steps, CS: cluster split-K size (1 = none; see skinny_mmap_kernel).
template <class Tr, int WM, int WN, int KW, int CS>
__global__ void __launch_bounds__(KW * 32) skinny_mmas_kernel(const __grid_constant__ SkinnyParams p) {
  using namespace skinny_detail;
  constexpr int kBM = 16 * WM;
  constexpr int kVec = Tr::kVec;
  constexpr int kStageK = kMmasRowBytes / Tr::kBytes;  // K elements per stage
  constexpr int kStageBytes = kBM * kMmasPitch;
  constexpr int kS = skinny_mmas_stages(WM);
  static_assert(kMmasChunks % KW == 0 && kBM % KW == 0, "warps must divide a stage's chunks and rows");
  extern __shared__ __align__(16) unsigned char smem[];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * kBM;
  const int kb = blockIdx.y * p.kc;
  const int ke = max(kb, min(p.k, kb + p.kc));  // cluster ranks past k get an empty range
  const int nst = (ke - kb + kStageK - 1) / kStageK;
  skinny_prologue(p, row0, kBM, kb, ke, Tr::kBytes);

  const unsigned sbase = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const unsigned long long pol_w = l2_policy_evict_first();
  // Warp w copies weight rows w, w + KW, ... of a stage; lane l the 16 bytes at l * 16 of each.
  auto issue = [&](int st) {
    const unsigned dst0 = sbase + (st % kS) * kStageBytes + lane * 16;
    const int e = kb + st * kStageK + lane * kVec;
    const bool in_k = e < ke;
    const size_t off = static_cast<size_t>(in_k ? e : kb) * Tr::kBytes;
#pragma unroll
    for (int i = 0; i < kBM / KW; ++i) {
      const int r = warp + i * KW;
      const int row = min(row0 + r, p.m - 1);
      const unsigned char* src = static_cast<const unsigned char*>(p.w) + static_cast<size_t>(row) * p.lda * Tr::kBytes + off;
      cp_async16_stream(dst0 + r * kMmasPitch, src, in_k, pol_w);
    }
  };

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
  // Lane (g, t)'s weight bytes in a stage: row g (+8) of each 16-row tile, byte t * 16 of a chunk.
  const unsigned a_lane = g * kMmasPitch + t * 16;

#pragma unroll
  for (int s = 0; s < kS - 1; ++s) {
    if (s < nst) issue(s);
    cp_async_commit();  // empty groups keep the wait count uniform
  }
  for (int it = 0; it < nst; ++it) {
    // x first: its L1/L2 round trip overlaps the wait for the stage.
    uint4 b[kMmasChunks / KW][WN];
#pragma unroll
    for (int u = 0; u < kMmasChunks / KW; ++u) {
      const int e = kb + it * kStageK + (u * KW + warp) * 4 * kVec + t * kVec;
      const size_t off = static_cast<size_t>(e) * Tr::kBytes;
#pragma unroll
      for (int nt = 0; nt < WN; ++nt) b[u][nt] = ld_cached16(xrow[nt] + off, e < ke);
    }
    cp_async_wait<kS - 2>();  // this thread's copies of stage `it` have landed ...
    __syncthreads();          // ... everyone's too, and stage it - 1's buffer is no longer read
    if (it + kS - 1 < nst) issue(it + kS - 1);
    cp_async_commit();
    const unsigned sb = sbase + (it % kS) * kStageBytes + a_lane;
#pragma unroll
    for (int u = 0; u < kMmasChunks / KW; ++u) {
      const unsigned cb = sb + (u * KW + warp) * 64;
#pragma unroll
      for (int mt = 0; mt < WM; ++mt) {
        const uint4 a0 = lds16(cb + mt * 16 * kMmasPitch), a1 = lds16(cb + (mt * 16 + 8) * kMmasPitch);
#pragma unroll
        for (int nt = 0; nt < WN; ++nt) mma_vec<Tr>(acc[mt][nt], a0, a1, b[u][nt]);
      }
    }
  }
  cp_async_wait<0>();  // only empty groups remain; the stages become the epilogue's buffers
  __syncthreads();
  mma_block_epilogue<WM, WN, KW, CS>(p, acc, reinterpret_cast<float*>(smem), row0);
}

template <class Tr, int WM, int WN, int KW, int CS>
cudaError_t skinny_mmas_launch(const SkinnyLaunch& l, const SkinnyDevice& dev, cudaStream_t stream) {
  const auto kernel = skinny_mmas_kernel<Tr, WM, WN, KW, CS>;
  constexpr int kThreads = KW * 32;
  constexpr std::size_t kSmem = skinny_mmas_smem(WM, WN, KW, CS);
  const int need = CS > 1 ? 90 : Tr::kBytes == 1 ? 89 : 80;
  if (dev.cc < need || dev.ptx_version < need) return cudaErrorNotSupported;
  SkinnyParams p = l.p;
  const long long rb = (static_cast<long long>(p.m) + 16 * WM - 1) / (16 * WM);
  if (rb > 0x7fffffffLL) return cudaErrorInvalidValue;
  int per_sm = 0;  // also raises the kernel's dynamic shared-memory limit above 48 KiB
  cudaError_t e = skinny_blocks_per_sm(kernel, kThreads, kSmem, dev.ordinal, &per_sm);
  if (e != cudaSuccess) return e;
  const int granule = skinny_mmas_granule(Tr::kVec);
  p.acc_scale = 1.f;
  if constexpr (CS > 1) {
    const int granules = (p.k + granule - 1) / granule;
    p.kc = (granules + CS - 1) / CS * granule;  // ranks past the last granule add zeros
    p.splits = 1;
    e = skinny_launch_main(kernel, dim3(static_cast<unsigned>(rb), CS), kThreads, kSmem, CS, p, dev, stream);
    return e != cudaSuccess ? e : skinny_finish(p, dev, stream);
  }
  const SkinnySplit sp = skinny_plan(l, p.k, granule, rb, static_cast<long long>(per_sm) * dev.sms);
  if ((e = skinny_apply_plan(sp, l, &p)) != cudaSuccess) return e;
  e = skinny_launch_main(kernel, dim3(static_cast<unsigned>(rb), static_cast<unsigned>(p.splits)), kThreads,
                         kSmem, 1, p, dev, stream);
  return e != cudaSuccess ? e : skinny_finish(p, dev, stream);
}

/// Runs the shared-memory pipelined MMA kernel on `stream`: block_rows in {16, 32, 64}, 4 warps,
/// l.p.n <= 64; l.cluster in {0, 1, 2, 4, 8}: > 1 splits K over a thread-block cluster (sm_90).
cudaError_t skinny_mmas(SkinnyIn in, int block_rows, int k_warps, const SkinnyLaunch& l, cudaStream_t stream);

}  // namespace tunable::kernels
