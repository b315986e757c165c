// The public API that the CLI and the benchmarks use instead of library internals: candidate listing
// and named dispatch, fused-op signatures, results-file reading. CPU only.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <vector>

#include "test_util.hpp"
#include "tunable/gemm.hpp"
#include "tunable/measure.hpp"
#include "tunable/ops.hpp"
#include "tunable/results.hpp"

namespace tunable {
namespace {

Options cpu_options() {
  Options o;
  o.enabled = true;
  o.filename = "";
  return o;
}

TEST(PublicGemmApi, CandidatesStartWithDefaultAndNameTheirProvider) {
  Context ctx(Device::cpu(), cpu_options());
  const GemmDesc d = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kN, 64, 48, 80);
  std::vector<GemmCandidate> all;
  ASSERT_TRUE(gemm_candidates(ctx, d, &all).is_ok());
  ASSERT_GE(all.size(), 3u);
  EXPECT_EQ(all[0].name, "Default");
  EXPECT_EQ(all[0].provider, "default");
  bool reference = false;
  for (const auto& c : all) reference |= c.name == "cpu_reference" && c.provider == "cpu_reference";
  EXPECT_TRUE(reference);
  std::vector<GemmCandidate> only;
  ASSERT_TRUE(gemm_candidates(ctx, d, &only, "openblas").is_ok());
  ASSERT_FALSE(only.empty());
  for (const auto& c : only) EXPECT_EQ(c.provider, "openblas") << c.name;
  ASSERT_TRUE(gemm_candidates(ctx, d, &only, "no_such_provider").is_ok());
  EXPECT_TRUE(only.empty());
  GemmDesc bad = d;
  bad.lda = 1;
  EXPECT_EQ(gemm_candidates(ctx, bad, &all).code(), StatusCode::kInvalidArgument);
}

TEST(PublicGemmApi, NamedSolutionComputesTheGemmAndUnknownNamesAreRefused) {
  Context ctx(Device::cpu(), cpu_options());
  const std::int64_t m = 33, n = 17, k = 29;
  const GemmDesc d = GemmDesc::make(DataType::kF64, Transpose::kN, Transpose::kN, m, n, k);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a(m * k), b(k * n), c(m * n, std::nan(""));
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  ASSERT_TRUE(gemm_with_solution(ctx, d, "cpu_reference", {a.data(), b.data(), c.data()}).is_ok());
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      long double ref = 0;
      for (std::int64_t p = 0; p < k; ++p) ref += static_cast<long double>(a[i + p * m]) * b[p + j * k];
      EXPECT_NEAR(c[i + j * m], static_cast<double>(ref), 1e-12) << i << "," << j;
    }
  EXPECT_EQ(gemm_with_solution(ctx, d, "no_such_solution", {a.data(), b.data(), c.data()}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ctx.stats().tuned, 0u);  // named dispatch never tunes
}

TEST(PublicOpsApi, SignaturesAreTheResultsFilesAndBadProblemsAreRefused) {
  FusedOpProblem p;
  p.op = FusedOp::kFusedAddRmsNorm;
  p.dtype = DataType::kBF16;
  p.rows = 1000;
  p.hidden = 4096;
  std::string op, params;
  ASSERT_TRUE(fused_op_signatures(p, &op, &params).is_ok());
  EXPECT_EQ(op, "FusedAddRmsNormTunableOp_BFloat16");
  EXPECT_EQ(params, "rows_1024_hidden_4096");
  p.op = FusedOp::kActAndMul;
  p.rows = 16;
  ASSERT_TRUE(fused_op_signatures(p, &op, &params).is_ok());
  EXPECT_EQ(op.rfind("ActAndMulTunableOp_BFloat16", 0), 0u) << op;
  p.hidden = 0;
  EXPECT_FALSE(fused_op_signatures(p, &op, &params).is_ok());
  p.hidden = 4096;
  p.dtype = DataType::kF64;
  EXPECT_FALSE(fused_op_signatures(p, &op, &params).is_ok());
  Context cpu(Device::cpu(), cpu_options());
  std::string name;
  EXPECT_EQ(fused_op_default_configuration(cpu, FusedOpProblem{FusedOp::kRmsNorm, DataType::kBF16, 4, 4096}, &name)
                .code(),
            StatusCode::kNotSupported);  // fused ops run on CUDA devices
}

TEST(PublicResultsApi, ReadsWhatTheLibraryWritesAndNamesMissingFiles) {
  test::TempDir dir;
  const std::string path = dir.path() + "/r.csv";
  {
    std::ofstream f(path);
    f << "Validator,TUNABLE_VERSION,0.1.0\n"
      << "GemmTunableOp_float_NN,nn_64_48_80_ld_64_80_64,openblas_t2,0.5\n"
      << "this,line,is,not,a,record\n";
  }
  ResultsFileContents got;
  ASSERT_TRUE(read_results_file(path, &got).is_ok());
  ASSERT_EQ(got.validators.size(), 1u);
  EXPECT_EQ(got.validators[0].first, "TUNABLE_VERSION");
  ASSERT_EQ(got.records.size(), 1u);
  EXPECT_EQ(got.records[0].solution, "openblas_t2");
  ASSERT_EQ(got.diagnostics.size(), 1u);
  EXPECT_EQ(got.diagnostics[0].line, 3u);
  const Status missing = read_results_file(dir.path() + "/absent.csv", &got);
  EXPECT_EQ(missing.code(), StatusCode::kIoError);
  EXPECT_NE(missing.message().find("absent.csv"), std::string::npos) << missing.message();

  const std::string untuned = dir.path() + "/u.csv";
  std::ofstream(untuned) << "GemmTunableOp_float_NN,nn_64_48_80_ld_64_80_64\n"
                         << "GemmTunableOp_float_NN,nn_64_48_80_ld_64_80_64\n";
  std::vector<std::pair<std::string, std::string>> problems;
  std::vector<FileDiagnostic> diags;
  ASSERT_TRUE(read_untuned_file(untuned, &problems, &diags).is_ok());
  EXPECT_EQ(problems.size(), 2u);  // repeats kept: the caller decides
  EXPECT_TRUE(diags.empty());
}

// What `tune-file --devices` merges: another process's results join the store and the file; a
// problem already held keeps its own solution; results made elsewhere (other validators) add nothing.
TEST(PublicResultsApi, ImportAddsWhatIsMissingAndRefusesOtherValidators) {
  test::TempDir dir;
  Options o = cpu_options();
  o.filename = dir.path() + "/r.csv";
  Context ctx(Device::cpu(), o);
  ASSERT_TRUE(ctx.load_results().is_ok());
  const std::string held_ps = "nn_64_48_80_ld_64_80_64";
  ResultsFileContents mine;
  mine.validators = ctx.validators();
  mine.records = {{"GemmTunableOp_float_NN", held_ps, "openblas_t2", 0.5}};
  ASSERT_TRUE(import_results(ctx, mine).is_ok());

  ResultsFileContents other;
  other.validators = ctx.validators();
  other.records = {{"GemmTunableOp_float_NN", held_ps, "openblas_t4", 0.25},
                   {"GemmTunableOp_float_NN", "nn_8_8_8_ld_8_8_8", "openblas_t1", 0.1}};
  std::size_t added = 99;
  ASSERT_TRUE(import_results(ctx, other, &added).is_ok());
  EXPECT_EQ(added, 1u);
  ResultsFileContents file;
  ASSERT_TRUE(read_results_file(ctx.results_path(), &file).is_ok());
  ASSERT_EQ(file.records.size(), 2u);
  EXPECT_EQ(file.records[0].solution, "openblas_t2");  // held: kept
  EXPECT_EQ(file.records[1].solution, "openblas_t1");
  for (const ResultRecord& r : ctx.results())
    if (r.params_signature == held_ps) EXPECT_EQ(r.solution, "openblas_t2");

  ResultsFileContents foreign = other;
  foreign.records = {{"GemmTunableOp_float_NN", "nn_16_8_8_ld_16_8_16", "openblas_t1", 0.1}};
  ASSERT_FALSE(foreign.validators.empty());
  foreign.validators.back().second += "-elsewhere";
  const Status st = import_results(ctx, foreign, &added);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find(foreign.validators.back().first), std::string::npos) << st.message();
  EXPECT_EQ(added, 0u);
  foreign.validators.pop_back();
  EXPECT_EQ(import_results(ctx, foreign).code(), StatusCode::kInvalidArgument);  // one missing
  ASSERT_TRUE(read_results_file(ctx.results_path(), &file).is_ok());
  EXPECT_EQ(file.records.size(), 2u);
}

TEST(PublicMeasureApi, SizesAndHostMemory) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_GT(host_memory_available(), 0u);
  DeviceInfo info;
  EXPECT_FALSE(device_info(-1, &info).is_ok());  // no such device, on any machine
}

}  // namespace
}  // namespace tunable
