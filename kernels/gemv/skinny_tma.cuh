// Tensor-core skinny GEMM with the weight fed by TMA ("mmt").
//
// Why a third MMA kernel: the register-fed ones (skinny_mma.cuh) stream their weight through the
// LSU and L1 (every in-flight 16-byte load holds an L1 miss entry and registers), and measure 8-13 %
// slower per block than the GEMV on the same bytes (H100); the shared-memory feeds tried so
// far (cp.async, one bulk copy per row) paid per-thread issue or ~100 copies per stage. A 2-D tensor
// map moves a whole 16-row x 128-byte box per instruction from L2 into shared memory without the
// LSU, L1 or registers, so one producer lane keeps Stages x Boxes x 2 KB of a block's weight in flight.
//
// Block = KW consumer warps + 1 producer warp on 16 weight rows. Stage = Boxes boxes of 16 rows x
// 128 bytes (Boxes x 128 bytes of each row), 128-byte swizzled, Stages of them in a ring; consumer
// warp w takes the stage's 64-byte groups w, w + KW, ... (lane (g, t) takes 16 bytes of rows g and
// g + 8 and of token g, the MMA fragment of common.cuh), x through L1 one stage ahead. The bytes
// of a row per stage matter most (measured on the H100: 4 boxes 5-13 % slower than mmap; 8-16
// boxes up to 11 % faster on the rows mmap misses), so the shape is a template parameter.
// Full/empty mbarriers per stage; rows past m and K past k arrive as zeros (tensor-map bounds).
// Split-K as the other kernels (partials and the reduction kernel), splits a whole number of stages.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <iterator>
#include <type_traits>

#include "kernels/gemv/common.cuh"
#include "kernels/gemv/mma_epilogue.cuh"

namespace tunable::kernels {

namespace skinny_tma {

constexpr int kRows = 16;       ///< weight rows per block (one MMA tile)
constexpr int kBoxBytes = 128;  ///< bytes of a row per box (the 128-byte swizzle span)

/// Bytes of one stage of `boxes` boxes.
constexpr int stage_bytes(int boxes) { return kRows * kBoxBytes * boxes; }

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
#else
  (void)bar, (void)count;
#endif
}

__device__ __forceinline__ void mbar_expect_tx(std::uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#else
  (void)bar, (void)bytes;
#endif
}

__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
#else
  (void)bar;
#endif
}

__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (!done);
#else
  (void)bar, (void)parity;
#endif
}

/// One box (kBoxBytes of rows [row, row + 16) at K element k) into `dst`, completing on `bar`.
__device__ __forceinline__ void tma_load_box(void* dst, const CUtensorMap* tm, int k, int row,
                                             std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<std::uint64_t>(tm)), "r"(k), "r"(row), "r"(smem_addr(bar))
      : "memory");
#else
  (void)dst, (void)tm, (void)k, (void)row, (void)bar;
#endif
}

// ---- the stage ring shared by the TMA-fed kernels (mmt, wgt) ----------------------------------

/// The ring's start in dynamic shared memory: 1024-byte aligned by hand (the 128-byte swizzle
/// repeats every 1024 bytes; the launchers reserve the extra 1024 bytes).
__device__ __forceinline__ unsigned char* ring_base(unsigned char* smem_raw) {
  return reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) &
                                          ~static_cast<std::uintptr_t>(1023));
}

__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* tm) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<std::uint64_t>(tm)) : "memory");
#else
  (void)tm;
#endif
}

/// One thread: each slot's full barrier completes on the producer's arrival plus its transaction
/// bytes, its empty barrier on `consumers` arrivals; then the tensor maps are prefetched.
template <int S, class... Maps>
__device__ __forceinline__ void ring_init(std::uint64_t (&full)[S], std::uint64_t (&empty)[S], unsigned consumers,
                                          const Maps*... maps) {
  for (int i = 0; i < S; ++i) {
    mbar_init(&full[i], 1);
    mbar_init(&empty[i], consumers);
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
  (prefetch_tensormap(maps), ...);
}

/// The producer lane: fills `stages` stages through the S-slot ring (slots `slot_bytes` apart, each
/// stage delivering `tx_bytes`), refilling a slot once its consumers released it; issue(dst, s, bar)
/// starts stage s's loads into dst, completing on bar.
template <int S, class Issue>
__device__ __forceinline__ void ring_produce(int stages, std::uint64_t (&full)[S], std::uint64_t (&empty)[S],
                                             unsigned char* ring, unsigned slot_bytes, unsigned tx_bytes,
                                             Issue&& issue) {
  for (int s = 0; s < stages; ++s) {
    const int slot = s % S;
    if (s >= S) mbar_wait(&empty[slot], ((s / S) & 1) ^ 1);
    mbar_expect_tx(&full[slot], tx_bytes);
    issue(ring + slot * slot_bytes, s, &full[slot]);
  }
}

/// A consumer warp's release of a ring slot it read with ordinary (generic-proxy) shared-memory loads:
/// the slot's next fill is a TMA write (async proxy), and without a proxy fence between the two the
/// write may overtake the reads. Measured on the H100: without the fence an 8 x 6 paired ring at 16
/// tokens changed bits in 2-100 % of launches (compute-sanitizer clean, the sanitizers serialise the
/// timing away), none with it; the fence costs 0-2 %. The wgmma kernel reads its slots through the async proxy
/// (wgmma) and waits for them before its release, so it needs no fence.
__device__ __forceinline__ void ring_release(std::uint64_t* empty_bar, int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
  __syncwarp();
  if (lane == 0) mbar_arrive(empty_bar);
}

/// 16 bytes of row r, 16-byte chunk c of a 16 x 128-byte box stored with the 128-byte swizzle
/// (chunk c of row r sits at chunk c ^ (r % 8); the box is 1024-byte aligned). A quarter warp
/// (lanes g in {2j, 2j + 1}, t in 0..3) reads chunks 2t + h of rows g: rows 2j and 2j + 1 land on
/// opposite bank halves, so the read is conflict-free (chunks (h * 4 + t) put both rows on one half:
/// ncu counted 49 % excess wavefronts).
__device__ __forceinline__ uint4 lds_swizzled(const unsigned char* box, int r, int c) {
  return *reinterpret_cast<const uint4*>(box + r * kBoxBytes + ((c ^ (r & 7)) << 4));
}

/// Named barrier `id` (1-15) among `threads` threads: lets some warps meet mid-kernel while the
/// producer warp keeps filling the ring (barrier 0, __syncthreads, would need it too).
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace skinny_tma

/// K elements of one stage of `boxes` boxes: the split granule of the TMA kernel.
constexpr int skinny_mmt_granule(int vec, int boxes) { return boxes * skinny_tma::kBoxBytes / 16 * vec; }

/// Bytes of one stage of the tokens' boxes (8 wn rows x 128 bytes each) when x comes by TMA.
constexpr int skinny_mmt_x_stage_bytes(int wn, int boxes) { return boxes * 8 * wn * skinny_tma::kBoxBytes; }

/// Dynamic shared memory: stage ring (1024-byte aligned by hand) and the epilogue's buffer, for
/// blocks of up to `tiles` 16-row tiles, with the tokens' boxes in each slot when x_tma.
constexpr std::size_t skinny_mmt_smem(int wn, int kw, int boxes, int stages, int tiles = 1, bool x_tma = false) {
  return 1024 +
         static_cast<std::size_t>(stages) *
             (skinny_tma::stage_bytes(boxes) * tiles + (x_tma ? skinny_mmt_x_stage_bytes(wn, boxes) : 0)) +
         skinny_detail::mma_epilogue_smem(tiles, wn, kw, 1);
}

/// Grid of the paired TMA kernel for `tiles` 16-row tiles on `sms` SMs: one tile per block while
/// they fit one per SM; up to 2 x SMs tiles, one block per SM with the first tiles - SMs blocks taking
/// two; beyond that every block two (the last one alone when the count is odd). Why: with 144 tiles
/// on 132 SMs the block scheduler put two one-tile blocks on each of 61-109 SMs and left the rest
/// idle, placement-dependent from call to call; one block per SM with 12 pairs cannot pack.
struct SkinnyPairGrid {
  long long blocks = 0;  ///< gridDim.x
  int pairs = 0;         ///< leading blocks with two tiles
};
inline SkinnyPairGrid skinny_mmt_pair_grid(long long tiles, int sms) {
  SkinnyPairGrid r;
  r.blocks = tiles <= sms ? tiles : tiles <= 2LL * sms ? sms : (tiles + 1) / 2;
  r.pairs = static_cast<int>(tiles - r.blocks);
  return r;
}

/// Grid of the balanced TMA kernel for `tiles` 16-row tiles on `sms` SMs: one block per SM
/// (one per tile when they are fewer), each on q = tiles / sms whole tiles and, when e = tiles % sms
/// are left over, on one K slice of one of those: left-over tile j is cut by whole stages over the
/// group of consecutive blocks [ceil(j sms / e), ceil((j + 1) sms / e)), so every SM streams about
/// tiles / sms tiles' bytes (144 tiles on 132 SMs: groups of 11 blocks share 12 tiles, 1.09 tiles
/// each, where the paired grid gives 12 SMs two). The last block of a group to finish its slice adds
/// the group's partial sums (no block ever waits for another).
struct SkinnyBalGrid {
  long long blocks = 0;  ///< gridDim.x
  int q = 1;             ///< whole tiles per block
  int e = 0;             ///< left-over tiles, each cut over a group of blocks
};
inline SkinnyBalGrid skinny_mmt_bal_grid(long long tiles, int sms) {
  if (tiles <= sms) return {tiles, 1, 0};
  return {sms, static_cast<int>(tiles / sms), static_cast<int>(tiles % sms)};
}

/// First block of left-over tile j's group (the balanced grid's `blocks` blocks, `e` left-over tiles).
__host__ __device__ __forceinline__ int skinny_bal_group_first(int j, int e, int blocks) {
  return static_cast<int>((static_cast<long long>(j) * blocks + e - 1) / e);
}

/// What the mmt kernels' grids are: one block per tile, the paired grid, the balanced grid.
enum class SkinnyMmtGrid { kTiles, kPair, kBal };

/// A TMA ring shape (skinny_mmt_* and skinny_wgt_*): `boxes` x 128 bytes of each row per stage,
/// `stages` stages.
struct SkinnyRingShape {
  int boxes, stages;
};

/// The ring shapes built (the one list the launcher, the provider's names and its candidates use):
/// 1 KB of each row per stage x 2 or 3, 2 KB x 2.
inline constexpr SkinnyRingShape kSkinnyMmtShapes[] = {{8, 2}, {8, 3}, {16, 2}};
/// The paired kernel's shapes (8 consumer warps only: 4 lost on 2304 x 16384 in every unpaired run):
/// 1 KB of each row per stage x 3 or 4 (x 2 left the two-tile blocks 2 us behind; x 6 was no faster
/// than x 4).
inline constexpr SkinnyRingShape kSkinnyMmtPairShapes[] = {{8, 3}, {8, 4}};
/// The balanced kernel's shapes (8 consumer warps): the paired ones and x 6 (1-2 % faster than x 4 on
/// 2304 x 16384, where each block streams one tile and a slice alone).
inline constexpr SkinnyRingShape kSkinnyMmtBalShapes[] = {{8, 3}, {8, 4}, {8, 6}};
constexpr int kSkinnyMmtPairWarps = 8;

/// Index of (boxes, stages) in a list of built ring shapes, -1 when not in it.
template <std::size_t N>
constexpr int skinny_shape_index(const SkinnyRingShape (&shapes)[N], int boxes, int stages) {
  for (std::size_t i = 0; i < N; ++i)
    if (shapes[i].boxes == boxes && shapes[i].stages == stages) return static_cast<int>(i);
  return -1;
}

/// Index of (boxes, stages) in the shape list of `grid` (kSkinnyMmtShapes, kSkinnyMmtPairShapes,
/// kSkinnyMmtBalShapes), -1 when not built.
constexpr int skinny_mmt_shape_index(int boxes, int stages, SkinnyMmtGrid grid = SkinnyMmtGrid::kTiles) {
  return grid == SkinnyMmtGrid::kPair  ? skinny_shape_index(kSkinnyMmtPairShapes, boxes, stages)
         : grid == SkinnyMmtGrid::kBal ? skinny_shape_index(kSkinnyMmtBalShapes, boxes, stages)
                                       : skinny_shape_index(kSkinnyMmtShapes, boxes, stages);
}

/// WN: 8-token MMA tiles (n <= 8 * WN), KW: consumer warps (the block has KW + 1 warps), Boxes x
/// 128 bytes of each row per stage, Stages in the ring. Pair: the first p.pairs blocks take two
/// adjacent 16-row tiles (rows [32 b, 32 b + 32)), the others one (skinny_mmt_pair_grid): each stage
/// then carries both tiles' boxes, and both tiles' MMAs read the same x fragments.
template <class Tr, int WN, int KW, int Boxes, int Stages, bool Pair = false>
__global__ void __launch_bounds__((KW + 1) * 32)
    skinny_mmt_kernel(const __grid_constant__ SkinnyParams p, const __grid_constant__ CUtensorMap tm) {
  using namespace skinny_detail;
  using namespace skinny_tma;
  constexpr int kStages = Stages;
  constexpr int kTiles = Pair ? 2 : 1;                   // 16-row tiles a block may hold
  constexpr int kStageBytes = stage_bytes(Boxes);        // one tile's boxes of a stage
  constexpr int kSlotBytes = kStageBytes * kTiles;       // one ring slot
  constexpr int kGroups = Boxes * 2;  // 64-byte groups per stage (one lane quad each)
  static_assert(kGroups % KW == 0, "every consumer warp takes the same number of groups per stage");
  constexpr int kVec = Tr::kVec;
  constexpr int kBoxElems = kBoxBytes / Tr::kBytes;
  constexpr int kStageElems = kBoxElems * Boxes;
  constexpr int kPerWarp = kGroups / KW;
  extern __shared__ unsigned char smem_raw[];
  __shared__ std::uint64_t full[kStages], empty[kStages];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int bx = static_cast<int>(blockIdx.x);
  const bool two = Pair && bx < p.pairs;  // uniform over the block
  const int row0 = Pair ? (two ? 2 * kRows * bx : kRows * (bx + p.pairs)) : bx * kRows;
  const int rows = two ? 2 * kRows : kRows;
  const int kb = blockIdx.y * p.kc;
  const int ke = min(p.k, kb + p.kc);
  const int stages = (ke - kb + kStageElems - 1) / kStageElems;
  unsigned char* ring = ring_base(smem_raw);
  float* red = reinterpret_cast<float*>(ring + kStages * kSlotBytes);

  if (threadIdx.x == 0) ring_init(full, empty, KW, &tm);
  skinny_prologue(p, row0, rows, kb, ke, Tr::kBytes);
  __syncthreads();  // barriers initialised

  float acc[kTiles][WN][4];
#pragma unroll
  for (int mt = 0; mt < kTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < WN; ++nt) {
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[mt][nt][q] = 0.f;
    }
  }

  if (warp == KW) {
    // Producer: one lane keeps the ring full; a slot is refilled once all KW consumers released it.
    if (lane == 0) {
      auto issue = [&](unsigned char* dst, int s, std::uint64_t* bar) {
#pragma unroll
        for (int b = 0; b < Boxes; ++b) {
          const int k = kb + s * kStageElems + b * kBoxElems;
          tma_load_box(dst + b * (kRows * kBoxBytes), &tm, k, row0, bar);
          if (two) tma_load_box(dst + kStageBytes + b * (kRows * kBoxBytes), &tm, k, row0 + kRows, bar);
        }
      };
      ring_produce(stages, full, empty, ring, kSlotBytes, two ? 2 * kStageBytes : kStageBytes, issue);
    }
  } else {
    const unsigned char* xrow[WN];
#pragma unroll
    for (int nt = 0; nt < WN; ++nt) {
      xrow[nt] = static_cast<const unsigned char*>(p.x) +
                 static_cast<size_t>(min(nt * 8 + g, p.n - 1)) * p.ldb * Tr::kBytes;
    }
    // Lane's first K element of group q (= w + i * KW) of stage s; past ke x reads as zero, and the
    // weight there is the tensor map's zero fill (k) or this split's end (a whole stage).
    auto elem = [&](int s, int i) {
      const int q = warp + i * KW;
      return kb + s * kStageElems + (q >> 1) * kBoxElems + (2 * t + (q & 1)) * kVec;
    };
    auto load_x = [&](uint4 (&xb)[kPerWarp][WN], int s) {
#pragma unroll
      for (int i = 0; i < kPerWarp; ++i) {
        const int e = elem(s, i);
#pragma unroll
        for (int nt = 0; nt < WN; ++nt)
          xb[i][nt] = ld_cached16(xrow[nt] + static_cast<size_t>(e) * Tr::kBytes, e < ke);
      }
    };
    auto compute = [&](const uint4 (&xb)[kPerWarp][WN], int s) {
      const int slot = s % kStages;
      mbar_wait(&full[slot], (s / kStages) & 1);
      const unsigned char* st = ring + slot * kSlotBytes;
#pragma unroll
      for (int i = 0; i < kPerWarp; ++i) {
        const int q = warp + i * KW;
        const int c = 2 * t + (q & 1);
#pragma unroll
        for (int mt = 0; mt < kTiles; ++mt) {
          if (mt > 0 && !two) break;  // uniform over the block
          const unsigned char* box = st + mt * kStageBytes + (q >> 1) * (kRows * kBoxBytes);
          const uint4 a0 = lds_swizzled(box, g, c), a1 = lds_swizzled(box, g + 8, c);
#pragma unroll
          for (int nt = 0; nt < WN; ++nt) mma_vec<Tr>(acc[mt][nt], a0, a1, xb[i][nt]);
        }
      }
      ring_release(&empty[slot], lane);
    };
    // x one stage ahead in two named register sets (no moves between stages).
    uint4 x0[kPerWarp][WN], x1[kPerWarp][WN];
    if (stages > 0) load_x(x0, 0);
    for (int s = 0; s < stages; s += 2) {
      if (s + 1 < stages) load_x(x1, s + 1);
      compute(x0, s);
      if (s + 1 >= stages) break;
      if (s + 2 < stages) load_x(x0, s + 2);
      compute(x1, s + 1);
    }
  }

  // The producer warp joins the epilogue's barriers with zero sums of its own (not read: the
  // epilogue adds warps [0, KW)).
  mma_block_epilogue<kTiles, WN, KW, 1>(p, acc, red, row0, rows);
  skinny_trace_exit(p.w);
}

/// The balanced grid's kernel (skinny_mmt_bal_grid; 8 consumer warps, one 16-row tile at a time):
/// the block's K slice of its group's left-over tile first, then its q whole tiles, as one stage
/// sequence through the ring. Tokens by TMA too (each slot holds the stage's weight boxes, then its
/// token boxes, same swizzle): a single tile per SM streamed at the floor's rate only with x off the
/// consumers' load path (measured on the H100). The slice comes first and its sums leave the consumers
/// through shared memory to a fix-up warp, which publishes them as the block's partial, counts the
/// block's arrival (p.bal_count, one count per left-over tile) and, in the group's last block to
/// arrive, adds the group's partials in block order (deterministic) and writes the tile's rows, all
/// while the consumers stream their whole tiles. The alternatives, measured on the H100: a second kernel
/// for the sums cost 2.5-3 us per call (launch and release), the same protocol run by the consumers
/// themselves delayed every block by ~2 us (dependent L2 round trips under full load). Consumers
/// meet on barrier 1 and hand the slice over through an mbarrier (every consumer thread arrives after
/// its writes, release / acquire); the producer lane never waits for either.
/// Block = KW consumer warps, the producer warp, the fix-up warp.
template <class Tr, int WN, int KW, int Boxes, int Stages>
__global__ void __launch_bounds__((KW + 2) * 32)
    skinny_mmt_bal_kernel(const __grid_constant__ SkinnyParams p, const __grid_constant__ CUtensorMap tm,
                          const __grid_constant__ CUtensorMap tmx) {
  using namespace skinny_detail;
  using namespace skinny_tma;
  constexpr int kStageBytes = stage_bytes(Boxes);  // the weight's boxes of a stage
  constexpr int kXBoxBytes = 8 * WN * kBoxBytes;   // one token box
  constexpr int kSlotBytes = kStageBytes + skinny_mmt_x_stage_bytes(WN, Boxes);  // as skinny_mmt_smem sizes it
  constexpr int kGroups = Boxes * 2;  // 64-byte groups per stage (one lane quad each)
  static_assert(kGroups % KW == 0, "every consumer warp takes the same number of groups per stage");
  constexpr int kBoxElems = kBoxBytes / Tr::kBytes;
  constexpr int kStageElems = kBoxElems * Boxes;
  constexpr int kPerWarp = kGroups / KW;
  constexpr int kTok = 8 * WN, kSB = kRows + 4;  // the epilogue buffer's layout (mma_block_epilogue's)
  extern __shared__ unsigned char smem_raw[];
  __shared__ std::uint64_t full[Stages], empty[Stages];
  __shared__ float slice_sums[kRows * kTok];  // [token][row]: the slice's block sums
  __shared__ std::uint64_t slice_ready;       // completes once every consumer thread wrote its share

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int b = static_cast<int>(blockIdx.x), nb = static_cast<int>(gridDim.x);
  const int tile_stages = (p.k + kStageElems - 1) / kStageElems;
  // The left-over tile j's slice: its stages [s0, s0 + ne), rows [xrow0, xrow0 + 16); the group is
  // blocks [first, first + gsize).
  int xrow0 = 0, s0 = 0, ne = 0, j = 0, first = 0, gsize = 0;
  if (p.bal_e > 0) {
    j = static_cast<int>(static_cast<long long>(b) * p.bal_e / nb);
    first = skinny_bal_group_first(j, p.bal_e, nb);
    gsize = skinny_bal_group_first(j + 1, p.bal_e, nb) - first;
    s0 = static_cast<int>(static_cast<long long>(b - first) * tile_stages / gsize);
    ne = static_cast<int>(static_cast<long long>(b - first + 1) * tile_stages / gsize) - s0;
    xrow0 = (p.bal_q * nb + j) * kRows;
  }
  const int total = ne + p.bal_q * tile_stages;
  auto stage_row = [&](int s) { return s < ne ? xrow0 : (b * p.bal_q + (s - ne) / tile_stages) * kRows; };
  auto stage_k = [&](int s) { return (s < ne ? s0 + s : (s - ne) % tile_stages) * kStageElems; };
  unsigned char* ring = ring_base(smem_raw);
  float* red = reinterpret_cast<float*>(ring + Stages * kSlotBytes);

  if (threadIdx.x == 0) {
    mbar_init(&slice_ready, KW * 32);
    ring_init(full, empty, KW, &tm);
    prefetch_tensormap(&tmx);
  }
  skinny_pdl_prologue([&] {  // the hint follows the stage sequence: the slice, then the first whole tile
    long long budget = skinny_prefetch_budget(p, kSkinnyPrefetchBytes);
    if (ne > 0) budget -= skinny_prefetch_rows(p, xrow0, kRows, s0 * kStageElems, min(p.k, (s0 + ne) * kStageElems),
                                               Tr::kBytes, budget);
    if (p.bal_q > 0) skinny_prefetch_rows(p, b * p.bal_q * kRows, kRows, 0, p.k, Tr::kBytes, budget);
  });
  __syncthreads();  // barriers initialised

  if (warp == KW) {
    if (lane == 0) {
      auto issue = [&](unsigned char* dst, int s, std::uint64_t* bar) {
        const int row = stage_row(s), k = stage_k(s);
#pragma unroll
        for (int x = 0; x < Boxes; ++x) {
          tma_load_box(dst + x * (kRows * kBoxBytes), &tm, k + x * kBoxElems, row, bar);
          tma_load_box(dst + kStageBytes + x * kXBoxBytes, &tmx, k + x * kBoxElems, 0, bar);
        }
      };
      ring_produce(total, full, empty, ring, kSlotBytes, kSlotBytes, issue);
    }
  } else if (warp == KW + 1) {
    // Fix-up: the slice's sums to block b's partial ([blocks][n][16] fp32), the arrival, and in the
    // group's last block the group's sum. A group of one block wrote its tile directly.
    if (p.bal_e > 0 && gsize > 1) {
      constexpr int kPer = kRows * kTok / 32;
      const int count = kRows * min(kTok, p.n);
      mbar_wait(&slice_ready, 0);  // slice_sums written
      float* mine = p.partial + static_cast<size_t>(b) * p.n * kRows;
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int o = lane + i * 32;
        if (o < count) mine[o] = slice_sums[o];
      }
      __threadfence();  // the partial reaches the device before the arrival below
      __syncwarp();
      unsigned last = 0;
      if (lane == 0) last = atomicAdd(&p.bal_count[j], 1u) == static_cast<unsigned>(gsize - 1);
      if (__shfl_sync(0xffffffffu, last, 0)) {
        __threadfence();  // the other blocks' partials, published before their arrivals
        float sum[kPer];
#pragma unroll
        for (int i = 0; i < kPer; ++i) sum[i] = 0.f;
        for (int c = first; c < first + gsize; ++c) {
          const float* src = p.partial + static_cast<size_t>(c) * p.n * kRows;
#pragma unroll
          for (int i = 0; i < kPer; ++i) {
            const int o = lane + i * 32;
            if (o < count) sum[i] += __ldcg(src + o);
          }
        }
        const float scale = result_scale(p);
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
          const int o = lane + i * 32, r = o % kRows;
          if (o < count && xrow0 + r < p.m) write_result(p, xrow0 + r, o / kRows, sum[i], scale);
        }
        if (lane == 0) p.bal_count[j] = 0;  // every arrival is in: ready for the next launch
      }
    }
  } else {
    float acc[WN][4];
#pragma unroll
    for (int nt = 0; nt < WN; ++nt) {
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[nt][q] = 0.f;
    }
    auto stage = [&](int s) {
      const int slot = s % Stages;
      mbar_wait(&full[slot], (s / Stages) & 1);
      const unsigned char* st = ring + slot * kSlotBytes;
#pragma unroll
      for (int i = 0; i < kPerWarp; ++i) {
        const int q = warp + i * KW;
        const int c = 2 * t + (q & 1);
        const unsigned char* box = st + (q >> 1) * (kRows * kBoxBytes);
        const unsigned char* xs = st + kStageBytes + (q >> 1) * kXBoxBytes;
        const uint4 a0 = lds_swizzled(box, g, c), a1 = lds_swizzled(box, g + 8, c);
#pragma unroll
        for (int nt = 0; nt < WN; ++nt) mma_vec<Tr>(acc[nt], a0, a1, lds_swizzled(xs, nt * 8 + g, c));
      }
      ring_release(&empty[slot], lane);
    };
    const int ntok = min(kTok, p.n);
    const float scale = result_scale(p);
    // A segment's sums: the warps' accumulators meet in `red` and are added in warp order
    // (deterministic), then go to y's rows [row0, row0 + 16) or, for a shared slice, to the fix-up
    // warp.
    auto flush = [&](int row0, bool slice) {
      float* mine = red + warp * kTok * kSB;
#pragma unroll
      for (int nt = 0; nt < WN; ++nt) {
        const int tok = nt * 8 + 2 * t;
        mine[tok * kSB + g] = acc[nt][0];
        mine[(tok + 1) * kSB + g] = acc[nt][1];
        mine[tok * kSB + g + 8] = acc[nt][2];
        mine[(tok + 1) * kSB + g + 8] = acc[nt][3];
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[nt][q] = 0.f;
      }
      named_sync(1, KW * 32);
      for (int o = threadIdx.x; o < kRows * ntok; o += KW * 32) {
        const int r = o % kRows, tok = o / kRows;
        float sum = 0.f;
#pragma unroll
        for (int w = 0; w < KW; ++w) sum += red[(w * kTok + tok) * kSB + r];
        if (slice)
          slice_sums[o] = sum;
        else if (row0 + r < p.m)
          write_result(p, row0 + r, tok, sum, scale);
      }
      if (slice) mbar_arrive(&slice_ready);  // the fix-up warp takes it from here
      named_sync(1, KW * 32);                // red is free again
    };
    int s = 0;
    if (p.bal_e > 0) {
      for (; s < ne; ++s) stage(s);
      // Zeros when the slice is empty (more blocks in the group than stages); a group of one block
      // holds the whole tile.
      flush(xrow0, gsize > 1);
    }
    for (int tt = 0; tt < p.bal_q; ++tt) {
      for (int i = 0; i < tile_stages; ++i, ++s) stage(s);
      flush((b * p.bal_q + tt) * kRows, false);
    }
  }
  skinny_trace_exit(p.w);
}

/// A 2-D tensor map over `rows` rows of `cols` elements of Tr (row stride `stride_bytes`), boxes of
/// `box_rows` rows x 128 bytes with the 128-byte swizzle; rows and columns past the ends read as 0.
/// `encode` is the driver's cuTensorMapEncodeTiled (SkinnyDevice::encode_tensor_map);
/// cudaErrorNotSupported when the driver lacks it.
template <class Tr>
cudaError_t skinny_tensor_map_2d(PFN_cuTensorMapEncodeTiled_v12000 encode, const void* base, int cols, int rows,
                                 long long stride_bytes, int box_rows, CUtensorMap* out) {
  if (encode == nullptr) return cudaErrorNotSupported;
  const CUtensorMapDataType type = Tr::kBytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : std::is_same_v<Tr, skinny_detail::F16Traits>
                                       ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                       : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(skinny_tma::kBoxBytes / Tr::kBytes),
                             static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode(out, type, 2, const_cast<void*>(base), dims, strides, box, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

/// The launch the TMA-fed kernels (mmt, wgt) share: `blocks0` row blocks x the planned K splits,
/// the occupancy cap when l.spread asks for it, PDL, the kernel's parameters (l.p, with the
/// caller's grid fields) followed by its tensor maps, and the split-K reduction after it.
template <class Kernel, class... Maps>
cudaError_t skinny_tma_launch(Kernel kernel, int threads, std::size_t smem, long long blocks0, int granule,
                              const SkinnyLaunch& l, const SkinnyDevice& dev, SkinnyKernelCache* cache,
                              cudaStream_t stream, const Maps&... maps) {
  SkinnyParams p = l.p;
  if (blocks0 < 1 || blocks0 > 0x7fffffffLL) return cudaErrorInvalidValue;
  int per_sm = 0;
  cudaError_t e = skinny_blocks_per_sm(kernel, threads, smem, cache, &per_sm);
  if (e != cudaSuccess) return e;
  const SkinnySplit sp = skinny_plan(l, p.k, granule, blocks0, static_cast<long long>(per_sm) * dev.sms);
  if ((e = skinny_apply_plan(sp, l, &p)) != cudaSuccess) return e;
  p.acc_scale = 1.f;
  std::size_t launch_smem = smem;
  if (l.spread && (e = skinny_spread_smem(kernel, l.spread_per_sm(blocks0 * p.splits, dev.sms), per_sm, smem, dev,
                                           cache, &launch_smem)) != cudaSuccess)
    return e;
  e = launch_kernel_ex(kernel, dim3(static_cast<unsigned>(blocks0), static_cast<unsigned>(p.splits)),
                       dim3(static_cast<unsigned>(threads)), launch_smem, stream, skinny_pdl(dev), dim3(1, 1, 1), p,
                       maps...);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // a refused launch must not leave its error to the next call
    return e;
  }
  return skinny_finish(p, dev, stream);
}

template <class Tr, int WN, int KW, int Boxes, int Stages, bool Pair>
cudaError_t skinny_mmt_launch(const SkinnyLaunch& l, const SkinnyDevice& dev, SkinnyKernelCache* cache,
                              cudaStream_t stream) {
  // TMA, mbarrier transactions and griddepcontrol: sm_90 device and code.
  if (dev.cc < 90 || dev.ptx_version < 90) return cudaErrorNotSupported;
  const auto kernel = skinny_mmt_kernel<Tr, WN, KW, Boxes, Stages, Pair>;
  constexpr int kThreads = (KW + 1) * 32;
  constexpr std::size_t smem = skinny_mmt_smem(WN, KW, Boxes, Stages, Pair ? 2 : 1);
  CUtensorMap tm;
  const cudaError_t e = skinny_tensor_map_2d<Tr>(dev.encode_tensor_map, l.p.w, l.p.k, l.p.m, l.p.lda * Tr::kBytes,
                                                 skinny_tma::kRows, &tm);
  if (e != cudaSuccess) return e;
  const long long tiles = (static_cast<long long>(l.p.m) + skinny_tma::kRows - 1) / skinny_tma::kRows;
  SkinnyLaunch lp = l;
  SkinnyPairGrid grid{tiles, 0};
  if (Pair) grid = skinny_mmt_pair_grid(tiles, dev.sms);
  lp.p.pairs = grid.pairs;
  return skinny_tma_launch(kernel, kThreads, smem, grid.blocks, skinny_mmt_granule(Tr::kVec, Boxes), lp, dev,
                           cache, stream, tm);
}

/// Left-over tiles a balanced launch may have (fewer than the device's SMs): the size of the
/// counter set SkinnyParams::bal_count points at.
constexpr int kSkinnyBalMaxShared = 1024;

/// Whether a balanced launch of `m` weight rows on `sms` SMs shares tiles between blocks, and so
/// needs partial storage (skinny_mmt_bal_partial_bytes) and arrival counters (SkinnyParams::bal_count).
inline bool skinny_mmt_bal_shares(long long m, int sms) {
  return skinny_mmt_bal_grid((m + skinny_tma::kRows - 1) / skinny_tma::kRows, sms).e > 0;
}

/// Partial storage the balanced grid needs for `m` weight rows and `n` tokens on `sms` SMs (0 when no
/// tile is left over).
inline std::size_t skinny_mmt_bal_partial_bytes(long long m, int n, int sms) {
  const SkinnyBalGrid grid = skinny_mmt_bal_grid((m + skinny_tma::kRows - 1) / skinny_tma::kRows, sms);
  return grid.e > 0 ? static_cast<std::size_t>(grid.blocks) * n * skinny_tma::kRows * sizeof(float) : 0;
}

template <class Tr, int WN, int Boxes, int Stages>
cudaError_t skinny_mmt_bal_launch(const SkinnyLaunch& l, const SkinnyDevice& dev, SkinnyKernelCache* cache,
                                  cudaStream_t stream) {
  if (dev.cc < 90 || dev.ptx_version < 90) return cudaErrorNotSupported;
  constexpr int kw = kSkinnyMmtPairWarps;
  const auto kernel = skinny_mmt_bal_kernel<Tr, WN, kw, Boxes, Stages>;
  constexpr int kThreads = (kw + 2) * 32;
  constexpr std::size_t smem = skinny_mmt_smem(WN, kw, Boxes, Stages, 1, true);
  CUtensorMap tm, tmx;
  cudaError_t e = skinny_tensor_map_2d<Tr>(dev.encode_tensor_map, l.p.w, l.p.k, l.p.m, l.p.lda * Tr::kBytes,
                                           skinny_tma::kRows, &tm);
  if (e != cudaSuccess) return e;
  if ((e = skinny_tensor_map_2d<Tr>(dev.encode_tensor_map, l.p.x, l.p.k, l.p.n, l.p.ldb * Tr::kBytes, 8 * WN,
                                    &tmx)) != cudaSuccess)
    return e;
  const SkinnyBalGrid grid =
      skinny_mmt_bal_grid((static_cast<long long>(l.p.m) + skinny_tma::kRows - 1) / skinny_tma::kRows, dev.sms);
  SkinnyLaunch lp = l;
  lp.p.bal_q = grid.q;
  lp.p.bal_e = grid.e;
  // Shared tiles need the caller's partial storage and arrival counters (zero, this stream's).
  if (grid.e > 0 && (lp.p.partial == nullptr || lp.p.bal_count == nullptr ||
                     skinny_mmt_bal_partial_bytes(lp.p.m, lp.p.n, dev.sms) > l.partial_bytes ||
                     grid.e > kSkinnyBalMaxShared))
    return cudaErrorInvalidValue;
  lp.spread = true;  // one block per SM whatever else would fit: the balance is per block
  return skinny_tma_launch(kernel, kThreads, smem, grid.blocks, skinny_mmt_granule(Tr::kVec, Boxes), lp, dev,
                           cache, stream, tm, tmx);
}

/// Runs the TMA-fed MMA kernel on `stream`: k_warps consumer warps in {4, 8}, a shape of
/// kSkinnyMmtShapes, l.p.n <= 16, sm_90; the paired grid (skinny_mmt_pair_grid: 8 warps, a shape of
/// kSkinnyMmtPairShapes) and the balanced one (skinny_mmt_bal_grid: unsplit, 8 warps, a shape of
/// kSkinnyMmtBalShapes; where skinny_mmt_bal_shares, partial storage of skinny_mmt_bal_partial_bytes
/// and the stream's arrival counters in l.p.bal_count). `dev` and `cache` are the caller's facts of
/// the current device (skinny_device.hpp).
inline cudaError_t skinny_mmt(SkinnyIn in, int k_warps, int boxes, int stages, const SkinnyLaunch& l,
                              const SkinnyDevice& dev, SkinnyKernelCache* cache, cudaStream_t stream,
                              SkinnyMmtGrid grid = SkinnyMmtGrid::kTiles) {
  static_assert(std::size(kSkinnyMmtShapes) == 3 && std::size(kSkinnyMmtPairShapes) == 2 &&
                    std::size(kSkinnyMmtBalShapes) == 3,
                "the dispatch below lists every shape index");
  const bool per_sm = grid != SkinnyMmtGrid::kTiles;  // one block per SM: the paired and balanced grids
  const int shape = skinny_mmt_shape_index(boxes, stages, grid);
  if (shape < 0 || (per_sm && k_warps != kSkinnyMmtPairWarps)) return cudaErrorInvalidValue;
  if (grid == SkinnyMmtGrid::kBal && l.splits != 1) return cudaErrorInvalidValue;
  return skinny_dispatch_in(in, [&](auto tr) {
    using Tr = decltype(tr);
    return skinny_dispatch_int<1, 2>(skinny_mma_token_tiles(l.p.n), [&](auto wn) {
      if (grid == SkinnyMmtGrid::kBal) {
        return skinny_dispatch_int<0, 1, 2>(shape, [&](auto i) {
          constexpr SkinnyRingShape sh = kSkinnyMmtBalShapes[i.value];
          return skinny_mmt_bal_launch<Tr, wn.value, sh.boxes, sh.stages>(l, dev, cache, stream);
        });
      }
      if (grid == SkinnyMmtGrid::kPair) {
        return skinny_dispatch_int<0, 1>(shape, [&](auto i) {
          constexpr SkinnyRingShape sh = kSkinnyMmtPairShapes[i.value];
          return skinny_mmt_launch<Tr, wn.value, kSkinnyMmtPairWarps, sh.boxes, sh.stages, true>(l, dev, cache,
                                                                                                  stream);
        });
      }
      return skinny_dispatch_int<4, 8>(k_warps, [&](auto kw) {
        return skinny_dispatch_int<0, 1, 2>(shape, [&](auto i) {
          constexpr SkinnyRingShape sh = kSkinnyMmtShapes[i.value];
          return skinny_mmt_launch<Tr, wn.value, kw.value, sh.boxes, sh.stages, false>(l, dev, cache, stream);
        });
      });
    });
  });
}

}  // namespace tunable::kernels
