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

TEST(GemmNeighbours, NearestTokenCountsOnALogScaleLargerFirst) {
  const std::vector<std::string> stored = sigs({tn(64, 1, 32), tn(64, 8, 32), tn(64, 16, 32), tn(64, 128, 32)});
  // n = 12: log2 distances 0.58 (16) and 0.58 (8): the larger first; then 1 and 128.
  EXPECT_EQ(gemm_neighbours(GemmArgs{tn(64, 12, 32), {}}, stored),
            sigs({tn(64, 16, 32), tn(64, 8, 32), tn(64, 128, 32), tn(64, 1, 32)}));
  EXPECT_EQ(gemm_neighbours(GemmArgs{tn(64, 100, 32), {}}, stored).front(), params_signature(tn(64, 128, 32)));
  EXPECT_EQ(gemm_neighbours(GemmArgs{tn(64, 2, 32), {}}, stored).front(), params_signature(tn(64, 1, 32)));
}

TEST(GemmNeighbours, OnlyTheSameProblemAtAnotherN) {
  GemmDesc other_ld = tn(64, 8, 32);
  other_ld.ldc = 80;
  const std::vector<std::string> stored = sigs({tn(32, 8, 32), tn(64, 8, 64), other_ld, tn(64, 12, 32), tn(64, 8, 32)});
  // m, k or ldc differ: none; n equal to the call's: itself is not a neighbour.
  EXPECT_EQ(gemm_neighbours(GemmArgs{tn(64, 12, 32), {}}, stored), sigs({tn(64, 8, 32)}));
  // B stored transposed (ldb = n): the leading dimension follows n and still matches.
  const GemmDesc nt = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kT, 64, 16, 32);
  const GemmDesc nt8 = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kT, 64, 8, 32);
  EXPECT_EQ(gemm_neighbours(GemmArgs{nt, {}}, sigs({nt8})), sigs({nt8}));
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
