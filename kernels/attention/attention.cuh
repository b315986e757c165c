// Attention over a static KV cache for the decode engine: RoPE with the cache write (prefill),
// causal prefill attention, and split-sequence decode attention (GQA/MQA-aware), for head
// dimensions 64, 128 and 256 in bf16 or fp16 with fp32 math.
//
// The cache of one layer is [batch][kv_heads][max_seq][head_dim] (K and V apart): a sequence's
// keys of one head are contiguous, so a decode block streams them with whole-row loads and a
// prefill block copies key tiles with 16-byte loads. RoPE is Hugging Face's rotate_half form
// (pairs i and i + head_dim / 2) with angles pos * inv_freq[i] in fp32 (inv_freq holds any
// scaling, e.g. llama3's); rotated q and k are rounded to the element type once, as stored.
//
// Decode fuses RoPE and the cache write into attention: one block per (span, kv head and a chunk
// of its query heads, sequence) rotates its query heads itself, the blocks whose span holds the new
// position rotate the new key themselves and use it from shared memory (one of them writes it to
// the cache), so a layer's attention is one launch. A large group (Gemma's eight query heads on one
// KV head) is split over several blocks, which read the same keys from L2, so that a short
// sequence still gives the GPU more than a handful of blocks. Splits of a
// sequence are combined by the last block to finish (a counter per (sequence, kv head), reset by
// that block), flash-decoding's reduction without a second kernel.
#pragma once

#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

#include "kernels/common/device_utils.cuh"

namespace tunable::kernels {

/// Query heads per KV head a decode block holds in registers at most.
inline constexpr int kMaxAttnGroup = 16;
/// Spans a decode launch splits a sequence into at most (the combine keeps their weights in
/// shared memory).
inline constexpr int kMaxAttnSplits = 64;

template <class T>
struct DecodeAttnParams {
  const T* qkv;               ///< [rows, qkv_stride]: q (heads*D) | k (kv_heads*D) | v (kv_heads*D)
  std::int64_t qkv_stride;
  T* k_cache;                 ///< this layer's [batch][kv_heads][max_seq][D]
  T* v_cache;
  const int* positions;       ///< [rows]: the new token's position in its sequence (row r = sequence r)
  const float* inv_freq;      ///< [D / 2]
  T* out;                     ///< [rows, out_stride]: heads*D
  std::int64_t out_stride;
  float* part_acc;            ///< [rows][heads][splits][D]
  float* part_ml;             ///< [rows][heads][splits][2]: running max, sum of exp
  unsigned* counters;         ///< [rows][kv_heads][group / heads_per_block], zero between launches
  int heads, kv_heads, max_seq;
  int heads_per_block;        ///< query heads of a group one block takes (divides the group)
  int splits;                 ///< spans launched per sequence (<= kMaxAttnSplits)
  int chunk_cap;              ///< longest span the shared memory holds: max(ceil(max_seq / splits), min_chunk)
  int min_chunk;              ///< shortest span worth its partial results; fewer spans run below it
  int tile_keys;              ///< keys (and values) of a span in shared memory at a time
  float scale;                ///< softmax scale (head_dim^-0.5)
};

/// Rotates the pair (x[i], x[i + D/2]) by pos * inv_freq[i] and rounds to T.
template <class T>
__device__ __forceinline__ void rope_pair(float x1, float x2, int pos, float inv_freq, T* o1, T* o2) {
  float s, c;
  sincosf(static_cast<float>(pos) * inv_freq, &s, &c);
  *o1 = from_float<T>(x1 * c - x2 * s);
  *o2 = from_float<T>(x2 * c + x1 * s);
}

/// Threads of a decode block. A block is a chain of latencies with one block per SM at batch 1, so
/// two warps per scheduler rather than one: each warp's share of the scores, RoPE and combine halves
/// and their latencies overlap (Gemma-2B's attention on an H100: 8 % faster than with 128 threads at
/// batch 1, 7 % at batch 8).
inline constexpr int kDecodeAttnThreads = 256;

/// The decode kernel's static shared memory at most (per-head max and sum, the new key raw and
/// rotated and the new value at 4 bytes an element, the RoPE frequencies, flags): the opt-in limit
/// covers it and the dynamic part together.
inline constexpr std::size_t decode_attention_static_smem_bound(int head_dim) {
  return 2 * sizeof(float) * kMaxAttnGroup + 3 * 4 * static_cast<std::size_t>(head_dim) +
         2 * static_cast<std::size_t>(head_dim) + 64;
}

/// Dynamic shared memory of a decode launch (16-bit elements): rotated queries (fp32) and the
/// span's scores per head, a tile of the span's keys and one of its values, the raw queries; the
/// combining block reuses it for every span's weight per head. Kept small: a block that
/// needs more shared memory than the kernels around it may not start on an SM they occupy.
inline std::size_t decode_attention_smem(int heads_per_block, int head_dim, int chunk_cap, int tile_keys,
                                         int splits) {
  const std::size_t hpb = static_cast<std::size_t>(heads_per_block), d = static_cast<std::size_t>(head_dim),
                    c = static_cast<std::size_t>(chunk_cap), t = static_cast<std::size_t>(tile_keys);
  const std::size_t work = hpb * (d + (c + 3) / 4 * 4) * sizeof(float) + 2 * t * d * 2 + hpb * d * 2;
  const std::size_t combine = hpb * static_cast<std::size_t>(splits) * sizeof(float);
  return work > combine ? work : combine;
}

/// Keys of a shared-memory tile at most: 32 KB of keys and 32 KB of values, so that a span of up to
/// this many keys (every span of a sequence of a few thousand positions) is read in one round trip.
inline constexpr int decode_attention_max_tile(int head_dim) { return 8192 / head_dim; }

/// 16 bytes global -> shared without a register round trip (sm_80+), in flight until waited on.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
/// bytes (a multiple of 16) from gmem to smem, spread over the block's threads.
__device__ __forceinline__ void cp_async_block(void* smem, const void* gmem, int bytes) {
  for (int o = threadIdx.x * 16; o < bytes; o += blockDim.x * 16)
    cp_async16(static_cast<char*>(smem) + o, static_cast<const char*>(gmem) + o);
}

template <class T, int D>
__global__ void __launch_bounds__(kDecodeAttnThreads) decode_attention_kernel(DecodeAttnParams<T> p) {
  constexpr int kWarps = kDecodeAttnThreads / 32, kPerLane = D / 32;
  extern __shared__ float smem[];
  __shared__ float ml_s[kMaxAttnGroup][2];
  __shared__ alignas(16) T knew_s[D];
  __shared__ alignas(16) T kraw_s[D];
  __shared__ alignas(16) T vnew_s[D];
  __shared__ alignas(16) float freq_s[D / 2];
  __shared__ bool last_s;
  const int group = p.heads / p.kv_heads, hpb = p.heads_per_block, chunks = group / hpb;
  const int split = blockIdx.x, kvh = blockIdx.y / chunks, hc = blockIdx.y - kvh * chunks, row = blockIdx.z;
  const int head0 = kvh * group + hc * hpb;  // this block's first query head
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* q_s = smem;                                          // [hpb][D] rotated, scaled
  float* s_s = q_s + hpb * D;                                 // [hpb][chunk_cap]
  T* k_s = reinterpret_cast<T*>(s_s + hpb * ((p.chunk_cap + 3) & ~3));  // [chunk_cap][D], 16-byte aligned
  T* v_s = k_s + static_cast<std::int64_t>(p.tile_keys) * D;  // [tile_keys][D]
  T* qraw_s = v_s + static_cast<std::int64_t>(p.tile_keys) * D;  // [hpb][D]

  pdl_launch_dependents();
  pdl_wait();
  // A block's time is its chain of memory round trips, so there are two before the math: the
  // position together with everything that does not depend on it (this block's query heads, the
  // new key and value, the RoPE frequencies), then the span's keys and values, all of them in
  // flight at once (cp.async into shared memory), while the queries are rotated.
  const T* qkv = p.qkv + row * p.qkv_stride;
  cp_async_block(qraw_s, qkv + head0 * D, hpb * D * static_cast<int>(sizeof(T)));
  cp_async_block(kraw_s, qkv + (p.heads + kvh) * D, D * static_cast<int>(sizeof(T)));
  cp_async_block(vnew_s, qkv + (p.heads + p.kv_heads + kvh) * D, D * static_cast<int>(sizeof(T)));
  cp_async_block(freq_s, p.inv_freq, D / 2 * static_cast<int>(sizeof(float)));
  cp_async_commit();
  const int pos = p.positions[row];
  const int len = pos + 1;
  // Spans shorter than min_chunk cost more in partial results (hpb x D floats each) than they
  // save: short sequences run on fewer spans, and the blocks past them leave at once.
  const int active = max(1, min(p.splits, (len + p.min_chunk - 1) / p.min_chunk));
  if (split >= active) {
    cp_async_wait<0>();
    return;
  }
  const int chunk = (len + active - 1) / active;
  const int s0 = min(split * chunk, len), s1 = min(len, s0 + chunk), n = s1 - s0;
  const std::int64_t head_base = (static_cast<std::int64_t>(row) * p.kv_heads + kvh) * p.max_seq * D;
  T* kc = p.k_cache + head_base;
  T* vc = p.v_cache + head_base;
  // Keys [s0, s0 + nc) come from the cache (read-only here: the one row this launch writes is
  // taken from the projection); the new position, when the span holds it, is the span's last key.
  const bool has_new = s0 <= pos && pos < s1;
  const int nc = n - (has_new ? 1 : 0);
  const int tile = p.tile_keys;
  const bool one_tile = nc <= tile;  // keys and values of the whole span in one round trip
  auto load_rows = [&](T* dst, const T* src, int rows) { cp_async_block(dst, src, rows * D * static_cast<int>(sizeof(T))); };
  load_rows(k_s, kc + static_cast<std::int64_t>(s0) * D, min(nc, tile));
  if (one_tile) load_rows(v_s, vc + static_cast<std::int64_t>(s0) * D, nc);
  cp_async_commit();
  cp_async_wait<1>();  // the first group: queries, new key and value, frequencies
  __syncthreads();
  for (int i = threadIdx.x; i < hpb * (D / 2); i += kDecodeAttnThreads) {
    const int g = i / (D / 2), d = i - g * (D / 2);
    const T* q = qraw_s + g * D;
    T r1, r2;
    rope_pair(to_float(q[d]), to_float(q[d + D / 2]), pos, freq_s[d], &r1, &r2);
    q_s[g * D + d] = to_float(r1) * p.scale;
    q_s[g * D + d + D / 2] = to_float(r2) * p.scale;
  }
  if (has_new) {
    for (int d = threadIdx.x; d < D / 2; d += kDecodeAttnThreads)
      rope_pair(to_float(kraw_s[d]), to_float(kraw_s[d + D / 2]), pos, freq_s[d], &knew_s[d], &knew_s[d + D / 2]);
  }
  cp_async_wait<0>();
  __syncthreads();
  // The blocks of the other head chunks use the new key and value from their own copies before
  // (or while) chunk 0 writes them to the cache.
  if (has_new && hc == 0) {
    for (int d = threadIdx.x; d < D; d += kDecodeAttnThreads) {
      kc[static_cast<std::int64_t>(pos) * D + d] = knew_s[d];
      vc[static_cast<std::int64_t>(pos) * D + d] = vnew_s[d];
    }
  }

  // Scores: a warp per key, each lane kPerLane contiguous elements of it; key j of the span is row
  // j - t0 of the tile holding it, the new key (j = nc) its own row.
  using KV = Vec<T, kPerLane>;
  auto score = [&](const T* key, int j) {
    const KV k = load_vec<KV>(key + lane * kPerLane);
    float kf[kPerLane];
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) kf[e] = to_float(k.v[e]);
    for (int g = 0; g < hpb; ++g) {
      const float* q = q_s + g * D + lane * kPerLane;
      float acc = 0.f;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) acc = fmaf(q[e], kf[e], acc);
      acc = warp_reduce(acc, SumOp{});
      if (lane == 0) s_s[g * p.chunk_cap + j] = acc;
    }
  };
  for (int t0 = 0; t0 < nc; t0 += tile) {
    const int tn = min(tile, nc - t0);
    if (t0 > 0) {  // a long span: the next tile of keys, once every warp is done with this one
      __syncthreads();
      load_rows(k_s, kc + static_cast<std::int64_t>(s0 + t0) * D, tn);
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
    }
    for (int j = warp; j < tn; j += kWarps) score(k_s + j * D, t0 + j);
  }
  if (has_new && warp == nc % kWarps) score(knew_s, nc);
  __syncthreads();
  for (int g = warp; g < hpb; g += kWarps) {
    float* sc = s_s + g * p.chunk_cap;
    float m = -INFINITY;
    for (int j = lane; j < n; j += 32) m = fmaxf(m, sc[j]);
    m = warp_reduce(m, MaxOp{});
    float l = 0.f;
    for (int j = lane; j < n; j += 32) {
      const float e = __expf(sc[j] - m);
      sc[j] = e;
      l += e;
    }
    l = warp_reduce(l, SumOp{});
    if (lane == 0) {
      ml_s[g][0] = m;
      ml_s[g][1] = l;
    }
  }
  __syncthreads();

  const std::int64_t part_row = static_cast<std::int64_t>(row) * p.heads;
  // P V over the span: the block's hpb x D outputs in items of four adjacent dimensions of one head,
  // spread over the threads, so the work is in proportion to the heads the block holds (a thread
  // holding every head's slice in registers paid for the largest group at every size). An item is
  // summed over one tile of values at a time and carried between tiles in shared memory, over the
  // rotated queries (done with). Normalized and final when the span is the only one, else partial.
  using V4 = Vec<T, 4>;
  float* o_s = q_s;  // [hpb][D]
  const int items = hpb * (D / 4);
  const int tiles = max(1, (nc + tile - 1) / tile);
  for (int t = 0; t < tiles; ++t) {
    const int t0 = t * tile, tn = max(0, min(tile, nc - t0));
    if (!one_tile) {
      __syncthreads();
      load_rows(v_s, vc + static_cast<std::int64_t>(s0 + t0) * D, tn);
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
    }
    const bool last = t == tiles - 1;
    for (int i = threadIdx.x; i < items; i += kDecodeAttnThreads) {
      const int g = i / (D / 4), d = (i - g * (D / 4)) * 4;
      const float* w = s_s + g * p.chunk_cap;
      float a[4] = {0.f, 0.f, 0.f, 0.f};
      if (t > 0) {
        const float4 c = *reinterpret_cast<const float4*>(o_s + g * D + d);
        a[0] = c.x, a[1] = c.y, a[2] = c.z, a[3] = c.w;
      }
      auto accumulate = [&](const V4& v, float wj) {
#pragma unroll
        for (int e = 0; e < 4; ++e) a[e] = fmaf(wj, to_float(v.v[e]), a[e]);
      };
#pragma unroll 4
      for (int j = 0; j < tn; ++j) accumulate(load_vec<V4>(v_s + j * D + d), w[t0 + j]);
      if (!last) {
        *reinterpret_cast<float4*>(o_s + g * D + d) = make_float4(a[0], a[1], a[2], a[3]);
        continue;
      }
      if (has_new) accumulate(load_vec<V4>(vnew_s + d), w[n - 1]);
      if (active == 1) {
        const float inv = 1.f / ml_s[g][1];
        V4 o;
#pragma unroll
        for (int e = 0; e < 4; ++e) o.v[e] = from_float<T>(a[e] * inv);
        store_vec(p.out + row * p.out_stride + (head0 + g) * D + d, o);
      } else {
        *reinterpret_cast<float4*>(p.part_acc + ((part_row + head0 + g) * p.splits + split) * D + d) =
            make_float4(a[0], a[1], a[2], a[3]);
      }
    }
  }
  if (active == 1) return;
  if (threadIdx.x < hpb) {
    float* ml = p.part_ml + ((part_row + head0 + threadIdx.x) * p.splits + split) * 2;
    ml[0] = ml_s[threadIdx.x][0];
    ml[1] = ml_s[threadIdx.x][1];
  }
  __threadfence();
  __syncthreads();
  unsigned* counter = p.counters + (static_cast<std::int64_t>(row) * p.kv_heads + kvh) * chunks + hc;
  if (threadIdx.x == 0) last_s = atomicAdd(counter, 1u) == static_cast<unsigned>(active) - 1;
  __syncthreads();
  if (!last_s) return;
  __threadfence();
  // The last span's block combines every span with weights exp(m_s - M) / L (an empty span weighs
  // 0): a warp per head and a lane per span compute the weights into shared memory, then the
  // outputs four at a time with every span's loads in flight.
  static_assert(kMaxAttnSplits <= 64, "two spans per lane");
  float* w_s = smem;  // [hpb][splits], over the queries and scores: done with
  for (int g = warp; g < hpb; g += kWarps) {
    const float* ml = p.part_ml + (part_row + head0 + g) * p.splits * 2;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int sp = lane + 32 * k;
      if (sp < active) {
        const float2 x = __ldcg(reinterpret_cast<const float2*>(ml + sp * 2));
        m[k] = x.x, l[k] = x.y;
      }
    }
    const float m_max = warp_reduce(fmaxf(m[0], m[1]), MaxOp{});
    float w[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) w[k] = m[k] == -INFINITY ? 0.f : __expf(m[k] - m_max);
    const float inv = 1.f / warp_reduce(fmaf(l[0], w[0], l[1] * w[1]), SumOp{});
#pragma unroll
    for (int k = 0; k < 2; ++k)
      if (lane + 32 * k < active) w_s[g * p.splits + lane + 32 * k] = w[k] * inv;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < items; i += kDecodeAttnThreads) {
    const int g = i / (D / 4), d = (i - g * (D / 4)) * 4;
    const float* acc = p.part_acc + (part_row + head0 + g) * p.splits * D + d;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 16
    for (int sp = 0; sp < active; ++sp) {
      const float4 x = __ldcg(reinterpret_cast<const float4*>(acc + sp * D));
      const float w = w_s[g * p.splits + sp];
      a.x = fmaf(x.x, w, a.x);
      a.y = fmaf(x.y, w, a.y);
      a.z = fmaf(x.z, w, a.z);
      a.w = fmaf(x.w, w, a.w);
    }
    V4 o;
    o.v[0] = from_float<T>(a.x);
    o.v[1] = from_float<T>(a.y);
    o.v[2] = from_float<T>(a.z);
    o.v[3] = from_float<T>(a.w);
    store_vec(p.out + row * p.out_stride + (head0 + g) * D + d, o);
  }
  if (threadIdx.x == 0) *counter = 0u;
}

// ---- prefill -------------------------------------------------------------------------------------

template <class T>
struct RopeCacheParams {
  T* qkv;                  ///< [rows, qkv_stride]; q is rotated in place
  std::int64_t qkv_stride;
  T* k_cache;
  T* v_cache;
  const int* token_pos;    ///< [rows]
  const int* token_seq;    ///< [rows]: the cache's batch index of each row
  const float* inv_freq;
  int heads, kv_heads, max_seq, head_dim;
};

/// One block per row: q rotated in place, k rotated into the cache, v copied into it.
template <class T>
__global__ void __launch_bounds__(128) rope_cache_kernel(RopeCacheParams<T> p) {
  pdl_launch_dependents();
  pdl_wait();
  const int row = blockIdx.x, D = p.head_dim, half = D / 2;
  const int pos = p.token_pos[row], seq = p.token_seq[row];
  T* x = p.qkv + row * p.qkv_stride;
  for (int i = threadIdx.x; i < (p.heads + p.kv_heads) * half; i += blockDim.x) {
    const int h = i / half, d = i - h * half;
    T* src = x + h * D;
    const float x1 = to_float(src[d]), x2 = to_float(src[d + half]);
    if (h < p.heads) {
      rope_pair(x1, x2, pos, p.inv_freq[d], &src[d], &src[d + half]);
    } else {
      T* k = p.k_cache + ((static_cast<std::int64_t>(seq) * p.kv_heads + (h - p.heads)) * p.max_seq + pos) * D;
      rope_pair(x1, x2, pos, p.inv_freq[d], &k[d], &k[d + half]);
    }
  }
  const T* v = x + (p.heads + p.kv_heads) * D;
  for (int i = threadIdx.x; i < p.kv_heads * D; i += blockDim.x) {
    const int h = i / D, d = i - h * D;
    p.v_cache[((static_cast<std::int64_t>(seq) * p.kv_heads + h) * p.max_seq + pos) * D + d] = v[i];
  }
}

/// A run of consecutive rows of one sequence in a prefill pass: rows [row0, row0 + len) hold
/// positions [pos0, pos0 + len) of cache batch entry `seq`.
struct PrefillSegment {
  int row0, len, seq, pos0;
};

template <class T>
struct PrefillAttnParams {
  const T* qkv;              ///< rotated q in each row's first heads*D elements
  std::int64_t qkv_stride;
  const T* k_cache;
  const T* v_cache;
  const PrefillSegment* segments;
  T* out;
  std::int64_t out_stride;
  int heads, kv_heads, max_seq;
  float scale;
};

inline constexpr int kPrefillWarps = 8;
inline constexpr int kPrefillQueriesPerWarp = 2;
inline constexpr int kPrefillQueries = kPrefillWarps * kPrefillQueriesPerWarp;
inline constexpr int kPrefillKeys = 32;

template <int D>
inline constexpr std::size_t prefill_attention_smem(std::size_t elem) {
  // queries (fp32), a key tile padded by one 4-byte word per row (bank spread), a value tile
  return kPrefillQueries * D * sizeof(float) + kPrefillKeys * (D * elem + 4) + kPrefillKeys * D * elem;
}

/// Causal attention of a segment's queries over its sequence's cached keys 0..pos: a block per
/// (16 queries, head, segment), online softmax over 32-key tiles, a warp per 2 queries (lanes own
/// keys for the scores and dimensions for the accumulation).
template <class T, int D>
__global__ void __launch_bounds__(kPrefillWarps * 32) prefill_attention_kernel(PrefillAttnParams<T> p) {
  constexpr int kPerLane = D / 32;
  constexpr int kKStride = D + 4 / static_cast<int>(sizeof(T));  // elements per padded key row
  extern __shared__ float smem[];
  float* q_s = smem;                                                // [16][D]
  T* k_s = reinterpret_cast<T*>(q_s + kPrefillQueries * D);         // [32][kKStride]
  T* v_s = k_s + kPrefillKeys * kKStride;                           // [32][D]
  pdl_launch_dependents();
  pdl_wait();
  const PrefillSegment seg = p.segments[blockIdx.z];
  const int q0 = blockIdx.x * kPrefillQueries;
  if (q0 >= seg.len) return;
  const int h = blockIdx.y, group = p.heads / p.kv_heads, kvh = h / group;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int nq = min(kPrefillQueries, seg.len - q0);
  for (int i = threadIdx.x; i < kPrefillQueries * D; i += blockDim.x) {
    const int qi = i / D, d = i - qi * D;
    q_s[i] = qi < nq ? to_float(p.qkv[(seg.row0 + q0 + qi) * p.qkv_stride + h * D + d]) * p.scale : 0.f;
  }
  const std::int64_t head_base = (static_cast<std::int64_t>(seg.seq) * p.kv_heads + kvh) * p.max_seq * D;
  const T* kc = p.k_cache + head_base;
  const T* vc = p.v_cache + head_base;
  float m[kPrefillQueriesPerWarp], l[kPrefillQueriesPerWarp], acc[kPrefillQueriesPerWarp][kPerLane];
  int qpos[kPrefillQueriesPerWarp];
#pragma unroll
  for (int a = 0; a < kPrefillQueriesPerWarp; ++a) {
    m[a] = -INFINITY;
    l[a] = 0.f;
    qpos[a] = seg.pos0 + q0 + warp * kPrefillQueriesPerWarp + a;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) acc[a][e] = 0.f;
  }
  const int keys = seg.pos0 + q0 + nq;  // keys 0 .. last query's position
  constexpr int kVecElems = 16 / sizeof(T);
  for (int k0 = 0; k0 < keys; k0 += kPrefillKeys) {
    __syncthreads();  // the previous tile is consumed (and q_s written, the first time)
    for (int i = threadIdx.x; i < kPrefillKeys * (D / kVecElems); i += blockDim.x) {
      const int j = i / (D / kVecElems), c = (i - j * (D / kVecElems)) * kVecElems;
      Vec<T, kVecElems> kv{}, vv{};
      if (k0 + j < keys) {
        kv = load_vec<Vec<T, kVecElems>>(kc + static_cast<std::int64_t>(k0 + j) * D + c);
        vv = load_vec<Vec<T, kVecElems>>(vc + static_cast<std::int64_t>(k0 + j) * D + c);
      }
      // The padded key rows are only 4-byte aligned: store them in 4-byte pieces.
#pragma unroll
      for (int e = 0; e < kVecElems; e += 4 / sizeof(T))
        store_vec(k_s + j * kKStride + c + e, *reinterpret_cast<const Vec<T, 4 / sizeof(T)>*>(&kv.v[e]));
      store_vec(v_s + j * D + c, vv);
    }
    __syncthreads();
#pragma unroll
    for (int a = 0; a < kPrefillQueriesPerWarp; ++a) {
      const int qi = warp * kPrefillQueriesPerWarp + a;
      if (qi >= nq) break;  // warp-uniform
      const float* q = q_s + qi * D;
      const T* kr = k_s + lane * kKStride;
      float s = 0.f;
#pragma unroll 8
      for (int d = 0; d < D; d += 2) {
        const Vec<T, 2> kk = *reinterpret_cast<const Vec<T, 2>*>(kr + d);  // rows are 4-byte aligned
        s = fmaf(q[d], to_float(kk.v[0]), s);
        s = fmaf(q[d + 1], to_float(kk.v[1]), s);
      }
      const int key = k0 + lane;
      if (key > qpos[a]) s = -INFINITY;
      const float m_new = fmaxf(m[a], warp_reduce(s, MaxOp{}));
      if (m_new == -INFINITY) continue;  // no key of this tile is visible to the query (warp-uniform)
      const float corr = __expf(m[a] - m_new);
      const float pk = s == -INFINITY ? 0.f : __expf(s - m_new);
      l[a] = l[a] * corr + warp_reduce(pk, SumOp{});
      m[a] = m_new;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) acc[a][e] *= corr;
      for (int j = 0; j < kPrefillKeys; ++j) {
        const float pj = __shfl_sync(0xffffffffu, pk, j);
        if (pj == 0.f) continue;  // uniform: masked keys and underflow
#pragma unroll
        for (int e = 0; e < kPerLane; ++e) acc[a][e] = fmaf(pj, to_float(v_s[j * D + lane + 32 * e]), acc[a][e]);
      }
    }
  }
#pragma unroll
  for (int a = 0; a < kPrefillQueriesPerWarp; ++a) {
    const int qi = warp * kPrefillQueriesPerWarp + a;
    if (qi >= nq) break;
    T* o = p.out + (seg.row0 + q0 + qi) * p.out_stride + h * D;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) o[lane + 32 * e] = from_float<T>(acc[a][e] / l[a]);
  }
}

// ---- prefill on tensor cores ------------------------------------------------------------------------

inline constexpr int kTcQueries = 64;   ///< queries of a block: 16 per warp
inline constexpr int kTcKeys = 64;      ///< keys per tile
inline constexpr int kTcWarps = 4;

/// Shared memory of the tensor-core prefill: the query, key and value tiles (T), the tile's scores
/// (fp32) and probabilities (T), the output accumulators (fp32), per-row max, sum and rescale.
template <int D>
inline constexpr std::size_t prefill_tc_smem(std::size_t elem) {
  return 3 * kTcQueries * D * elem + kTcQueries * kTcKeys * (sizeof(float) + elem) +
         kTcQueries * D * sizeof(float) + 3 * kTcQueries * sizeof(float);
}

/// Causal attention of a segment's queries over its sequence's cached keys, FlashAttention-2's loop
/// on tensor cores (WMMA 16x16x16, fp32 accumulation): a block of four warps takes 64 queries of one
/// head; per 64-key tile each warp forms its 16 rows of Q K^T, updates their running max and sum
/// (two lanes a row), rescales its output rows and adds P V. Keys past the last query's position
/// are never loaded; a row's keys past its own position are masked.
template <class T, int D>
__global__ void __launch_bounds__(kTcWarps * 32) prefill_attention_tc_kernel(PrefillAttnParams<T> p) {
  namespace wmma = nvcuda::wmma;
  extern __shared__ __align__(128) unsigned char tc_smem[];
  T* q_s = reinterpret_cast<T*>(tc_smem);                        // [64][D]
  T* k_s = q_s + kTcQueries * D;                                 // [64][D]
  T* v_s = k_s + kTcKeys * D;                                    // [64][D]
  float* s_s = reinterpret_cast<float*>(v_s + kTcKeys * D);      // [64][64]
  T* p_s = reinterpret_cast<T*>(s_s + kTcQueries * kTcKeys);     // [64][64]
  float* o_s = reinterpret_cast<float*>(p_s + kTcQueries * kTcKeys);  // [64][D]
  float* m_s = o_s + kTcQueries * D;                             // [64]
  float* l_s = m_s + kTcQueries;                                 // [64]
  float* c_s = l_s + kTcQueries;                                 // [64]: this tile's rescale
  pdl_launch_dependents();
  pdl_wait();
  const PrefillSegment seg = p.segments[blockIdx.z];
  const int q0 = blockIdx.x * kTcQueries;
  if (q0 >= seg.len) return;
  const int h = blockIdx.y, group = p.heads / p.kv_heads, kvh = h / group;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int nq = min(kTcQueries, seg.len - q0);
  constexpr int kVec = 16 / sizeof(T);
  using V16 = Vec<T, kVec>;
  for (int i = threadIdx.x; i < kTcQueries * (D / kVec); i += blockDim.x) {
    const int r = i / (D / kVec), c = (i - r * (D / kVec)) * kVec;
    V16 v{};
    if (r < nq) v = load_vec<V16>(p.qkv + (seg.row0 + q0 + r) * p.qkv_stride + h * D + c);
    store_vec(q_s + r * D + c, v);
  }
  for (int i = threadIdx.x; i < kTcQueries * D; i += blockDim.x) o_s[i] = 0.f;
  for (int i = threadIdx.x; i < kTcQueries; i += blockDim.x) {
    m_s[i] = -INFINITY;
    l_s[i] = 0.f;
  }
  const std::int64_t head_base = (static_cast<std::int64_t>(seg.seq) * p.kv_heads + kvh) * p.max_seq * D;
  const T* kc = p.k_cache + head_base;
  const T* vc = p.v_cache + head_base;
  const int keys = seg.pos0 + q0 + nq;  // keys 0 .. the last query's position
  // Two lanes a row of the warp's 16: lane / 2 is the row, lane % 2 the half of the tile's keys.
  const int my_row = warp * 16 + (lane >> 1), half = lane & 1;
  const int qpos = seg.pos0 + q0 + my_row;
  for (int k0 = 0; k0 < keys; k0 += kTcKeys) {
    __syncthreads();  // the previous tile is consumed (and the first tile's setup done)
    for (int i = threadIdx.x; i < kTcKeys * (D / kVec); i += blockDim.x) {
      const int r = i / (D / kVec), c = (i - r * (D / kVec)) * kVec;
      V16 kv{}, vv{};
      if (k0 + r < keys) {
        kv = load_vec<V16>(kc + static_cast<std::int64_t>(k0 + r) * D + c);
        vv = load_vec<V16>(vc + static_cast<std::int64_t>(k0 + r) * D + c);
      }
      store_vec(k_s + r * D + c, kv);
      store_vec(v_s + r * D + c, vv);
    }
    __syncthreads();
    // S = Q K^T for the warp's 16 rows.
#pragma unroll
    for (int j = 0; j < kTcKeys / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll 4
      for (int kk = 0; kk < D / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
        wmma::load_matrix_sync(a, q_s + warp * 16 * D + kk * 16, D);
        wmma::load_matrix_sync(b, k_s + j * 16 * D + kk * 16, D);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(s_s + warp * 16 * kTcKeys + j * 16, acc, kTcKeys, wmma::mem_row_major);
    }
    __syncwarp();
    // Online softmax of the row's 64 scores: this lane's 32, then its partner's.
    {
      float* srow = s_s + my_row * kTcKeys + half * 32;
      float mx = -INFINITY;
      for (int c = 0; c < 32; ++c) {
        const int key = k0 + half * 32 + c;
        const float v = key <= qpos && key < keys ? srow[c] * p.scale : -INFINITY;
        srow[c] = v;
        mx = fmaxf(mx, v);
      }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      const float m_old = m_s[my_row];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.f;
      T* prow = p_s + my_row * kTcKeys + half * 32;
      for (int c = 0; c < 32; ++c) {
        const float e = m_new == -INFINITY ? 0.f : __expf(srow[c] - m_new);
        prow[c] = from_float<T>(e);
        sum += e;
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      const float corr = m_old == -INFINITY ? 0.f : __expf(m_old - m_new);
      __syncwarp();
      if (half == 0) {
        m_s[my_row] = m_new;
        l_s[my_row] = l_s[my_row] * corr + sum;
        c_s[my_row] = corr;
      }
    }
    __syncwarp();
    // Rescale the warp's output rows, then O += P V.
    for (int i = lane; i < 16 * D; i += 32) {
      const int r = warp * 16 + i / D;
      o_s[r * D + (i % D)] *= c_s[r];
    }
    __syncwarp();
#pragma unroll 2
    for (int j = 0; j < D / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, o_s + warp * 16 * D + j * 16, D, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kTcKeys / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
        wmma::load_matrix_sync(a, p_s + warp * 16 * kTcKeys + kk * 16, kTcKeys);
        wmma::load_matrix_sync(b, v_s + kk * 16 * D + j * 16, D);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(o_s + warp * 16 * D + j * 16, acc, D, wmma::mem_row_major);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < nq * D; i += blockDim.x) {
    const int r = i / D, d = i - r * D;
    p.out[(seg.row0 + q0 + r) * p.out_stride + h * D + d] = from_float<T>(o_s[r * D + d] / l_s[r]);
  }
}

}  // namespace tunable::kernels
