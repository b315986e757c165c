// GPU GEMM tests: device helpers, every op x dtype x transpose through Default and through the
// tuned solution against an fp64 host reference, planted wrong candidates, foreign results
// files, misaligned pointers, unsupported combinations and CUDA graph capture.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include <cublasLt.h>

#include "cuda/cuda_util.hpp"
#include "tune/cuda_timing.hpp"
#include "gemm/cuda/cuda_gemm.hpp"
#include "gpu/planted.hpp"
#include "test_bounds.hpp"
#include "test_util.hpp"
#include "tunable/gemm.hpp"
#include "tune/tunable_op.hpp"

namespace tunable {
namespace {

// A failed read of a device's properties is neither kept nor left as the pending CUDA error.
TEST(CudaUtil, DevicePropertiesOfABadOrdinalAreZeroAndNotKept) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(device_properties(count).multiProcessorCount, 0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // One shared all-zero answer, no entry kept per bad ordinal.
  EXPECT_EQ(&device_properties(count), &device_properties(count + 1));
  EXPECT_GT(device_properties(0).multiProcessorCount, 0);
  EXPECT_EQ(&device_properties(0), &device_properties(0));  // kept once read
}

TEST(CudaUtil, FillCompareAndPoison) {
  const std::size_t n = 1 << 16;
  DeviceBuffer a, got, ref;
  ASSERT_TRUE(a.allocate(n * 2).is_ok());
  ASSERT_TRUE(got.allocate(n * 8).is_ok());
  ASSERT_TRUE(ref.allocate(n * 8).is_ok());
  ASSERT_TRUE(fill_random(a.get(), DataType::kBF16, n, 1234, 1.0f, nullptr).is_ok());
  ASSERT_TRUE(to_double(a.get(), DataType::kBF16, 256, 256, 256, ref.as<double>(), nullptr).is_ok());
  std::vector<double> h(n);
  ASSERT_EQ(cudaMemcpy(h.data(), ref.get(), n * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  double lo = 1, hi = -1;
  for (double v : h) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_LT(lo, -0.9);
  EXPECT_GT(hi, 0.9);
  EXPECT_LE(hi, 1.0);
  NumericsReport r;
  ASSERT_TRUE(compare_on_device(ref.as<double>(), ref.as<double>(), n, {1e-6, 1e-6}, &r, nullptr).is_ok());
  EXPECT_TRUE(r.passed);
  EXPECT_NEAR(r.ref_rms, std::sqrt(1.0 / 3), 0.01);
  ASSERT_TRUE(fill_nan(a.get(), DataType::kBF16, n, nullptr).is_ok());
  ASSERT_TRUE(to_double(a.get(), DataType::kBF16, 256, 256, 256, got.as<double>(), nullptr).is_ok());
  ASSERT_TRUE(compare_on_device(got.as<double>(), ref.as<double>(), n, {1, 1}, &r, nullptr).is_ok());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.nonfinite, n);
}

// The device comparator against near-misses, not only itself and all-NaN: one element at 1.5x its
// bound fails alone, at 0.9x passes; every element scaled by 1 + 1.5 rtol fails exactly the
// elements the host comparison and the tests' own check fail; one NaN among good values is one bad,
// one non-finite. Inputs are sums of products (near-Gaussian), never zeros.
TEST(CudaUtil, DeviceComparatorCatchesNearMisses) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  std::uniform_real_distribution<double> u(-1, 1);
  const std::size_t n = 10007;
  std::vector<double> ref(n);
  for (double& x : ref) {
    for (int p = 0; p < 32; ++p) x += u(rng) * u(rng);
  }
  const test::Bound b{1e-3, 2e-3};
  const Tolerance tol{b.atol, b.rtol};
  DeviceBuffer dref, dgot;
  ASSERT_TRUE(dref.allocate(n * 8).is_ok());
  ASSERT_TRUE(dgot.allocate(n * 8).is_ok());
  ASSERT_EQ(cudaMemcpy(dref.get(), ref.data(), n * 8, cudaMemcpyHostToDevice), cudaSuccess);
  auto on_device = [&](const std::vector<double>& got) {
    NumericsReport r;
    EXPECT_EQ(cudaMemcpy(dgot.get(), got.data(), n * 8, cudaMemcpyHostToDevice), cudaSuccess);
    const Status st = compare_on_device(dgot.as<double>(), dref.as<double>(), n, tol, &r, nullptr);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return r;
  };
  const std::size_t at = 4321;
  for (double factor : {1.5, 0.9}) {
    SCOPED_TRACE(fmt::format("one element at {}x its bound", factor));
    const std::vector<double> got = test::plant_one(ref, at, b, factor);
    const NumericsReport r = on_device(got);
    EXPECT_EQ(r.passed, factor < 1);
    EXPECT_EQ(r.bad_elements, factor < 1 ? 0u : 1u);
    EXPECT_EQ(r.nonfinite, 0u);
    EXPECT_NEAR(r.max_rel_err, factor, 0.01);
    EXPECT_DOUBLE_EQ(r.max_abs_err, std::fabs(got[at] - ref[at]));
    EXPECT_NEAR(r.ref_rms, test::rms_of(ref), 1e-12 * test::rms_of(ref));
  }
  {
    SCOPED_TRACE("every element scaled by 1 + 1.5 rtol");
    const std::vector<double> got = test::plant_all(ref, b, 1.5);
    const NumericsReport r = on_device(got);
    const NumericsReport host = compare_outputs(got.data(), ref.data(), n, tol);
    const test::CloseReport own = test::check_close(got.data(), ref.data(), n, b);
    EXPECT_FALSE(r.passed);
    EXPECT_GT(r.bad_elements, 10u);
    EXPECT_EQ(r.bad_elements, host.bad_elements);
    EXPECT_EQ(r.bad_elements, own.bad);
    EXPECT_EQ(r.nonfinite, 0u);
  }
  {
    SCOPED_TRACE("one NaN among right values");
    std::vector<double> got = ref;
    got[at] = std::nan("");
    const NumericsReport r = on_device(got);
    EXPECT_FALSE(r.passed);
    EXPECT_EQ(r.bad_elements, 1u);
    EXPECT_EQ(r.nonfinite, 1u);
  }
}

// ---- host side: typed random data and the fp64 reference ----

double to_host_double(DataType t, const unsigned char* p, std::size_t i) {
  switch (t) {
    case DataType::kF64: return reinterpret_cast<const double*>(p)[i];
    case DataType::kF32:
    case DataType::kTF32: return reinterpret_cast<const float*>(p)[i];
    case DataType::kF16: return __half2float(reinterpret_cast<const __half*>(p)[i]);
    case DataType::kBF16: return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(p)[i]);
    case DataType::kF8E4M3: return float(reinterpret_cast<const __nv_fp8_e4m3*>(p)[i]);
    case DataType::kF8E5M2: return float(reinterpret_cast<const __nv_fp8_e5m2*>(p)[i]);
  }
  return 0;
}

void from_host_double(DataType t, unsigned char* p, std::size_t i, double v) {
  switch (t) {
    case DataType::kF64: reinterpret_cast<double*>(p)[i] = v; break;
    case DataType::kF32:
    case DataType::kTF32: reinterpret_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DataType::kF16: reinterpret_cast<__half*>(p)[i] = __float2half(static_cast<float>(v)); break;
    case DataType::kBF16: reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(static_cast<float>(v)); break;
    case DataType::kF8E4M3: reinterpret_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(static_cast<float>(v)); break;
    case DataType::kF8E5M2: reinterpret_cast<__nv_fp8_e5m2*>(p)[i] = __nv_fp8_e5m2(static_cast<float>(v)); break;
  }
}

struct HostMatrix {
  DataType t;
  std::vector<unsigned char> bytes;
  HostMatrix(DataType type, std::size_t n, std::mt19937& rng) : t(type), bytes(n * size_of(type)) {
    std::uniform_real_distribution<double> u(-1, 1);
    for (std::size_t i = 0; i < n; ++i) from_host_double(t, bytes.data(), i, u(rng));
  }
  double at(std::size_t i) const { return to_host_double(t, bytes.data(), i); }
};

struct DeviceCopy {
  DeviceBuffer buf;
  explicit DeviceCopy(const std::vector<unsigned char>& h, std::size_t offset = 0) {
    EXPECT_TRUE(buf.allocate(h.size() + offset + 256).is_ok());
    EXPECT_EQ(cudaMemcpy(buf.as<char>() + offset, h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ptr = buf.as<char>() + offset;
  }
  void* ptr;
};

struct GpuCase {
  GemmOp op;
  DataType dtype, out;
  Transpose ta, tb;
  std::int64_t m, n, k, pad, batch;
  double alpha, beta;
  Epilogue ep;
  std::optional<DataType> dtype_b{};  ///< ScaledGemm with mixed fp8 inputs
  bool rowwise = false;               ///< ScaledGemm with per-row (m) and per-column (n) scales
  bool rms = false;                   ///< weight-only with RMS-normalized tokens (ScaleMode::kRowwiseRms)
  std::string name() const {
    static const char* ops[] = {"gemm", "batched", "bias", "scaled"};
    static const char* eps[] = {"", "_bias", "_relu", "_gelu"};
    const std::string in = dtype_b ? fmt::format("{}x{}", short_name(dtype), short_name(*dtype_b))
                                   : short_name(dtype);
    return fmt::format("{}_{}_{}_{}{}_{}x{}x{}_pad{}_b{}{}{}", ops[static_cast<int>(op)], in,
                       short_name(out), to_char(ta), to_char(tb), m, n, k, pad, batch,
                       beta != 0 ? "_beta" : "", eps[static_cast<int>(ep)]) + (rowwise ? "_rw" : "") + (rms ? "_rms" : "");
  }
  GemmDesc desc() const {
    GemmDesc d = GemmDesc::make(dtype, ta, tb, m, n, k);
    d.op = op;
    d.out_dtype = out;
    d.lda += pad;
    d.ldb += pad;
    d.ldc += pad;
    d.alpha = alpha;
    d.beta = beta;
    d.epilogue = ep;
    d.dtype_b = dtype_b;
    if (rowwise) d.scale_mode = rms ? ScaleMode::kRowwiseRms : ScaleMode::kRowwise;
    d.rms_eps = 0.05;  // large enough to matter against tokens of mean square ~0.3
    if (op == GemmOp::kGemmStridedBatched) {
      d.batch = batch;
      d.stride_a = span(d.lda, a_rows(d), a_cols(d)) + 8;
      d.stride_b = span(d.ldb, b_rows(d), b_cols(d)) + 8;
      d.stride_c = span(d.ldc, d.m, d.n) + 8;
    }
    return d;
  }
};

/// Byte offsets of the operands from their (256-byte aligned) allocations. The library promises to
/// take any pointer aligned to its element size (validate(), tunable/gemm.hpp).
struct Offsets {
  std::size_t a = 0, b = 0, c = 0, bias = 0;
};

struct Problem {
  GemmDesc d;
  HostMatrix a, b, c, bias;
  std::vector<double> ref;  // dense m x n x batch
  // Tensor scales: scale_a, then scale_b 16 bytes later. Rowwise: m floats, padding to 16 bytes,
  // n floats, each a different value in [0.5, 2).
  std::vector<float> scales{0.5f, 0, 0, 0, 1.5f, 0, 0, 0};
  std::size_t scale_b_at = 4;
  double scale_of(std::int64_t i, std::int64_t j) const {
    if (is_weight_only(d)) return scales[i];  // no scale_b: the tokens are 16-bit
    return static_cast<double>(scales[d.scale_mode == ScaleMode::kRowwise ? i : 0]) *
           scales[scale_b_at + (d.scale_mode == ScaleMode::kRowwise ? j : 0)];
  }

  static std::size_t count_a(const GemmDesc& d) { return d.stride_a * (d.batch - 1) + span(d.lda, a_rows(d), a_cols(d)); }
  static std::size_t count_b(const GemmDesc& d) { return d.stride_b * (d.batch - 1) + span(d.ldb, b_rows(d), b_cols(d)); }
  static std::size_t count_c(const GemmDesc& d) { return d.stride_c * (d.batch - 1) + span(d.ldc, d.m, d.n); }

  Problem(const GemmDesc& desc, std::mt19937& rng)
      : d(desc), a(d.dtype, count_a(d), rng), b(b_type(d), count_b(d), rng), c(d.out_dtype, count_c(d), rng),
        bias(d.out_dtype, d.m, rng) {
    ref.resize(d.m * d.n * d.batch);
    if (d.scale_mode != ScaleMode::kTensor) {
      scale_b_at = (static_cast<std::size_t>(d.m) + 3) / 4 * 4;
      scales.assign(scale_b_at + d.n, 0.f);
      std::uniform_real_distribution<float> u(0.5f, 2.f);
      for (float& f : scales) f = u(rng);
    }
    for (std::int64_t bt = 0; bt < d.batch; ++bt)
      for (std::int64_t j = 0; j < d.n; ++j) {
        // _rms: token j's RMS, sqrt(mean of squares + eps), once per token.
        const bool rms = d.scale_mode == ScaleMode::kRowwiseRms;
        double ss = 0;
        for (std::int64_t p = 0; p < d.k && rms; ++p) {
          const double bv = b.at(bt * d.stride_b + p + j * d.ldb);
          ss += bv * bv;
        }
        const double den = rms ? std::sqrt(ss / static_cast<double>(d.k) + d.rms_eps) : 1.0;
        for (std::int64_t i = 0; i < d.m; ++i) {
          double acc = 0;
          for (std::int64_t p = 0; p < d.k; ++p) {
            const double av = a.at(bt * d.stride_a + (d.transa == Transpose::kN ? i + p * d.lda : p + i * d.lda));
            const double bv = b.at(bt * d.stride_b + (d.transb == Transpose::kN ? p + j * d.ldb : j + p * d.ldb));
            acc += av * bv;
          }
          if (rms) acc /= den;
          double v = d.alpha * (d.op == GemmOp::kScaledGemm ? scale_of(i, j) : 1.0) * acc;
          if (d.beta != 0) v += d.beta * c.at(bt * d.stride_c + i + j * d.ldc);
          if (d.epilogue != Epilogue::kNone) v += bias.at(i);
          if (d.epilogue == Epilogue::kBiasRelu) v = std::max(v, 0.0);
          if (d.epilogue == Epilogue::kBiasGelu)
            v = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
          ref[bt * d.m * d.n + i + j * d.m] = v;
        }
      }
  }

  static constexpr unsigned char kSentinel = 0x5A;  // a finite value in every output type
  static constexpr std::size_t kTail = 256;         // sentinel bytes after C

  // Runs through `ctx` on device copies and checks the result against the reference, and that
  // nothing outside C's m x n x batch elements was written: C's allocation is filled with sentinel
  // bytes (before C, its padding rows when ldc > m, the gaps between batch entries, after it), then
  // the elements are set (NaN when beta == 0, so each must be written; the random C otherwise).
  /// misaligned_ok: a kMisaligned status is an answer too (nothing is checked then).
  void run_and_check(Context& ctx, const std::string& what, Offsets off = {}, bool misaligned_ok = false) {
    DeviceCopy da(a.bytes, off.a), db(b.bytes, off.b), dbias(bias.bytes, off.bias);
    const std::size_t es = size_of(d.out_dtype);
    std::vector<unsigned char> image(off.c + c.bytes.size() + kTail, kSentinel);
    std::vector<bool> element(image.size(), false);
    for (std::int64_t bt = 0; bt < d.batch; ++bt)
      for (std::int64_t j = 0; j < d.n; ++j)
        for (std::int64_t i = 0; i < d.m; ++i) {
          const std::size_t e = static_cast<std::size_t>(bt * d.stride_c + i + j * d.ldc);
          unsigned char* at = image.data() + off.c + e * es;
          if (d.beta == 0) from_host_double(d.out_dtype, at, 0, std::nan(""));
          else std::memcpy(at, c.bytes.data() + e * es, es);
          for (std::size_t k = 0; k < es; ++k) element[off.c + e * es + k] = true;
        }
    DeviceBuffer dc;
    ASSERT_TRUE(dc.allocate(image.size()).is_ok());
    ASSERT_EQ(cudaMemcpy(dc.get(), image.data(), image.size(), cudaMemcpyHostToDevice), cudaSuccess);
    DeviceBuffer sc;
    ASSERT_TRUE(sc.allocate(scales.size() * sizeof(float)).is_ok());
    ASSERT_EQ(cudaMemcpy(sc.get(), scales.data(), scales.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    GemmOperands ops{da.ptr, db.ptr, dc.as<char>() + off.c};
    if (d.epilogue != Epilogue::kNone) ops.bias = dbias.ptr;
    if (d.op == GemmOp::kScaledGemm) {
      ops.scale_a = sc.as<float>();
      ops.scale_b = is_weight_only(d) ? nullptr : sc.as<float>() + scale_b_at;
    }
    const Status st = gemm(ctx, d, ops, nullptr);
    if (misaligned_ok && st.code() == StatusCode::kMisaligned) return;
    ASSERT_TRUE(st.is_ok()) << what << ": " << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
    std::vector<unsigned char> after(image.size());
    ASSERT_EQ(cudaMemcpy(after.data(), dc.get(), after.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<double> got(ref.size());
    for (std::int64_t bt = 0; bt < d.batch; ++bt)
      for (std::int64_t j = 0; j < d.n; ++j)
        for (std::int64_t i = 0; i < d.m; ++i)
          got[bt * d.m * d.n + i + j * d.m] =
              to_host_double(d.out_dtype, after.data() + off.c, bt * d.stride_c + i + j * d.ldc);
    // The tests' own bound and check (test_bounds.hpp), not the library's tolerance and comparator.
    const test::CloseReport rep = test::check_close(got.data(), ref.data(), ref.size(), test::gemm_bound(d.dtype));
    EXPECT_TRUE(rep.passed()) << what << ": " << rep.describe();
    std::size_t touched = 0;
    std::string first;
    for (std::size_t k = 0; k < image.size(); ++k) {
      if (element[k] || after[k] == image[k]) continue;
      if (touched++ < 4) {
        const long long rel = static_cast<long long>(k) - static_cast<long long>(off.c);
        first += fmt::format(" byte {} of C ({})", rel,
                             rel < 0 ? "before C" : k >= off.c + c.bytes.size() ? "after C"
                                                  : fmt::format("element {}: padding or batch gap", rel / static_cast<long long>(es)));
      }
    }
    EXPECT_EQ(touched, 0u) << what << ": " << touched << " bytes outside C's elements were written:" << first;
  }
};

struct GpuGemm : ::testing::TestWithParam<GpuCase> {
  test::TempDir dir;
  Options opts(bool enabled) {
    Options o;
    o.enabled = enabled;
    o.filename = dir.file("results.csv");
    o.max_tuning_duration_ms = 3;
    o.max_warmup_duration_ms = 1;
    o.exhaustive_candidates = 8;
    if (const char* v = std::getenv("TUNABLE_TEST_VERBOSE")) o.verbose = std::atoi(v);
    return o;
  }
};

TEST_P(GpuGemm, DefaultAndTunedMatchReference) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  Problem p(GetParam().desc(), rng);
  ASSERT_TRUE(validate(p.d).is_ok()) << validate(p.d).to_string();
  {
    // Default serves every problem validate() accepts here, fp8 -> fp32 with a bias included
    // (cuBLASLt has no such kernel: Default puts the bias into C and runs the GEMM with beta = 1).
    Context plain(Device::cuda(0), opts(false));
    p.run_and_check(plain, "Default");
  }
  Context tuned(Device::cuda(0), opts(true));
  p.run_and_check(tuned, "tuned");
  EXPECT_EQ(tuned.stats().tuned, 1u);
  ASSERT_EQ(tuned.results().size(), 1u);
  const std::string chosen = tuned.results()[0].solution;
  // Reloaded in a fresh context: the stored name rebuilds the same solution and is correct.
  Options o = opts(true);
  o.tuning = false;
  Context reloaded(Device::cuda(0), o);
  p.run_and_check(reloaded, "reloaded " + chosen);
  EXPECT_EQ(reloaded.stats().fallbacks, 0u) << chosen;
  EXPECT_EQ(reloaded.stats().hits, 1u);
}

std::vector<GpuCase> gpu_cases() {
  std::vector<GpuCase> v;
  const Transpose N = Transpose::kN, T = Transpose::kT;
  for (DataType dt : {DataType::kF32, DataType::kTF32, DataType::kF16, DataType::kBF16, DataType::kF64}) {
    const DataType out = dt == DataType::kTF32 ? DataType::kF32 : dt;
    for (auto [ta, tb] : {std::pair{N, N}, {N, T}, {T, N}, {T, T}}) {
      v.push_back({GemmOp::kGemm, dt, out, ta, tb, 67, 45, 131, 3, 1, 1.0, 0.0, Epilogue::kNone});
      v.push_back({GemmOp::kGemm, dt, out, ta, tb, 128, 64, 256, 8, 1, 0.5, 0.75, Epilogue::kNone});
    }
    // Batched in every layout; odd sizes with padding, and beta; 8-element gaps between entries.
    for (auto [ta, tb] : {std::pair{N, N}, {N, T}, {T, N}, {T, T}}) {
      v.push_back({GemmOp::kGemmStridedBatched, dt, out, ta, tb, 33, 17, 72, 5, 3, 1.0, 0.0, Epilogue::kNone});
      v.push_back({GemmOp::kGemmStridedBatched, dt, out, ta, tb, 64, 32, 64, 0, 4, 1.0, 1.0, Epilogue::kNone});
    }
  }
  const Epilogue kEps[] = {Epilogue::kBias, Epilogue::kBiasRelu, Epilogue::kBiasGelu};
  for (DataType dt : {DataType::kF16, DataType::kBF16, DataType::kF32}) {
    for (Epilogue ep : kEps) {
      v.push_back({GemmOp::kGemmAndBias, dt, dt, T, N, 256, 24, 512, 0, 1, 1.0, 0.0, ep});
      v.push_back({GemmOp::kGemmAndBias, dt, dt, N, N, 72, 40, 136, 8, 1, 1.0, 0.0, ep});
    }
    // Every layout at sizes and leading dimensions that are not multiples of 8, alpha != 1.
    int i = 0;
    for (auto [ta, tb] : {std::pair{N, N}, {N, T}, {T, N}, {T, T}})
      v.push_back({GemmOp::kGemmAndBias, dt, dt, ta, tb, 67, 45, 131, 3, 1, 0.5, 0.0, kEps[i++ % 3]});
  }
  // fp64 and TF32 with a bias pass validate(): they must run too, in every layout. (No GELU for
  // fp64: the tests' 1e-10 bound would also judge how the epilogue evaluates tanh.)
  for (DataType dt : {DataType::kF64, DataType::kTF32}) {
    const DataType out = dt == DataType::kTF32 ? DataType::kF32 : dt;
    int i = 0;
    for (auto [ta, tb] : {std::pair{N, N}, {N, T}, {T, N}, {T, T}})
      v.push_back({GemmOp::kGemmAndBias, dt, out, ta, tb, 37, 29, 53, 1, 1, 1.0, 0.0,
                   kEps[i++ % (dt == DataType::kF64 ? 2 : 3)]});
    v.push_back({GemmOp::kGemmAndBias, dt, out, T, N, 128, 64, 256, 0, 1, 1.0, 0.0, Epilogue::kBias});
  }
  for (DataType out : {DataType::kBF16, DataType::kF16, DataType::kF32})
    for (Epilogue ep : {Epilogue::kNone, Epilogue::kBias})
      v.push_back({GemmOp::kScaledGemm, DataType::kF8E4M3, out, T, N, 256, 32, 512, 0, 1, 1.0, 0.0, ep});
  v.push_back({GemmOp::kScaledGemm, DataType::kF8E4M3, DataType::kBF16, T, N, 4096, 16, 4096, 0, 1, 1.0, 0.0,
               Epilogue::kNone});
  // fp8 -> fp32 with a bias, which Default serves by putting the bias into C (columns copied in
  // doublings: 48 columns end with a partial doubling), padded C, alpha != 1 (the bias is not scaled).
  v.push_back({GemmOp::kScaledGemm, DataType::kF8E4M3, DataType::kF32, T, N, 256, 48, 512, 16, 1, 0.75, 0.0,
               Epilogue::kBias});
  // Mixed fp8 (e4m3 x e5m2 and the reverse), the combinations cuBLASLt has kernels for.
  for (auto [a8, b8] : {std::pair{DataType::kF8E4M3, DataType::kF8E5M2}, {DataType::kF8E5M2, DataType::kF8E4M3}})
    for (DataType out : {DataType::kBF16, DataType::kF16})
      for (Epilogue ep : {Epilogue::kNone, Epilogue::kBias})
        v.push_back({GemmOp::kScaledGemm, a8, out, T, N, 256, 40, 512, 0, 1, 1.0, 0.0, ep, b8});
  // Rowwise scales (FP8 weights with per-channel scales, per-token activations): cuBLASLt's outer
  // vectors at prefill sizes, the skinny kernels' epilogue at decode sizes, with a bias.
  for (Epilogue ep : {Epilogue::kNone, Epilogue::kBias})
    for (std::int64_t tokens : {1, 8, 512}) {
      GpuCase c{GemmOp::kScaledGemm, DataType::kF8E4M3, DataType::kBF16, T, N, 2048, tokens, 1024, 0, 1, 1.0, 0.0, ep};
      c.rowwise = true;
      v.push_back(c);
    }
  {
    GpuCase c{GemmOp::kScaledGemm, DataType::kF8E4M3, DataType::kBF16, T, N, 4096, 4, 2048, 0, 1, 1.0, 0.0,
              Epilogue::kNone};
    c.rowwise = true;
    v.push_back(c);
  }
  // Weight-only (e4m3 weights with row scales, 16-bit tokens): the wo kernels up to 8 tokens, which
  // Default also runs per 8 tokens above that (13: a partial second launch), with a bias, beta and
  // padded leading dimensions (lda and ldb stay 16-byte rows).
  for (DataType x : {DataType::kBF16, DataType::kF16})
    for (std::int64_t tokens : {1, 8, 13}) {
      GpuCase c{GemmOp::kScaledGemm, DataType::kF8E4M3, x, T, N, 1024, tokens, 2048, 0, 1, 1.0, 0.0,
                tokens == 8 ? Epilogue::kBias : Epilogue::kNone, x};
      c.rowwise = true;
      v.push_back(c);
    }
  for (std::int64_t tokens : {4, 13}) {  // padded, alpha and beta; 13: Default's parts offset by ldb, ldc
    GpuCase c{GemmOp::kScaledGemm, DataType::kF8E4M3, DataType::kBF16, T, N, 300, tokens, 528, 16, 1, 0.5, 0.25,
              Epilogue::kNone, DataType::kBF16};
    c.rowwise = true;
    v.push_back(c);
  }
  // Weight-only with RMS-normalized tokens (an FP8 decode step's QKV and gate/up with the norm folded
  // in): Default and the tuned kernels, 13 tokens in two of Default's parts, a bias, beta = 1 (the
  // residual add), padding.
  for (DataType x : {DataType::kBF16, DataType::kF16})
    for (std::int64_t tokens : {1, 5, 13}) {
      GpuCase c{GemmOp::kScaledGemm, DataType::kF8E4M3, x, T, N, 1040, tokens, 2048, tokens == 5 ? 16 : 0, 1, 1.0,
                tokens == 13 ? 1.0 : 0.0, tokens == 5 ? Epilogue::kBias : Epilogue::kNone, x};
      c.rowwise = true;
      c.rms = true;
      v.push_back(c);
    }
  // Decode-like shapes (y = x W^T): the skinny kernels' territory.
  for (std::int64_t tokens : {1, 8, 16, 33, 64})
    for (DataType dt : {DataType::kBF16, DataType::kF16})
      v.push_back({GemmOp::kGemm, dt, dt, T, N, 2048, tokens, 2048, 0, 1, 1.0, 0.0, Epilogue::kNone});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuGemm, ::testing::ValuesIn(gpu_cases()),
                         [](const auto& info) { return info.param.name(); });

// ---- the runtime's safety properties on the GPU ----

struct GpuRuntime : ::testing::Test {
  test::TempDir dir;
  GemmDesc d = GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, 512, 16, 1024);
  std::mt19937 rng{7};
  Options opts() {
    Options o;
    o.enabled = true;
    o.filename = dir.file("results.csv");
    o.max_tuning_duration_ms = 3;
    o.exhaustive_candidates = 8;
    return o;
  }
};

// ---- planted wrong candidates (issue 39, defect 3) ----
//
// A planted candidate runs Default and then spoils its answer by a known, finite amount
// (tests/gpu/planted.hpp): one element far off, or every element scaled by 1 + 1.5 rtol of the tests'
// bound (test_bounds.hpp): just past it where |ref| > 2 rms. Every other candidate is
// held back, so the planted one wins when the numerics check is off (the control run); with it on,
// the tuner records it "incorrect" and chooses another.

struct PlantedGemmCase {
  GpuCase g;
  test::Spoil how;
  std::string name() const { return g.name() + "_" + test::to_string(how); }
};

/// Default's answer to `d`, spoiled `how` on C.
SolutionPtr<GemmArgs> planted_gemm(const SolutionPtr<GemmArgs>& real, const GemmDesc& d, test::Spoil how) {
  const double rel = 1.5 * test::gemm_bound(d.dtype).rtol;
  const std::int64_t stride = d.op == GemmOp::kGemmStridedBatched ? d.stride_c : 0;
  return std::make_shared<test::Planted<GemmArgs>>(
      real, test::to_string(how), [d, how, rel, stride](const GemmArgs& a, cudaStream_t s) {
        return test::spoil_matrix(a.ops.c, d.out_dtype, d.m, d.n, d.ldc, d.batch, stride, how, rel, s);
      });
}

class GpuPlanted : public ::testing::TestWithParam<PlantedGemmCase> {};

TEST_P(GpuPlanted, RecordedIncorrectAndNotChosenThoughFastest) {
  const PlantedGemmCase& pc = GetParam();
  const GemmDesc d = pc.g.desc();
  ASSERT_TRUE(validate(d).is_ok()) << validate(d).to_string();
  Context ctx(Device::cuda(0), test::planted_options());
  OpHooks<GemmArgs> h;
  ASSERT_TRUE(cuda_gemm_hooks(ctx.impl(), d, &h).is_ok());
  std::unique_ptr<Workload<GemmArgs>> wl;
  const Status made = h.make_workload(GemmArgs{d, {}}, test::planted_options(), &wl);
  ASSERT_TRUE(made.is_ok()) << made.to_string();
  // Default and the first two cuBLASLt heuristic results, all held back; then the planted one.
  std::vector<SolutionPtr<GemmArgs>> cands{std::make_shared<test::HeldBack<GemmArgs>>(h.default_solution)};
  std::vector<SolutionPtr<GemmArgs>> lt;
  if (h.providers[0]->enumerate(GemmArgs{d, {}}, &lt).is_ok())
    for (std::size_t i = 0; i < lt.size() && i < 2; ++i) cands.push_back(std::make_shared<test::HeldBack<GemmArgs>>(lt[i]));
  cands.push_back(planted_gemm(h.default_solution, d, pc.how));
  test::expect_planted_rejected(ctx.impl(), *wl, cands, cands.back()->name(), pc.how != test::Spoil::kScaleAll);
}

std::vector<PlantedGemmCase> planted_gemm_cases() {
  const Transpose N = Transpose::kN, T = Transpose::kT;
  const std::vector<GpuCase> g = {
      {GemmOp::kGemm, DataType::kBF16, DataType::kBF16, T, N, 512, 16, 1024, 0, 1, 1.0, 0.0, Epilogue::kNone},
      {GemmOp::kGemm, DataType::kF32, DataType::kF32, N, N, 128, 64, 256, 8, 1, 0.5, 0.75, Epilogue::kNone},
      {GemmOp::kGemm, DataType::kF64, DataType::kF64, N, T, 64, 48, 96, 0, 1, 1.0, 0.0, Epilogue::kNone},
      {GemmOp::kGemm, DataType::kTF32, DataType::kF32, T, T, 96, 40, 128, 0, 1, 1.0, 0.0, Epilogue::kNone},
      {GemmOp::kGemmStridedBatched, DataType::kF16, DataType::kF16, N, T, 64, 32, 64, 0, 3, 1.0, 0.0, Epilogue::kNone},
      {GemmOp::kGemmAndBias, DataType::kBF16, DataType::kBF16, T, N, 256, 24, 512, 0, 1, 1.0, 0.0, Epilogue::kBiasRelu},
      {GemmOp::kScaledGemm, DataType::kF8E4M3, DataType::kBF16, T, N, 256, 32, 512, 0, 1, 1.0, 0.0, Epilogue::kNone},
  };
  std::vector<PlantedGemmCase> v;
  for (const GpuCase& c : g)
    for (test::Spoil how : {test::Spoil::kOneElement, test::Spoil::kScaleAll}) v.push_back({c, how});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuPlanted, ::testing::ValuesIn(planted_gemm_cases()),
                         [](const auto& info) { return info.param.name(); });

/// Offers one fixed solution (the planted one) as a provider would.
class OneSolutionProvider final : public Provider<GemmArgs> {
 public:
  explicit OneSolutionProvider(SolutionPtr<GemmArgs> s) : s_(std::move(s)) {}
  std::string name() const override { return "planted"; }
  Status enumerate(const GemmArgs&, std::vector<SolutionPtr<GemmArgs>>* out) const override {
    out->push_back(s_);
    return Status::ok();
  }
  SolutionPtr<GemmArgs> from_name(const std::string& n, const GemmArgs&) const override {
    return n == s_->name() ? s_ : nullptr;
  }

 private:
  SolutionPtr<GemmArgs> s_;
};

// The same through a TunableOp end to end: the planted candidate (one element off) is what the op
// would pick and store with the numerics check off; with it on, another is stored and the verbose
// tree says the planted one failed its check.
TEST_F(GpuRuntime, PlantedCandidateThroughTheTunableOp) {
  for (bool check : {false, true}) {
    SCOPED_TRACE(check ? "numerics check on" : "numerics check off (control)");
    Options o = test::planted_options();
    o.numerical_check = check;
    o.verbose = 2;
    o.verbose_filename = dir.file(check ? "log_on.txt" : "log_off.txt");
    Context ctx(Device::cuda(0), o);
    OpHooks<GemmArgs> h;
    h.op_signature = op_signature(d);
    h.key = gemm_key;
    h.params_signature = [](const GemmArgs& a) { return params_signature(a.desc); };
    ASSERT_TRUE(cuda_gemm_hooks(ctx.impl(), d, &h).is_ok());
    const SolutionPtr<GemmArgs> planted = planted_gemm(h.default_solution, d, test::Spoil::kOneElement);
    h.default_solution = std::make_shared<test::HeldBack<GemmArgs>>(h.default_solution);
    h.providers = {std::make_shared<OneSolutionProvider>(planted)};
    TunableOp<GemmArgs> op(ctx.impl(), h);
    std::string chosen;
    ASSERT_TRUE(op.tune(GemmArgs{d, {}}, &chosen).is_ok());
    ASSERT_EQ(ctx.results().size(), 1u);
    EXPECT_EQ(ctx.results()[0].solution, chosen);
    const std::string log = test::slurp(dir.file(check ? "log_on0.txt" : "log_off0.txt"));
    if (check) {
      EXPECT_NE(chosen, planted->name());
      EXPECT_NE(log.find("verify numerics: FAILED"), std::string::npos) << log;
      EXPECT_NE(log.find("1 bad elements) " + planted->name()), std::string::npos) << log;
    } else {
      EXPECT_EQ(chosen, planted->name()) << "the planted candidate must win without the check\n" << log;
      EXPECT_EQ(log.find("verify numerics"), std::string::npos) << log;
    }
  }
}

TEST_F(GpuRuntime, ResultsFromAnotherGpuAreNotUsed) {
  Context probe(Device::cuda(0), opts());
  std::string header;
  for (const auto& [k, v] : probe.validators())
    header += fmt::format("Validator,{},{}\n", k, k == "GPU_NAME" ? std::string("NVIDIA B200") : v);
  test::write_text(dir.file("results0.csv"),
                   header + op_signature(d) + "," + params_signature(d) + ",planted_wrong,0.0001\n");
  Problem p(d, rng);
  Context ctx(Device::cuda(0), opts());
  p.run_and_check(ctx, "after foreign file");
  EXPECT_EQ(ctx.stats().tuned, 1u);
  EXPECT_EQ(ctx.stats().fallbacks, 0u);
  FILE* f = popen(("ls " + dir.path() + " | grep -c bak").c_str(), "r");
  char buf[16] = {};
  ASSERT_NE(fgets(buf, sizeof buf, f), nullptr);
  pclose(f);
  EXPECT_EQ(std::atoi(buf), 1);
}

TEST_F(GpuRuntime, MisalignedPointersAndUnsupportedCombinations) {
  Context ctx(Device::cuda(0), opts());
  Problem p(d, rng);
  // Element-misaligned A, B, C or bias: a clear error before any launch.
  DeviceBuffer buf;
  ASSERT_TRUE(buf.allocate(1 << 24).is_ok());
  char* base = buf.as<char>();
  for (int which = 0; which < 3; ++which) {
    GemmOperands bad{base + (which == 0), base + (4 << 20) + (which == 1), base + (8 << 20) + (which == 2)};
    const Status st = gemm(ctx, d, bad);
    EXPECT_EQ(st.code(), StatusCode::kMisaligned) << "operand " << "ABC"[which] << ": " << st.to_string();
  }
  GemmDesc with_bias = d;
  with_bias.op = GemmOp::kGemmAndBias;
  with_bias.epilogue = Epilogue::kBias;
  const Status bias_st = gemm(ctx, with_bias, GemmOperands{base, base + (4 << 20), base + (8 << 20), base + (12 << 20) + 1});
  EXPECT_EQ(bias_st.code(), StatusCode::kMisaligned) << bias_st.to_string();
  // 16-byte misaligned but element-aligned operands (the API promises these work): the tuned
  // cuBLASLt choice steps aside for Default, which gives the right answer.
  p.run_and_check(ctx, "aligned");
  for (Offsets off : {Offsets{0, 0, 2, 0}, Offsets{2, 0, 0, 0},
                               Offsets{0, 6, 0, 0}, Offsets{2, 6, 10, 0}}) {
    p.run_and_check(ctx, fmt::format("A, B, C offset by {}, {}, {} bytes", off.a, off.b, off.c), off);
    Options plain = opts();
    plain.enabled = false;
    Context defaults(Device::cuda(0), plain);
    p.run_and_check(defaults, fmt::format("Default, A, B, C offset by {}, {}, {} bytes", off.a, off.b, off.c), off);
  }
  // fp8 with NN layout, odd sizes: cuBLASLt has nothing; a clear error, not a crash.
  GemmDesc f8 = GemmDesc::make(DataType::kF8E4M3, Transpose::kN, Transpose::kN, 33, 7, 19);
  f8.op = GemmOp::kScaledGemm;
  f8.out_dtype = DataType::kBF16;
  float* s = buf.as<float>();
  GemmOperands o8{buf.get(), buf.get(), buf.as<char>() + (1 << 20), nullptr, s, s + 4};
  Status st = gemm(ctx, f8, o8);
  EXPECT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.to_string();
  EXPECT_NE(st.message().find("TN layout"), std::string::npos) << st.message();
  // e5m2 x e5m2 has no cuBLASLt kernel: a clear not_supported.
  GemmDesc e5 = GemmDesc::make(DataType::kF8E5M2, Transpose::kT, Transpose::kN, 128, 16, 256);
  e5.op = GemmOp::kScaledGemm;
  e5.out_dtype = DataType::kBF16;
  EXPECT_EQ(gemm(ctx, e5, o8).code(), StatusCode::kNotSupported);
  // FP8 scale pointers must be 16-byte aligned.
  GemmDesc ok8 = GemmDesc::make(DataType::kF8E4M3, Transpose::kT, Transpose::kN, 128, 16, 256);
  ok8.op = GemmOp::kScaledGemm;
  ok8.out_dtype = DataType::kBF16;
  GemmOperands mis8 = o8;
  mis8.scale_b = s + 1;
  EXPECT_EQ(gemm(ctx, ok8, mis8).code(), StatusCode::kMisaligned);
  // Weight-only (no cuBLAS kernel; Default is ours and loads 16-byte vectors): tokens that are
  // element- but not 16-byte aligned, and k off the 16-element vector, are clear errors; a missing
  // scale_a is refused before anything runs.
  GemmDesc wo = GemmDesc::make(DataType::kF8E4M3, Transpose::kT, Transpose::kN, 128, 2, 256);
  wo.op = GemmOp::kScaledGemm;
  wo.dtype_b = DataType::kBF16;
  wo.out_dtype = DataType::kBF16;
  wo.scale_mode = ScaleMode::kRowwise;
  GemmOperands owo{buf.get(), buf.as<char>() + (4 << 20), buf.as<char>() + (8 << 20), nullptr, s, nullptr};
  for (bool tuning : {false, true}) {
    Options o = opts();
    o.enabled = tuning;
    Context c(Device::cuda(0), o);
    GemmOperands shifted = owo;
    shifted.b = buf.as<char>() + (4 << 20) + 2;
    Status w = gemm(c, wo, shifted);
    EXPECT_EQ(w.code(), StatusCode::kMisaligned) << w.to_string();
    GemmDesc odd = wo;
    odd.k = odd.lda = odd.ldb = 520;
    w = gemm(c, odd, owo);
    EXPECT_EQ(w.code(), StatusCode::kNotSupported) << w.to_string();
    EXPECT_NE(w.message().find("multiple of 16"), std::string::npos) << w.message();
    GemmOperands no_scale = owo;
    no_scale.scale_a = nullptr;
    EXPECT_EQ(gemm(c, wo, no_scale).code(), StatusCode::kInvalidArgument);
  }
  // int overflow of dims is refused up front.
  GemmDesc huge = d;
  huge.m = 1ll << 33;
  EXPECT_EQ(gemm(ctx, huge, GemmOperands{buf.get(), buf.get(), buf.get()}).code(),
            StatusCode::kInvalidArgument);
}

// GemmAndBias and ScaledGemm run cuBLASLt, whose Default (heuristic #0) is chosen for 16-byte aligned
// operands, yet the API promises any element-aligned pointer (validate(), tunable/gemm.hpp). Each
// problem runs with 16-byte misaligned, element-aligned operands through Default and through a
// tuning context, in a child process (gtest's threadsafe death-test style re-runs this binary): a
// kernel that assumed 16-byte alignment could fault with a sticky "misaligned address" and take the
// rest of the suite with it. The child must get the right answer or a clear kMisaligned status.
[[noreturn]] void misaligned_child(const GemmDesc& g, Offsets off) {
  // A death test shows only the child's stderr, and gtest forwards none of the child's failures to
  // its listeners: they are intercepted here and printed there.
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &failures);
    std::mt19937 rng(23);
    Problem p(g, rng);
    for (bool enabled : {false, true}) {
      Options o;
      o.enabled = enabled;
      o.filename = "";
      o.max_tuning_duration_ms = 3;
      o.max_warmup_duration_ms = 1;
      o.exhaustive_candidates = 8;
      Context ctx(Device::cuda(0), o);
      p.run_and_check(ctx, enabled ? "tuning context" : "Default", off, /*misaligned_ok=*/true);
    }
  }
  for (int i = 0; i < failures.size(); ++i) {
    const ::testing::TestPartResult& r = failures.GetTestPartResult(i);
    if (r.failed())
      std::fprintf(stderr, "%s:%d: %s\n", r.file_name() ? r.file_name() : "?", r.line_number(), r.message());
  }
  const cudaError_t sync = cudaDeviceSynchronize();
  bool failed = false;
  for (int i = 0; i < failures.size(); ++i) failed |= failures.GetTestPartResult(i).failed();
  const bool ok = sync == cudaSuccess && !failed;
  std::fprintf(stderr, "child: %s (cuda: %s)\n", ok ? "right answer or kMisaligned" : "FAILED", cudaGetErrorString(sync));
  std::fflush(stderr);
  std::_Exit(ok ? 0 : 3);
}

TEST(GpuMisalignedDeathTest, LtFamiliesTakeElementAlignedOperands) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Transpose N = Transpose::kN, T = Transpose::kT;
  const struct {
    GpuCase g;
    Offsets off;
  } cases[] = {
      {{GemmOp::kGemmAndBias, DataType::kBF16, DataType::kBF16, T, N, 256, 24, 512, 0, 1, 1.0, 0.0, Epilogue::kBias},
       {2, 2, 2, 2}},
      {{GemmOp::kGemmAndBias, DataType::kF32, DataType::kF32, N, N, 64, 40, 96, 0, 1, 1.0, 0.0, Epilogue::kBiasRelu},
       {4, 8, 4, 12}},
      {{GemmOp::kScaledGemm, DataType::kF8E4M3, DataType::kBF16, T, N, 256, 32, 512, 0, 1, 1.0, 0.0, Epilogue::kBias},
       {8, 1, 2, 2}},
  };
  for (const auto& c : cases) {
    EXPECT_EXIT(misaligned_child(c.g.desc(), c.off), ::testing::ExitedWithCode(0), "")
        << c.g.name() << " with A, B, C, bias offset by " << c.off.a << ", " << c.off.b << ", " << c.off.c << ", "
        << c.off.bias << " bytes";
  }
}

TEST_F(GpuRuntime, BroadcastBatchKeepsItsStridesWhileTuning) {
  // A broadcast A (stride_a = 0): the tuning copies used to widen every stride to the operand's
  // span, which made each cuBLASLt candidate (keyed on the user's strides) refuse them.
  GemmDesc b = GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, 128, 24, 256);
  b.op = GemmOp::kGemmStridedBatched;
  b.batch = 3;
  b.stride_a = 0;
  b.stride_b = span(b.ldb, b_rows(b), b_cols(b));
  b.stride_c = span(b.ldc, b.m, b.n);
  ASSERT_TRUE(validate(b).is_ok()) << validate(b).to_string();
  Context ctx(Device::cuda(0), opts());
  OpHooks<GemmArgs> h;
  ASSERT_TRUE(cuda_gemm_hooks(ctx.impl(), b, &h).is_ok());
  std::unique_ptr<Workload<GemmArgs>> wl;
  ASSERT_TRUE(h.make_workload(GemmArgs{b, {}}, ctx.options(), &wl).is_ok());
  EXPECT_EQ(wl->args(0).desc.stride_a, 0);
  std::vector<SolutionPtr<GemmArgs>> lt;
  ASSERT_TRUE(h.providers[0]->enumerate(GemmArgs{b, {}}, &lt).is_ok());
  ASSERT_FALSE(lt.empty());
  int usable = 0;
  for (const auto& s : lt) usable += s->can_implement(wl->args(0)).is_ok();
  EXPECT_EQ(usable, static_cast<int>(lt.size()));
  // And end to end: tuned, then correct against the host reference.
  Problem p(b, rng);
  p.run_and_check(ctx, "broadcast A");
  EXPECT_EQ(ctx.stats().tuned, 1u);
}

// Tuning memory on the GPU is estimated before anything is allocated (issue: a huge problem's
// tuning buffers were allocated until cudaMalloc failed, inside the user's program).
struct FakeDeviceMemory {
  explicit FakeDeviceMemory(std::size_t bytes) { set_device_memory_free_for_testing(bytes); }
  ~FakeDeviceMemory() { set_device_memory_free_for_testing(0); }
};

TEST_F(GpuRuntime, TooLittleGpuMemoryRunsDefaultAndRecordsTheMiss) {
  Options o = opts();
  o.record_untuned = true;
  o.untuned_filename = dir.file("u.csv");
  Context ctx(Device::cuda(0), o);
  // Tuning may take half of 1 MiB; one input copy of this problem is A alone 1 MiB.
  FakeDeviceMemory mem(1 << 20);
  Problem p(d, rng);
  testing::internal::CaptureStderr();
  p.run_and_check(ctx, "Default, for lack of GPU memory to tune");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("not enough GPU memory to tune"), std::string::npos) << err;
  EXPECT_EQ(ctx.stats().tuned, 0u);
  EXPECT_EQ(test::slurp(dir.file("u0.csv")), op_signature(d) + "," + params_signature(d) + "\n");
  std::string chosen;
  const Status st = tune_gemm(ctx, d, &chosen);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("not enough GPU memory to tune"), std::string::npos) << st.message();
}

TEST_F(GpuRuntime, FewerInputCopiesWhenGpuMemoryIsShort) {
  Options o = opts();
  o.rotating_buffer_size_mib = 64;
  Context ctx(Device::cuda(0), o);
  OpHooks<GemmArgs> h;
  ASSERT_TRUE(cuda_gemm_hooks(ctx.impl(), d, &h).is_ok());
  std::unique_ptr<Workload<GemmArgs>> wl;
  ASSERT_TRUE(h.make_workload(GemmArgs{d, {}}, o, &wl).is_ok());
  const std::size_t per_copy = wl->bytes_per_copy();  // A (1 MiB), B, C, bias and scales, each padded
  EXPECT_GE(wl->copies() * per_copy, 64u << 20);
  FakeDeviceMemory mem(8 << 20);  // half of it, less the 32 KiB reference, fits three copies
  ASSERT_TRUE(h.make_workload(GemmArgs{d, {}}, o, &wl).is_ok());
  EXPECT_EQ(wl->copies(), 3u) << per_copy << " bytes a copy";
}

TEST_F(GpuRuntime, TuningSizesFromUserDimensionsAreOverflowChecked) {
  // Three strided-batched fp64 operands of nearly 2^60 elements each pass validate() (each one is
  // addressable), but together they are nearly 3 * 2^63 bytes, which wraps size_t.
  GemmDesc big = GemmDesc::make(DataType::kF64, Transpose::kN, Transpose::kN, 2, 2, 2);
  big.op = GemmOp::kGemmStridedBatched;
  big.batch = 2;
  big.stride_a = big.stride_b = big.stride_c = (std::int64_t{1} << 60) - 1024;  // validate()'s largest, nearly
  ASSERT_TRUE(validate(big).is_ok()) << validate(big).to_string();
  Context ctx(Device::cuda(0), opts());
  OpHooks<GemmArgs> h;
  ASSERT_TRUE(cuda_gemm_hooks(ctx.impl(), big, &h).is_ok());
  std::unique_ptr<Workload<GemmArgs>> wl;
  Status st = h.make_workload(GemmArgs{big, {}}, opts(), &wl);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.to_string();
  EXPECT_NE(st.message().find("more bytes than memory can address"), std::string::npos) << st.message();
  // 2^58 elements an operand fit size_t but no GPU: refused by the estimate, nothing allocated.
  big.stride_a = big.stride_b = big.stride_c = std::int64_t{1} << 58;
  st = h.make_workload(GemmArgs{big, {}}, opts(), &wl);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.to_string();
  EXPECT_NE(st.message().find("not enough GPU memory to tune"), std::string::npos) << st.message();
}

// The fp64 reference of the tuning check put one grid row per 16 columns and one grid slice per
// batch, both capped at 65535 by CUDA: a batch past 65535 or over a million columns could not be
// checked, and such problems were never tuned (Default, with a warning). Both now tune, and the
// tuned result matches the host reference.
void expect_tuned_and_correct(const GemmDesc& g, Options o, std::mt19937& rng) {
  ASSERT_TRUE(validate(g).is_ok()) << validate(g).to_string();
  Context ctx(Device::cuda(0), o);
  std::string chosen;
  const Status st = tune_gemm(ctx, g, &chosen);
  ASSERT_TRUE(st.is_ok()) << params_signature(g) << ": " << st.to_string();
  bool recorded = false;
  for (const ResultRecord& r : ctx.results())
    recorded |= r.op_signature == op_signature(g) && r.params_signature == params_signature(g) && r.time_ms > 0;
  EXPECT_TRUE(recorded) << params_signature(g) << ": no tuned result (chose " << chosen << ")";
  EXPECT_EQ(ctx.stats().tuned, 1u);
  Problem p(g, rng);
  p.run_and_check(ctx, params_signature(g));
}

TEST_F(GpuRuntime, ReferenceCheckCoversColumnsPastTheGridLimit) {
  expect_tuned_and_correct(GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, 8, 1100000, 16), opts(),
                           rng);
}

TEST_F(GpuRuntime, ReferenceCheckCoversBatchesPastTheGridLimit) {
  GemmDesc deep = GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, 8, 8, 16);
  deep.op = GemmOp::kGemmStridedBatched;
  deep.batch = 70000;
  deep.stride_a = span(deep.lda, a_rows(deep), a_cols(deep));
  deep.stride_b = span(deep.ldb, b_rows(deep), b_cols(deep));
  deep.stride_c = span(deep.ldc, deep.m, deep.n);
  expect_tuned_and_correct(deep, opts(), rng);
}

// cuBLASLt's heuristic hands some algorithms back with SPLITK_NUM -1 (seen: algorithm 12 for the
// fp32 K = 1 products of HF's RoPE). The tuner timed and stored such a result, and the next process
// could not rebuild it from its name ("no longer applies"), so it ran Default. Stored, it must serve.
TEST_F(GpuRuntime, AHeuristicAlgorithmWithSplitKMinusOneRebuildsFromItsName) {
  std::string found;
  GemmDesc g;
  for (const GemmDesc& d : {GemmDesc::make(DataType::kF32, Transpose::kT, Transpose::kN, 128, 1, 1),
                            GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kN, 128, 64, 1),
                            GemmDesc::make(DataType::kF32, Transpose::kT, Transpose::kN, 64, 1, 1)}) {
    Context probe(Device::cuda(0), opts());
    std::vector<GemmCandidate> cands;
    ASSERT_TRUE(gemm_candidates(probe, d, &cands, "cublaslt_heuristic").is_ok());
    for (const GemmCandidate& c : cands)
      if (found.empty() && c.name.find("_k-1_") != std::string::npos) found = c.name, g = d;
  }
  if (found.empty()) GTEST_SKIP() << "cuBLASLt offered no algorithm with split-k -1 for these problems here";
  Options o = opts();
  o.tuning = false;
  o.filename = dir.file("km1.csv");
  o.verbose = 2;
  o.verbose_filename = dir.file("km1.log");
  Context ctx(Device::cuda(0), o);
  {
    std::ofstream f(ctx.results_path());  // the ordinal is inserted into the name
    for (const auto& [k, v] : ctx.validators()) f << "Validator," << k << "," << v << "\n";
    f << op_signature(g) << "," << params_signature(g) << "," << found << ",0.01\n";
  }
  Problem p(g, rng);
  p.run_and_check(ctx, found);
  const ContextStats st = ctx.stats();
  EXPECT_TRUE(st.hits == 1 && st.fallbacks == 0 && st.defaults == 0)
      << found << ": hits " << st.hits << ", fallbacks " << st.fallbacks << ", defaults " << st.defaults << "; log:\n"
      << test::slurp(dir.file("km10.log")) << "\nfile " << ctx.results_path()
      << ":\n" << test::slurp(ctx.results_path());
}

TEST_F(GpuRuntime, MixedFp8TypesAreTunedApartInOneContext) {
  // e4m3 x e4m3 and e4m3 x e5m2 with the same dims: two ops, two results (the op cache once keyed
  // them alike, so the second reused the first's op and its record).
  Context ctx(Device::cuda(0), opts());
  std::string sig[2];
  for (int i = 0; i < 2; ++i) {
    GemmDesc f = GemmDesc::make(DataType::kF8E4M3, Transpose::kT, Transpose::kN, 256, 16, 512);
    f.op = GemmOp::kScaledGemm;
    f.out_dtype = DataType::kBF16;
    if (i == 1) f.dtype_b = DataType::kF8E5M2;
    sig[i] = op_signature(f);
    Problem p(f, rng);
    p.run_and_check(ctx, sig[i]);
  }
  EXPECT_NE(sig[0], sig[1]);
  EXPECT_EQ(ctx.stats().tuned, 2u);
  std::set<std::string> ops;
  for (const auto& r : ctx.results()) ops.insert(r.op_signature);
  EXPECT_EQ(ops, (std::set<std::string>{sig[0], sig[1]}));
}

TEST_F(GpuRuntime, CallsRunOnTheContextsDeviceAndLeaveTheCurrentOne) {
  // A cuda:0 context called while cuda:1 is current: it tunes and runs on cuda:0, gives the same bits
  // as a call made with cuda:0 current, and leaves cuda:1 current.
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) GTEST_SKIP() << "needs two GPUs (one visible): another device cannot be current";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const std::size_t na = span(d.lda, a_rows(d), a_cols(d)), nb = span(d.ldb, b_rows(d), b_cols(d)),
                    nc = span(d.ldc, d.m, d.n);
  DeviceBuffer a, b, c0, c1;
  ASSERT_TRUE(a.allocate(na * 2).is_ok() && b.allocate(nb * 2).is_ok() && c0.allocate(nc * 2).is_ok() &&
              c1.allocate(nc * 2).is_ok());
  ASSERT_TRUE(fill_random(a.get(), d.dtype, na, 11, 1.0f, nullptr).is_ok());
  ASSERT_TRUE(fill_random(b.get(), d.dtype, nb, 12, 1.0f, nullptr).is_ok());
  Context ctx(Device::cuda(0), opts());
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  const Status st = gemm(ctx, d, GemmOperands{a.get(), b.get(), c1.get()});
  int now = -1;
  ASSERT_EQ(cudaGetDevice(&now), cudaSuccess);
  EXPECT_EQ(now, 1);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(ctx.stats().tuned, 1u);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_TRUE(gemm(ctx, d, GemmOperands{a.get(), b.get(), c0.get()}).is_ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<unsigned char> h0(nc * 2), h1(nc * 2);
  ASSERT_EQ(cudaMemcpy(h0.data(), c0.get(), h0.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(h1.data(), c1.get(), h1.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(h0 == h1) << "the call made with cuda:1 current gave other bits";
}

TEST_F(GpuRuntime, GraphCaptureNeverTunesAndRecordsMisses) {
  Options o = opts();
  o.record_untuned = true;
  o.untuned_filename = dir.file("untuned.csv");
  Context ctx(Device::cuda(0), o);
  // Buffers large enough for both problems below, holding random data.
  DeviceBuffer da, db, dc;
  for (DeviceBuffer* b : {&da, &db, &dc}) {
    ASSERT_TRUE(b->allocate(4 << 20).is_ok());
    ASSERT_TRUE(fill_random(b->get(), DataType::kBF16, 2 << 20, 99, 1.0f, nullptr).is_ok());
  }
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  GemmOperands ops{da.get(), db.get(), dc.get()};
  // A miss inside capture: Default, no tuning, recorded as untuned. A first GEMM on the stream
  // outside capture allocates its workspace.
  GemmDesc other = d;
  other.n = 24;
  ASSERT_TRUE(gemm(ctx, d, ops, reinterpret_cast<Stream>(s)).is_ok());  // tunes d
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  Status st1 = gemm(ctx, d, ops, reinterpret_cast<Stream>(s));
  Status st2 = gemm(ctx, other, ops, reinterpret_cast<Stream>(s));
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_TRUE(st1.is_ok()) << st1.to_string();
  ASSERT_TRUE(st2.is_ok()) << st2.to_string();
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(ctx.stats().tuned, 1u);
  EXPECT_NE(test::slurp(dir.file("untuned0.csv")).find(params_signature(other)), std::string::npos);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace tunable

namespace tunable {
namespace {

// Raw cuBLASLt FP8 probe: which combination of (scale pointers set before the heuristic query,
// original vs. rebuilt algorithm) runs. Prints the statuses; asserts only that one combination works.
TEST(GpuFp8Probe, RawCublasLt) {
  cublasLtHandle_t lt;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  const int m = 256, n = 32, k = 512;
  DeviceBuffer a, b, c, sc, ws;
  ASSERT_TRUE(a.allocate(m * k).is_ok());
  ASSERT_TRUE(b.allocate(n * k).is_ok());
  ASSERT_TRUE(c.allocate(m * n * 2).is_ok());
  ASSERT_TRUE(sc.allocate(512).is_ok());
  ASSERT_TRUE(ws.allocate(32 << 20).is_ok());
  std::vector<float> ones(128, 1.0f);
  ASSERT_EQ(cudaMemcpy(sc.get(), ones.data(), 512, cudaMemcpyHostToDevice), cudaSuccess);
  bool any = false;
  for (int scales_first = 0; scales_first < 2; ++scales_first)
    for (int b_offset : {4, 16, 256}) {
      const int c_type_bf16 = 1;
      cublasLtMatmulDesc_t op;
      cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
      cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T);
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &N, sizeof N);
      const void* sa = sc.get();
      const void* sb = sc.as<char>() + b_offset;
      if (scales_first) {
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
      }
      cublasLtMatrixLayout_t la, lb, lc, ld;
      cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k);
      cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, k);
      cublasLtMatrixLayoutCreate(&lc, c_type_bf16 ? CUDA_R_16BF : CUDA_R_32F, m, n, m);
      cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, m);
      cublasLtMatmulPreference_t pref;
      cublasLtMatmulPreferenceCreate(&pref);
      std::size_t wsz = 32 << 20;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof wsz);
      cublasLtMatmulHeuristicResult_t h[8];
      int got = 0;
      cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ld, pref, 8, h, &got);
      if (!scales_first) {
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
      }
      const float alpha = 1, beta = 0;
      cublasStatus_t rs = got > 0 ? cublasLtMatmul(lt, op, &alpha, a.get(), la, b.get(), lb, &beta, c.get(), lc,
                                                   c.get(), ld, &h[0].algo, ws.get(), wsz, nullptr)
                                  : CUBLAS_STATUS_NOT_SUPPORTED;
      cudaError_t ce = cudaDeviceSynchronize();
      std::printf("fp8 probe: b_offset=%d scales_first=%d C=%s heuristic=%s (%d) run=%s cuda=%s\n", b_offset, scales_first,
                  c_type_bf16 ? "bf16" : "fp32", cublasGetStatusName(hs), got, cublasGetStatusName(rs),
                  cudaGetErrorName(ce));
      (void)c_type_bf16;
      any |= rs == CUBLAS_STATUS_SUCCESS;
      cublasLtMatmulPreferenceDestroy(pref);
      for (auto l : {la, lb, lc, ld}) cublasLtMatrixLayoutDestroy(l);
      cublasLtMatmulDescDestroy(op);
    }
  EXPECT_TRUE(any);
  cublasLtDestroy(lt);
}

}  // namespace
}  // namespace tunable
