// Tensor-core skinny GEMM on warpgroup MMA with both operands fed by TMA ("wgt").
//
// Why a fourth MMA kernel: on sm_90 `mma.sync` runs e4m3 as conversions plus f16 MMA, which holds
// the fp8 rows at 0.67-0.73 of the copy floor (H100); `wgmma` multiplies e4m3 natively. A wgmma
// kernel fed the weight from registers lost; here both the weight (64 rows per warpgroup, the
// MMA's M side) and the tokens (x, the N side: 8-64) arrive by TMA in the 128-byte swizzled layout
// wgmma reads directly, so no thread touches an operand. A 64-row tile also reads x once per 64
// weight rows (the 16-row kernels re-read it four times as often, which costs the 32-64-token
// rows).
//
// Block = one consumer warpgroup (4 warps) + 1 producer warp on 64 weight rows. Stage = Boxes
// boxes of 64 weight rows x 128 bytes and Boxes boxes of 8 * WN tokens x 128 bytes (same K),
// Stages of them in a ring with full/empty mbarriers. Per box the warpgroup runs 4 wgmmas (k16
// bf16/fp16, k32 e4m3) into a fresh fp32 tile and adds it to its sums after the box: Hopper's fp8
// wgmma adds products at reduced precision (a kernel summing whole splits inside the tensor core
// failed the fp64 reference by 0.1-0.6 %), so no sum runs over more than 128 fp8 products there. Rows past m, tokens
// past n and K past k arrive as zeros (tensor-map bounds). Split-K as the other kernels (partials
// and the reduction kernel), splits a whole number of stages.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <iterator>

#include "kernels/gemv/common.cuh"
#include "kernels/gemv/mma_epilogue.cuh"
#include "kernels/gemv/skinny_tma.cuh"

namespace tunable::kernels {

namespace skinny_wg {

constexpr int kRows = 64;        ///< weight rows per block (one warpgroup's M)
constexpr int kBoxBytes = 128;   ///< bytes of a row per box (the 128-byte swizzle span)
constexpr int kStepBytes = 32;   ///< K bytes of one wgmma (k16 of 16-bit types, k32 of e4m3)
constexpr int kThreads = 160;    ///< 4 consumer warps + 1 producer warp

/// Bytes of one stage: Boxes weight boxes, then Boxes token boxes.
constexpr int stage_bytes(int boxes, int wn) { return boxes * (kRows + 8 * wn) * kBoxBytes; }

/// Shared-memory matrix descriptor of a K-major operand stored as TMA's 128-byte swizzle writes it:
/// rows of 128 bytes, 8-row atoms 1024 bytes apart (the stride byte offset), the leading byte
/// offset unused (one wgmma's 32 bytes of K lie inside the 128-byte span), layout 1 = 128-byte
/// swizzle. The K step inside the span moves the start address by 32 bytes; the atoms stay
/// 1024-byte aligned, so the base offset is 0.
__device__ __forceinline__ std::uint64_t sw128_desc(const void* p) {
  const std::uint64_t a = skinny_tma::smem_addr(p);
  return ((a >> 4) & 0x3FFFull) | (1ull << 16) | (static_cast<std::uint64_t>(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit_and_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}

/// Keeps the compiler from moving reads of wgmma's registers above the wait that makes them valid.
template <int R>
__device__ __forceinline__ void fence_registers(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// d (64 x N fp32, the m64nN accumulator fragment) = or += A (64 x 32 bytes of K) * B (N x 32
/// bytes of K), both K-major in shared memory; `accumulate` == 0 overwrites d.
template <class Tr, int N>
struct Wgmma;

using skinny_detail::Bf16Traits;
using skinny_detail::E4M3Traits;
using skinny_detail::F16Traits;

// One wgmma.mma_async per (input type, N). The PTX differs only in its shape / type suffix, the
// trailing scale operands (16-bit inputs take two transpose flags, e4m3 none) and the number of
// fp32 accumulators (N / 2 per thread), so one macro writes each specialization: R accumulators
// "+f"(d[0..R-1]) are operands %0..%R-1, then a, b and the accumulate flag.
#define TUNABLE_WG_F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define TUNABLE_WG_F8(i) TUNABLE_WG_F4(i), TUNABLE_WG_F4(i + 4)
#define TUNABLE_WG_F16(i) TUNABLE_WG_F8(i), TUNABLE_WG_F8(i + 8)
#define TUNABLE_WG_F32(i) TUNABLE_WG_F16(i), TUNABLE_WG_F16(i + 16)
#define TUNABLE_WG_OPS4 "{%0, %1, %2, %3}, %4, %5"
#define TUNABLE_WG_OPS8 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9"
#define TUNABLE_WG_OPS16 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17"
#define TUNABLE_WG_OPS32                                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33"
#define TUNABLE_WG_ACC4 "%6"
#define TUNABLE_WG_ACC8 "%10"
#define TUNABLE_WG_ACC16 "%18"
#define TUNABLE_WG_ACC32 "%34"
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TUNABLE_WG_RUN(R, ptx) \
  asm volatile(ptx : TUNABLE_WG_F##R(0) : "l"(a), "l"(b), "r"(accumulate) : "memory")
#else
#define TUNABLE_WG_RUN(R, ptx) ((void)d, (void)a, (void)b, (void)accumulate, __trap())
#endif
#define TUNABLE_WGMMA(Traits, N, R, suffix, scale)                                                        \
  template <>                                                                                            \
  struct Wgmma<Traits, N> {                                                                              \
    __device__ __forceinline__ static void run(float (&d)[R], std::uint64_t a, std::uint64_t b,          \
                                               int accumulate) {                                         \
      TUNABLE_WG_RUN(R, "{\n .reg .pred p;\n setp.ne.b32 p, " TUNABLE_WG_ACC##R                         \
                        ", 0;\n wgmma.mma_async.sync.aligned.m64n" #N suffix " " TUNABLE_WG_OPS##R      \
                        ", p, 1, 1" scale ";\n}\n");                                                     \
    }                                                                                                    \
  };

TUNABLE_WGMMA(Bf16Traits, 8, 4, "k16.f32.bf16.bf16", ", 0, 0")
TUNABLE_WGMMA(Bf16Traits, 16, 8, "k16.f32.bf16.bf16", ", 0, 0")
TUNABLE_WGMMA(Bf16Traits, 32, 16, "k16.f32.bf16.bf16", ", 0, 0")
TUNABLE_WGMMA(Bf16Traits, 64, 32, "k16.f32.bf16.bf16", ", 0, 0")
TUNABLE_WGMMA(F16Traits, 8, 4, "k16.f32.f16.f16", ", 0, 0")
TUNABLE_WGMMA(F16Traits, 16, 8, "k16.f32.f16.f16", ", 0, 0")
TUNABLE_WGMMA(F16Traits, 32, 16, "k16.f32.f16.f16", ", 0, 0")
TUNABLE_WGMMA(F16Traits, 64, 32, "k16.f32.f16.f16", ", 0, 0")
TUNABLE_WGMMA(E4M3Traits, 8, 4, "k32.f32.e4m3.e4m3", "")
TUNABLE_WGMMA(E4M3Traits, 16, 8, "k32.f32.e4m3.e4m3", "")
TUNABLE_WGMMA(E4M3Traits, 32, 16, "k32.f32.e4m3.e4m3", "")
TUNABLE_WGMMA(E4M3Traits, 64, 32, "k32.f32.e4m3.e4m3", "")

#undef TUNABLE_WGMMA
#undef TUNABLE_WG_RUN
#undef TUNABLE_WG_ACC32
#undef TUNABLE_WG_ACC16
#undef TUNABLE_WG_ACC8
#undef TUNABLE_WG_ACC4
#undef TUNABLE_WG_OPS32
#undef TUNABLE_WG_OPS16
#undef TUNABLE_WG_OPS8
#undef TUNABLE_WG_OPS4
#undef TUNABLE_WG_F32
#undef TUNABLE_WG_F16
#undef TUNABLE_WG_F8
#undef TUNABLE_WG_F4

/// 1 where this translation unit's loaded device code has wgmma (built for sm_90a), read back by
/// the launcher: a build for plain sm_90 or an older target traps in the kernel, so it is refused.
static __device__ int g_wgmma_built =
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    1;
#else
    0;
#endif

}  // namespace skinny_wg

/// K elements of one stage of `boxes` boxes: the split granule of the wgmma kernel.
constexpr int skinny_wgt_granule(int vec, int boxes) { return boxes * skinny_wg::kBoxBytes / 16 * vec; }

/// Dynamic shared memory: the stage ring, 1024-byte aligned by hand.
constexpr std::size_t skinny_wgt_smem(int wn, int boxes, int stages) {
  return 1024 + static_cast<std::size_t>(stages) * skinny_wg::stage_bytes(boxes, wn);
}

/// Largest dynamic shared memory of one block on sm_90 (227 KB): the provider refuses shapes whose
/// ring does not fit at a token count.
constexpr std::size_t kSkinnyWgtSmemLimit = 232448;

/// The ring shapes built: 256, 512 or 1024 bytes of each row per stage, 6, 3 or 2 stages (every
/// one fits at up to 32 tokens; 8 x 2 needs 256 KB at 33-64 and is refused there).
inline constexpr SkinnyRingShape kSkinnyWgtShapes[] = {{2, 6}, {4, 3}, {8, 2}};

/// Index of (boxes, stages) in kSkinnyWgtShapes, -1 when not built.
constexpr int skinny_wgt_shape_index(int boxes, int stages) {
  return skinny_shape_index(kSkinnyWgtShapes, boxes, stages);
}

/// WN: 8-token tiles (n <= 8 * WN, the wgmma's N), Boxes x 128 bytes of each row per stage,
/// Stages in the ring.
template <class Tr, int WN, int Boxes, int Stages>
__global__ void __launch_bounds__(skinny_wg::kThreads)
    skinny_wgt_kernel(const __grid_constant__ SkinnyParams p, const __grid_constant__ CUtensorMap tmw,
                      const __grid_constant__ CUtensorMap tmx) {
  using namespace skinny_detail;
  using namespace skinny_wg;
  using skinny_tma::mbar_arrive;
  using skinny_tma::mbar_wait;
  using skinny_tma::ring_base;
  using skinny_tma::ring_init;
  using skinny_tma::ring_produce;
  using skinny_tma::tma_load_box;
  constexpr int kTok = 8 * WN;
  constexpr int kWBox = kRows * kBoxBytes, kXBox = kTok * kBoxBytes;
  constexpr int kStageBytes = stage_bytes(Boxes, WN);
  constexpr int kBoxElems = kBoxBytes / Tr::kBytes;
  constexpr int kStageElems = kBoxElems * Boxes;
  constexpr int kSteps = kBoxBytes / kStepBytes;
  constexpr int kFrag = kTok / 2;  // fp32 sums per thread of the m64nN tile
  extern __shared__ unsigned char smem_raw[];
  __shared__ std::uint64_t full[Stages], empty[Stages];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row0 = blockIdx.x * kRows;
  const int kb = blockIdx.y * p.kc;
  const int ke = min(p.k, kb + p.kc);
  const int stages = (ke - kb + kStageElems - 1) / kStageElems;
  unsigned char* ring = ring_base(smem_raw);

  if (threadIdx.x == 0) ring_init(full, empty, 4, &tmw, &tmx);
  skinny_prologue(p, row0, kRows, kb, ke, Tr::kBytes);
  __syncthreads();  // barriers initialised

  if (warp == 4) {
    // Producer: one lane keeps the ring full; a slot is refilled once the 4 consumer warps released it.
    if (lane == 0) {
      auto issue = [&](unsigned char* dst, int s, std::uint64_t* bar) {
#pragma unroll
        for (int b = 0; b < Boxes; ++b) {
          const int k = kb + s * kStageElems + b * kBoxElems;
          tma_load_box(dst + b * kWBox, &tmw, k, row0, bar);
          tma_load_box(dst + Boxes * kWBox + b * kXBox, &tmx, k, 0, bar);
        }
      };
      ring_produce(stages, full, empty, ring, kStageBytes, kStageBytes, issue);
    }
  } else {
    float acc[kFrag], box[kFrag];
#pragma unroll
    for (int i = 0; i < kFrag; ++i) acc[i] = box[i] = 0.f;
    for (int s = 0; s < stages; ++s) {
      const int slot = s % Stages;
      mbar_wait(&full[slot], (s / Stages) & 1);
      const unsigned char* st = ring + slot * kStageBytes;
#pragma unroll
      for (int b = 0; b < Boxes; ++b) {
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < kSteps; ++j)
          Wgmma<Tr, kTok>::run(box, sw128_desc(st + b * kWBox + j * kStepBytes),
                               sw128_desc(st + Boxes * kWBox + b * kXBox + j * kStepBytes), j);
        wgmma_commit_and_wait();
        fence_registers(box);
#pragma unroll
        for (int i = 0; i < kFrag; ++i) acc[i] += box[i];
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[slot]);
    }
    // Fragment of the m64nN tile: warp w holds rows 16w + g (+8), token pairs 8 * (i / 4) + 2t (+1).
    const int g = lane >> 2, t = lane & 3;
    const float scale = result_scale(p);
#pragma unroll
    for (int i = 0; i < kFrag; ++i) {
      const int row = row0 + 16 * warp + g + ((i & 2) ? 8 : 0);
      const int tok = 8 * (i >> 2) + 2 * t + (i & 1);
      if (row < p.m && tok < p.n) emit(p, row, tok, acc[i], scale);
    }
  }
  skinny_trace_exit(p.w);
}

/// Whether the loaded device code of this translation unit has wgmma (skinny_wg::g_wgmma_built, read
/// once through the caller's cache).
inline cudaError_t skinny_wgt_built(SkinnyKernelCache* cache, bool* out) {
  if (cache == nullptr) return cudaErrorInvalidValue;
  const auto& flag = skinny_wg::g_wgmma_built;  // the host shadow: its address names the symbol
  int v = 0;
  const cudaError_t e = cache->code_flag(static_cast<const void*>(&flag), &v);
  if (e != cudaSuccess) return e;
  *out = v == 1;
  return cudaSuccess;
}

template <class Tr, int WN, int Boxes, int Stages>
cudaError_t skinny_wgt_launch(const SkinnyLaunch& l, const SkinnyDevice& dev, SkinnyKernelCache* cache,
                              cudaStream_t stream) {
  // wgmma is sm_90a: a compute capability 9.0 device running code built for it.
  if (dev.cc != 90 || dev.ptx_version < 90) return cudaErrorNotSupported;
  bool built = false;
  cudaError_t e = skinny_wgt_built(cache, &built);
  if (e != cudaSuccess) return e;
  if (!built) return cudaErrorNotSupported;
  const auto kernel = skinny_wgt_kernel<Tr, WN, Boxes, Stages>;
  constexpr std::size_t smem = skinny_wgt_smem(WN, Boxes, Stages);
  if (smem > kSkinnyWgtSmemLimit) return cudaErrorNotSupported;
  CUtensorMap tmw, tmx;
  if ((e = skinny_tensor_map_2d<Tr>(dev.encode_tensor_map, l.p.w, l.p.k, l.p.m, l.p.lda * Tr::kBytes,
                                    skinny_wg::kRows, &tmw)) != cudaSuccess ||
      (e = skinny_tensor_map_2d<Tr>(dev.encode_tensor_map, l.p.x, l.p.k, l.p.n, l.p.ldb * Tr::kBytes, 8 * WN,
                                    &tmx)) != cudaSuccess)
    return e;
  const long long blocks = (static_cast<long long>(l.p.m) + skinny_wg::kRows - 1) / skinny_wg::kRows;
  return skinny_tma_launch(kernel, skinny_wg::kThreads, smem, blocks, skinny_wgt_granule(Tr::kVec, Boxes), l, dev,
                           cache, stream, tmw, tmx);
}

/// Runs the wgmma kernel on `stream`: a shape of kSkinnyWgtShapes, l.p.n <= 64, sm_90a;
/// cudaErrorNotSupported elsewhere or when the ring does not fit at l.p.n tokens. `dev` and `cache`
/// are the caller's facts of the current device (skinny_device.hpp).
inline cudaError_t skinny_wgt(SkinnyIn in, int boxes, int stages, const SkinnyLaunch& l, const SkinnyDevice& dev,
                              SkinnyKernelCache* cache, cudaStream_t stream) {
  static_assert(std::size(kSkinnyWgtShapes) == 3, "the dispatch below lists every shape index");
  const int shape = skinny_wgt_shape_index(boxes, stages);
  if (shape < 0) return cudaErrorInvalidValue;
  return skinny_dispatch_in(in, [&](auto tr) {
    using Tr = decltype(tr);
    return skinny_dispatch_int<1, 2, 4, 8>(skinny_mma_token_tiles(l.p.n), [&](auto wn) {
      return skinny_dispatch_int<0, 1, 2>(shape, [&](auto i) {
        constexpr SkinnyRingShape sh = kSkinnyWgtShapes[i.value];
        if constexpr (skinny_wgt_smem(wn.value, sh.boxes, sh.stages) > kSkinnyWgtSmemLimit) {
          return cudaErrorNotSupported;  // not instantiated: the ring does not fit at this many tokens
        } else {
          return skinny_wgt_launch<Tr, wn.value, sh.boxes, sh.stages>(l, dev, cache, stream);
        }
      });
    });
  });
}

}  // namespace tunable::kernels
