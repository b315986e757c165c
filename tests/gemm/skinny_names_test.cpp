// CPU tests of the skinny GEMM provider: the name grammar (every valid configuration round-trips,
// the parser accepts nothing else, names in results files keep their meaning), enumeration of the
// decode suite's problems (operand pointers are null: enumeration, from_name, can_implement and
// workspace_bytes make no CUDA calls, and the provider has no SkinnyState), and the reasons
// can_implement gives.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gemm/cuda/skinny_config.hpp"
#include "gemm/cuda/skinny_family.hpp"
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

/// The weight-only problem: e4m3 weights with row scales, bf16 tokens.
GemmArgs wo_problem(std::int64_t rows, std::int64_t tokens, std::int64_t k) {
  GemmArgs a = fp8_problem(rows, tokens, k);
  a.desc.dtype_b = DataType::kBF16;
  a.desc.scale_mode = ScaleMode::kRowwise;
  return a;
}

std::vector<SolutionPtr<GemmArgs>> enumerate_ok(const GemmArgs& a) {
  std::vector<SolutionPtr<GemmArgs>> out;
  const Status st = skinny_gemm_provider(nullptr)->enumerate(a, &out);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

const char* tag(SkinnyFamily f) { return skinny_family_tag(f); }

TEST(SkinnyNames, EveryValidConfigRoundTrips) {
  const std::vector<SkinnyConfig> all = skinny_all_configs();
  ASSERT_FALSE(all.empty());
  std::set<std::string> names;
  std::map<std::string, int> per_family;
  for (const SkinnyConfig& c : all) {
    ASSERT_TRUE(c.valid()) << c.name();
    const std::string n = c.name();
    EXPECT_TRUE(names.insert(n).second) << "two configurations named " << n;
    const auto back = SkinnyConfig::parse(n);
    ASSERT_TRUE(back.has_value()) << n;
    EXPECT_TRUE(*back == c) << n << " parses to another configuration, named " << back->name();
    ++per_family[tag(c.family)];
  }
  for (SkinnyFamily f : {SkinnyFamily::kGemv, SkinnyFamily::kMma, SkinnyFamily::kMmaPipe, SkinnyFamily::kMmaTma,
                         SkinnyFamily::kWgmma, SkinnyFamily::kWeightOnly, SkinnyFamily::kWeightOnlyGemv})
    EXPECT_GT(per_family[tag(f)], 0) << "no configuration of family " << tag(f);
  // The provider's from_name rebuilds every one of them, under the same name.
  const GemmArgs any = tn_problem(DataType::kBF16, 4096, 1, 4096);
  const auto provider = skinny_gemm_provider(nullptr);
  for (const SkinnyConfig& c : all) {
    const auto s = provider->from_name(c.name(), any);
    ASSERT_NE(s, nullptr) << c.name();
    EXPECT_EQ(s->name(), c.name());
  }
  // The variants the GPU suite walks are valid names, each once.
  const auto variants = skinny_gemm_variant_names();
  const std::set<std::string> unique_variants(variants.begin(), variants.end());
  EXPECT_EQ(unique_variants.size(), variants.size());
  for (const std::string& v : variants) EXPECT_EQ(names.count(v), 1u) << v;
}

/// A configuration with fields set by name, for the expectations below.
SkinnyConfig config(SkinnyFamily f, DataType t, int rows, int width, KSplit ks) {
  SkinnyConfig c;
  c.family = f;
  c.dtype = t;
  c.rows = rows;
  c.width = width;
  c.ks = ks;
  return c;
}

SkinnyConfig with_ring(SkinnyConfig c, int boxes, int stages, SkinnyGrid grid = SkinnyGrid::kTiles) {
  c.boxes = boxes;
  c.stages = stages;
  c.grid = grid;
  return c;
}

SkinnyConfig warp_contiguous(SkinnyConfig c) {
  c.wc = true;
  return c;
}

SkinnyConfig by_cvt(SkinnyConfig c) {
  c.cvt = true;
  return c;
}

TEST(SkinnyNames, NamesInResultsFilesKeepTheirMeaning) {
  // Names that results files hold, each with the configuration it has always meant: every split
  // form (auto, a fixed count inside and outside the enumerated ones, wave-balanced, cluster),
  // every family and suffix.
  using F = SkinnyFamily;
  const DataType bf16 = DataType::kBF16, fp16 = DataType::kF16, fp8 = DataType::kF8E4M3;
  const std::vector<std::pair<std::string, SkinnyConfig>> known = {
      {"skinny_gemv_bf16_r1_t256_ksauto", config(F::kGemv, bf16, 1, 256, KSplit::automatic())},
      {"skinny_gemv_fp16_r4_t128_ks64", config(F::kGemv, fp16, 4, 128, KSplit::splits(64))},
      {"skinny_gemv_bf16_r4_t128_ksw8", config(F::kGemv, bf16, 4, 128, KSplit::balanced(8))},
      {"skinny_gemv_fp16_r2_t256_ksw2", config(F::kGemv, fp16, 2, 256, KSplit::balanced(2))},
      {"skinny_mma_fp16_bm16_wk4_ks3", config(F::kMma, fp16, 16, 4, KSplit::splits(3))},
      {"skinny_mma_fp8e4m3_bm32_wk8_ks16", config(F::kMma, fp8, 32, 8, KSplit::splits(16))},
      {"skinny_mma_bf16_bm16_wk16_ks1", config(F::kMma, bf16, 16, 16, KSplit::splits(1))},
      {"skinny_mma_fp8e4m3_bm32_wk16_ksw4", config(F::kMma, fp8, 32, 16, KSplit::balanced(4))},
      {"skinny_mma_bf16_bm32_wk16_ks1_wc", warp_contiguous(config(F::kMma, bf16, 32, 16, KSplit::splits(1)))},
      {"skinny_mmap_fp16_bm32_wk8_ks3", config(F::kMmaPipe, fp16, 32, 8, KSplit::splits(3))},
      {"skinny_mmap_bf16_bm16_wk8_ks1", config(F::kMmaPipe, bf16, 16, 8, KSplit::splits(1))},
      {"skinny_mmap_fp8e4m3_bm32_wk4_ksw4", config(F::kMmaPipe, fp8, 32, 4, KSplit::balanced(4))},
      {"skinny_mmap_fp8e4m3_bm32_wk8_ksc4", config(F::kMmaPipe, fp8, 32, 8, KSplit::over_cluster(4))},
      {"skinny_mmap_fp16_bm16_wk16_ksc2", config(F::kMmaPipe, fp16, 16, 16, KSplit::over_cluster(2))},
      {"skinny_mmap_fp8e4m3_bm16_wk16_ksc2_wc",
       warp_contiguous(config(F::kMmaPipe, fp8, 16, 16, KSplit::over_cluster(2)))},
      {"skinny_mmap_fp16_bm32_wk4_ksw2_wc", warp_contiguous(config(F::kMmaPipe, fp16, 32, 4, KSplit::balanced(2)))},
      {"skinny_mmt_bf16_bm16_wk4_ks1_b8s2", with_ring(config(F::kMmaTma, bf16, 16, 4, KSplit::splits(1)), 8, 2)},
      {"skinny_mmt_fp16_bm16_wk4_ks1_b8s3", with_ring(config(F::kMmaTma, fp16, 16, 4, KSplit::splits(1)), 8, 3)},
      {"skinny_mmt_fp8e4m3_bm16_wk8_ksw2_b16s2",
       with_ring(config(F::kMmaTma, fp8, 16, 8, KSplit::balanced(2)), 16, 2)},
      {"skinny_mmt_bf16_bm16_wk8_ks1_b8s3_pair",
       with_ring(config(F::kMmaTma, bf16, 16, 8, KSplit::splits(1)), 8, 3, SkinnyGrid::kPair)},
      {"skinny_mmt_fp8e4m3_bm16_wk8_ksauto_b8s4_pair",
       with_ring(config(F::kMmaTma, fp8, 16, 8, KSplit::automatic()), 8, 4, SkinnyGrid::kPair)},
      {"skinny_mmt_bf16_bm16_wk8_ks1_b8s4_bal",
       with_ring(config(F::kMmaTma, bf16, 16, 8, KSplit::splits(1)), 8, 4, SkinnyGrid::kBal)},
      {"skinny_mmt_fp16_bm16_wk8_ks1_b8s6_bal",
       with_ring(config(F::kMmaTma, fp16, 16, 8, KSplit::splits(1)), 8, 6, SkinnyGrid::kBal)},
      {"skinny_wgt_fp8e4m3_bm64_wk4_ksauto_b4s3", with_ring(config(F::kWgmma, fp8, 64, 4, KSplit::automatic()), 4, 3)},
      {"skinny_wgt_bf16_bm64_wk4_ksw2_b2s6", with_ring(config(F::kWgmma, bf16, 64, 4, KSplit::balanced(2)), 2, 6)},
      {"skinny_wgt_fp16_bm64_wk4_ks16_b8s2", with_ring(config(F::kWgmma, fp16, 64, 4, KSplit::splits(16)), 8, 2)},
      {"skinny_wgt_fp8e4m3_bm64_wk4_ks3_b2s6", with_ring(config(F::kWgmma, fp8, 64, 4, KSplit::splits(3)), 2, 6)},
      {"skinny_wo_fp8e4m3_bm16_wk8_ksauto", config(F::kWeightOnly, fp8, 16, 8, KSplit::automatic())},
      {"skinny_wo_fp8e4m3_bm32_wk16_ks4_wc", warp_contiguous(config(F::kWeightOnly, fp8, 32, 16, KSplit::splits(4)))},
      {"skinny_wo_fp8e4m3_bm16_wk4_ksw2", config(F::kWeightOnly, fp8, 16, 4, KSplit::balanced(2))},
      {"skinny_wov_fp8e4m3_r2_t256_ks4", config(F::kWeightOnlyGemv, fp8, 2, 256, KSplit::splits(4))},
      {"skinny_wov_fp8e4m3_r4_t256_ksauto", config(F::kWeightOnlyGemv, fp8, 4, 256, KSplit::automatic())},
      {"skinny_wov_fp8e4m3_r1_t256_ks1_cvt", by_cvt(config(F::kWeightOnlyGemv, fp8, 1, 256, KSplit::splits(1)))},
      {"skinny_wov_fp8e4m3_r4_t256_ksw2_cvt", by_cvt(config(F::kWeightOnlyGemv, fp8, 4, 256, KSplit::balanced(2)))},
  };
  const std::vector<SkinnyConfig> all = skinny_all_configs();
  for (const auto& [name, want] : known) {
    const auto got = SkinnyConfig::parse(name);
    ASSERT_TRUE(got.has_value()) << name;
    EXPECT_TRUE(*got == want) << name << " now means " << got->name();
    EXPECT_EQ(want.name(), name);
    EXPECT_NE(std::find(all.begin(), all.end(), want), all.end()) << name << " is missing from skinny_all_configs";
  }
}

TEST(SkinnyNames, ParserAcceptsNothingElse) {
  // Every field of every valid configuration moved to its neighbours (and past its range): each
  // result the parser accepts must be one of skinny_all_configs, so that list is what the parser
  // accepts, and what the GPU suite runs when it walks it.
  const std::vector<SkinnyConfig> all = skinny_all_configs();
  std::set<std::string> valid;
  for (const SkinnyConfig& c : all) valid.insert(c.name());
  std::size_t probed = 0;
  auto probe = [&](const SkinnyConfig& c) {
    ++probed;
    const std::string n = c.name();
    const auto back = SkinnyConfig::parse(n);
    if (back) EXPECT_EQ(valid.count(n), 1u) << "the parser accepts " << n << ", which no family lists";
    if (c.valid()) {
      EXPECT_EQ(valid.count(n), 1u) << "valid but not listed: " << n;
      EXPECT_TRUE(back && *back == c) << n;
    }
  };
  std::set<std::string> seen;  // probe each perturbed configuration once
  for (const SkinnyConfig& c : all) {
    std::vector<SkinnyConfig> near;
    for (int rows : {0, 1, 2, 3, 4, 8, 16, 24, 32, 48, 64, 128}) {
      SkinnyConfig m = c;
      m.rows = rows;
      near.push_back(m);
    }
    for (int width : {0, 1, 2, 4, 6, 8, 12, 16, 32, 64, 128, 192, 256, 512}) {
      SkinnyConfig m = c;
      m.width = width;
      near.push_back(m);
    }
    for (KSplit ks : {KSplit::automatic(), KSplit::splits(1), KSplit::splits(2), KSplit::splits(63),
                      KSplit::splits(64), KSplit::splits(65), KSplit::splits(99), KSplit::balanced(1),
                      KSplit::balanced(8), KSplit::balanced(9), KSplit::over_cluster(1), KSplit::over_cluster(2),
                      KSplit::over_cluster(3), KSplit::over_cluster(4), KSplit::over_cluster(8)}) {
      SkinnyConfig m = c;
      m.ks = ks;
      near.push_back(m);
    }
    for (const auto& [boxes, stages] : {std::pair{0, 0}, {1, 2}, {2, 6}, {4, 3}, {4, 6}, {8, 2}, {8, 3}, {8, 4},
                                        {8, 5}, {8, 6}, {16, 2}, {16, 3}, {16, 6}, {32, 2}}) {
      SkinnyConfig m = c;
      m.boxes = boxes;
      m.stages = stages;
      near.push_back(m);
    }
    for (SkinnyGrid g : {SkinnyGrid::kTiles, SkinnyGrid::kPair, SkinnyGrid::kBal}) {
      SkinnyConfig m = c;
      m.grid = g;
      near.push_back(m);
    }
    for (SkinnyFamily f : {SkinnyFamily::kGemv, SkinnyFamily::kMma, SkinnyFamily::kMmaPipe, SkinnyFamily::kMmaTma,
                           SkinnyFamily::kWgmma, SkinnyFamily::kWeightOnly, SkinnyFamily::kWeightOnlyGemv}) {
      SkinnyConfig m = c;
      m.family = f;
      near.push_back(m);
    }
    SkinnyConfig m = c;
    m.wc = !m.wc;
    near.push_back(m);
    m = c;
    m.cvt = !m.cvt;
    near.push_back(m);
    m = c;
    m.dtype = DataType::kF8E5M2;
    near.push_back(m);
    for (const SkinnyConfig& x : near)
      if (seen.insert(x.name() + (x.valid() ? "+" : "-")).second) probe(x);
  }
  EXPECT_GT(probed, all.size());
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
                          "skinny_mmt_bf16_bm16_wk8_ks1_b8s5_bal", "skinny_mmt_bf16_bm16_wk8_ks1_b16s6_bal",
                          // The weight-only families: e4m3 only, their own shapes.
                          "skinny_wo_bf16_bm16_wk8_ks1", "skinny_wov_bf16_r1_t256_ks1", "skinny_wov_fp8e4m3_r1_t128_ks1",
                          "skinny_wov_fp8e4m3_bm16_wk8_ks1", "skinny_wo_fp8e4m3_r1_t256_ks1", "skinny_wo_fp8e4m3_bm16_wk8_ksc2",
                          // _cvt: the CUDA-core weight-only GEMV's alone, once, last.
                          "skinny_gemv_fp8e4m3_r1_t256_ks1_cvt", "skinny_wo_fp8e4m3_bm16_wk8_ks1_cvt",
                          "skinny_wov_fp8e4m3_r1_t256_ks1_cvt_cvt", "skinny_wov_fp8e4m3_r1_t256_ks1cvt",
                          "skinny_wov_fp8e4m3_r1_t256_ks1_CVT", "skinny_wov_bf16_r1_t256_ks1_cvt",
                          "skinny_wov_fp8e4m3_r1_t256_ks1_cvt_wc", "skinny_wov_fp8e4m3_r1_t256_ks1_wc_cvt"}) {
    EXPECT_EQ(skinny_gemm_provider(nullptr)->from_name(bad, any), nullptr) << bad;
  }
}

/// Tokens `f` takes at most (its token tiles).
std::int64_t max_tokens(SkinnyFamily f) {
  return f == SkinnyFamily::kGemv || f == SkinnyFamily::kWeightOnly || f == SkinnyFamily::kWeightOnlyGemv ? 8
         : f == SkinnyFamily::kMmaTma                                                                       ? 16
                                                                                                            : 64;
}

TEST(SkinnyNames, EnumeratesTheDecodeSuite) {
  // bench/llm_gemm_shapes.csv (N, K) at M in {1, 8, 16, 32, 64}.
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {6144, 4096}, {4096, 4096},  {28672, 4096}, {4096, 14336}, {2560, 2048},  {2048, 2048},
      {32768, 2048}, {2048, 16384}, {256000, 2048}, {2304, 16384}, {13312, 16384}, {16384, 6656},
      {1024, 2048}};
  const auto provider = skinny_gemm_provider(nullptr);
  // Whether each candidate-table entry was offered for at least one problem of the suite: an entry
  // every problem refuses (a fixed or cluster split no shape can take) would never be timed.
  std::map<std::string, bool> offered_anywhere;
  // The weight-only problem (fp8e4m3 x bf16) last: the wo family's, and no other family's.
  for (int kind = 0; kind < 4; ++kind) {
    const bool wo = kind == 3;
    const DataType t = kind == 0 ? DataType::kBF16 : kind == 1 ? DataType::kF16 : DataType::kF8E4M3;
    for (const auto& [rows, k] : shapes) {
      for (std::int64_t tokens : {1, 8, 16, 32, 64}) {
        const GemmArgs a = wo                       ? wo_problem(rows, tokens, k)
                           : t == DataType::kF8E4M3 ? fp8_problem(rows, tokens, k)
                                                    : tn_problem(t, rows, tokens, k);
        const std::string what = fmt::format("{}{} N={} K={} M={}", short_name(t), wo ? " x bf16" : "", rows, k, tokens);
        std::map<std::string, SkinnyConfig> table;
        for (const SkinnyConfig& c : skinny_candidate_configs(a.desc)) {
          EXPECT_TRUE(c.valid()) << c.name();
          EXPECT_EQ(c.dtype, t) << c.name();
          EXPECT_TRUE(table.emplace(c.name(), c).second) << "a candidate table lists " << c.name() << " twice";
          offered_anywhere.emplace(c.name(), false);
        }
        const auto sols = enumerate_ok(a);
        std::set<std::string> offered;
        std::map<SkinnyFamily, int> per_family;
        std::map<SkinnyGrid, int> mmt_grids;
        for (const auto& s : sols) {
          const std::string& n = s->name();
          EXPECT_TRUE(offered.insert(n).second) << "duplicate " << n;
          const Status st = s->can_implement(a);
          EXPECT_TRUE(st.is_ok()) << n << ": " << st.to_string();
          EXPECT_LE(s->workspace_bytes(a), std::size_t{32} << 20) << n;
          // What is offered is a table entry, and its name parses to that very configuration.
          const auto entry = table.find(n);
          ASSERT_NE(entry, table.end()) << n << " is offered but in no candidate table";
          const auto parsed = SkinnyConfig::parse(n);
          ASSERT_TRUE(parsed.has_value()) << n;
          EXPECT_TRUE(*parsed == entry->second) << n << " parses to another configuration";
          const auto back = provider->from_name(n, a);
          ASSERT_NE(back, nullptr) << n;
          EXPECT_EQ(back->name(), n);
          offered_anywhere[n] = true;
          ++per_family[parsed->family];
          if (parsed->family == SkinnyFamily::kMmaTma) ++mmt_grids[parsed->grid];
          if (parsed->grid == SkinnyGrid::kBal) {
            // The partials of one 16 x n slice per block, never more blocks than 16-row tiles.
            EXPECT_EQ(s->workspace_bytes(a), static_cast<std::size_t>((rows + 15) / 16 * 16 * tokens * 4)) << n;
          }
        }
        // Every family contributes to a problem it serves, and none to one it does not.
        for (SkinnyFamily f : {SkinnyFamily::kGemv, SkinnyFamily::kMma, SkinnyFamily::kMmaPipe, SkinnyFamily::kMmaTma,
                               SkinnyFamily::kWgmma, SkinnyFamily::kWeightOnly, SkinnyFamily::kWeightOnlyGemv}) {
          if (tokens <= max_tokens(f) && skinny_family(f).weight_only() == wo)
            EXPECT_GT(per_family[f], 0) << what << ": no candidate of " << skinny_family_tag(f);
          else
            EXPECT_EQ(per_family[f], 0) << what << ": " << skinny_family_tag(f) << " offered above its tokens";
        }
        if (!wo && tokens <= max_tokens(SkinnyFamily::kMmaTma)) {
          EXPECT_GT(mmt_grids[SkinnyGrid::kPair], 0) << what << ": no paired mmt grid";
          EXPECT_GT(mmt_grids[SkinnyGrid::kBal], 0) << what << ": no balanced mmt grid";
        }
        // Unsplit, automatic and wave-balanced entries need no workspace beyond what the problem
        // allows, so a family that serves the problem offers every one of them (the wgmma kernel's
        // 1 KB-per-row ring excepted above 32 tokens: 256 KB of shared memory).
        for (const auto& [n, c] : table) {
          const bool basic = c.ks == KSplit::splits(1) || c.ks.is_auto() || c.ks.waves != 0;
          const bool big_ring = c.family == SkinnyFamily::kWgmma && c.boxes == 8 && c.stages == 2 && tokens > 32;
          if (basic && tokens <= max_tokens(c.family) && !big_ring)
            EXPECT_EQ(offered.count(n), 1u) << what << ": " << n << " refused";
        }
      }
    }
  }
  for (const auto& [n, offered] : offered_anywhere)
    EXPECT_TRUE(offered) << n << " is in a candidate table but every problem of the decode suite refuses it";
}

TEST(SkinnyNames, WeightOnlyDefaultWorkspaceCoversEveryPart) {
  // Default runs 8 tokens at a time; a narrower last part may take more automatic splits (their cap
  // divides by n), so its workspace must count too (Llama-3-70B's output projection at 13 tokens).
  const auto def = skinny_weight_only_default(nullptr);
  const auto part = skinny_gemm_provider(nullptr)->from_name("skinny_wo_fp8e4m3_bm16_wk8_ksauto", wo_problem(64, 1, 64));
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(def->name(), "Default");
  for (const auto& [m, n, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{128256, 13, 8192},
                                {151936, 15, 3584}, {4096, 8, 4096}, {4096, 17, 4096}, {2048, 3, 2048}}) {
    const GemmArgs a = wo_problem(m, n, k);
    const std::size_t ws = def->workspace_bytes(a);
    EXPECT_LE(ws, std::size_t{32} << 20);
    for (std::int64_t j0 = 0; j0 < n; j0 += kWeightOnlyTokens)
      EXPECT_GE(ws, part->workspace_bytes(wo_problem(m, std::min(kWeightOnlyTokens, n - j0), k)))
          << m << " x " << n << " x " << k << ", tokens from " << j0;
  }
  // Default refuses what no weight-only kernel runs, by name.
  EXPECT_EQ(def->can_implement(fp8_problem(4096, 1, 4096)).code(), StatusCode::kNotSupported);
  EXPECT_TRUE(def->can_implement(wo_problem(4096, 40, 4096)).is_ok());
}

// The RMS-normalized weight-only problem needs each token's whole row in one block: its candidates
// are the weight-only families' tables in one-split form, each once, every one accepted, no
// workspace; a split variant asked for by name is refused, naming why.
TEST(SkinnyNames, RmsNormalizedCandidatesAreUnsplitAndUnique) {
  for (const auto& [m, n, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{6144, 1, 4096},
                                {28672, 8, 4096}, {2560, 3, 2048}}) {
    GemmArgs a = wo_problem(m, n, k);
    const std::size_t plain = skinny_candidate_configs(a.desc).size();
    a.desc.scale_mode = ScaleMode::kRowwiseRms;
    const std::vector<SkinnyConfig> cands = skinny_candidate_configs(a.desc);
    ASSERT_FALSE(cands.empty());
    EXPECT_LT(cands.size(), plain);  // the split forms are gone
    std::set<std::string> names;
    bool wo = false, wov = false;
    for (const SkinnyConfig& c : cands) {
      EXPECT_EQ(c.ks.fixed, 1) << c.name();
      EXPECT_EQ(c.ks.waves, 0) << c.name();
      EXPECT_TRUE(names.insert(c.name()).second) << c.name() << " twice";
      wo |= c.family == SkinnyFamily::kWeightOnly;
      wov |= c.family == SkinnyFamily::kWeightOnlyGemv;
    }
    EXPECT_TRUE(wo && wov);
    // Both e4m3 conversions of the CUDA-core GEMV are timed, plain and _rms: neither wins every problem.
    auto offers_both = [](const std::vector<SkinnyConfig>& list) {
      bool trick = false, cvt = false;
      for (const SkinnyConfig& c : list) {
        trick |= c.family == SkinnyFamily::kWeightOnlyGemv && !c.cvt;
        cvt |= c.family == SkinnyFamily::kWeightOnlyGemv && c.cvt;
      }
      return trick && cvt;
    };
    EXPECT_TRUE(offers_both(cands)) << "_rms";
    EXPECT_TRUE(offers_both(skinny_candidate_configs(wo_problem(m, n, k).desc))) << "_rw";
    const auto sols = enumerate_ok(a);
    EXPECT_EQ(sols.size(), cands.size());
    for (const auto& s : sols) EXPECT_EQ(s->workspace_bytes(a), 0u) << s->name();
    for (const char* split : {"skinny_wo_fp8e4m3_bm16_wk8_ks2", "skinny_wov_fp8e4m3_r1_t256_ksw2"}) {
      const auto sol = skinny_gemm_provider(nullptr)->from_name(split, a);
      ASSERT_NE(sol, nullptr) << split;
      const Status st = sol->can_implement(a);
      EXPECT_EQ(st.code(), StatusCode::kNotSupported) << split;
      EXPECT_NE(st.message().find("_rms"), std::string::npos) << st.message();
    }
  }
}

TEST(SkinnyNames, WorkspaceMatchesSplits) {
  const GemmArgs a = tn_problem(DataType::kBF16, 2048, 8, 2048);
  const auto p = skinny_gemm_provider(nullptr);
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
  const auto p = skinny_gemm_provider(nullptr);
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
  const auto p = skinny_gemm_provider(nullptr);
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
  // The weight-only problem runs on the wo family only, which runs nothing else, up to 8 tokens.
  const auto wo = p->from_name("skinny_wo_fp8e4m3_bm16_wk8_ksauto", wo_problem(64, 1, 64));
  const auto mma8 = p->from_name("skinny_mma_fp8e4m3_bm16_wk8_ksauto", fp8_problem(64, 1, 64));
  ASSERT_NE(wo, nullptr);
  ASSERT_NE(mma8, nullptr);
  EXPECT_TRUE(wo->can_implement(wo_problem(4096, 8, 4096)).is_ok());
  EXPECT_EQ(wo->can_implement(wo_problem(4096, 9, 4096)).code(), StatusCode::kNotSupported);
  const Status w8a8 = wo->can_implement(fp8_problem(4096, 1, 4096));
  EXPECT_EQ(w8a8.code(), StatusCode::kNotSupported);
  EXPECT_NE(w8a8.message().find("16-bit tokens"), std::string::npos) << w8a8.message();
  const Status other = mma8->can_implement(wo_problem(4096, 1, 4096));
  EXPECT_EQ(other.code(), StatusCode::kNotSupported);
  EXPECT_NE(other.message().find("wo family"), std::string::npos) << other.message();
  GemmArgs odd_ldb = wo_problem(4096, 2, 4096);
  odd_ldb.desc.ldb = 4100;  // bf16 rows of 8200 bytes: not 16-byte rows
  EXPECT_EQ(wo->can_implement(odd_ldb).code(), StatusCode::kMisaligned);
  odd_ldb.desc.ldb = 4104;  // 8208 bytes: fine for bf16 though not a multiple of 16 elements
  EXPECT_TRUE(wo->can_implement(odd_ldb).is_ok());
  // A fixed split count whose partial sums exceed the 32 MiB workspace is refused.
  const auto wide = p->from_name("skinny_mma_bf16_bm16_wk4_ks16", tn_problem(DataType::kBF16, 64, 1, 64));
  EXPECT_EQ(wide->can_implement(tn_problem(DataType::kBF16, 256000, 64, 16384)).code(),
            StatusCode::kNotSupported);
}

}  // namespace
}  // namespace tunable
