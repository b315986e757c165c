// The layers of a one-token decode step with FP8 e4m3 weights as one persistent kernel.
//
// Why: at one token a layer is four weight-only GEMMs and an attention, and launched one by one
// each GEMM grid fills and drains the memory pipe: about 3 us per call beyond its bytes on an H100
// (docs/skinny-gemm.md), which Gemma-2B's small per-layer weights (QKV 5 MB, O 4 MB) pay four times
// per layer. Here one block per SM streams its share of every layer's weights through a ring of
// 16 KB shared-memory slots filled by bulk copies (one producer lane, cp.async.bulk + mbarriers),
// and the producer never waits for activations: while the block's compute warps wait at a grid
// barrier or run the attention, the ring fills with the next GEMM's rows. The pipe fills once per
// step instead of once per GEMM.
//
// Work. A GEMM's rows are cut into chunks of at most 16 KB: whole rows made of units of 2048 e4m3
// values (8 units per chunk); the gate/up GEMM's chunks hold gate rows and the matching up rows, so
// act(gate) * up is its epilogue. Chunk c of the step's running chunk count goes to block c mod grid,
// so every block streams the same bytes per step to within one chunk whatever each GEMM's size. A
// compute warp takes one unit of a chunk (64 values per lane) against its slice of the GEMM's input
// row, held in registers for the whole GEMM. Per layer: QKV (input RMS-normalized: the norm weight is
// folded into the weight at load, as for the weight-only GEMMs' `_rms` form), attention (RoPE, cache
// write, online softmax over spans of the sequence, the last span's block combines the spans), O (added
// into the residual), gate/up (normalized input; act(gate) * up), down (added into the residual), a
// grid barrier after each. The barrier is a monotonic arrival counter (no reset between launches: each
// launch reads its base from a word the previous launch left); one that waits longer than the timeout
// sets the error word and the kernel leaves, so a grid that cannot be resident fails instead of hanging.
//
// Numerics are those of the per-op path (weight-only GEMMs with fp32 sums, one rounding of each
// output to T, the residual added before that rounding, act(gate) * up from T-rounded gate and up,
// the attention of kernels/attention) up to the order of fp32 sums.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/activation/act_and_mul.cuh"
#include "kernels/attention/attention.cuh"
#include "kernels/common/device_utils.cuh"
#include "kernels/gemv/common.cuh"
#include "kernels/gemv/skinny_tma.cuh"
#include "kernels/model/decode_layers_plan.hpp"

namespace tunable::kernels {

template <class T>
struct DecodeLayersParams {
  const DecodeLayerWeights* layers;  ///< [num_layers], device memory
  int num_layers, hidden, inter, heads, kv_heads, max_seq;
  float eps;         ///< RMSNorm epsilon
  float attn_scale;  ///< softmax scale
  ActKind act;
  T* resid;    ///< [hidden]: the residual stream, the embedding in, the last layer's out
  T* qkv;      ///< [(heads + 2 kv_heads) * head_dim]
  T* att;      ///< [heads * head_dim]
  T* act_out;  ///< [inter]
  T* k_cache;  ///< layer l at l * layer_cache_elems: [kv_heads][max_seq][head_dim] (sequence 0)
  T* v_cache;
  std::int64_t layer_cache_elems;
  const int* positions;  ///< [1]: the new token's position
  const float* inv_freq;
  float* part_acc;  ///< [kv_heads][kDlMaxSpans][group * head_dim]
  float* part_ml;   ///< [kv_heads][kDlMaxSpans][group][2]
  unsigned* counters;  ///< [kv_heads], zero between launches
  unsigned* barrier;   ///< [2]: arrivals (monotonic), the next launch's base
  int* error;          ///< set to 1 when a grid barrier timed out
  int blocks;          ///< arrivals per grid barrier: gridDim.x
  int slots;           ///< ring slots (<= kDlMaxSlots), as the dynamic shared memory holds them
  unsigned long long timeout_ns;
};

namespace decode_layers_detail {

using skinny_tma::mbar_expect_tx;
using skinny_tma::mbar_init;
using skinny_tma::named_sync;
using skinny_tma::smem_addr;

constexpr int kComputeThreads = kDlComputeWarps * 32;
constexpr int kBarrierId = 1;  // named barrier of the compute warps (the producer warp never joins)

__device__ __forceinline__ void sync_compute() { named_sync(kBarrierId, kComputeThreads); }

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ bool mbar_try(std::uint64_t* bar, unsigned parity) {
  unsigned done = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
#else
  (void)bar, (void)parity;
  done = 1;
#endif
  return done != 0;
}

/// `bytes` (a multiple of 16, 16-byte aligned ends) from global to shared, completing on `bar`.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
#else
  (void)dst, (void)src, (void)bytes, (void)bar;
#endif
}

/// 8 values of T at p (16-byte aligned) through L2: other blocks of this launch wrote them.
template <class T>
__device__ __forceinline__ void load8_cg(const T* p, float (&f)[8]) {
  const uint4 w = __ldcg(reinterpret_cast<const uint4*>(p));
  Vec<T, 8> v;
  memcpy(&v, &w, 16);
#pragma unroll
  for (int e = 0; e < 8; ++e) f[e] = to_float(v.v[e]);
}

template <class T>
__device__ __forceinline__ float ld_cg(const T* p) {
  const unsigned short u = __ldcg(reinterpret_cast<const unsigned short*>(p));
  T v;
  memcpy(&v, &u, 2);
  return to_float(v);
}

// ---- timeline trace (lab/probes/decode_layers_trace.cu builds with TUNABLE_DECODE_LAYERS_TRACE) ----
//
// Thread 0 of every block records %globaltimer at each stage's start (barrier released) and end
// (before arriving at the next barrier), kDlTraceEvents per layer, and the time its producer lane
// spent waiting for a free slot and its first compute warp for a full one, so that a step splits into
// streaming, compute, barrier latency and skew. With TUNABLE_DECODE_LAYERS_NO_MATH the compute warps
// only wait for and release each chunk (the streaming ceiling of the same structure).
inline constexpr int kDlTraceEvents = 10;
#ifdef TUNABLE_DECODE_LAYERS_TRACE
static __device__ unsigned long long* g_dl_trace = nullptr;  // [grid][layers][kDlTraceEvents]
static __device__ unsigned long long* g_dl_waits = nullptr;  // [grid][2]: producer, consumer wait ns
#endif
__device__ __forceinline__ void trace_mark(int layers, int layer, int event) {
#ifdef TUNABLE_DECODE_LAYERS_TRACE
  if (threadIdx.x == 0 && g_dl_trace)
    g_dl_trace[(static_cast<long long>(blockIdx.x) * layers + layer) * kDlTraceEvents + event] = now_ns();
#else
  (void)layers, (void)layer, (void)event;
#endif
}
__device__ __forceinline__ void trace_wait(int which, unsigned long long ns) {
#ifdef TUNABLE_DECODE_LAYERS_TRACE
  if (g_dl_waits) atomicAdd(g_dl_waits + blockIdx.x * 2 + which, ns);
#else
  (void)which, (void)ns;
#endif
}

/// The grid barrier of the compute warps. Thread 0 arrives once the block's writes before it are
/// ordered (the block's named barrier, then a device-scope acquire-release fence before a relaxed
/// add, as CUTLASS's generic barrier) and spins on the counter with acquire loads; false when it timed
/// out (the error word is set and every compute thread of the block returns).
template <class T>
__device__ bool grid_sync(const DecodeLayersParams<T>& p, unsigned* target, volatile int* abort) {
  sync_compute();
  if (threadIdx.x == 0) {
    *target += static_cast<unsigned>(p.blocks);
    asm volatile("fence.acq_rel.gpu;\n red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(p.barrier) : "memory");
    const unsigned long long t0 = now_ns();
    unsigned spins = 0;
    while (static_cast<int>(ld_acquire(p.barrier) - *target) < 0) {
      if ((++spins & 1023u) == 0 && now_ns() - t0 > p.timeout_ns) {
        atomicExch(p.error, 1);
        *abort = 1;
        break;
      }
    }
  }
  sync_compute();
  return *abort == 0;
}

/// rsqrt(mean(x^2) + eps) of the residual, by every compute thread.
template <class T>
__device__ float rms_factor_of(const DecodeLayersParams<T>& p, float* red) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  float ss = 0.f;
  for (int i = tid * 8; i < p.hidden; i += kComputeThreads * 8) {
    float f[8];
    load8_cg(p.resid + i, f);
#pragma unroll
    for (int e = 0; e < 8; ++e) ss = fmaf(f[e], f[e], ss);
  }
  ss = warp_reduce(ss, SumOp{});
  if (lane == 0) red[warp] = ss;
  sync_compute();
  float t = 0.f;
#pragma unroll
  for (int w = 0; w < kDlComputeWarps; ++w) t += red[w];
  return rsqrtf(t / static_cast<float>(p.hidden) + p.eps);
}

template <ActKind A>
__device__ __forceinline__ float act_of(float x) {
  return activate<A, false>(x);
}

/// Ring state of the compute warps.
struct Consumer {
  unsigned char* ring;
  std::uint64_t* full;
  std::uint64_t* empty;
  float* red;       ///< [slots][kDlComputeWarps]: each warp's partial of a chunk
  unsigned* count;  ///< [slots]: warps done with the chunk in the slot
  unsigned char* scratch;
  int slots;
  int used;        ///< chunks consumed so far
  long long base;  ///< the step's running chunk count at the current GEMM
};

/// One GEMM of layer L (stage s: 0 QKV, 1 O, 2 gate/up, 3 down) by the compute warps.
template <class T, int D>
__device__ void gemm_stage(const DecodeLayersParams<T>& p, int s, Consumer& c, float* rms_red) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const DlGemm g = decode_layers_gemm(s, p.hidden, p.inter, p.heads, p.kv_heads, D);
  const bool norm_in = s == 0 || s == 2, add_to = s == 1 || s == 3;
  const T* x_src = norm_in ? p.resid : s == 1 ? p.att : p.act_out;
  unsigned char* scratch = c.scratch;
  // Warp pair 2u, 2u + 1 takes unit u % units of chunk row u / units, each warp half of it (1024
  // values, 32 per lane): its x values for the whole GEMM, loaded before the RMS sums so that both
  // round trips overlap. Two warps per unit rather than one: a block is one per SM, and a warp's
  // chunk work is a chain of dependent conversions and FMAs that only more warps hide.
  const int uslot = warp >> 1, half = warp & 1;
  const int unit = uslot % g.units, crow = uslot / g.units;
  const int crows = g.gated ? 2 * g.rpc : g.rpc;
  const int kofs = unit * kDlUnit + half * (kDlUnit / 2) + lane * 16;  // + j * 512, j = 0, 1
  uint4 xw[4];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const uint4* src = reinterpret_cast<const uint4*>(x_src + kofs + j * 512);
    xw[2 * j] = __ldcg(src);
    xw[2 * j + 1] = __ldcg(src + 1);
  }
  const float rmsf = norm_in ? rms_factor_of(p, rms_red) : 1.f;
  float x[32];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    Vec<T, 8> v;
    memcpy(&v, &xw[i], 16);
#pragma unroll
    for (int e = 0; e < 8; ++e) x[8 * i + e] = to_float(v.v[e]);
  }
  // fp8 values convert to value * 2^-8 (skinny_detail::E4M3Traits::to_float).
  const float out_scale = 256.f * rmsf;
  const int first = decode_layers_first_chunk(c.base, blockIdx.x, gridDim.x);
  const int mine = first < g.chunks ? (g.chunks - 1 - first) / static_cast<int>(gridDim.x) + 1 : 0;
  // O and down add into the residual: the block's rows of it for this GEMM come into shared memory
  // (the attention's query space, free here) in one round trip now, since which warp finishes a
  // chunk is known only at its end; beyond kDlResCap rows they are loaded when finishing.
  float* res_s = reinterpret_cast<float*>(scratch);
  const bool res_cached = add_to && mine * g.rpc <= kDlResCap;
  if (res_cached) {
    for (int i = tid; i < mine * g.rpc; i += kComputeThreads) {
      const int ci = i / g.rpc, r = (first + ci * static_cast<int>(gridDim.x)) * g.rpc + (i - ci * g.rpc);
      res_s[i] = r < g.rows ? ld_cg(p.resid + r) : 0.f;
    }
    sync_compute();
  }
  // Each chunk: every warp its half unit against x, then the last warp to count itself in finishes
  // the chunk's rows (a lane each) from the partials in shared memory; no warp waits for another, so
  // the warps drift apart by up to the ring's depth and hide each other's latencies.
  int li = 0;
  for (int ch = first; ch < g.chunks; ch += gridDim.x, ++c.used, ++li) {
    const int slot = c.used % c.slots;
    const int r0 = ch * g.rpc, nr = min(g.rpc, g.rows - r0);
    const bool live = crow < crows && (crow < g.rpc ? crow : crow - g.rpc) < nr;
#ifdef TUNABLE_DECODE_LAYERS_TRACE
    const unsigned long long tw = tid == 0 ? now_ns() : 0;
#endif
    skinny_tma::mbar_wait(&c.full[slot], (c.used / c.slots) & 1);
#ifdef TUNABLE_DECODE_LAYERS_TRACE
    if (tid == 0) trace_wait(1, now_ns() - tw);
#endif
    float acc[4] = {0.f, 0.f, 0.f, 0.f};  // four chains, not one: the FMAs' latency
#ifdef TUNABLE_DECODE_LAYERS_NO_MATH
    (void)live;
    if (false) {
#else
    if (live) {
#endif
      const unsigned char* src = c.ring + slot * kDlSlotBytes + crow * g.k + kofs;
      uint4 w[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) w[j] = *reinterpret_cast<const uint4*>(src + j * 512);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float f[16];
        skinny_detail::E4M3Traits::to_float(w[j], f);
#pragma unroll
        for (int e = 0; e < 16; ++e) acc[2 * j + (e & 1)] = fmaf(f[e], x[16 * j + e], acc[2 * j + (e & 1)]);
      }
    }
    const float sum = warp_reduce((acc[0] + acc[1]) + (acc[2] + acc[3]), SumOp{});
    // The chunk's row scales (read before this warp releases the slot).
    const float* ss = reinterpret_cast<const float*>(c.ring + slot * kDlSlotBytes + kDlChunkBytes) + (r0 & 3);
    int fin = -1;  // the chunk row this lane finishes
    float v = 0.f, up = 0.f;
    {
      if (lane == 0) {
        c.red[slot * kDlComputeWarps + warp] = sum;
        __threadfence_block();
      }
      unsigned last = 0;
      if (lane == 0) last = atomicAdd(c.count + slot, 1u) == kDlComputeWarps - 1;
      last = __shfl_sync(0xffffffffu, last, 0);
      if (last) {
        __threadfence_block();
        if (lane < nr) {
          fin = lane;
          const float* r = c.red + slot * kDlComputeWarps;
          for (int u = 0; u < 2 * g.units; ++u) v += r[fin * 2 * g.units + u];
          if (g.gated)
            for (int u = 0; u < 2 * g.units; ++u) up += r[(g.rpc + fin) * 2 * g.units + u];
        }
        if (lane == 0) c.count[slot] = 0u;
      }
    }
    float sc = 0.f, sc_up = 0.f;
    if (fin >= 0) {
      sc = ss[fin];
      if (g.gated) sc_up = ss[kDlScaleBytes / 8 + fin];
    }
    skinny_tma::ring_release(&c.empty[slot], lane);
    if (fin < 0) continue;
    if (!g.gated) {
      v *= out_scale * sc;
      if (s == 0) {
        p.qkv[r0 + fin] = from_float<T>(v);
      } else {
        const float res = res_cached ? res_s[li * g.rpc + fin] : ld_cg(p.resid + r0 + fin);
        p.resid[r0 + fin] = from_float<T>(v + res);
      }
    } else {
      // As the per-op path: gate and up rounded to T by their GEMM, then act(gate) * up.
      const float gt = to_float(from_float<T>(v * out_scale * sc));
      const float ut = to_float(from_float<T>(up * out_scale * sc_up));
      const float a = p.act == ActKind::kSilu ? act_of<ActKind::kSilu>(gt) : act_of<ActKind::kGeluTanh>(gt);
      p.act_out[r0 + fin] = from_float<T>(a * ut);
    }
  }
  // The residual rows in shared memory are read until the last chunk; the next user of that space
  // (the next layer's attention) comes after a grid barrier.
  c.base += g.chunks;
}

/// rows x D elements of T (D * sizeof(T) a multiple of 16) from global to shared, spread over the
/// compute threads, in flight until cp_async_wait.
template <class T, int D>
__device__ __forceinline__ void load_rows_async(T* dst, const T* src, int rows) {
  constexpr int kChunks = D * static_cast<int>(sizeof(T)) / 16;
  for (int i = threadIdx.x; i < rows * kChunks; i += kComputeThreads)
    cp_async16(reinterpret_cast<char*>(dst) + i * 16, reinterpret_cast<const char*>(src) + i * 16);
}

/// Item `it` of a layer's attention at `pos`: KV head, span, keys [s0, s1), whether the span holds the
/// new position (its last key), and the cached keys of its first tile.
struct AttnItem {
  int kvh, sp, s0, s1, nc0;
  bool has_new;
};
__device__ __forceinline__ int attn_spans(int pos) { return min(kDlMaxSpans, (pos + kDlMinSpan) / kDlMinSpan); }
__device__ __forceinline__ AttnItem attn_item(int it, int pos) {
  const int len = pos + 1, spans = attn_spans(pos), span_len = (len + spans - 1) / spans;
  AttnItem a;
  a.kvh = it / spans;
  a.sp = it - a.kvh * spans;
  a.s0 = a.sp * span_len;
  a.s1 = min(len, a.s0 + span_len);
  a.has_new = a.s1 == len;
  a.nc0 = min(kDlKeyTile, a.s1 - a.s0) - (a.has_new && a.s0 + kDlKeyTile >= a.s1 ? 1 : 0);
  return a;
}

/// The attention's shared-memory tiles of keys and values in the scratch.
template <class T>
__device__ __forceinline__ T* attn_k_tile(unsigned char* scratch) {
  return reinterpret_cast<T*>(scratch + (kDlMaxGroupDim + kDlMaxGroup * kDlKeyTile + kDlMaxGroup * 4) * 4 + 2 * 256 * 2);
}

/// At a layer's start, the blocks with an attention item start copying its first tile of cached keys
/// and values into shared memory: those rows were written by earlier steps, and under the weight
/// stream a round trip to them takes several microseconds, which the QKV GEMM now covers.
template <class T, int D>
__device__ void attention_prefetch(const DecodeLayersParams<T>& p, int layer, int pos, unsigned char* scratch) {
  if (static_cast<int>(blockIdx.x) >= p.kv_heads * attn_spans(pos)) return;
  const AttnItem a = attn_item(blockIdx.x, pos);
  const std::int64_t head = static_cast<std::int64_t>(a.kvh) * p.max_seq;
  T* k_s = attn_k_tile<T>(scratch);
  T* v_s = k_s + kDlKeyTile * 256;
  load_rows_async<T, D>(k_s, p.k_cache + layer * p.layer_cache_elems + (head + a.s0) * D, a.nc0);
  load_rows_async<T, D>(v_s, p.v_cache + layer * p.layer_cache_elems + (head + a.s0) * D, a.nc0);
  cp_async_commit();
}

/// The attention of the new token over sequence 0's cache of one layer: items (KV head, span)
/// spread over the grid, each rotating its query heads and (the span holding the new position) the
/// new key, writing the new key and value to the cache, and running an online softmax over its keys
/// in tiles of kDlKeyTile, each tile's keys and values in flight at once into shared memory (cp.async;
/// a block is a chain of round trips here, one per tile); partial results of several spans are
/// combined by the last to finish.
template <class T, int D>
__device__ void attention_stage(const DecodeLayersParams<T>& p, int layer, int pos, unsigned char* scratch_raw,
                                unsigned* last_s) {
  constexpr int kPerLane = D / 32;
  constexpr int kMaxItems = kDlMaxGroupDim / 4 / kComputeThreads;  // four dimensions of one head each
  using KV = Vec<T, kPerLane>;
  using V4 = Vec<T, 4>;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int group = p.heads / p.kv_heads;
  const int spans = attn_spans(pos);
  float* q_s = reinterpret_cast<float*>(scratch_raw);   // [group][D], rotated and scaled
  float* s_s = q_s + kDlMaxGroupDim;                     // [group][kDlKeyTile]; the combine's weights
  float* ml_s = s_s + kDlMaxGroup * kDlKeyTile;          // [group][4]: max, sum, correction
  T* knew_s = reinterpret_cast<T*>(ml_s + kDlMaxGroup * 4);  // [D]
  T* vnew_s = knew_s + 256;
  T* k_s = attn_k_tile<T>(scratch_raw);                  // [kDlKeyTile][D]
  T* v_s = k_s + kDlKeyTile * 256;                       // [kDlKeyTile][D]
  T* kc = p.k_cache + layer * p.layer_cache_elems;
  T* vc = p.v_cache + layer * p.layer_cache_elems;
  const int items = group * (D / 4);
  for (int it = blockIdx.x; it < p.kv_heads * spans; it += gridDim.x) {
    const AttnItem ai = attn_item(it, pos);
    const int kvh = ai.kvh, sp = ai.sp, s0 = ai.s0, s1 = ai.s1;
    const bool has_new = ai.has_new;
    const std::int64_t head = static_cast<std::int64_t>(kvh) * p.max_seq;
    // The first tile's cached keys and values: the block's first item's went out at the layer's
    // start (attention_prefetch); a later item's go out before anything else.
    if (it != static_cast<int>(blockIdx.x)) {
      load_rows_async<T, D>(k_s, kc + (head + s0) * D, ai.nc0);
      load_rows_async<T, D>(v_s, vc + (head + s0) * D, ai.nc0);
      cp_async_commit();
    }
    for (int i = tid; i < group * (D / 2); i += kComputeThreads) {
      const int gq = i / (D / 2), d = i - gq * (D / 2);
      const T* q = p.qkv + (kvh * group + gq) * D;
      T r1, r2;
      rope_pair(ld_cg(q + d), ld_cg(q + d + D / 2), pos, __ldg(p.inv_freq + d), &r1, &r2);
      q_s[gq * D + d] = to_float(r1) * p.attn_scale;
      q_s[gq * D + d + D / 2] = to_float(r2) * p.attn_scale;
    }
    if (has_new) {
      const T* k = p.qkv + (p.heads + kvh) * D;
      const T* v = p.qkv + (p.heads + p.kv_heads + kvh) * D;
      for (int d = tid; d < D / 2; d += kComputeThreads)
        rope_pair(ld_cg(k + d), ld_cg(k + d + D / 2), pos, __ldg(p.inv_freq + d), &knew_s[d], &knew_s[d + D / 2]);
      for (int d = tid; d < D; d += kComputeThreads) vnew_s[d] = from_float<T>(ld_cg(v + d));
    }
    if (tid < group) {
      ml_s[tid * 4] = -INFINITY;
      ml_s[tid * 4 + 1] = 0.f;
    }
    sync_compute();
    if (has_new) {
      for (int d = tid; d < D; d += kComputeThreads) {
        kc[(head + pos) * D + d] = knew_s[d];
        vc[(head + pos) * D + d] = vnew_s[d];
      }
    }
    float a[kMaxItems][4];
#pragma unroll
    for (int k = 0; k < kMaxItems; ++k) a[k][0] = a[k][1] = a[k][2] = a[k][3] = 0.f;
    for (int t0 = s0; t0 < s1; t0 += kDlKeyTile) {
      const int tn = min(kDlKeyTile, s1 - t0);
      if (t0 > s0) {  // a span of several tiles: the next one, once every warp is done with this one
        const int nc = tn - (has_new && t0 + tn == s1 ? 1 : 0);
        load_rows_async<T, D>(k_s, kc + (head + t0) * D, nc);
        load_rows_async<T, D>(v_s, vc + (head + t0) * D, nc);
        cp_async_commit();
      }
      cp_async_wait<0>();
      sync_compute();
      for (int jj = warp; jj < tn; jj += kDlComputeWarps) {
        const T* key = t0 + jj == pos ? knew_s : k_s + jj * D;
        const KV kv = load_vec<KV>(key + lane * kPerLane);
        float kf[kPerLane];
#pragma unroll
        for (int e = 0; e < kPerLane; ++e) kf[e] = to_float(kv.v[e]);
        for (int gq = 0; gq < group; ++gq) {
          const float* q = q_s + gq * D + lane * kPerLane;
          float acc = 0.f;
#pragma unroll
          for (int e = 0; e < kPerLane; ++e) acc = fmaf(q[e], kf[e], acc);
          acc = warp_reduce(acc, SumOp{});
          if (lane == 0) s_s[gq * kDlKeyTile + jj] = acc;
        }
      }
      sync_compute();
      for (int gq = warp; gq < group; gq += kDlComputeWarps) {
        float* sc = s_s + gq * kDlKeyTile;
        float m = -INFINITY;
        for (int jj = lane; jj < tn; jj += 32) m = fmaxf(m, sc[jj]);
        m = warp_reduce(m, MaxOp{});
        const float m_old = ml_s[gq * 4], m_new = fmaxf(m_old, m);
        const float corr = __expf(m_old - m_new);  // 0 for the first tile (m_old = -inf)
        float l = 0.f;
        for (int jj = lane; jj < tn; jj += 32) {
          const float e = __expf(sc[jj] - m_new);
          sc[jj] = e;
          l += e;
        }
        l = warp_reduce(l, SumOp{});
        if (lane == 0) {
          ml_s[gq * 4 + 1] = ml_s[gq * 4 + 1] * corr + l;
          ml_s[gq * 4] = m_new;
          ml_s[gq * 4 + 2] = corr;
        }
      }
      sync_compute();
#pragma unroll
      for (int k = 0; k < kMaxItems; ++k) {
        const int i = tid + k * kComputeThreads;
        if (i >= items) break;
        const int gq = i / (D / 4), d = (i - gq * (D / 4)) * 4;
        const float corr = ml_s[gq * 4 + 2];
#pragma unroll
        for (int e = 0; e < 4; ++e) a[k][e] *= corr;
        const float* w = s_s + gq * kDlKeyTile;
#pragma unroll 8
        for (int jj = 0; jj < tn; ++jj) {
          const V4 v = load_vec<V4>(t0 + jj == pos ? vnew_s + d : v_s + jj * D + d);
#pragma unroll
          for (int e = 0; e < 4; ++e) a[k][e] = fmaf(w[jj], to_float(v.v[e]), a[k][e]);
        }
      }
      sync_compute();  // the next tile overwrites k_s, v_s and s_s
    }
    T* out = p.att + kvh * group * D;
    if (spans == 1) {
#pragma unroll
      for (int k = 0; k < kMaxItems; ++k) {
        const int i = tid + k * kComputeThreads;
        if (i >= items) break;
        const int gq = i / (D / 4), d = (i - gq * (D / 4)) * 4;
        const float inv = 1.f / ml_s[gq * 4 + 1];
        V4 o;
#pragma unroll
        for (int e = 0; e < 4; ++e) o.v[e] = from_float<T>(a[k][e] * inv);
        store_vec(out + gq * D + d, o);
      }
      sync_compute();
      continue;
    }
    const std::int64_t part = static_cast<std::int64_t>(kvh) * kDlMaxSpans;
#pragma unroll
    for (int k = 0; k < kMaxItems; ++k) {
      const int i = tid + k * kComputeThreads;
      if (i >= items) break;
      const int gq = i / (D / 4), d = (i - gq * (D / 4)) * 4;
      *reinterpret_cast<float4*>(p.part_acc + ((part + sp) * group + gq) * D + d) =
          make_float4(a[k][0], a[k][1], a[k][2], a[k][3]);
    }
    if (tid < group) {
      float* ml = p.part_ml + ((part + sp) * group + tid) * 2;
      ml[0] = ml_s[tid * 4];
      ml[1] = ml_s[tid * 4 + 1];
    }
    // The block's partials ordered before its count (named barrier, then one device-scope fence), as
    // the grid barrier; the last block's reads after its count.
    sync_compute();
    if (tid == 0) {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      *last_s = atomicAdd(p.counters + kvh, 1u) == static_cast<unsigned>(spans) - 1;
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
    }
    sync_compute();
    if (*last_s) {
      float* w_s = s_s;  // [group][kDlMaxSpans]
      for (int gq = warp; gq < group; gq += kDlComputeWarps) {
        float m = -INFINITY, l = 0.f;
        if (lane < spans) {
          const float2 v = __ldcg(reinterpret_cast<const float2*>(p.part_ml + ((part + lane) * group + gq) * 2));
          m = v.x, l = v.y;
        }
        const float mx = warp_reduce(m, MaxOp{});
        const float w = lane < spans ? __expf(m - mx) : 0.f;
        const float inv = 1.f / warp_reduce(l * w, SumOp{});
        if (lane < spans) w_s[gq * kDlMaxSpans + lane] = w * inv;
      }
      sync_compute();
#pragma unroll
      for (int k = 0; k < kMaxItems; ++k) {
        const int i = tid + k * kComputeThreads;
        if (i >= items) break;
        const int gq = i / (D / 4), d = (i - gq * (D / 4)) * 4;
        float o4[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 8
        for (int sq = 0; sq < spans; ++sq) {
          const float4 v = __ldcg(reinterpret_cast<const float4*>(p.part_acc + ((part + sq) * group + gq) * D + d));
          const float w = w_s[gq * kDlMaxSpans + sq];
          o4[0] = fmaf(v.x, w, o4[0]);
          o4[1] = fmaf(v.y, w, o4[1]);
          o4[2] = fmaf(v.z, w, o4[2]);
          o4[3] = fmaf(v.w, w, o4[3]);
        }
        V4 o;
#pragma unroll
        for (int e = 0; e < 4; ++e) o.v[e] = from_float<T>(o4[e]);
        store_vec(out + gq * D + d, o);
      }
      if (tid == 0) p.counters[kvh] = 0u;
    }
    sync_compute();  // before the next item reuses the scratch
  }
}

/// Walks one block's chunks of a step in order: layer, GEMM, chunk.
struct ChunkCursor {
  int l = 0, s = 0, ch = 0;
  long long base = 0;
  DlGemm g;
  bool done = false;
  template <class T, int D>
  __device__ void start(const DecodeLayersParams<T>& p) {
    g = decode_layers_gemm(0, p.hidden, p.inter, p.heads, p.kv_heads, D);
    ch = decode_layers_first_chunk(0, blockIdx.x, gridDim.x);
    settle<T, D>(p);
  }
  template <class T, int D>
  __device__ void next(const DecodeLayersParams<T>& p) {
    ch += gridDim.x;
    settle<T, D>(p);
  }
  template <class T, int D>
  __device__ void settle(const DecodeLayersParams<T>& p) {
    while (!done && ch >= g.chunks) {
      base += g.chunks;
      if (++s == 4) {
        s = 0;
        done = ++l == p.num_layers;
      }
      g = decode_layers_gemm(s, p.hidden, p.inter, p.heads, p.kv_heads, D);
      ch = decode_layers_first_chunk(base, blockIdx.x, gridDim.x);
    }
  }
};

/// The producer lane: every chunk of the block, in the compute warps' order, into the ring. Returns
/// early (after its copies in flight landed) when the compute warps gave up at a barrier.
template <class T, int D>
__device__ void produce(const DecodeLayersParams<T>& p, unsigned char* ring, std::uint64_t* full,
                        std::uint64_t* empty, volatile int* abort) {
  ChunkCursor cur;
  cur.start<T, D>(p);
  int issued = 0;
  for (; !cur.done; cur.next<T, D>(p), ++issued) {
    const int slot = issued % p.slots;
    if (issued >= p.slots) {
      const unsigned parity = ((issued / p.slots) & 1) ^ 1;
#ifdef TUNABLE_DECODE_LAYERS_TRACE
      const unsigned long long tw = now_ns();
      struct Done {
        unsigned long long t;
        __device__ ~Done() { trace_wait(0, now_ns() - t); }
      } done{tw};
#endif
      while (!mbar_try(&empty[slot], parity)) {
        if (*abort) {
          // Wait out the copies in flight: a block must not leave with bulk copies into its
          // shared memory pending.
          for (int i = max(0, issued - p.slots); i < issued; ++i)
            skinny_tma::mbar_wait(&full[i % p.slots], (i / p.slots) & 1);
          return;
        }
      }
    }
    const DlGemm& g = cur.g;
    const int r0 = cur.ch * g.rpc, nr = min(g.rpc, g.rows - r0);
    const unsigned bytes = static_cast<unsigned>(nr) * static_cast<unsigned>(g.k);
    unsigned char* dst = ring + slot * kDlSlotBytes;
    const std::uint8_t* w = p.layers[cur.l].w[cur.s] + static_cast<std::size_t>(r0) * g.k;
    const float* scale = p.layers[cur.l].scale[cur.s];
    // Scales of rows [r0, r0 + nr) in a 16-byte aligned window (row counts are multiples of 4,
    // so the window ends inside the array).
    const int a = r0 & ~3;
    const unsigned sbytes = static_cast<unsigned>(((r0 + nr + 3) & ~3) - a) * 4u;
    mbar_expect_tx(&full[slot], (g.gated ? 2 : 1) * (bytes + sbytes));
    bulk_copy(dst, w, bytes, &full[slot]);
    bulk_copy(dst + kDlChunkBytes, scale + a, sbytes, &full[slot]);
    if (g.gated) {
      bulk_copy(dst + g.rpc * g.k, w + static_cast<std::size_t>(g.rows) * g.k, bytes, &full[slot]);
      bulk_copy(dst + kDlChunkBytes + kDlScaleBytes / 2, scale + g.rows + a, sbytes, &full[slot]);
    }
  }
}

}  // namespace decode_layers_detail

/// One launch = every layer of one decode step (one token, sequence 0): grid = the SM count (all
/// blocks resident at once, one per SM), kDlThreads threads, decode_layers_smem(slots) bytes of
/// dynamic shared memory, programmatic-dependent on the embedding.
template <class T, int D>
__global__ void __launch_bounds__(kDlThreads, 1) decode_layers_kernel(const __grid_constant__ DecodeLayersParams<T> p) {
  using namespace decode_layers_detail;
  extern __shared__ __align__(128) unsigned char dl_smem[];
  __shared__ std::uint64_t full[kDlMaxSlots], empty[kDlMaxSlots];
  __shared__ float red[kDlMaxSlots * kDlComputeWarps];
  __shared__ unsigned count[kDlMaxSlots];
  __shared__ float rms_red[kDlComputeWarps];
  __shared__ volatile int abort_s;
  __shared__ unsigned last_s;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int i = 0; i < p.slots; ++i) {
      mbar_init(&full[i], 1);
      mbar_init(&empty[i], kDlComputeWarps);
      count[i] = 0u;
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    abort_s = 0;
  }
  __syncthreads();
  unsigned char* ring = dl_smem;
  unsigned char* scratch = dl_smem + p.slots * kDlSlotBytes;
  if (warp == kDlComputeWarps) {
    // The weights are written by no kernel of the step: the producer starts before the PDL wait.
    if (lane == 0) produce<T, D>(p, ring, full, empty, &abort_s);
    return;
  }
  unsigned target = 0;
  if (threadIdx.x == 0) target = __ldcg(p.barrier + 1);
  pdl_wait();  // the residual stream (the embedding) and the position
  const int pos = __ldcg(p.positions);
  Consumer c{ring, full, empty, red, count, scratch, p.slots, 0, 0};
  for (int l = 0; l < p.num_layers; ++l) {
    if (l > 0 && !grid_sync(p, &target, &abort_s)) return;
    attention_prefetch<T, D>(p, l, pos, scratch);
    trace_mark(p.num_layers, l, 0);
    gemm_stage<T, D>(p, 0, c, rms_red);
    trace_mark(p.num_layers, l, 1);
    if (!grid_sync(p, &target, &abort_s)) return;
    trace_mark(p.num_layers, l, 2);
    attention_stage<T, D>(p, l, pos, scratch, &last_s);
    trace_mark(p.num_layers, l, 3);
    if (!grid_sync(p, &target, &abort_s)) return;
    trace_mark(p.num_layers, l, 4);
    gemm_stage<T, D>(p, 1, c, rms_red);
    trace_mark(p.num_layers, l, 5);
    if (!grid_sync(p, &target, &abort_s)) return;
    trace_mark(p.num_layers, l, 6);
    gemm_stage<T, D>(p, 2, c, rms_red);
    trace_mark(p.num_layers, l, 7);
    if (!grid_sync(p, &target, &abort_s)) return;
    trace_mark(p.num_layers, l, 8);
    if (l + 1 == p.num_layers) pdl_launch_dependents();
    gemm_stage<T, D>(p, 3, c, rms_red);
    trace_mark(p.num_layers, l, 9);
  }
  // Every block read this launch's base before its first arrival, and block 0 got here only after
  // all arrived at the last barrier: the next launch may start from here.
  if (blockIdx.x == 0 && threadIdx.x == 0) p.barrier[1] = target;
#else
  (void)red, (void)count, (void)rms_red, (void)abort_s, (void)last_s, (void)full, (void)empty;
  if (threadIdx.x == 0 && blockIdx.x == 0) *p.error = 2;  // built without sm_90 code: refused by the launcher
#endif
}

/// Dynamic shared memory of a launch with `slots` ring slots.
inline constexpr std::size_t decode_layers_smem(int slots) {
  return static_cast<std::size_t>(slots) * kDlSlotBytes + kDlScratchBytes;
}

}  // namespace tunable::kernels
