// The decode attention's launch plan (host arithmetic, no GPU): every sequence length fits the
// spans' shared memory, spans stay within the combine's limit, head chunks divide the group.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/engine_kernels.hpp"

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

}  // namespace
}  // namespace tunable::engine
