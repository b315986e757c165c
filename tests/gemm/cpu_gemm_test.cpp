// CPU GEMM providers against the extended-precision reference, and CPU tuning end to end
// through the public API.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gemm/cpu/cpu_gemm.hpp"
#include "test_bounds.hpp"
#include "test_util.hpp"
#include "tunable/gemm.hpp"

namespace tunable {
namespace {

struct Case {
  DataType dtype;
  Transpose ta, tb;
  std::int64_t m, n, k;
  std::int64_t pad;  // extra leading-dimension elements
  double alpha, beta;
  std::int64_t batch;
  std::string name() const {
    return fmt::format("{}_{}{}_{}x{}x{}_pad{}_b{}_batch{}", short_name(dtype), to_char(ta),
                       to_char(tb), m, n, k, pad, beta == 0 ? 0 : 1, batch);
  }
};

// Operands with random data; C poisoned with NaN when beta == 0.
template <class T>
struct Operands {
  std::vector<T> a, b, c;
  GemmArgs args;
  Operands(const GemmDesc& d0, std::mt19937& rng) {
    GemmDesc d = d0;
    std::uniform_real_distribution<double> u(-1, 1);
    const auto sa = span(d.lda, a_rows(d), a_cols(d)), sb = span(d.ldb, b_rows(d), b_cols(d)),
               sc = span(d.ldc, d.m, d.n);
    if (d.op == GemmOp::kGemmStridedBatched) {
      d.stride_a = sa + 3;
      d.stride_b = sb + 1;
      d.stride_c = sc + 2;
    }
    a.resize(d.stride_a * (d.batch - 1) + sa);
    b.resize(d.stride_b * (d.batch - 1) + sb);
    c.resize(d.stride_c * (d.batch - 1) + sc);
    for (auto& v : a) v = static_cast<T>(u(rng));
    for (auto& v : b) v = static_cast<T>(u(rng));
    for (auto& v : c) v = d.beta == 0 ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(u(rng));
    args = GemmArgs{d, GemmOperands{a.data(), b.data(), c.data()}};
  }
};

GemmDesc desc_of(const Case& c) {
  GemmDesc d = GemmDesc::make(c.dtype, c.ta, c.tb, c.m, c.n, c.k);
  d.lda += c.pad;
  d.ldb += 2 * c.pad;
  d.ldc += 3 * c.pad;
  d.alpha = c.alpha;
  d.beta = c.beta;
  if (c.batch > 1) {
    d.op = GemmOp::kGemmStridedBatched;
    d.batch = c.batch;
  }
  return d;
}

/// The oracle, written here from the BLAS definition (column-major C = alpha op(A) op(B) + beta C,
/// long double sums) rather than taken from the library: the library's reference is itself one of
/// the candidates under test.
template <class T>
std::vector<double> oracle(const GemmArgs& args) {
  const GemmDesc& d = args.desc;
  const T* a = static_cast<const T*>(args.ops.a);
  const T* b = static_cast<const T*>(args.ops.b);
  const T* c = static_cast<const T*>(args.ops.c);
  const bool batched = d.op == GemmOp::kGemmStridedBatched;
  std::vector<double> out(d.m * d.n * d.batch);
  for (std::int64_t bt = 0; bt < d.batch; ++bt) {
    const T* ab = a + (batched ? bt * d.stride_a : 0);
    const T* bb = b + (batched ? bt * d.stride_b : 0);
    const T* cb = c + (batched ? bt * d.stride_c : 0);
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t i = 0; i < d.m; ++i) {
        long double sum = 0;
        for (std::int64_t p = 0; p < d.k; ++p) {
          const T av = d.transa == Transpose::kN ? ab[i + p * d.lda] : ab[p + i * d.lda];
          const T bv = d.transb == Transpose::kN ? bb[p + j * d.ldb] : bb[j + p * d.ldb];
          sum += static_cast<long double>(av) * static_cast<long double>(bv);
        }
        long double v = static_cast<long double>(d.alpha) * sum;
        if (d.beta != 0) v += static_cast<long double>(d.beta) * static_cast<long double>(cb[i + j * d.ldc]);
        out[bt * d.m * d.n + i + j * d.m] = static_cast<double>(v);
      }
  }
  return out;
}

template <class T>
void check_solution(const Solution<GemmArgs>& sol, const Case& c) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  Operands<T> o(desc_of(c), rng);
  const GemmDesc& d = o.args.desc;
  const std::vector<double> ref = oracle<T>(o.args);  // reads C before the solution overwrites it
  const std::vector<T> c_before = o.c;
  ASSERT_TRUE(sol.can_implement(o.args).is_ok());
  ASSERT_TRUE(sol.run(o.args, nullptr, 0, nullptr).is_ok());
  std::vector<double> got(ref.size());
  for (std::int64_t bt = 0; bt < d.batch; ++bt)
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t i = 0; i < d.m; ++i)
        got[bt * d.m * d.n + i + j * d.m] = o.c[bt * d.stride_c + i + j * d.ldc];
  const test::CloseReport rep = test::check_close(got.data(), ref.data(), ref.size(), test::gemm_bound(d.dtype));
  EXPECT_TRUE(rep.passed()) << sol.name() << " " << c.name() << ": " << rep.describe();
  // Padding between columns and between batch entries is never written.
  for (std::int64_t bt = 0; bt < d.batch; ++bt)
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t i = d.m; i < d.ldc && (j < d.n - 1 || bt < d.batch - 1); ++i) {
        const std::size_t at = bt * d.stride_c + i + j * d.ldc;
        if (at >= o.c.size() || at >= static_cast<std::size_t>((bt + 1) * d.stride_c)) continue;
        const bool same = std::isnan(static_cast<double>(c_before[at]))
                              ? std::isnan(static_cast<double>(o.c[at]))
                              : o.c[at] == c_before[at];
        ASSERT_TRUE(same) << sol.name() << " wrote padding at " << at;
      }
}

class CpuSolutions : public ::testing::TestWithParam<Case> {};

TEST_P(CpuSolutions, EveryCandidateMatchesReference) {
  const Case& c = GetParam();
  GemmArgs probe{desc_of(c), {}};
  std::vector<SolutionPtr<GemmArgs>> sols{cpu_default_solution()};
  for (auto p : {cpu_reference_provider(), cpu_blocked_provider(), openblas_provider()})
    ASSERT_TRUE(p->enumerate(probe, &sols).is_ok());
  ASSERT_GE(sols.size(), 7u);
  for (const auto& s : sols) {
    if (c.dtype == DataType::kF32) check_solution<float>(*s, c);
    else check_solution<double>(*s, c);
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const Transpose N = Transpose::kN, T = Transpose::kT;
  for (DataType dt : {DataType::kF32, DataType::kF64})
    for (auto [ta, tb] : {std::pair{N, N}, {N, T}, {T, N}, {T, T}}) {
      out.push_back({dt, ta, tb, 37, 29, 71, 0, 1.0, 0.0, 1});
      out.push_back({dt, ta, tb, 130, 67, 300, 5, -0.75, 0.5, 1});  // odd sizes, ld > dims, beta
      out.push_back({dt, ta, tb, 1, 1, 1, 0, 2.0, 0.0, 1});
      out.push_back({dt, ta, tb, 9, 13, 7, 2, 1.0, 1.0, 3});  // strided batched
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuSolutions, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name(); });

TEST(CpuSolutions, NamesRoundTrip) {
  GemmArgs probe{GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kN, 8, 8, 8), {}};
  for (auto p : {cpu_reference_provider(), cpu_blocked_provider(), openblas_provider()}) {
    std::vector<SolutionPtr<GemmArgs>> sols;
    ASSERT_TRUE(p->enumerate(probe, &sols).is_ok());
    for (const auto& s : sols) {
      auto back = p->from_name(s->name(), probe);
      ASSERT_NE(back, nullptr) << s->name();
      EXPECT_EQ(back->name(), s->name());
    }
    EXPECT_EQ(p->from_name("cuBLASLt_whatever", probe), nullptr);
  }
}

TEST(CpuSolutions, UnsupportedTypesAreRejected) {
  GemmArgs a{GemmDesc::make(DataType::kBF16, Transpose::kN, Transpose::kN, 8, 8, 8), {}};
  Status st = cpu_default_solution()->can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("bf16"), std::string::npos);
}

// ---- end to end through the public API ----

struct Api : ::testing::Test {
  test::TempDir dir;
  Options opts() {
    Options o;
    o.enabled = true;
    o.filename = dir.file("results.csv");
    o.max_tuning_duration_ms = 5;
    o.max_warmup_duration_ms = 1;
    return o;
  }
  GemmDesc desc = GemmDesc::make(DataType::kF32, Transpose::kT, Transpose::kN, 96, 80, 112);
  std::mt19937 rng{42};
};

TEST_F(Api, TunesPersistsAndReuses) {
  Operands<float> o(desc, rng);
  {
    Context ctx(Device::cpu(), opts());
    ASSERT_TRUE(gemm(ctx, desc, o.args.ops).is_ok());
    ASSERT_TRUE(gemm(ctx, desc, o.args.ops).is_ok());
    EXPECT_EQ(ctx.stats().tuned, 1u);
    EXPECT_EQ(ctx.results_path(), dir.file("results_cpu.csv"));
  }
  ParsedResults p = parse_results(test::slurp(dir.file("results_cpu.csv")));
  ASSERT_EQ(p.records.size(), 1u);
  EXPECT_EQ(p.records[0].op_signature, "GemmTunableOp_float_TN");
  EXPECT_EQ(p.records[0].params_signature, "tn_96_80_112_ld_112_112_96");
  EXPECT_GT(p.records[0].time_ms, 0);
  std::vector<std::string> keys;
  for (auto& v : p.validators) keys.push_back(v.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"TUNABLE_VERSION", "CPU_MODEL", "OPENBLAS_VERSION"}));

  Options again = opts();
  again.tuning = false;
  Context ctx2(Device::cpu(), again);
  // The result is correct through the stored solution.
  std::fill(o.c.begin(), o.c.end(), std::numeric_limits<float>::quiet_NaN());
  ASSERT_TRUE(gemm(ctx2, desc, o.args.ops).is_ok());
  const std::vector<double> ref = oracle<float>(o.args);  // beta = 0: C is not read
  for (std::int64_t j = 0; j < desc.n; ++j)
    for (std::int64_t i = 0; i < desc.m; ++i)
      ASSERT_NEAR(o.c[i + j * desc.ldc], ref[i + j * desc.m], 1e-4);
  EXPECT_EQ(ctx2.stats().tuned, 0u);
  EXPECT_EQ(ctx2.stats().hits, 1u);
}

TEST_F(Api, ValidatorMismatchKeepsBackupAndRetunes) {
  test::write_text(dir.file("results_cpu.csv"),
                   "Validator,TUNABLE_VERSION,0.0.1\nGemmTunableOp_float_TN,tn_96_80_112_ld_112_112_96,"
                   "openblas_t1,0.001\n");
  Operands<float> o(desc, rng);
  Context ctx(Device::cpu(), opts());
  ASSERT_TRUE(gemm(ctx, desc, o.args.ops).is_ok());
  EXPECT_EQ(ctx.stats().tuned, 1u);  // the old result was not trusted
  int backups = 0;
  FILE* f = popen(("ls " + dir.path()).c_str(), "r");
  char buf[512];
  while (fgets(buf, sizeof buf, f)) {
    std::string line = buf;
    if (line.find(".bak") != std::string::npos) {
      ++backups;
      line.pop_back();
      EXPECT_NE(test::slurp(dir.file(line)).find("0.0.1"), std::string::npos);
    }
  }
  pclose(f);
  EXPECT_EQ(backups, 1);
}

TEST_F(Api, UnwritableResultsFileStillTunesInMemory) {
  Options o = opts();
  o.filename = "/proc/no/such/dir/results.csv";
  Operands<float> ops(desc, rng);
  Context ctx(Device::cpu(), o);
  EXPECT_EQ(ctx.load_results().code(), StatusCode::kIoError);
  ASSERT_TRUE(gemm(ctx, desc, ops.args.ops).is_ok());
  EXPECT_EQ(ctx.stats().tuned, 1u);
  EXPECT_EQ(ctx.results().size(), 1u);
}

TEST_F(Api, RecordUntunedThenTuneOffline) {
  Options o = opts();
  o.tuning = false;
  o.record_untuned = true;
  o.untuned_filename = dir.file("untuned.csv");
  Operands<float> ops(desc, rng);
  GemmDesc other = GemmDesc::make(DataType::kF64, Transpose::kN, Transpose::kT, 17, 19, 23);
  Operands<double> ops2(other, rng);
  {
    Context ctx(Device::cpu(), o);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(gemm(ctx, desc, ops.args.ops).is_ok());
      ASSERT_TRUE(gemm(ctx, other, ops2.args.ops).is_ok());
    }
    EXPECT_EQ(ctx.stats().tuned, 0u);
  }
  const std::string untuned = test::slurp(dir.file("untuned_cpu.csv"));
  EXPECT_EQ(untuned,
            "GemmTunableOp_float_TN,tn_96_80_112_ld_112_112_96\n"
            "GemmTunableOp_double_NT,nt_17_19_23_ld_17_19_17\n");
  // Offline: parse each line back into a problem and tune it.
  std::vector<ParseDiagnostic> diags;
  Context tuner(Device::cpu(), opts());
  for (const auto& [op, ps] : parse_untuned(untuned, &diags)) {
    GemmDesc d;
    ASSERT_TRUE(parse_gemm_signature(op, ps, &d).is_ok());
    std::string sol;
    ASSERT_TRUE(tune_gemm(tuner, d, &sol).is_ok());
    EXPECT_FALSE(sol.empty());
  }
  EXPECT_EQ(tuner.stats().tuned, 2u);
  EXPECT_EQ(parse_results(test::slurp(dir.file("results_cpu.csv"))).records.size(), 2u);
}

TEST_F(Api, BadInputsGetClearErrors) {
  Context ctx(Device::cpu(), opts());
  Operands<float> o(desc, rng);
  GemmDesc bad = desc;
  bad.k = -3;
  EXPECT_EQ(gemm(ctx, bad, o.args.ops).code(), StatusCode::kInvalidArgument);
  GemmOperands null_a = o.args.ops;
  null_a.a = nullptr;
  EXPECT_EQ(gemm(ctx, desc, null_a).code(), StatusCode::kInvalidArgument);
  GemmOperands mis = o.args.ops;
  mis.c = reinterpret_cast<char*>(o.c.data()) + 2;
  EXPECT_EQ(gemm(ctx, desc, mis).code(), StatusCode::kMisaligned);
  GemmDesc half = GemmDesc::make(DataType::kF16, Transpose::kN, Transpose::kN, 8, 8, 8);
  Status st = gemm(ctx, half, o.args.ops);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("fp16"), std::string::npos) << st.message();
}

TEST_F(Api, VerboseTreeNamesEveryStep) {
  Options o = opts();
  o.verbose = 3;
  o.verbose_filename = dir.file("log.txt");
  Operands<float> ops(desc, rng);
  {
    Context ctx(Device::cpu(), o);
    ASSERT_TRUE(gemm(ctx, desc, ops.args.ops).is_ok());
  }
  const std::string log = test::slurp(dir.file("log_cpu.txt"));
  for (const char* s : {"reading tuning results from", "Validator,TUNABLE_VERSION",
                        "finding fastest for GemmTunableOp_float_TN(tn_96_80_112_ld_112_112_96) out of",
                        "verify numerics: PASSED", "tuning using warmup iters", "found fastest for",
                        "top1", "writing file"})
    EXPECT_NE(log.find(s), std::string::npos) << "missing '" << s << "' in\n" << log;
}

// ---- the tests' bounds against the library's tolerance (issue 39, defect 5) ----

const DataType kGemmTypes[] = {DataType::kF64, DataType::kF32, DataType::kTF32, DataType::kF16,
                               DataType::kBF16, DataType::kF8E4M3, DataType::kF8E5M2};

GemmDesc desc_for(DataType t) {
  GemmDesc d = GemmDesc::make(t, Transpose::kT, Transpose::kN, 64, 64, 64);
  if (t == DataType::kF8E4M3 || t == DataType::kF8E5M2) {
    d.op = GemmOp::kScaledGemm;
    d.out_dtype = DataType::kBF16;
  } else if (t == DataType::kTF32) {
    d.out_dtype = DataType::kF32;
  }
  return d;
}

// The tuner may accept only what the tests accept: the library's tolerance is no looser than the
// tests' bound for any dtype. A library tolerance loosened 2x fails here.
TEST(ToleranceOwnership, GemmLibraryToleranceIsNoLooserThanTheTestsBound) {
  for (DataType t : kGemmTypes) {
    const Tolerance lib = gemm_tolerance(desc_for(t));
    const test::Bound b = test::gemm_bound(t);
    EXPECT_GT(b.rtol, 0) << short_name(t);
    EXPECT_LE(lib.atol, b.atol) << short_name(t) << ": the library accepts more than the tests' bound";
    EXPECT_LE(lib.rtol, b.rtol) << short_name(t) << ": the library accepts more than the tests' bound";
  }
}

// Near-misses planted at 1.5x the tests' bound (one element, and the whole output scaled by
// 1 + 1.5 rtol) are rejected by the library's comparison with its own tolerance, and by the tests'
// check; the same data at half the bound passes both. A library tolerance 2x looser would pass the
// near-misses.
TEST(ToleranceOwnership, GemmNearMissesFailTheLibraryCheck) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  std::uniform_real_distribution<double> u(-1, 1);
  // Sums of 64 products, like GEMM outputs: near-Gaussian, so some elements sit beyond 2 rms.
  std::vector<double> ref(4096);
  for (double& x : ref) {
    for (int p = 0; p < 64; ++p) x += u(rng) * u(rng);
  }
  for (DataType t : kGemmTypes) {
    SCOPED_TRACE(short_name(t));
    const Tolerance lib = gemm_tolerance(desc_for(t));
    const test::Bound b = test::gemm_bound(t);
    const std::size_t at = 1234;
    for (double factor : {1.5, 0.5}) {
      const bool miss = factor > 1;
      const std::vector<double> one = test::plant_one(ref, at, b, factor);
      const NumericsReport r1 = compare_outputs(one.data(), ref.data(), ref.size(), lib);
      EXPECT_EQ(r1.passed, !miss) << "one element at " << factor << "x the tests' bound";
      EXPECT_EQ(r1.bad_elements, miss ? 1u : 0u);
      EXPECT_EQ(r1.nonfinite, 0u);
      EXPECT_EQ(test::check_close(one.data(), ref.data(), ref.size(), b).passed(), !miss);
      const std::vector<double> all = test::plant_all(ref, b, factor);
      const NumericsReport r2 = compare_outputs(all.data(), ref.data(), ref.size(), lib);
      EXPECT_EQ(r2.passed, !miss) << "every element scaled by 1 + " << factor << " rtol";
      EXPECT_EQ(r2.nonfinite, 0u);
      EXPECT_EQ(test::check_close(all.data(), ref.data(), ref.size(), b).passed(), !miss);
    }
  }
}

}  // namespace
}  // namespace tunable
