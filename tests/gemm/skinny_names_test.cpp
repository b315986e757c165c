// CPU tests of the skinny GEMM provider: the name grammar round trip, enumeration of the decode
// suite's problems (operand pointers are null: enumeration, from_name, can_implement and
// workspace_bytes make no CUDA calls), and the reasons can_implement gives.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gemm/cuda/skinny_provider.hpp"

namespace tunable {
namespace {

/// y[M,N] = x[M,K] W[N,K]^T as cuBLAS "tn": m = N weight rows, n = M tokens.
GemmArgs tn_problem(DataType t, std::int64_t rows, std::int64_t tokens, std::int64_t k) {
  GemmArgs a;
  a.desc = GemmDesc::make(t, Transpose::kT, Transpose::kN, rows, tokens, k);
  return a;
}

GemmArgs fp8_problem(std::int64_t rows, std::int64_t tokens, std::int64_t k) {
  GemmArgs a = tn_problem(DataType::kF8E4M3, rows, tokens, k);
  a.desc.op = GemmOp::kScaledGemm;
  a.desc.out_dtype = DataType::kBF16;
  return a;
}

std::vector<SolutionPtr<GemmArgs>> enumerate_ok(const GemmArgs& a) {
  std::vector<SolutionPtr<GemmArgs>> out;
  const Status st = skinny_gemm_provider()->enumerate(a, &out);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

TEST(SkinnyNames, EveryVariantRoundTrips) {
  const auto names = skinny_gemm_variant_names();
  // 3 dtypes x (6 gemv + 4 mma shapes) x 6 split settings, then round 2: 3 dtypes x 4 mmap shapes
  // x 6 split settings and 3 dtypes x (6 gemv + 4 mma + 4 mmap shapes) x 2 wave targets.
  // Then 3 dtypes x 4 mmap shapes x 2 cluster sizes; round 7: 3 dtypes x (2 families x (6 split
  // settings + 2 wave targets) + 2 cluster sizes) of 16 warps on 16 rows; round 9: 3 dtypes x
  // (6 split settings + 2 wave targets) of the MMA kernel with 16 warps on 32 rows; round 11:
  // warp-contiguous: 3 dtypes x (6 mma shapes x (6 split settings + 2 wave targets) + 5 mmap shapes x
  // (6 split settings + 2 wave targets + 2 cluster sizes)); round 14: the TMA-fed kernel, 3 dtypes x
  // 2 warp counts x 3 ring shapes x (6 split settings + 2 wave targets); round 16: the wgmma
  // kernel, 3 dtypes x 3 ring shapes x (6 split settings + 2 wave targets); round 18: the paired
  // TMA grid, 3 dtypes x 2 ring shapes x 3 split settings; round 20: the balanced TMA grid, 3 dtypes x
  // 3 ring shapes (8 x 6 since round 21), unsplit.
  EXPECT_EQ(names.size(), 180u + 72u + 84u + 24u + 54u + 24u + 144u + 150u + 144u + 72u + 18u + 9u);
  const std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size());
  const GemmArgs any = tn_problem(DataType::kBF16, 4096, 1, 4096);
  for (const auto& n : names) {
    const auto s = skinny_gemm_provider()->from_name(n, any);
    ASSERT_NE(s, nullptr) << n;
    EXPECT_EQ(s->name(), n);
  }
  EXPECT_NE(unique.count("skinny_gemv_bf16_r1_t256_ksauto"), 0u);
  EXPECT_NE(unique.count("skinny_mma_fp8e4m3_bm32_wk8_ks16"), 0u);
  EXPECT_NE(unique.count("skinny_mmap_bf16_bm16_wk8_ks1"), 0u);
  EXPECT_NE(unique.count("skinny_mmap_fp8e4m3_bm32_wk4_ksw4"), 0u);
  EXPECT_NE(unique.count("skinny_gemv_fp16_r2_t256_ksw2"), 0u);
  EXPECT_NE(unique.count("skinny_mma_bf16_bm16_wk8_ksw2"), 0u);
  EXPECT_NE(unique.count("skinny_mmap_fp8e4m3_bm32_wk8_ksc4"), 0u);
  EXPECT_NE(unique.count("skinny_mma_bf16_bm16_wk16_ks1"), 0u);
  EXPECT_NE(unique.count("skinny_mmap_fp16_bm16_wk16_ksc2"), 0u);
  EXPECT_NE(unique.count("skinny_mma_fp8e4m3_bm32_wk16_ksw4"), 0u);
  EXPECT_NE(unique.count("skinny_mmap_bf16_bm16_wk8_ks1_wc"), 0u);
  EXPECT_NE(unique.count("skinny_mmap_fp8e4m3_bm16_wk16_ksc2_wc"), 0u);
  EXPECT_NE(unique.count("skinny_mmap_fp16_bm32_wk4_ksw2_wc"), 0u);
  EXPECT_NE(unique.count("skinny_mma_bf16_bm32_wk16_ks1_wc"), 0u);
  EXPECT_NE(unique.count("skinny_mmt_bf16_bm16_wk4_ks1_b8s2"), 0u);
  EXPECT_NE(unique.count("skinny_mmt_fp16_bm16_wk4_ks1_b8s3"), 0u);
  EXPECT_NE(unique.count("skinny_mmt_fp8e4m3_bm16_wk8_ksw2_b16s2"), 0u);
  EXPECT_NE(unique.count("skinny_wgt_fp8e4m3_bm64_wk4_ksauto_b4s3"), 0u);
  EXPECT_NE(unique.count("skinny_wgt_bf16_bm64_wk4_ksw2_b2s6"), 0u);
  EXPECT_NE(unique.count("skinny_wgt_fp16_bm64_wk4_ks16_b8s2"), 0u);
  EXPECT_NE(unique.count("skinny_mmt_bf16_bm16_wk8_ks1_b8s3_pair"), 0u);
  EXPECT_NE(unique.count("skinny_mmt_fp8e4m3_bm16_wk8_ksauto_b8s4_pair"), 0u);
  EXPECT_NE(unique.count("skinny_mmt_bf16_bm16_wk8_ks1_b8s4_bal"), 0u);
  EXPECT_NE(unique.count("skinny_mmt_fp8e4m3_bm16_wk8_ks1_b8s3_bal"), 0u);
  EXPECT_NE(unique.count("skinny_mmt_fp16_bm16_wk8_ks1_b8s6_bal"), 0u);
  // The first 180 names are the round-1 list, unchanged and in its order.
  EXPECT_EQ(names[0], "skinny_gemv_bf16_r1_t128_ksauto");
  EXPECT_EQ(names[179], "skinny_mma_fp8e4m3_bm32_wk8_ks16");
  // Fixed splits outside the enumerated set still parse (a results file may hold them).
  EXPECT_NE(skinny_gemm_provider()->from_name("skinny_mma_fp16_bm16_wk4_ks3", any), nullptr);
  EXPECT_NE(skinny_gemm_provider()->from_name("skinny_gemv_fp16_r4_t128_ks64", any), nullptr);
  EXPECT_NE(skinny_gemm_provider()->from_name("skinny_mmap_fp16_bm32_wk8_ks3", any), nullptr);
  EXPECT_NE(skinny_gemm_provider()->from_name("skinny_gemv_bf16_r4_t128_ksw8", any), nullptr);
  EXPECT_NE(skinny_gemm_provider()->from_name("skinny_wgt_fp8e4m3_bm64_wk4_ks3_b2s6", any), nullptr);
}

TEST(SkinnyNames, RejectsForeignAndNonCanonicalNames) {
  const GemmArgs any = tn_problem(DataType::kBF16, 4096, 1, 4096);
  for (const char* bad : {"", "Default", "cublas_default", "skinny_gemv_bf16_r3_t256_ksauto",
                          "skinny_gemv_bf16_r1_t512_ks1", "skinny_gemv_bf16_r1_t256_ks0",
                          "skinny_gemv_bf16_r1_t256_ks01", "skinny_gemv_bf16_r1_t256_ks65",
                          "skinny_gemv_fp32_r1_t256_ks1", "skinny_gemv_BFloat16_r1_t256_ks1",
                          "skinny_gemv_bf16_bm16_wk4_ks1", "skinny_mma_bf16_r1_t256_ks1",
                          "skinny_mma_bf16_bm64_wk4_ks1", "skinny_mma_bf16_bm16_wk2_ks1",
                          "skinny_mma_fp8e5m2_bm16_wk4_ks1", "skinny_mma_bf16_bm16_wk4_ks1_x",
                          "xskinny_mma_bf16_bm16_wk4_ks1", "skinny_mmap_bf16_r1_t256_ks1",
                          "skinny_mmap_bf16_bm64_wk4_ks1", "skinny_mma_bf16_bm16_wk4_ksw0",
                          "skinny_mma_bf16_bm16_wk4_ksw9", "skinny_mma_bf16_bm16_wk4_ksw02",
                          "skinny_mma_bf16_bm16_wk4_ksw", "skinny_gemv_bf16_r1_t256_ksWauto",
                          "skinny_mmapp_bf16_bm16_wk4_ks1", "skinny_mmap_bf16_bm16_wk4_ksw2x",
                          "skinny_mma_bf16_bm16_wk4_ksc2", "skinny_gemv_bf16_r1_t256_ksc2",
                          "skinny_mmap_bf16_bm16_wk4_ksc3", "skinny_mmap_bf16_bm16_wk4_ksc8",
                          "skinny_mmap_bf16_bm16_wk4_ksc0", "skinny_mmap_bf16_bm16_wk4_ksc",
                          "skinny_mmap_bf16_bm32_wk16_ks1", "skinny_mma_bf16_bm16_wk32_ks1",
                          "skinny_gemv_bf16_r1_t16_ks1", "skinny_mma_bf16_bm16_wk8_ksc2_wc",
                          "skinny_gemv_bf16_r1_t256_ks1_wc", "skinny_mmap_bf16_bm16_wk8_ks1_wc_wc",
                          "skinny_mmap_bf16_bm16_wk8_ks1wc", "skinny_mmap_bf16_bm16_wk8_ks1_WC",
                          "skinny_mmap_bf16_bm32_wk16_ks1_wc", "skinny_mmt_bf16_bm32_wk4_ks1",
                          "skinny_mmt_bf16_bm16_wk16_ks1", "skinny_mmt_bf16_bm16_wk4_ksc2",
                          "skinny_mmt_bf16_bm16_wk4_ks1_wc", "skinny_mmt_bf16_r1_t128_ks1",
                          "skinny_mmt_bf16_bm16_wk4_ks1", "skinny_mmt_bf16_bm16_wk4_ks1_b16s3",
                          "skinny_mmt_bf16_bm16_wk4_ks1_b08s2", "skinny_mmt_bf16_bm16_wk4_ks1_b8s2_wc",
                          "skinny_mmap_bf16_bm16_wk8_ks1_b8s2", "skinny_gemv_bf16_r1_t128_ks1_b8s2",
                          "skinny_wgt_bf16_bm16_wk4_ks1_b4s3", "skinny_wgt_bf16_bm64_wk8_ks1_b4s3",
                          "skinny_wgt_bf16_bm64_wk4_ks1", "skinny_wgt_bf16_bm64_wk4_ks1_b8s2_wc",
                          "skinny_wgt_bf16_bm64_wk4_ks1_b8s3", "skinny_wgt_bf16_bm64_wk4_ksc2_b4s3",
                          "skinny_wgt_bf16_r1_t128_ks1_b4s3", "skinny_mmt_bf16_bm16_wk4_ks1_b4s3",
                          "skinny_mma_bf16_bm64_wk4_ks1_b4s3", "skinny_mmt_bf16_bm16_wk4_ks1_b8s3_pair",
                          "skinny_mmt_bf16_bm16_wk8_ks1_b16s2_pair", "skinny_mmt_bf16_bm16_wk8_ks1_b8s2_pair",
                          "skinny_mmt_bf16_bm16_wk8_ks1_pair",
                          "skinny_mma_bf16_bm16_wk8_ks1_pair", "skinny_wgt_bf16_bm64_wk4_ks1_b4s3_pair",
                          "skinny_mmt_bf16_bm16_wk8_ks1_b8s3_pair_wc", "skinny_mmt_bf16_bm16_wk8_ks1_pair_b8s3",
                          "skinny_mmt_bf16_bm16_wk8_ks1_b8s3pair", "skinny_mmt_bf16_bm16_wk8_ks1_b8s6_pair",
                          "skinny_mmt_bf16_bm16_wk8_ks1_b8s6",
                          // The balanced grid: 8 warps, its shapes (8 x 3, 4, 6), unsplit, alone, suffix last.
                          "skinny_mmt_bf16_bm16_wk4_ks1_b8s3_bal", "skinny_mmt_bf16_bm16_wk8_ks1_b8s2_bal",
                          "skinny_mmt_bf16_bm16_wk8_ks1_b16s2_bal", "skinny_mmt_bf16_bm16_wk8_ksauto_b8s3_bal",
                          "skinny_mmt_bf16_bm16_wk8_ks2_b8s3_bal", "skinny_mmt_bf16_bm16_wk8_ksw2_b8s3_bal",
                          "skinny_mmt_bf16_bm16_wk8_ks1_b8s3_pair_bal", "skinny_mmt_bf16_bm16_wk8_ks1_b8s3_bal_pair",
                          "skinny_mmt_bf16_bm16_wk8_ks1_bal_b8s3", "skinny_mmt_bf16_bm16_wk8_ks1_b8s3_bal_wc",
                          "skinny_mmt_bf16_bm16_wk8_ks1_bal", "skinny_mma_bf16_bm16_wk8_ks1_b8s3_bal",
                          "skinny_wgt_bf16_bm64_wk4_ks1_b4s3_bal", "skinny_mmt_bf16_bm16_wk8_ks1_b8s3bal",
                          "skinny_mmt_bf16_bm16_wk8_ks1_b8s5_bal", "skinny_mmt_bf16_bm16_wk8_ks1_b16s6_bal"}) {
    EXPECT_EQ(skinny_gemm_provider()->from_name(bad, any), nullptr) << bad;
  }
}

TEST(SkinnyNames, EnumeratesTheDecodeSuite) {
  // bench/llm_gemm_shapes.csv (N, K) at M in {1, 8, 16, 32, 64}.
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {6144, 4096}, {4096, 4096},  {28672, 4096}, {4096, 14336}, {2560, 2048},  {2048, 2048},
      {32768, 2048}, {2048, 16384}, {256000, 2048}, {2304, 16384}, {13312, 16384}, {16384, 6656},
      {1024, 2048}};
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    for (const auto& [rows, k] : shapes) {
      for (std::int64_t tokens : {1, 8, 16, 32, 64}) {
        const GemmArgs a = t == DataType::kF8E4M3 ? fp8_problem(rows, tokens, k)
                                                  : tn_problem(t, rows, tokens, k);
        const auto sols = enumerate_ok(a);
        const std::string what = fmt::format("{} N={} K={} M={}", short_name(t), rows, k, tokens);
        // Huge weights at many tokens have no room for split-K workspace: only unsplit variants.
        EXPECT_GE(sols.size(), rows * tokens * 4 * 2 > (std::int64_t{32} << 20) ? 8u : 10u) << what;
        // 66 (n <= 8), 69 (n 9-16) and 53 (n > 16) before filtering.
        EXPECT_LE(sols.size(), tokens <= 8 ? 66u : tokens <= 16 ? 69u : 53u) << what;
        std::set<std::string> seen;
        bool gemv = false, mma = false, mmap = false, wc = false, mmt = false, pair = false;
        int bal = 0;
        int wgt = 0;
        for (const auto& s : sols) {
          EXPECT_TRUE(seen.insert(s->name()).second) << "duplicate " << s->name();
          const Status st = s->can_implement(a);
          EXPECT_TRUE(st.is_ok()) << s->name() << ": " << st.to_string();
          EXPECT_LE(s->workspace_bytes(a), std::size_t{32} << 20) << s->name();
          const auto back = skinny_gemm_provider()->from_name(s->name(), a);
          ASSERT_NE(back, nullptr) << s->name();
          EXPECT_EQ(back->name(), s->name());
          gemv |= s->name().rfind("skinny_gemv_", 0) == 0;
          mma |= s->name().rfind("skinny_mma_", 0) == 0;
          mmap |= s->name().rfind("skinny_mmap_", 0) == 0;
          mmt |= s->name().rfind("skinny_mmt_", 0) == 0;
          wgt += s->name().rfind("skinny_wgt_", 0) == 0;
          pair |= s->name().size() > 5 && s->name().compare(s->name().size() - 5, 5, "_pair") == 0;
          if (s->name().size() > 4 && s->name().compare(s->name().size() - 4, 4, "_bal") == 0) {
            ++bal;
            // The partials of one 16 x n slice per block, never more blocks than 16-row tiles.
            EXPECT_EQ(s->workspace_bytes(a), static_cast<std::size_t>((rows + 15) / 16 * 16 * tokens * 4)) << s->name();
          }
          wc |= s->name().size() > 3 && s->name().compare(s->name().size() - 3, 3, "_wc") == 0;
        }
        EXPECT_EQ(gemv, tokens <= 8) << what;
        EXPECT_TRUE(mma) << what;
        EXPECT_TRUE(mmap) << what;
        EXPECT_TRUE(wc) << what;
        EXPECT_EQ(mmt, tokens <= 16) << what;
        EXPECT_EQ(pair, tokens <= 16) << what;
        EXPECT_EQ(bal, tokens <= 16 ? 3 : 0) << what;
        // 6 wgmma candidates, less the 1 KB-per-row ring above 32 tokens (256 KB of shared memory)
        // and the split variants a huge weight has no workspace for.
        EXPECT_GE(wgt, 1) << what;
        EXPECT_LE(wgt, tokens > 32 ? 4 : 6) << what;
      }
    }
  }
}

TEST(SkinnyNames, WorkspaceMatchesSplits) {
  const GemmArgs a = tn_problem(DataType::kBF16, 2048, 8, 2048);
  const auto p = skinny_gemm_provider();
  EXPECT_EQ(p->from_name("skinny_mma_bf16_bm16_wk8_ks1", a)->workspace_bytes(a), 0u);
  EXPECT_EQ(p->from_name("skinny_mma_bf16_bm16_wk8_ks4", a)->workspace_bytes(a), 4u * 4 * 8 * 2048);
  EXPECT_EQ(p->from_name("skinny_gemv_bf16_r1_t256_ks2", a)->workspace_bytes(a), 2u * 4 * 8 * 2048);
  // Auto sizes for its largest plan: at most 64 splits, half the weight bytes of partial traffic.
  const std::size_t autos = p->from_name("skinny_gemv_bf16_r1_t256_ksauto", a)->workspace_bytes(a);
  EXPECT_GT(autos, 0u);
  EXPECT_LE(autos, std::size_t{64} * 4 * 8 * 2048);
  // Wave-balanced: partial traffic at most 1/8 of the weight (k * 2 / (64 * n) = 8 splits here).
  EXPECT_EQ(p->from_name("skinny_mmap_bf16_bm16_wk8_ksw2", a)->workspace_bytes(a), 8u * 4 * 8 * 2048);
  EXPECT_EQ(p->from_name("skinny_gemv_bf16_r1_t256_ksw4", a)->workspace_bytes(a), 8u * 4 * 8 * 2048);
  const GemmArgs big = tn_problem(DataType::kBF16, 2048, 64, 2048);  // cap 1: no workspace
  EXPECT_EQ(p->from_name("skinny_mma_bf16_bm16_wk8_ksw2", big)->workspace_bytes(big), 0u);
  // Cluster split-K reduces in distributed shared memory.
  EXPECT_EQ(p->from_name("skinny_mmap_bf16_bm16_wk8_ksc4", a)->workspace_bytes(a), 0u);
  // The balanced grid: one 16 x n fp32 slice per block, at most one block per tile (2300 rows: 144).
  const GemmArgs odd = tn_problem(DataType::kBF16, 2300, 16, 16384);
  EXPECT_EQ(p->from_name("skinny_mmt_bf16_bm16_wk8_ks1_b8s4_bal", odd)->workspace_bytes(odd), 144u * 16 * 16 * 4);
}

TEST(SkinnyNames, EnumerationRefusesOutOfScopeProblems) {
  const auto p = skinny_gemm_provider();
  auto refused = [&](const GemmArgs& a, StatusCode code) {
    std::vector<SolutionPtr<GemmArgs>> out;
    const Status st = p->enumerate(a, &out);
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_FALSE(st.message().empty());
    EXPECT_TRUE(out.empty());
  };
  GemmArgs nn = tn_problem(DataType::kBF16, 4096, 1, 4096);
  nn.desc.transa = Transpose::kN;
  refused(nn, StatusCode::kNotSupported);
  refused(tn_problem(DataType::kBF16, 4096, 65, 4096), StatusCode::kNotSupported);
  refused(tn_problem(DataType::kF32, 4096, 1, 4096), StatusCode::kNotSupported);
  refused(tn_problem(DataType::kBF16, 4096, 1, 4100), StatusCode::kNotSupported);  // k % 8
  GemmArgs lda = tn_problem(DataType::kBF16, 4096, 1, 4096);
  lda.desc.lda = 4100;
  refused(lda, StatusCode::kMisaligned);
  refused(fp8_problem(4096, 1, 4104), StatusCode::kNotSupported);  // k % 16 for fp8
  GemmArgs e5 = fp8_problem(4096, 1, 4096);
  e5.desc.dtype = DataType::kF8E5M2;
  refused(e5, StatusCode::kNotSupported);
  GemmArgs batched = tn_problem(DataType::kBF16, 4096, 1, 4096);
  batched.desc.op = GemmOp::kGemmStridedBatched;
  batched.desc.batch = 2;
  refused(batched, StatusCode::kNotSupported);
  // K near 2^31: the split planning's int arithmetic would overflow (a split of negative length).
  refused(tn_problem(DataType::kBF16, 64, 8, (std::int64_t{1} << 30) + 8), StatusCode::kNotSupported);
}

TEST(SkinnyNames, CanImplementSaysWhy) {
  const auto p = skinny_gemm_provider();
  const auto gemv = p->from_name("skinny_gemv_bf16_r1_t256_ks1", tn_problem(DataType::kBF16, 64, 1, 64));
  const auto mma = p->from_name("skinny_mma_bf16_bm16_wk4_ks2", tn_problem(DataType::kBF16, 64, 1, 64));
  ASSERT_NE(gemv, nullptr);
  ASSERT_NE(mma, nullptr);
  EXPECT_TRUE(gemv->can_implement(tn_problem(DataType::kBF16, 77, 8, 1000)).is_ok());
  EXPECT_EQ(gemv->can_implement(tn_problem(DataType::kBF16, 77, 9, 1000)).code(), StatusCode::kNotSupported);
  EXPECT_TRUE(mma->can_implement(tn_problem(DataType::kBF16, 77, 64, 1000)).is_ok());
  EXPECT_EQ(mma->can_implement(tn_problem(DataType::kF16, 77, 8, 1000)).code(), StatusCode::kNotSupported);
  // ks2 needs two split granules (4 warps x 32 elements).
  EXPECT_EQ(mma->can_implement(tn_problem(DataType::kBF16, 77, 8, 128)).code(), StatusCode::kNotSupported);
  EXPECT_TRUE(mma->can_implement(tn_problem(DataType::kBF16, 77, 8, 136)).is_ok());
  GemmArgs a = tn_problem(DataType::kBF16, 77, 8, 1000);
  a.desc.ldb = 1004;
  EXPECT_EQ(gemv->can_implement(a).code(), StatusCode::kMisaligned);
  a = tn_problem(DataType::kBF16, 77, 8, 1000);
  a.ops.a = reinterpret_cast<const void*>(std::uintptr_t{0x1008});
  const Status st = gemv->can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::kMisaligned);
  EXPECT_NE(st.message().find("16-byte"), std::string::npos) << st.message();
  a = tn_problem(DataType::kBF16, 77, 8, 1000);
  a.desc.transb = Transpose::kT;
  EXPECT_EQ(gemv->can_implement(a).code(), StatusCode::kNotSupported);
  // Epilogues: bias, relu and gelu are all handled.
  for (Epilogue e : {Epilogue::kBias, Epilogue::kBiasRelu, Epilogue::kBiasGelu}) {
    a = tn_problem(DataType::kBF16, 77, 8, 1000);
    a.desc.op = GemmOp::kGemmAndBias;
    a.desc.epilogue = e;
    EXPECT_TRUE(gemv->can_implement(a).is_ok());
  }
  // The wgmma kernel's 1 KB-per-row ring needs 256 KB of shared memory above 32 tokens.
  const auto wgt = p->from_name("skinny_wgt_bf16_bm64_wk4_ks1_b8s2", tn_problem(DataType::kBF16, 64, 1, 64));
  ASSERT_NE(wgt, nullptr);
  EXPECT_TRUE(wgt->can_implement(tn_problem(DataType::kBF16, 2304, 32, 16384)).is_ok());
  const Status big_ring = wgt->can_implement(tn_problem(DataType::kBF16, 2304, 33, 16384));
  EXPECT_EQ(big_ring.code(), StatusCode::kNotSupported);
  EXPECT_NE(big_ring.message().find("shared memory"), std::string::npos) << big_ring.message();
  // fp8 into an fp32 output: the tensor core's fp8 sums are below fp32 precision.
  const auto wgt8 = p->from_name("skinny_wgt_fp8e4m3_bm64_wk4_ks1_b4s3", fp8_problem(64, 1, 64));
  ASSERT_NE(wgt8, nullptr);
  GemmArgs f32 = fp8_problem(2304, 8, 16384);
  EXPECT_TRUE(wgt8->can_implement(f32).is_ok());
  f32.desc.out_dtype = DataType::kF32;
  EXPECT_EQ(wgt8->can_implement(f32).code(), StatusCode::kNotSupported);
  // A fixed split count whose partial sums exceed the 32 MiB workspace is refused.
  const auto wide = p->from_name("skinny_mma_bf16_bm16_wk4_ks16", tn_problem(DataType::kBF16, 64, 1, 64));
  EXPECT_EQ(wide->can_implement(tn_problem(DataType::kBF16, 256000, 64, 16384)).code(),
            StatusCode::kNotSupported);
}

}  // namespace
}  // namespace tunable
