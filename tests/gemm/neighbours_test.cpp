// Problems that were never tuned (prefill's token counts) borrow the result of the same problem at
// the nearest tuned token count when tuning is off, and are still recorded for offline tuning.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gemm/gemm_args.hpp"
#include "test_util.hpp"
#include "tunable/context.hpp"
#include "tunable/gemm.hpp"

namespace tunable {
namespace {

GemmDesc tn(std::int64_t m, std::int64_t n, std::int64_t k) {
  return GemmDesc::make(DataType::kF32, Transpose::kT, Transpose::kN, m, n, k);
}

std::vector<std::string> sigs(std::initializer_list<GemmDesc> ds) {
  std::vector<std::string> out;
  for (const GemmDesc& d : ds) out.push_back(params_signature(d));
  return out;
}

// Stored results of the problems `ds`, each solved by `solution`.
std::vector<ResultRecord> results(std::initializer_list<GemmDesc> ds, const std::string& solution = "skinny_x") {
  std::vector<ResultRecord> out;
  for (const GemmDesc& d : ds) out.push_back({op_signature(d), params_signature(d), solution, 0.1});
  return out;
}

TEST(GemmNeighbours, OnlyFromAboveAndAtMostTwiceTheTokens) {
  const std::vector<ResultRecord> stored =
      results({tn(64, 1, 32), tn(64, 8, 32), tn(64, 16, 32), tn(64, 24, 32), tn(64, 128, 32)});
  // n = 12: 16 and 24 qualify, the smallest first; 8 and 1 are below, 128 beyond 2n.
  EXPECT_EQ(gemm_neighbours(GemmArgs{tn(64, 12, 32), {}}, stored), sigs({tn(64, 16, 32), tn(64, 24, 32)}));
  EXPECT_EQ(gemm_neighbours(GemmArgs{tn(64, 64, 32), {}}, stored), sigs({tn(64, 128, 32)}));
  EXPECT_TRUE(gemm_neighbours(GemmArgs{tn(64, 63, 32), {}}, stored).empty());   // 128 > 126
  EXPECT_TRUE(gemm_neighbours(GemmArgs{tn(64, 2, 32), {}}, stored).empty());    // 8 > 4; 1 is below
  EXPECT_TRUE(gemm_neighbours(GemmArgs{tn(64, 200, 32), {}}, stored).empty());  // nothing above
}

TEST(GemmNeighbours, CublasConfigurationsAndDefaultLendNothing) {
  std::vector<ResultRecord> stored = results({tn(64, 16, 32)}, "cublasLt_a66_t12_s35_k1_r0_w0_c0_cl4_i0");
  const auto more = results({tn(64, 24, 32)}, "Default"), ours = results({tn(64, 20, 32)});
  stored.insert(stored.end(), more.begin(), more.end());
  EXPECT_TRUE(gemm_neighbours(GemmArgs{tn(64, 12, 32), {}}, stored).empty());
  stored.insert(stored.end(), ours.begin(), ours.end());
  EXPECT_EQ(gemm_neighbours(GemmArgs{tn(64, 12, 32), {}}, stored), sigs({tn(64, 20, 32)}));
}

TEST(GemmNeighbours, OnlyTheSameProblemAtAnotherN) {
  GemmDesc other_ld = tn(64, 16, 32);
  other_ld.ldc = 80;
  const std::vector<ResultRecord> stored =
      results({tn(32, 16, 32), tn(64, 16, 64), other_ld, tn(64, 12, 32), tn(64, 16, 32)});
  // m, k or ldc differ: none; n equal to the call's: itself is not a neighbour.
  EXPECT_EQ(gemm_neighbours(GemmArgs{tn(64, 12, 32), {}}, stored), sigs({tn(64, 16, 32)}));
  // B stored transposed (ldb = n): the leading dimension follows n and still matches.
  const GemmDesc nt = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kT, 64, 8, 32);
  const GemmDesc nt16 = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kT, 64, 16, 32);
  EXPECT_EQ(gemm_neighbours(GemmArgs{nt, {}}, results({nt16})), sigs({nt16}));
  // Strided batches borrow nothing.
  GemmDesc b = tn(64, 12, 32);
  b.op = GemmOp::kGemmStridedBatched;
  b.batch = 2;
  b.stride_a = 64 * 32, b.stride_b = 32 * 12, b.stride_c = 64 * 12;
  EXPECT_TRUE(gemm_neighbours(GemmArgs{b, {}}, stored).empty());
}

struct Buffers {
  std::vector<float> a, b, c;
  explicit Buffers(const GemmDesc& d) : a(d.m * d.k), b(d.k * d.n), c(d.m * d.n, std::nanf("")) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
  }
  double max_error(const GemmDesc& d) const {  // TN: C = A^T B, A stored k x m
    double worst = 0;
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t i = 0; i < d.m; ++i) {
        double acc = 0;
        for (std::int64_t p = 0; p < d.k; ++p) acc += double(a[p + i * d.k]) * b[p + j * d.k];
        worst = std::max(worst, std::fabs(acc - c[i + j * d.m]));
      }
    return worst;
  }
};

TEST(GemmNeighbours, AnUntunedTokenCountRunsTheNearestTunedSolutionAndIsRecorded) {
  test::TempDir dir;
  Options o;
  o.enabled = true;
  o.tuning = false;
  o.verbose = 1;
  o.filename = dir.file("r.csv");
  o.record_untuned = true;
  o.untuned_filename = dir.file("u.csv");
  Context ctx(Device::cpu(), o);
  const GemmDesc tuned = tn(48, 16, 40), call = tn(48, 13, 40);
  ASSERT_TRUE(ctx.impl().add_result(ResultRecord{op_signature(tuned), params_signature(tuned), "cpu_reference", 0.5})
                  .is_ok());
  Buffers buf(call);
  testing::internal::CaptureStderr();
  ASSERT_TRUE(gemm(ctx, call, GemmOperands{buf.a.data(), buf.b.data(), buf.c.data()}).is_ok());
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("cpu_reference as tuned for " + params_signature(tuned)), std::string::npos) << log;
  EXPECT_LT(buf.max_error(call), 1e-4);
  EXPECT_EQ(ctx.stats().hits, 1u);
  EXPECT_EQ(test::slurp(dir.file("u_cpu.csv")), op_signature(call) + "," + params_signature(call) + "\n");
  // Nothing was stored for the borrowed problem: a later tuning run tunes it.
  for (const ResultRecord& r : ctx.results()) EXPECT_NE(r.params_signature, params_signature(call));
}

TEST(GemmNeighbours, ANeighbourThatChoseDefaultMeansDefault) {
  test::TempDir dir;
  Options o;
  o.enabled = true;
  o.tuning = false;
  o.filename = dir.file("r.csv");
  Context ctx(Device::cpu(), o);
  const GemmDesc tuned = tn(48, 16, 40), call = tn(48, 13, 40);
  ASSERT_TRUE(ctx.impl().add_result(ResultRecord{op_signature(tuned), params_signature(tuned), "Default", 0.5}).is_ok());
  Buffers buf(call);
  ASSERT_TRUE(gemm(ctx, call, GemmOperands{buf.a.data(), buf.b.data(), buf.c.data()}).is_ok());
  EXPECT_LT(buf.max_error(call), 1e-4);
  EXPECT_EQ(ctx.stats().hits, 0u);
  EXPECT_EQ(ctx.stats().defaults, 1u);
}

}  // namespace
}  // namespace tunable
