// Launchers of the engine's own kernels (kernels/attention, kernels/sampling, kernels/model) for
// the element types a model runs in. Device pointers throughout; each returns the launch's status.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tunable::engine {

enum class Elem { kBF16, kF16 };

cudaError_t launch_embed(Elem t, const int* ids, const void* table, void* out, int rows, int hidden, float scale,
                         cudaStream_t stream);
/// FP8 e4m3 rows with one scale each (x ~= out * scales[r]): weights at load (per output
/// channel, `threads` 256), activations before a GEMM (per token, 1024). cols, strides multiples of 8.
/// col_mul (cols elements of the rows' type, or null): each column times col_offset + col_mul[c]
/// first (a norm weight folded into a weight at load).
cudaError_t launch_quantize_rows(Elem t, const void* x, std::int64_t x_stride, void* out, std::int64_t out_stride,
                                 float* scales, int rows, int cols, int threads, cudaStream_t stream,
                                 const void* col_mul = nullptr, float col_offset = 0.f);
/// launch_embed over an e4m3 table with per-row scales.
cudaError_t launch_embed_fp8(Elem t, const int* ids, const void* table, const float* row_scales, void* out, int rows,
                             int hidden, float scale, cudaStream_t stream);
cudaError_t launch_gather_rows(Elem t, const void* src, const int* rows, void* dst, int n, int hidden,
                               cudaStream_t stream);

struct AttnShape {
  int heads = 0, kv_heads = 0, head_dim = 0, max_seq = 0;
  float scale = 1.f;
};

struct DecodeAttnArgs {
  const void* qkv = nullptr;
  std::int64_t qkv_stride = 0;
  void* k_cache = nullptr;  ///< this layer's
  void* v_cache = nullptr;
  const int* positions = nullptr;
  const float* inv_freq = nullptr;
  void* out = nullptr;
  std::int64_t out_stride = 0;
  float* part_acc = nullptr;
  float* part_ml = nullptr;
  unsigned* counters = nullptr;
  int splits = 1;     ///< from plan_decode_splits
  int chunk_cap = 1;
  int min_chunk = 1;
  int tile_keys = 1;  ///< keys of a span in shared memory at a time (a span up to this long: one round trip)
  int heads_per_block = 1;
  int carveout = -1;  ///< shared-memory carveout of the launch (percent of the SM's), from the plan; -1: the kernel's own
};

/// What the decode plan needs of the device, read once (cudaDeviceProp).
struct DecodeDevice {
  int sms = 0;
  std::size_t max_smem = 0;       ///< a block's opt-in shared memory, static and dynamic together
  std::size_t smem_per_sm = 0;    ///< one SM's shared memory
  std::size_t reserved_smem = 0;  ///< what the runtime reserves per resident block (1 KiB on sm_80+)
};

/// How a decode launch splits each sequence: `splits` spans launched (enough blocks to fill the GPU
/// twice, at most kernels::kMaxAttnSplits), of at least min_chunk keys each (fewer spans run for
/// shorter sequences: a span's partial results cost group x head_dim floats), the longest span the
/// shared memory must hold, and the launch's carveout. False when no plan fits the device's max_smem
/// (max_seq too long for one block's span at 64 spans).
bool plan_decode_splits(const AttnShape& s, int rows, const DecodeDevice& dev, DecodeAttnArgs* plan);
/// The most spans any plan uses (partial results are sized for it).
int max_decode_splits();
/// The most query heads one decode block holds.
int max_heads_per_block();
/// Shared memory of one decode block of the plan (dynamic and static together).
std::size_t decode_attention_smem_bytes(const AttnShape& s, const DecodeAttnArgs& plan);

cudaError_t launch_decode_attention(Elem t, const AttnShape& s, const DecodeAttnArgs& a, int rows,
                                    cudaStream_t stream);

cudaError_t launch_rope_cache(Elem t, const AttnShape& s, void* qkv, std::int64_t qkv_stride, void* k_cache,
                              void* v_cache, const int* token_pos, const int* token_seq, const float* inv_freq,
                              int rows, cudaStream_t stream);

/// A run of rows of one sequence in a prefill pass (kernels::PrefillSegment's layout).
struct Segment {
  int row0, len, seq, pos0;
};

cudaError_t launch_prefill_attention(Elem t, const AttnShape& s, const void* qkv, std::int64_t qkv_stride,
                                     const void* k_cache, const void* v_cache, const Segment* segments,
                                     int num_segments, int max_segment_len, void* out, std::int64_t out_stride,
                                     cudaStream_t stream);

/// Blocks per row of the greedy argmax (partials sized [rows][kArgmaxBlocks]).
inline constexpr int kArgmaxBlocks = 32;

cudaError_t launch_argmax(Elem t, const void* logits, std::int64_t stride, int vocab, int rows, float* part_val,
                          int* part_idx, unsigned* counters, int* next_ids, int* positions, cudaStream_t stream);

/// kernels::SamplingSettings' layout: the host fills one in device memory before a generation.
struct SampleSettings {
  float inv_temperature = 1.f;  ///< > 0
  int top_k = 0;
  float top_p = 1.f;
  unsigned long long seed = 0;
};

cudaError_t launch_sample(Elem t, const void* logits, std::int64_t stride, int vocab, int rows,
                          const SampleSettings* settings, int* next_ids, int* positions, cudaStream_t stream);

}  // namespace tunable::engine
