// The decode attention's launch plan (host arithmetic, no GPU): every sequence length fits the
// spans' shared memory, spans stay within the combine's limit, head chunks divide the group.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "engine/engine_kernels.hpp"
#include "kernels/model/decode_layers_plan.hpp"

namespace tunable::engine {
namespace {

/// An H100's shared memory: a block's opt-in 227 KiB of the SM's 228, 1 KiB reserved per block.
constexpr std::size_t kSmem = 227 * 1024;
const DecodeDevice kH100{132, kSmem, 228 * 1024, 1024};

TEST(DecodePlan, EveryLengthFitsAndTheGroupSplitsEvenly) {
  struct Shape {
    int heads, kv_heads, head_dim;
  };
  for (const Shape sh : {Shape{8, 1, 256}, Shape{32, 8, 128}, Shape{14, 2, 64}, Shape{28, 4, 128}, Shape{64, 8, 128},
                         Shape{16, 16, 256}}) {
    for (int max_seq : {1, 16, 384, 4096, 32768, 131072}) {
      for (int rows : {1, 3, 8, 64}) {
        AttnShape s{sh.heads, sh.kv_heads, sh.head_dim, max_seq, 1.f};
        DecodeAttnArgs p;
        ASSERT_TRUE(plan_decode_splits(s, rows, kH100, &p)) << sh.heads << "/" << sh.kv_heads << " seq " << max_seq;
        const int group = sh.heads / sh.kv_heads;
        SCOPED_TRACE(::testing::Message() << "group " << group << " seq " << max_seq << " rows " << rows);
        EXPECT_GE(p.splits, 1);
        EXPECT_LE(p.splits, max_decode_splits());
        EXPECT_EQ(group % p.heads_per_block, 0);
        EXPECT_LE(p.heads_per_block, max_heads_per_block());
        EXPECT_GE(p.tile_keys, 1);
        EXPECT_LE(p.tile_keys, p.chunk_cap);
        // Any length up to max_seq: the kernel's span (fewer spans below min_chunk keys each) fits.
        for (int len : {1, p.min_chunk - 1, p.min_chunk, p.min_chunk + 1, max_seq / 2 + 1, max_seq}) {
          if (len < 1 || len > max_seq) continue;
          const int active = std::max(1, std::min(p.splits, (len + p.min_chunk - 1) / p.min_chunk));
          const int chunk = (len + active - 1) / active;
          EXPECT_LE(chunk, p.chunk_cap) << "len " << len;
          EXPECT_GE(static_cast<long long>(chunk) * active, len);
        }
        EXPECT_LE(decode_attention_smem_bytes(s, p), kSmem);
        // The carveout holds the blocks each SM needs for one wave (with their reservations), and
        // one more percent would already be more than that.
        const std::size_t blocks = static_cast<std::size_t>(p.splits) * sh.kv_heads * (group / p.heads_per_block) * rows;
        const std::size_t per_sm = (blocks + kH100.sms - 1) / kH100.sms;
        const std::size_t need = per_sm * (decode_attention_smem_bytes(s, p) + kH100.reserved_smem);
        ASSERT_GE(p.carveout, 1);
        ASSERT_LE(p.carveout, 100);
        if (need <= kH100.smem_per_sm) {
          EXPECT_GE(p.carveout * kH100.smem_per_sm, 100 * need);
          EXPECT_LT((p.carveout - 1) * kH100.smem_per_sm, 100 * need);
        } else {
          EXPECT_EQ(p.carveout, 100);
        }
      }
    }
  }
}

TEST(DecodePlan, ALengthNoSpanCanHoldIsRefused) {
  AttnShape s{8, 1, 256, 1 << 24, 1.f};
  DecodeAttnArgs p;
  EXPECT_FALSE(plan_decode_splits(s, 1, kH100, &p));
}


// ---- the persistent decode kernel's plan (kernels/model/decode_layers_plan.hpp) ---------------------

struct ModelShape {
  const char* name;
  int hidden, inter, heads, kv_heads, head_dim;
  bool runs;
};
constexpr ModelShape kModels[] = {
    {"gemma-2b", 2048, 16384, 8, 1, 256, true},    {"llama-3-8b", 4096, 14336, 32, 8, 128, true},
    {"mistral-7b", 4096, 14336, 32, 8, 128, true}, {"llama-3.2-1b", 2048, 8192, 32, 8, 64, true},
    {"gemma-7b", 3072, 24576, 16, 16, 256, false},  // hidden 3072 is not a multiple of 2048
    {"qwen2-7b", 3584, 18944, 28, 4, 128, false},  // K not a multiple of 2048
    {"llama-2-7b", 4096, 11008, 32, 32, 128, false},
    {"llama-2-70b", 8192, 28672, 64, 8, 128, false},  // down rows of 14 units
};

TEST(DecodeLayersPlan, ShapesItRunsAndWhyNot) {
  for (const ModelShape& m : kModels) {
    const char* why = kernels::decode_layers_unsupported(m.hidden, m.inter, m.heads, m.kv_heads, m.head_dim);
    EXPECT_EQ(why == nullptr, m.runs) << m.name << ": " << (why ? why : "runs");
    if (why) EXPECT_GT(std::string(why).size(), 10u) << m.name;
  }
  EXPECT_NE(kernels::decode_layers_unsupported(2048, 2048, 8, 1, 96), nullptr);     // head_dim
  EXPECT_NE(kernels::decode_layers_unsupported(2048, 2048, 32, 1, 64), nullptr);    // 32 heads per KV head
  EXPECT_NE(kernels::decode_layers_unsupported(10240, 2048, 80, 10, 128), nullptr); // hidden 5 units
}

TEST(DecodeLayersPlan, ChunksFitASlotAndCoverEveryRow) {
  for (const ModelShape& m : kModels) {
    if (!m.runs) continue;
    for (int s = 0; s < 4; ++s) {
      const kernels::DlGemm g = kernels::decode_layers_gemm(s, m.hidden, m.inter, m.heads, m.kv_heads, m.head_dim);
      SCOPED_TRACE(::testing::Message() << m.name << " stage " << s);
      EXPECT_EQ(g.gated, s == 2);
      EXPECT_EQ(g.units * kernels::kDlUnit, g.k);
      ASSERT_GE(g.rpc, 1);
      // A chunk's rows (gate and up rows for the gated GEMM) hold at most kDlMaxUnits units.
      const int warps = (g.gated ? 2 : 1) * g.rpc * g.units;
      EXPECT_LE(warps, kernels::kDlMaxUnits);
      EXPECT_LE(static_cast<long long>(warps) * kernels::kDlUnit, kernels::kDlChunkBytes);
      // Dense: one more row per chunk would not fit.
      EXPECT_GT((g.gated ? 2 : 1) * (g.rpc + 1) * g.units, kernels::kDlMaxUnits);
      EXPECT_GE(static_cast<long long>(g.chunks) * g.rpc, g.rows);
      EXPECT_LT(static_cast<long long>(g.chunks - 1) * g.rpc, g.rows);
    }
  }
}

TEST(DecodeLayersPlan, EveryBlockStreamsTheSameBytesWithinAChunk) {
  // Chunk c of the step goes to block c mod grid: over a whole step (every layer's GEMMs), each
  // block takes its chunks exactly once, and no block takes more than one chunk over another.
  for (const ModelShape& m : kModels) {
    if (!m.runs) continue;
    for (int grid : {132, 114, 78}) {
      std::vector<long long> per_block(grid, 0);
      long long base = 0, total = 0;
      for (int l = 0; l < 3; ++l) {
        for (int s = 0; s < 4; ++s) {
          const kernels::DlGemm g = kernels::decode_layers_gemm(s, m.hidden, m.inter, m.heads, m.kv_heads, m.head_dim);
          std::vector<int> taken(g.chunks, 0);
          for (int b = 0; b < grid; ++b)
            for (int c = kernels::decode_layers_first_chunk(base, b, grid); c < g.chunks; c += grid) {
              ASSERT_EQ((base + c) % grid, b);
              ++taken[c];
              ++per_block[b];
            }
          for (int c = 0; c < g.chunks; ++c) ASSERT_EQ(taken[c], 1) << m.name << " chunk " << c;
          base += g.chunks;
          total += g.chunks;
        }
      }
      const auto [lo, hi] = std::minmax_element(per_block.begin(), per_block.end());
      EXPECT_LE(*hi - *lo, 1) << m.name << " grid " << grid;
      EXPECT_EQ(std::accumulate(per_block.begin(), per_block.end(), 0LL), total);
    }
  }
}

}  // namespace
}  // namespace tunable::engine
