// The cuBLAS interposer from the program's side: this binary is a "user program" that links cuBLAS
// and not libtunable, and re-executes itself under LD_PRELOAD=libtunable_preload.so in tune mode
// (TUNABLE_ENABLED=1, TUNABLE_TUNING=1) with a scratch results file. It calls cuBLAS as PyTorch
// does and checks: served calls against an fp64 host reference, forwarded calls bitwise against the
// real cuBLAS (reached past the shim), capture and replay in a CUDA graph (replays never reach the
// interposer), two threads on two handles and streams, and a corrupt results file (the program runs
// on, the file is kept).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "interpose/preload_abi.h"

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x
#define CUBLAS_OK(x) ASSERT_EQ((x), CUBLAS_STATUS_SUCCESS) << #x

namespace {

std::string self_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string p(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  return p.substr(0, p.find_last_of('/'));
}
// build/tests/<this> -> build/
std::string build_dir() { return self_dir() + "/.."; }

std::string scratch() { return std::getenv("TUNABLE_INTERPOSE_TEST_DIR"); }

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The interposer's totals (served, unmapped, no result, captured before a context, failed), from
// the libtunable.so the shim opened.
struct Counts {
  std::uint64_t v[TUNABLE_PRELOAD_OUTCOMES] = {};
  std::uint64_t served() const { return v[0]; }
  std::uint64_t unmapped() const { return v[1]; }
  std::uint64_t no_result() const { return v[2]; }
  std::uint64_t failed() const { return v[4]; }
  std::uint64_t total() const {
    std::uint64_t t = 0;
    for (auto x : v) t += x;
    return t;
  }
};
Counts counts() {
  Counts c;
  void* h = dlopen((build_dir() + "/libtunable.so").c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return c;  // not opened yet: no GEMM reached the interposer
  auto fn = reinterpret_cast<tunable_preload_counts_fn>(dlsym(h, "tunable_preload_counts"));
  if (fn) fn(c.v, TUNABLE_PRELOAD_OUTCOMES);
  dlclose(h);
  return c;
}

// The real cublasGemmEx, past the shim (which comes first in the lookup order).
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                    const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
GemmExFn real_gemm_ex() {
  void* h = dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) h = dlopen("libcublas.so.12", RTLD_NOW | RTLD_NOLOAD);
  return h ? reinterpret_cast<GemmExFn>(dlsym(h, "cublasGemmEx")) : nullptr;
}

std::size_t elem_size(cudaDataType t) {
  switch (t) {
    case CUDA_R_64F: return 8;
    case CUDA_R_32F: return 4;
    default: return 2;
  }
}
double to_double(cudaDataType t, const unsigned char* p) {
  switch (t) {
    case CUDA_R_32F: { float f; std::memcpy(&f, p, 4); return f; }
    case CUDA_R_16F: { __half h; std::memcpy(&h, p, 2); return static_cast<double>(__half2float(h)); }
    default: { __nv_bfloat16 h; std::memcpy(&h, p, 2); return static_cast<double>(__bfloat162float(h)); }
  }
}
void from_double(cudaDataType t, unsigned char* p, double v) {
  switch (t) {
    case CUDA_R_32F: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
    case CUDA_R_16F: { const __half h = __float2half(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    default: { const __nv_bfloat16 h = __float2bfloat16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
  }
}

/// A column-major matrix in host and device memory; values uniform in [-1, 1], exactly representable.
struct Mat {
  cudaDataType type = CUDA_R_32F;
  std::size_t elems = 0;
  std::vector<unsigned char> host;
  void* dev = nullptr;
  Mat(cudaDataType t, std::size_t n, std::mt19937& rng) : type(t), elems(n), host(n * elem_size(t)) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (std::size_t i = 0; i < n; ++i) from_double(t, host.data() + i * elem_size(t), u(rng));
    if (cudaMalloc(&dev, host.size()) == cudaSuccess) upload();
  }
  ~Mat() { (void)cudaFree(dev); }
  Mat(const Mat&) = delete;
  /// The host values to the device, complete before it returns: a copy from pageable memory may
  /// still be in flight when cudaMemcpy returns, and the GEMMs run on non-blocking streams.
  void upload() {
    (void)cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice);
    (void)cudaDeviceSynchronize();
  }
  double at(std::size_t i) const { return to_double(type, host.data() + i * elem_size(type)); }
  /// Fills the device copy with NaN bytes so that an output nobody wrote cannot pass. Complete before
  /// it returns: the GEMMs run on non-blocking streams, which the legacy stream's memset does not order.
  void poison() {
    (void)cudaMemset(dev, 0xFF, host.size());
    (void)cudaDeviceSynchronize();
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> out(host.size());
    (void)cudaMemcpy(out.data(), dev, out.size(), cudaMemcpyDeviceToHost);
    return out;
  }
};

struct Shape {
  cublasOperation_t ta, tb;
  int m, n, k;
  int batch = 1;
};
int rows_a(const Shape& s) { return s.ta == CUBLAS_OP_N ? s.m : s.k; }
int cols_a(const Shape& s) { return s.ta == CUBLAS_OP_N ? s.k : s.m; }
int rows_b(const Shape& s) { return s.tb == CUBLAS_OP_N ? s.k : s.n; }
int cols_b(const Shape& s) { return s.tb == CUBLAS_OP_N ? s.n : s.k; }

/// fp64 reference of alpha * op(A) op(B) + beta * C0 per batch entry (tight strides).
std::vector<double> reference(const Shape& s, const Mat& a, const Mat& b, const Mat& c0, double alpha, double beta) {
  const std::size_t sa = static_cast<std::size_t>(rows_a(s)) * cols_a(s), sb = static_cast<std::size_t>(rows_b(s)) * cols_b(s),
                    sc = static_cast<std::size_t>(s.m) * s.n;
  std::vector<double> out(sc * s.batch);
  for (int bt = 0; bt < s.batch; ++bt)
    for (int j = 0; j < s.n; ++j)
      for (int i = 0; i < s.m; ++i) {
        double acc = 0;
        for (int p = 0; p < s.k; ++p) {
          const double x = s.ta == CUBLAS_OP_N ? a.at(bt * sa + i + static_cast<std::size_t>(p) * rows_a(s))
                                               : a.at(bt * sa + p + static_cast<std::size_t>(i) * rows_a(s));
          const double y = s.tb == CUBLAS_OP_N ? b.at(bt * sb + p + static_cast<std::size_t>(j) * rows_b(s))
                                               : b.at(bt * sb + j + static_cast<std::size_t>(p) * rows_b(s));
          acc += x * y;
        }
        const std::size_t e = bt * sc + i + static_cast<std::size_t>(j) * s.m;
        out[e] = alpha * acc + beta * c0.at(e);
      }
  return out;
}

/// Every element within the output type's rounding of a k-term sum of [-1, 1] products: 16-bit
/// outputs get 2^-7 of the magnitude (bf16's half ulp is 2^-9) plus an accumulation allowance.
void expect_close(const Shape& s, cudaDataType t, const std::vector<unsigned char>& got, const std::vector<double>& ref,
                  const std::string& what) {
  const double rel = t == CUDA_R_32F ? 1e-5 : t == CUDA_R_16F ? 2e-3 : 8e-3;
  const double abs = rel * std::sqrt(static_cast<double>(s.k));
  std::size_t bad = 0, first = 0;
  for (std::size_t e = 0; e < ref.size(); ++e) {
    const double g = to_double(t, got.data() + e * elem_size(t));
    if (!(std::fabs(g - ref[e]) <= abs + rel * std::fabs(ref[e]))) {
      if (bad++ == 0) first = e;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << ref.size() << " elements off, first at " << first << ": got "
                     << to_double(t, got.data() + first * elem_size(t)) << ", want " << ref[first];
}

struct Handle {
  cublasHandle_t h = nullptr;
  cudaStream_t s = nullptr;
  Handle() {
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) h = nullptr;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) s = nullptr;
    if (h && s) (void)cublasSetStream(h, s);
  }
  ~Handle() {
    if (h) (void)cublasDestroy(h);
    if (s) (void)cudaStreamDestroy(s);
  }
};

/// One cublasGemmEx call as F.linear makes it (or with other types), checked against the reference.
/// Returns through `served` whether the interposer served it (from its counters).
void gemm_ex_checked(Handle& hd, const Shape& s, cudaDataType in, cudaDataType out, cublasComputeType_t compute,
                     std::mt19937& rng, bool* served = nullptr, std::vector<unsigned char>* result = nullptr) {
  Mat a(in, static_cast<std::size_t>(rows_a(s)) * cols_a(s), rng), b(in, static_cast<std::size_t>(rows_b(s)) * cols_b(s), rng),
      c(out, static_cast<std::size_t>(s.m) * s.n, rng);
  const float alpha = 1.0f, beta = 0.0f;
  c.poison();
  const Counts before = counts();
  CUBLAS_OK(cublasGemmEx(hd.h, s.ta, s.tb, s.m, s.n, s.k, &alpha, a.dev, in, rows_a(s), b.dev, in, rows_b(s), &beta,
                         c.dev, out, s.m, compute, CUBLAS_GEMM_DEFAULT));
  CUDA_OK(cudaStreamSynchronize(hd.s));
  const Counts after = counts();
  EXPECT_EQ(after.total(), before.total() + 1) << "the call did not reach the interposer";
  EXPECT_EQ(after.failed(), before.failed());
  const bool was_served = after.served() > before.served();
  if (served) *served = was_served;
  const std::vector<unsigned char> got = c.download();
  expect_close(s, out, got, reference(s, a, b, c, 1.0, 0.0), "cublasGemmEx");
  if (result) *result = got;
  // The same call on the real cuBLAS: a forwarded call must be bitwise identical to it.
  if (!was_served) {
    GemmExFn real = real_gemm_ex();
    ASSERT_NE(real, nullptr);
    c.poison();
    CUBLAS_OK(real(hd.h, s.ta, s.tb, s.m, s.n, s.k, &alpha, a.dev, in, rows_a(s), b.dev, in, rows_b(s), &beta, c.dev,
                   out, s.m, compute, CUBLAS_GEMM_DEFAULT));
    CUDA_OK(cudaStreamSynchronize(hd.s));
    EXPECT_TRUE(c.download() == got) << "a forwarded call differs from the real cuBLAS";
  }
}

TEST(Interpose, IsPreloaded) {
  // The shim's definition comes first: cublasGemmEx here resolves into libtunable_preload.so.
  Dl_info info{};
  ASSERT_NE(dladdr(dlsym(RTLD_DEFAULT, "cublasGemmEx"), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libtunable_preload.so"), std::string::npos) << info.dli_fname;
}

TEST(Interpose, LinearShapedCallsAreServedOrForwardedBitwise) {
  // F.linear(x[M, K], W[N, K]) without bias: transa = T, transb = N, m = N, n = M (tokens), k = K.
  std::mt19937 rng(11);
  Handle hd;
  ASSERT_TRUE(hd.h && hd.s);
  int served_any = 0;
  for (const Shape& s : {Shape{CUBLAS_OP_T, CUBLAS_OP_N, 4096, 1, 4096}, Shape{CUBLAS_OP_T, CUBLAS_OP_N, 2048, 8, 2048},
                         Shape{CUBLAS_OP_T, CUBLAS_OP_N, 6144, 16, 1024}, Shape{CUBLAS_OP_T, CUBLAS_OP_N, 1024, 4, 8192}}) {
    for (cudaDataType t : {CUDA_R_16BF, CUDA_R_16F}) {
      SCOPED_TRACE(testing::Message() << "m " << s.m << " n " << s.n << " k " << s.k << " type " << t);
      bool first = false, second = false;
      ASSERT_NO_FATAL_FAILURE(gemm_ex_checked(hd, s, t, t, CUBLAS_COMPUTE_32F, rng, &first));  // tunes it
      ASSERT_NO_FATAL_FAILURE(gemm_ex_checked(hd, s, t, t, CUBLAS_COMPUTE_32F, rng, &second));
      EXPECT_EQ(first, second) << "the tuned choice changed between calls";
      served_any += second;
    }
  }
  // Skinny decode problems are where tuning beats cuBLAS's default (docs/skinny-gemm.md): a tuned
  // choice other than Default, served by the interposer, must come out of at least one of them.
  EXPECT_GT(served_any, 0) << "every problem chose Default: nothing was served";
  const std::string results = slurp(scratch() + "/results0.csv");
  EXPECT_NE(results.find("GemmTunableOp_BFloat16_TN,tn_4096_1_4096_ld_4096_4096_4096,"), std::string::npos) << results;
}

TEST(Interpose, CallsWeDoNotServeGoToCublasUnchanged) {
  std::mt19937 rng(12);
  Handle hd;
  ASSERT_TRUE(hd.h && hd.s);
  const Shape s{CUBLAS_OP_T, CUBLAS_OP_N, 512, 8, 512};
  // fp16 inputs into an fp32 C: ours write the input type, so this is cuBLAS's to run.
  const Counts before = counts();
  bool served = true;
  ASSERT_NO_FATAL_FAILURE(gemm_ex_checked(hd, s, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, rng, &served));
  EXPECT_FALSE(served);
  EXPECT_EQ(counts().unmapped(), before.unmapped() + 1);
  // Device-pointer alpha and beta: reading them would synchronize, so the call is forwarded.
  Mat a(CUDA_R_16BF, 512 * 512, rng), b(CUDA_R_16BF, 512 * 8, rng), c(CUDA_R_16BF, 512 * 8, rng);
  float* scalars = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&scalars), 8));
  const float host_scalars[2] = {1.0f, 0.0f};
  CUDA_OK(cudaMemcpy(scalars, host_scalars, 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());  // the copy may still be in flight; the GEMM runs on another stream
  CUBLAS_OK(cublasSetPointerMode(hd.h, CUBLAS_POINTER_MODE_DEVICE));
  c.poison();
  const Counts mid = counts();
  CUBLAS_OK(cublasGemmEx(hd.h, s.ta, s.tb, s.m, s.n, s.k, scalars, a.dev, CUDA_R_16BF, 512, b.dev, CUDA_R_16BF, 512,
                         scalars + 1, c.dev, CUDA_R_16BF, 512, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CUDA_OK(cudaStreamSynchronize(hd.s));
  EXPECT_EQ(counts().unmapped(), mid.unmapped() + 1);
  const std::vector<unsigned char> via_shim = c.download();
  c.poison();
  CUBLAS_OK(real_gemm_ex()(hd.h, s.ta, s.tb, s.m, s.n, s.k, scalars, a.dev, CUDA_R_16BF, 512, b.dev, CUDA_R_16BF, 512,
                           scalars + 1, c.dev, CUDA_R_16BF, 512, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CUDA_OK(cudaStreamSynchronize(hd.s));
  EXPECT_TRUE(c.download() == via_shim);
  expect_close(s, CUDA_R_16BF, via_shim, reference(s, a, b, c, 1.0, 0.0), "device-pointer scalars");
  CUBLAS_OK(cublasSetPointerMode(hd.h, CUBLAS_POINTER_MODE_HOST));
  CUDA_OK(cudaFree(scalars));
}

TEST(Interpose, EveryEntryPointComputesItsGemm) {
  std::mt19937 rng(13);
  Handle hd;
  ASSERT_TRUE(hd.h && hd.s);
  const float alpha = 1.0f, beta = 0.5f;  // beta != 0: C's old values count
  const __half halpha = __float2half(1.0f), hbeta = __float2half(0.5f);
  const Shape s{CUBLAS_OP_N, CUBLAS_OP_T, 192, 24, 320};
  const Shape sb{CUBLAS_OP_T, CUBLAS_OP_N, 64, 8, 256, 3};
  auto run = [&](const char* what, cudaDataType t, const Shape& sh, auto&& call) {
    SCOPED_TRACE(what);
    Mat a(t, static_cast<std::size_t>(rows_a(sh)) * cols_a(sh) * sh.batch, rng),
        b(t, static_cast<std::size_t>(rows_b(sh)) * cols_b(sh) * sh.batch, rng),
        c(t, static_cast<std::size_t>(sh.m) * sh.n * sh.batch, rng);
    for (int rep = 0; rep < 2; ++rep) {  // the first call tunes, the second is served or forwarded
      c.upload();
      const Counts before = counts();
      CUBLAS_OK(call(a, b, c));
      CUDA_OK(cudaStreamSynchronize(hd.s));
      const Counts after = counts();
      EXPECT_EQ(after.total(), before.total() + 1);
      EXPECT_EQ(after.unmapped(), before.unmapped()) << "a call we serve was not mapped";
      EXPECT_EQ(after.failed(), before.failed());
      expect_close(sh, t, c.download(), reference(sh, a, b, c, 1.0, 0.5), what);
    }
  };
  run("cublasSgemm", CUDA_R_32F, s, [&](Mat& a, Mat& b, Mat& c) {
    return cublasSgemm(hd.h, s.ta, s.tb, s.m, s.n, s.k, &alpha, static_cast<float*>(a.dev), rows_a(s),
                       static_cast<float*>(b.dev), rows_b(s), &beta, static_cast<float*>(c.dev), s.m);
  });
  run("cublasHgemm", CUDA_R_16F, s, [&](Mat& a, Mat& b, Mat& c) {
    return cublasHgemm(hd.h, s.ta, s.tb, s.m, s.n, s.k, &halpha, static_cast<__half*>(a.dev), rows_a(s),
                       static_cast<__half*>(b.dev), rows_b(s), &hbeta, static_cast<__half*>(c.dev), s.m);
  });
  const long long sa = static_cast<long long>(rows_a(sb)) * cols_a(sb), sbb = static_cast<long long>(rows_b(sb)) * cols_b(sb),
                  sc = static_cast<long long>(sb.m) * sb.n;
  run("cublasGemmStridedBatchedEx", CUDA_R_16BF, sb, [&](Mat& a, Mat& b, Mat& c) {
    return cublasGemmStridedBatchedEx(hd.h, sb.ta, sb.tb, sb.m, sb.n, sb.k, &alpha, a.dev, CUDA_R_16BF, rows_a(sb), sa,
                                      b.dev, CUDA_R_16BF, rows_b(sb), sbb, &beta, c.dev, CUDA_R_16BF, sb.m, sc,
                                      sb.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
  run("cublasSgemmStridedBatched", CUDA_R_32F, sb, [&](Mat& a, Mat& b, Mat& c) {
    return cublasSgemmStridedBatched(hd.h, sb.ta, sb.tb, sb.m, sb.n, sb.k, &alpha, static_cast<float*>(a.dev),
                                     rows_a(sb), sa, static_cast<float*>(b.dev), rows_b(sb), sbb, &beta,
                                     static_cast<float*>(c.dev), sb.m, sc, sb.batch);
  });
  run("cublasHgemmStridedBatched", CUDA_R_16F, sb, [&](Mat& a, Mat& b, Mat& c) {
    return cublasHgemmStridedBatched(hd.h, sb.ta, sb.tb, sb.m, sb.n, sb.k, &halpha, static_cast<__half*>(a.dev),
                                     rows_a(sb), sa, static_cast<__half*>(b.dev), rows_b(sb), sbb, &hbeta,
                                     static_cast<__half*>(c.dev), sb.m, sc, sb.batch);
  });
}

TEST(Interpose, CaptureAndReplayNeverReachTheInterposer) {
  std::mt19937 rng(14);
  Handle hd;
  ASSERT_TRUE(hd.h && hd.s);
  const Shape tuned{CUBLAS_OP_T, CUBLAS_OP_N, 4096, 2, 2048}, fresh{CUBLAS_OP_T, CUBLAS_OP_N, 3072, 3, 1024};
  const cudaDataType t = CUDA_R_16BF;
  ASSERT_NO_FATAL_FAILURE(gemm_ex_checked(hd, tuned, t, t, CUBLAS_COMPUTE_32F, rng));  // tuned outside the capture
  Mat a1(t, 4096ull * 2048, rng), b1(t, 2048ull * 2, rng), c1(t, 4096ull * 2, rng);
  Mat a2(t, 3072ull * 1024, rng), b2(t, 1024ull * 3, rng), c2(t, 3072ull * 3, rng);
  const float alpha = 1.0f, beta = 0.0f;
  // Global capture mode, as PyTorch captures: anything unsafe from any thread would invalidate it.
  CUDA_OK(cudaStreamBeginCapture(hd.s, cudaStreamCaptureModeGlobal));
  const Counts in_capture = counts();
  const cublasStatus_t s1 = cublasGemmEx(hd.h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 2, 2048, &alpha, a1.dev, t, 2048,
                                         b1.dev, t, 2048, &beta, c1.dev, t, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  const cublasStatus_t s2 = cublasGemmEx(hd.h, CUBLAS_OP_T, CUBLAS_OP_N, 3072, 3, 1024, &alpha, a2.dev, t, 1024,
                                         b2.dev, t, 1024, &beta, c2.dev, t, 3072, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamEndCapture(hd.s, &graph));
  CUBLAS_OK(s1);
  CUBLAS_OK(s2);
  const Counts captured = counts();
  EXPECT_EQ(captured.total(), in_capture.total() + 2);
  EXPECT_EQ(captured.failed(), in_capture.failed());
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    c1.poison();
    c2.poison();
    CUDA_OK(cudaGraphLaunch(exec, hd.s));
    CUDA_OK(cudaStreamSynchronize(hd.s));
    expect_close(tuned, t, c1.download(), reference(tuned, a1, b1, c1, 1, 0), "replayed tuned problem");
    expect_close(fresh, t, c2.download(), reference(fresh, a2, b2, c2, 1, 0), "replayed untuned problem");
  }
  EXPECT_EQ(counts().total(), captured.total()) << "a replay reached the interposer";
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
}

TEST(Interpose, TwoThreadsOnTwoHandlesAndStreams) {
  const Counts before = counts();
  auto worker = [](int seed, int m, bool* ok) {
    std::mt19937 rng(seed);
    Handle hd;
    const Shape s{CUBLAS_OP_T, CUBLAS_OP_N, m, 4, 1024};
    const cudaDataType t = CUDA_R_16BF;
    Mat a(t, static_cast<std::size_t>(m) * 1024, rng), b(t, 1024 * 4, rng), c(t, static_cast<std::size_t>(m) * 4, rng);
    const std::vector<double> ref = reference(s, a, b, c, 1, 0);
    const float alpha = 1.0f, beta = 0.0f;
    *ok = hd.h && hd.s;
    for (int i = 0; i < 40 && *ok; ++i) {
      c.poison();
      *ok = cublasGemmEx(hd.h, s.ta, s.tb, m, 4, 1024, &alpha, a.dev, t, 1024, b.dev, t, 1024, &beta, c.dev, t, m,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS &&
            cudaStreamSynchronize(hd.s) == cudaSuccess;
      const std::vector<unsigned char> got = c.download();
      for (std::size_t e = 0; e < ref.size() && *ok; ++e)
        *ok = std::fabs(to_double(t, got.data() + 2 * e) - ref[e]) <= 8e-3 * (32 + std::fabs(ref[e]));
    }
  };
  bool ok1 = false, ok2 = false;
  std::thread t1(worker, 21, 2048, &ok1), t2(worker, 22, 1536, &ok2);
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1);
  EXPECT_TRUE(ok2);
  const Counts after = counts();
  EXPECT_EQ(after.total(), before.total() + 80);
  EXPECT_EQ(after.failed(), before.failed());
}

// Runs in a child process (below) whose results file is corrupt.
TEST(InterposeChild, DISABLED_RunsOnACorruptResultsFile) {
  std::mt19937 rng(15);
  Handle hd;
  ASSERT_TRUE(hd.h && hd.s);
  for (int i = 0; i < 2; ++i)
    ASSERT_NO_FATAL_FAILURE(
        gemm_ex_checked(hd, Shape{CUBLAS_OP_T, CUBLAS_OP_N, 1024, 2, 1024}, CUDA_R_16BF, CUDA_R_16BF,
                        CUBLAS_COMPUTE_32F, rng));
}

TEST(Interpose, ACorruptResultsFileLeavesTheProgramRunningAndIsKept) {
  const std::string dir = scratch() + "/corrupt";
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/r0.csv";
  const std::string garbage = "Validator,TUNABLE_VERSION\nnot,a,results\n\x01\x02 torn line without newline";
  { std::ofstream(file) << garbage; }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("TUNABLE_FILENAME", (dir + "/r.csv").c_str(), 1);
    execl("/proc/self/exe", "interpose_child", "--gtest_also_run_disabled_tests",
          "--gtest_filter=InterposeChild.DISABLED_RunsOnACorruptResultsFile", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the program died (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the program's GEMMs failed on a corrupt results file";
  // The corrupt file is kept: in place, or moved aside with its bytes intact.
  bool kept = slurp(file) == garbage;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    kept |= e.path().filename().string().rfind("r0.csv.", 0) == 0 && slurp(e.path().string()) == garbage;
  EXPECT_TRUE(kept) << "the corrupt results file was lost";
}

}  // namespace

// Called by gpu_main.cpp before anything else: re-executes this binary under the preload library
// in tune mode with a scratch results file (once: the child sees TUNABLE_INTERPOSE_TEST_DIR).
extern "C" void tunable_gpu_main_prepare(int argc, char** argv) {
  (void)argc;
  if (std::getenv("TUNABLE_INTERPOSE_TEST_DIR")) return;
  char tmpl[] = "/tmp/tunable_interpose_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::perror("tunable interpose test: mkdtemp");
    std::exit(1);
  }
  const std::string dir = tmpl, build = build_dir();
  setenv("TUNABLE_INTERPOSE_TEST_DIR", dir.c_str(), 1);
  setenv("LD_PRELOAD", (build + "/libtunable_preload.so").c_str(), 1);
  setenv("TUNABLE_ENABLED", "1", 1);
  setenv("TUNABLE_TUNING", "1", 1);
  setenv("TUNABLE_FILENAME", (dir + "/results.csv").c_str(), 1);
  setenv("TUNABLE_MAX_TUNING_DURATION_MS", "5", 1);
  setenv("TUNABLE_MAX_WARMUP_DURATION_MS", "1", 1);
  setenv("TUNABLE_CUBLASLT_EXHAUSTIVE", "8", 1);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("tunable interpose test: fork");
    std::exit(1);
  }
  if (pid == 0) {
    execv("/proc/self/exe", argv);
    std::perror("tunable interpose test: exec");
    std::_Exit(1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // the directory mkdtemp made here, and only it
  std::exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
