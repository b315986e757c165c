// The persistent decode kernel's work plan (kernels/model/decode_layers.cuh): how a step's GEMMs are
// cut into ring chunks, which block takes which, and which model shapes the kernel runs. Plain C++:
// included by the kernel and by host code and CPU tests alike.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TUNABLE_DL_HD __host__ __device__
#else
#define TUNABLE_DL_HD
#endif

namespace tunable::kernels {

inline constexpr int kDlComputeWarps = 16;  ///< two per 2048-value unit of a chunk
inline constexpr int kDlThreads = (kDlComputeWarps + 1) * 32;  ///< compute warps + the producer warp
inline constexpr int kDlUnit = 2048;                            ///< K values one warp takes of a chunk row
inline constexpr int kDlMaxUnits = 8;         ///< a row of at most 8 units (K <= 16384) fills one chunk
inline constexpr int kDlChunkBytes = kDlMaxUnits * kDlUnit;  ///< weight bytes of one ring slot
/// The chunk's row scales after its weights (16-byte aligned windows, gate and up for the gated GEMM):
/// they arrive with the rows, so finishing a chunk waits for no global load.
inline constexpr int kDlScaleBytes = 128;
inline constexpr int kDlSlotBytes = kDlChunkBytes + kDlScaleBytes;
inline constexpr int kDlMaxSlots = 12;
inline constexpr int kDlMaxGroup = 16;        ///< query heads per KV head
inline constexpr int kDlMaxGroupDim = 4096;   ///< query heads per KV head x head_dim
inline constexpr int kDlKeyTile = 32;         ///< keys (and values) in shared memory at a time
inline constexpr int kDlMinSpan = 32;         ///< keys per attention span at least: one tile
inline constexpr int kDlMaxSpans = 32;        ///< spans per KV head at most (a lane each in the combine)
/// Residual rows of one GEMM a block keeps in shared memory (the attention's query space).
inline constexpr int kDlResCap = 4096;

/// Scratch after the ring: rotated queries, a tile of scores (the combine's span weights in their
/// place), per-head softmax state, the new key and value, a tile of keys and one of values (16-bit,
/// head_dim up to 256).
static_assert(kDlKeyTile >= kDlMaxSpans, "the combine's weights live in the scores' place");
inline constexpr int kDlScratchBytes =
    (kDlMaxGroupDim + kDlMaxGroup * kDlKeyTile + kDlMaxGroup * 4) * 4 + 2 * 256 * 2 + 2 * kDlKeyTile * 256 * 2;

/// One layer's weights: e4m3 [out][in] row-major with one fp32 scale per output row. The QKV and
/// gate/up weights carry the preceding norm's weight in their columns.
struct DecodeLayerWeights {
  const std::uint8_t* w[4];  ///< QKV, O, gate/up ([gate; up]), down
  const float* scale[4];
};

/// A GEMM of the step as the kernel cuts it: `rows` output rows (pairs for the gated one) of k
/// values, `units` 2048-value units per row, `rpc` rows (pairs) per chunk.
struct DlGemm {
  int rows, k, units, rpc, chunks;
  bool gated;
};

/// Stage s of a layer (0 QKV, 1 O, 2 gate/up, 3 down) of a model of these sizes.
TUNABLE_DL_HD inline DlGemm decode_layers_gemm(int s, int hidden, int inter, int heads, int kv_heads,
                                                     int head_dim) {
  DlGemm g{};
  g.gated = s == 2;
  g.rows = s == 0 ? (heads + 2 * kv_heads) * head_dim : s == 2 ? inter : hidden;
  g.k = s == 1 ? heads * head_dim : s == 3 ? inter : hidden;
  g.units = g.k / kDlUnit;
  g.rpc = g.gated ? (kDlMaxUnits / 2) / (g.units > 0 ? g.units : 1) : kDlMaxUnits / (g.units > 0 ? g.units : 1);
  g.chunks = g.rpc > 0 ? (g.rows + g.rpc - 1) / g.rpc : 0;
  return g;
}

/// Why a model's shapes cannot run on the kernel, or nullptr when they can.
inline const char* decode_layers_unsupported(int hidden, int inter, int heads, int kv_heads, int head_dim) {
  if (head_dim != 64 && head_dim != 128 && head_dim != 256) return "head_dim is not 64, 128 or 256";
  if (kv_heads <= 0 || heads % kv_heads != 0 || heads / kv_heads > kDlMaxGroup)
    return "more than 16 query heads per KV head";
  if ((heads / kv_heads) * head_dim > kDlMaxGroupDim) return "query heads per KV head x head_dim exceeds 4096";
  const int ks[3] = {hidden, heads * head_dim, inter};
  for (int k : ks)
    if (k <= 0 || k % kDlUnit != 0 || k / kDlUnit > kDlMaxUnits)
      return "a GEMM's K (hidden, heads x head_dim, intermediate) is not a multiple of 2048 up to 16384";
  if (hidden / kDlUnit > kDlMaxUnits / 2) return "hidden size above 8192 (a gate and an up row per chunk)";
  return nullptr;
}

/// The first chunk of a GEMM whose chunks start at the step's running chunk count `base` that block
/// b of `grid` takes (then every grid-th): chunk c of the step goes to block c mod grid.
TUNABLE_DL_HD inline int decode_layers_first_chunk(long long base, int b, int grid) {
  return static_cast<int>((b + grid - base % grid) % grid);
}

}  // namespace tunable::kernels
