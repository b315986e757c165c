// Instantiates the engine's kernels for bf16 and fp16 and head dimensions 64, 128 and 256.
#include "engine/engine_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels/attention/attention.cuh"
#include "kernels/model/quant.cuh"
#include "kernels/model/rows.cuh"
#include "kernels/sampling/sampling.cuh"

namespace tunable::engine {
namespace k = tunable::kernels;

namespace {

template <class Fn>
cudaError_t by_elem(Elem t, Fn&& fn) {
  switch (t) {
    case Elem::kBF16: return fn(__nv_bfloat16{});
    case Elem::kF16: return fn(__half{});
  }
  return cudaErrorInvalidValue;
}

template <class Fn>
cudaError_t by_head_dim(int d, Fn&& fn) {
  switch (d) {
    case 64: return fn(std::integral_constant<int, 64>{});
    case 128: return fn(std::integral_constant<int, 128>{});
    case 256: return fn(std::integral_constant<int, 256>{});
  }
  return cudaErrorInvalidValue;
}

/// Raises a kernel's dynamic shared memory limit to what this launch needs (above 48 KiB a kernel
/// must opt in). The attribute is per device, so it is set on every such launch (a host call of a
/// microsecond, outside any stream) rather than remembered per process.
template <class Kernel>
cudaError_t allow_smem(Kernel kernel, std::size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}

/// The decode attention's shared-memory carveout (percent of the SM's maximum): room for the
/// blocks each SM must hold for the grid to run in one wave, and no more. Left to the driver the
/// configuration was larger than the kernels around it use, and an SM changes configuration only
/// once drained, so the next kernel's early (programmatic) launch could not overlap: Gemma-2B's step
/// lost ~3 us per layer. The smallest configuration that holds one block cost Llama-3-8B, whose grid
/// needs two or three blocks per SM, a second wave.
int decode_attention_carveout(std::size_t blocks, std::size_t block_smem, const DecodeDevice& dev) {
  if (dev.sms <= 0 || dev.smem_per_sm == 0) return -1;  // the kernel's own setting
  const std::size_t per_sm = (blocks + static_cast<std::size_t>(dev.sms) - 1) / static_cast<std::size_t>(dev.sms);
  const std::size_t need = per_sm * (block_smem + dev.reserved_smem);
  return static_cast<int>(std::min<std::size_t>(100, (100 * need + dev.smem_per_sm - 1) / dev.smem_per_sm));
}

}  // namespace

cudaError_t launch_embed(Elem t, const int* ids, const void* table, void* out, int rows, int hidden, float scale,
                         cudaStream_t stream) {
  return by_elem(t, [&](auto z) {
    using T = decltype(z);
    k::EmbedParams<T> p{ids, static_cast<const T*>(table), static_cast<T*>(out), hidden, scale};
    return k::launch_kernel(k::embed_kernel<T>, dim3(rows), dim3(256), 0, stream, p);
  });
}

cudaError_t launch_quantize_rows(Elem t, const void* x, std::int64_t x_stride, void* out, std::int64_t out_stride,
                                 float* scales, int rows, int cols, int threads, cudaStream_t stream,
                                 const void* col_mul, float col_offset) {
  if (rows == 0) return cudaSuccess;
  return by_elem(t, [&](auto z) {
    using T = decltype(z);
    k::QuantRowsParams<T> p{static_cast<const T*>(x), static_cast<k::fp8_e4m3*>(out), scales, x_stride, out_stride,
                            cols, static_cast<const T*>(col_mul), col_offset};
    return k::launch_kernel(k::quantize_rows_kernel<T>, dim3(rows), dim3(threads), 0, stream, p);
  });
}

cudaError_t launch_embed_fp8(Elem t, const int* ids, const void* table, const float* row_scales, void* out, int rows,
                             int hidden, float scale, cudaStream_t stream) {
  return by_elem(t, [&](auto z) {
    using T = decltype(z);
    k::EmbedFp8Params<T> p{ids, static_cast<const k::fp8_e4m3*>(table), row_scales, static_cast<T*>(out), hidden,
                           scale};
    return k::launch_kernel(k::embed_fp8_kernel<T>, dim3(rows), dim3(256), 0, stream, p);
  });
}

cudaError_t launch_gather_rows(Elem t, const void* src, const int* rows, void* dst, int n, int hidden,
                               cudaStream_t stream) {
  return by_elem(t, [&](auto z) {
    using T = decltype(z);
    // A gather is an embedding lookup in `src` (no kernel of the launch writes it) with scale 1.
    k::EmbedParams<T> p{rows, static_cast<const T*>(src), static_cast<T*>(dst), hidden, 1.f};
    return k::launch_kernel(k::embed_kernel<T>, dim3(n), dim3(256), 0, stream, p);
  });
}

int max_decode_splits() { return k::kMaxAttnSplits; }
int max_heads_per_block() { return k::kMaxAttnGroup; }
std::size_t decode_attention_smem_bytes(const AttnShape& s, const DecodeAttnArgs& plan) {
  return k::decode_attention_smem(plan.heads_per_block, s.head_dim, plan.chunk_cap, plan.tile_keys, plan.splits) +
         k::decode_attention_static_smem_bound(s.head_dim);
}

bool plan_decode_splits(const AttnShape& s, int rows, const DecodeDevice& dev, DecodeAttnArgs* plan) {
  const int sm_count = dev.sms;
  const std::size_t max_smem = dev.max_smem;
  const int group = s.heads / s.kv_heads;
  // Query heads per block: the whole group unless that leaves fewer than 16 (KV head, sequence)
  // blocks per span, then down to two heads (each extra chunk re-reads the keys, from L2).
  int hpb = group;
  while (hpb > 2 && hpb % 2 == 0 && s.kv_heads * rows * (group / hpb) < 16) hpb /= 2;
  const int chunks = group / hpb;
  // Two blocks per SM at the longest sequences; spans of at least 4 keys per query head of the
  // block (16 at least), so partial results stay a fraction of the keys and values read.
  int n = std::max(1, (2 * sm_count + s.kv_heads * chunks * rows - 1) / (s.kv_heads * chunks * rows));
  n = std::min({n, 32, s.max_seq});
  const int min_chunk = std::max(16, 4 * hpb);
  auto cap_of = [&](int splits) { return std::max((s.max_seq + splits - 1) / splits, min_chunk); };
  // The opt-in limit covers static and dynamic shared memory together.
  const std::size_t static_bytes = k::decode_attention_static_smem_bound(s.head_dim);
  const std::size_t budget = max_smem > static_bytes ? max_smem - static_bytes : 0;
  // Spans stream through shared memory in tiles of at most decode_attention_max_tile keys.
  auto tile_of = [&](int splits) { return std::min(cap_of(splits), k::decode_attention_max_tile(s.head_dim)); };
  while (k::decode_attention_smem(hpb, s.head_dim, cap_of(n), tile_of(n), n) > budget && n < k::kMaxAttnSplits) ++n;
  plan->splits = n;
  plan->chunk_cap = cap_of(n);
  plan->tile_keys = tile_of(n);
  plan->min_chunk = min_chunk;
  plan->heads_per_block = hpb;
  const std::size_t smem = k::decode_attention_smem(hpb, s.head_dim, plan->chunk_cap, plan->tile_keys, n);
  plan->carveout = decode_attention_carveout(static_cast<std::size_t>(n) * s.kv_heads * chunks * rows,
                                             smem + static_cast<std::size_t>(static_bytes), dev);
  return smem <= budget;
}

cudaError_t launch_decode_attention(Elem t, const AttnShape& s, const DecodeAttnArgs& a, int rows,
                                    cudaStream_t stream) {
  return by_elem(t, [&](auto z) {
    using T = decltype(z);
    return by_head_dim(s.head_dim, [&](auto dz) {
      constexpr int D = decltype(dz)::value;
      k::DecodeAttnParams<T> p{static_cast<const T*>(a.qkv), a.qkv_stride, static_cast<T*>(a.k_cache),
                               static_cast<T*>(a.v_cache), a.positions, a.inv_freq, static_cast<T*>(a.out),
                               a.out_stride, a.part_acc, a.part_ml, a.counters, s.heads, s.kv_heads, s.max_seq,
                               a.heads_per_block, a.splits, a.chunk_cap, a.min_chunk, a.tile_keys, s.scale};
      const std::size_t smem = k::decode_attention_smem(a.heads_per_block, D, a.chunk_cap, a.tile_keys, a.splits);
      if (cudaError_t e = allow_smem(k::decode_attention_kernel<T, D>, smem); e != cudaSuccess) return e;
      const int chunks = s.heads / s.kv_heads / a.heads_per_block;
      const dim3 grid(a.splits, s.kv_heads * chunks, rows);
      k::LaunchAttrs attrs;
      attrs.pdl = k::pdl_supported(k::decode_attention_kernel<T, D>);
      attrs.carveout = a.carveout;
      return k::launch_kernel_with(k::decode_attention_kernel<T, D>, grid, dim3(k::kDecodeAttnThreads), smem, stream,
                                   attrs, p);
    });
  });
}

cudaError_t launch_rope_cache(Elem t, const AttnShape& s, void* qkv, std::int64_t qkv_stride, void* k_cache,
                              void* v_cache, const int* token_pos, const int* token_seq, const float* inv_freq,
                              int rows, cudaStream_t stream) {
  return by_elem(t, [&](auto z) {
    using T = decltype(z);
    k::RopeCacheParams<T> p{static_cast<T*>(qkv), qkv_stride, static_cast<T*>(k_cache), static_cast<T*>(v_cache),
                            token_pos, token_seq, inv_freq, s.heads, s.kv_heads, s.max_seq, s.head_dim};
    return k::launch_kernel(k::rope_cache_kernel<T>, dim3(rows), dim3(128), 0, stream, p);
  });
}

cudaError_t launch_prefill_attention(Elem t, const AttnShape& s, const void* qkv, std::int64_t qkv_stride,
                                     const void* k_cache, const void* v_cache, const Segment* segments,
                                     int num_segments, int max_segment_len, void* out, std::int64_t out_stride,
                                     cudaStream_t stream) {
  static_assert(sizeof(Segment) == sizeof(k::PrefillSegment), "segment layouts differ");
  return by_elem(t, [&](auto z) {
    using T = decltype(z);
    return by_head_dim(s.head_dim, [&](auto dz) {
      constexpr int D = decltype(dz)::value;
      k::PrefillAttnParams<T> p{static_cast<const T*>(qkv), qkv_stride, static_cast<const T*>(k_cache),
                                static_cast<const T*>(v_cache), reinterpret_cast<const k::PrefillSegment*>(segments),
                                static_cast<T*>(out), out_stride, s.heads, s.kv_heads, s.max_seq, s.scale};
      // Tensor cores (WMMA) where the device has them (sm_80+: bf16 and fp16 MMA); the SIMT kernel
      // otherwise.
      int dev = 0, major = 0;
      if (cudaGetDevice(&dev) == cudaSuccess &&
          cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 8) {
        const std::size_t smem = k::prefill_tc_smem<D>(sizeof(T));
        if (cudaError_t e = allow_smem(k::prefill_attention_tc_kernel<T, D>, smem); e != cudaSuccess) return e;
        const int tiles = (max_segment_len + k::kTcQueries - 1) / k::kTcQueries;
        return k::launch_kernel(k::prefill_attention_tc_kernel<T, D>, dim3(tiles, s.heads, num_segments),
                                dim3(k::kTcWarps * 32), smem, stream, p);
      }
      (void)cudaGetLastError();
      const std::size_t smem = k::prefill_attention_smem<D>(sizeof(T));
      if (cudaError_t e = allow_smem(k::prefill_attention_kernel<T, D>, smem); e != cudaSuccess) return e;
      const int tiles = (max_segment_len + k::kPrefillQueries - 1) / k::kPrefillQueries;
      return k::launch_kernel(k::prefill_attention_kernel<T, D>, dim3(tiles, s.heads, num_segments),
                              dim3(k::kPrefillWarps * 32), smem, stream, p);
    });
  });
}

cudaError_t launch_argmax(Elem t, const void* logits, std::int64_t stride, int vocab, int rows, float* part_val,
                          int* part_idx, unsigned* counters, int* next_ids, int* positions, cudaStream_t stream) {
  return by_elem(t, [&](auto z) {
    using T = decltype(z);
    k::ArgmaxParams<T> p{static_cast<const T*>(logits), stride, vocab, part_val, part_idx, counters,
                         k::StepAdvance{next_ids, positions}};
    return k::launch_kernel(k::argmax_kernel<T>, dim3(kArgmaxBlocks, rows), dim3(k::kArgmaxThreads), 0, stream, p);
  });
}

cudaError_t launch_sample(Elem t, const void* logits, std::int64_t stride, int vocab, int rows,
                          const SampleSettings* settings, int* next_ids, int* positions, cudaStream_t stream) {
  static_assert(sizeof(SampleSettings) == sizeof(k::SamplingSettings), "sampling settings layouts differ");
  return by_elem(t, [&](auto z) {
    using T = decltype(z);
    k::SampleParams<T> p{static_cast<const T*>(logits), stride, vocab,
                         reinterpret_cast<const k::SamplingSettings*>(settings), positions,
                         k::StepAdvance{next_ids, positions}};
    return k::launch_kernel(k::sample_kernel<T>, dim3(rows), dim3(k::kSampleThreads), 0, stream, p);
  });
}

}  // namespace tunable::engine
