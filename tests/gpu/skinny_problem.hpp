// Shared by the skinny GPU tests: one GEMM problem on the device with random inputs, its fp64 host
// reference, and the check of one candidate's run against it (the tolerances are the tests' own).
//
// Inputs are random bit patterns of the element type (a few zeros and subnormals, the rest
// normals of magnitude 2^-4..2), so the reference sees exactly what the GPU sees; fp8 cases use
// the same e4m3 bytes on both sides. Padding of A and B past k holds NaN (a read past k shows),
// C is poisoned with NaN before every run when beta == 0 (C must not be read) and its padding
// rows past m must come back untouched, and the split-K workspace is filled with NaN (it must not
// need zeroing). Every problem's inputs come from a seed that failures print
// (TUNABLE_SKINNY_SEED=<base> replays them).
#pragma once

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_util.hpp"
#include "gemm/cuda/skinny_provider.hpp"
#include "gemm/cuda/skinny_state.hpp"

namespace tunable::skinny_test {

// ---- element formats on the host ---------------------------------------------------------------

struct Format {
  int bytes, ebits, mbits;
  bool e4m3;  ///< no infinities; only S.1111.111 is NaN
  int bias() const { return (1 << (ebits - 1)) - 1; }
};

inline Format format_of(DataType t) {
  switch (t) {
    case DataType::kBF16:
      return {2, 8, 7, false};
    case DataType::kF16:
      return {2, 5, 10, false};
    case DataType::kF8E4M3:
      return {1, 4, 3, true};
    default:
      return {4, 8, 23, false};
  }
}

inline std::uint32_t nan_bits(DataType t) {
  switch (t) {
    case DataType::kBF16:
      return 0x7fc0u;
    case DataType::kF16:
      return 0x7e00u;
    case DataType::kF8E4M3:
      return 0x7fu;
    default:
      return 0x7fc00000u;
  }
}

inline double decode(const Format& f, std::uint32_t bits) {
  const std::uint32_t sign = (bits >> (f.ebits + f.mbits)) & 1u;
  const int e = static_cast<int>((bits >> f.mbits) & ((1u << f.ebits) - 1));
  const std::uint32_t m = bits & ((1u << f.mbits) - 1);
  const int emax = (1 << f.ebits) - 1;
  if (f.e4m3 ? (e == emax && m == (1u << f.mbits) - 1) : e == emax)
    return (f.e4m3 || m != 0) ? std::nan("") : (sign ? -INFINITY : INFINITY);
  const double v =
      e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias() - f.mbits)
             : std::ldexp(static_cast<double>(m + (1u << f.mbits)), e - f.bias() - f.mbits);
  return sign ? -v : v;
}

/// A random value's bits: 1/64 zeros, 1/64 subnormals, else normals in [2^lo, 2^(hi+1)).
inline std::uint32_t random_bits(const Format& f, std::mt19937_64& rng, int lo, int hi) {
  const std::uint32_t sign = static_cast<std::uint32_t>(rng() & 1u) << (f.ebits + f.mbits);
  const std::uint32_t m = static_cast<std::uint32_t>(rng()) & ((1u << f.mbits) - 1);
  const unsigned r = static_cast<unsigned>(rng() % 64);
  if (r == 0) return sign;
  if (r == 1) return sign | (m == 0 ? 1u : m);
  const int e = f.bias() + lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1));
  return sign | (static_cast<std::uint32_t>(e) << f.mbits) | m;
}

/// Host image of a device array of one element type.
struct HostArray {
  DataType type;
  std::vector<std::uint8_t> raw;
  HostArray(DataType t, std::size_t n) : type(t), raw(n * format_of(t).bytes, 0) {}
  std::size_t size() const { return raw.size() / format_of(type).bytes; }
  std::uint32_t get(std::size_t i) const {
    std::uint32_t v = 0;
    std::memcpy(&v, raw.data() + i * format_of(type).bytes, format_of(type).bytes);
    return v;
  }
  void set(std::size_t i, std::uint32_t v) {
    std::memcpy(raw.data() + i * format_of(type).bytes, &v, format_of(type).bytes);
  }
  double value(std::size_t i) const { return decode(format_of(type), get(i)); }
};

// ---- cases, seeds, tolerances -------------------------------------------------------------------

struct Case {
  DataType in = DataType::kBF16;
  DataType out = DataType::kBF16;
  GemmOp op = GemmOp::kGemm;
  Epilogue ep = Epilogue::kNone;
  std::int64_t rows = 256;  ///< desc.m: weight rows (N of the linear layer)
  std::int64_t tokens = 1;  ///< desc.n: tokens (M of the linear layer)
  std::int64_t k = 512;
  std::int64_t lda_pad = 0, ldb_pad = 0, ldc_pad = 0;
  double alpha = 1.0, beta = 0.0;
  float scale_a = 1.f, scale_b = 1.f;
  /// Every variant must refuse (k or a leading dimension off the vector width).
  bool rejected = false;
  /// The weight-only problem: `in` (e4m3) weights with a random scale per row in [0.5, 2), tokens of
  /// the output's type, ScaleMode::kRowwise without scale_b (scale_a, scale_b above unused).
  bool weight_only = false;
  /// With weight_only: ScaleMode::kRowwiseRms, each token's result also divided by its RMS.
  bool rms = false;
  double rms_eps = 1e-5;

  DataType in_b() const { return weight_only ? out : in; }

  std::string name() const {
    std::string s =
        fmt::format("{}_{}_N{}_M{}_K{}", short_name(in), short_name(out), rows, tokens, k);
    if (lda_pad || ldb_pad || ldc_pad) s += fmt::format("_pad{}x{}x{}", lda_pad, ldb_pad, ldc_pad);
    if (alpha != 1.0) s += "_alpha";
    if (beta != 0.0) s += "_beta";
    if (ep == Epilogue::kBias) s += "_bias";
    if (ep == Epilogue::kBiasRelu) s += "_relu";
    if (ep == Epilogue::kBiasGelu) s += "_gelu";
    if (weight_only) s += "_wo";
    if (rms) s += "_rms";
    if (rejected) s += "_rejected";
    return s;
  }
};

/// The base of every problem's seed: TUNABLE_SKINNY_SEED (decimal or 0x hex) when set, so a
/// failure printed with its seed can be replayed.
inline std::uint64_t base_seed() {
  const char* env = std::getenv("TUNABLE_SKINNY_SEED");
  return env != nullptr && *env != '\0' ? std::strtoull(env, nullptr, 0) : 0x5eed0000ull;
}

/// The seed of the problem named `name`: the base and the name's FNV-1a hash (the same on every
/// toolchain, unlike std::hash).
inline std::uint64_t case_seed(const std::string& name) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ull;
  return base_seed() ^ h;
}

/// Tolerance of the output type: |got - ref| <= atol * rms(ref) + rtol * |ref|. Inputs are exact
/// in both computations, so the error is the output rounding plus the accumulation's. For bf16 and
/// fp16 inputs the accumulation is fp32; fp8 products are added at reduced precision inside the
/// Hopper tensor core (kernels/gemv/skinny_wgmma.cuh), which on an fp16 output was measured at up to
/// 1.17x the fp16 rounding bound (one element of 40 x 129, K = 2048), so fp8 into fp16 gets twice
/// the fp16 absolute term: still 30x tighter than the library's fp8 tolerance.
inline void tolerance_of(DataType in, DataType out, double* atol, double* rtol) {
  switch (out) {
    case DataType::kBF16:
      *atol = 2e-3, *rtol = 1.0 / 256;
      return;
    case DataType::kF16:
      *atol = in == DataType::kF8E4M3 || in == DataType::kF8E5M2 ? 1e-3 : 5e-4, *rtol = 1.0 / 1024;
      return;
    default:
      *atol = 1e-5, *rtol = 1e-5;
      return;
  }
}

inline double activation(Epilogue e, double v) {
  if (e == Epilogue::kBiasRelu) return v > 0 ? v : 0;
  if (e == Epilogue::kBiasGelu)
    return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  return v;
}

/// Compute capability of the current device, major * 10 + minor (0 when it cannot be read).
inline int current_cc() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
    return 0;
  return major * 10 + minor;
}

/// The provider the tests run, launching with one SkinnyState of the current device kept for the
/// process (as a context keeps its own).
inline std::shared_ptr<const Provider<GemmArgs>> test_provider() {
  static SkinnyState state([] {
    int dev = 0;
    (void)cudaGetDevice(&dev);
    return dev;
  }());
  static const auto provider = skinny_gemm_provider(&state);
  return provider;
}

// ---- one problem on the device
// --------------------------------------------------------------------

/// Case `c` on the device: host inputs from `seed`, the fp64 reference, device copies, and runs of
/// candidates checked against the reference.
class SkinnyProblem {
 public:
  SkinnyProblem(const Case& c, std::uint64_t seed)
      : c_(c), seed_(seed), a_(c.in, 0), b_(c.in_b(), 0), bias_(c.out, 0), c0_(c.out, 0) {
    GemmDesc& d = d_;
    d = GemmDesc::make(c.in, Transpose::kT, Transpose::kN, c.rows, c.tokens, c.k);
    d.op = c.op;
    d.out_dtype = c.out;
    d.epilogue = c.ep;
    d.lda = c.k + c.lda_pad;
    d.ldb = c.k + c.ldb_pad;
    d.ldc = c.rows + c.ldc_pad;
    d.alpha = c.alpha;
    d.beta = c.beta;
    if (c.weight_only) {
      d.dtype_b = c.in_b();
      d.scale_mode = c.rms ? ScaleMode::kRowwiseRms : ScaleMode::kRowwise;
      d.rms_eps = c.rms_eps;
    }
    const Format fin = format_of(c.in), fin_b = format_of(c.in_b()), fout = format_of(c.out);

    // Host inputs; the padding past k of every row is NaN.
    std::mt19937_64 rng(seed);
    a_ = HostArray(c.in, static_cast<std::size_t>(d.lda * d.m));
    b_ = HostArray(c.in_b(), static_cast<std::size_t>(d.ldb * d.n));
    for (std::int64_t i = 0; i < d.m; ++i)
      for (std::int64_t p = 0; p < d.lda; ++p)
        a_.set(i * d.lda + p, p < d.k ? random_bits(fin, rng, -4, 0) : nan_bits(c.in));
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t p = 0; p < d.ldb; ++p)
        b_.set(j * d.ldb + p, p < d.k ? random_bits(fin_b, rng, -4, 0) : nan_bits(c.in_b()));
    if (c.weight_only) {
      std::uniform_real_distribution<float> u(0.5f, 2.f);
      row_scales_.resize(static_cast<std::size_t>(d.m));
      for (float& f : row_scales_) f = u(rng);
    }
    bias_ = HostArray(c.out, static_cast<std::size_t>(d.m));
    for (std::int64_t i = 0; i < d.m; ++i) bias_.set(i, random_bits(fout, rng, -2, 1));
    // C before the run: NaN everywhere when beta == 0, else random values; padding rows NaN.
    c0_ = HostArray(c.out, static_cast<std::size_t>(d.ldc * d.n));
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t i = 0; i < d.ldc; ++i)
        c0_.set(j * d.ldc + i,
                i < d.m && d.beta != 0 ? random_bits(fout, rng, -2, 1) : nan_bits(c.out));

    compute_reference();
    tolerance_of(c.in, c.out, &atol_, &rtol_);
    upload();
  }

  /// Why the problem could not be set up on the device; empty when it was.
  const std::string& setup_error() const { return error_; }
  const GemmArgs& args() const { return args_; }
  const Case& test_case() const { return c_; }
  std::uint64_t seed() const { return seed_; }
  /// What a failure message names: the case and the seed that replays it.
  std::string label() const {
    return fmt::format("{} (seed {:#x}; replay with TUNABLE_SKINNY_SEED={:#x})", c_.name(), seed_,
                       base_seed());
  }

  /// Runs `sol` once on the legacy stream: C from its initial image, the workspace (`ws`, `wsb`
  /// bytes) filled with NaN first; C comes back in `out`.
  Status run(const Solution<GemmArgs>& sol, void* ws, std::size_t wsb,
             std::vector<std::uint8_t>* out) const {
    out->resize(c0_.raw.size());
    if (cudaMemcpy(dc_.get(), c0_.raw.data(), c0_.raw.size(), cudaMemcpyHostToDevice) !=
        cudaSuccess)
      return Status(StatusCode::kCudaError, "C upload");
    if (wsb > 0 && cudaMemset(ws, 0xff, wsb) != cudaSuccess)  // NaN partials
      return Status(StatusCode::kCudaError, "workspace poison");
    const Status st = sol.run(args_, ws, wsb, nullptr);
    if (!st.is_ok()) return st;
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return Status(StatusCode::kCudaError, cudaGetErrorString(e));
    if (cudaMemcpy(out->data(), dc_.get(), out->size(), cudaMemcpyDeviceToHost) != cudaSuccess)
      return Status(StatusCode::kCudaError, "C download");
    return Status::ok();
  }

  /// C after a run against the reference: "" when every element is within tolerance and the
  /// padding rows past m are untouched, else what is wrong.
  std::string mismatch(const std::vector<std::uint8_t>& got) const {
    HostArray out(c_.out, c0_.size());
    out.raw = got;
    const GemmDesc& d = d_;
    std::size_t bad = 0, pad_touched = 0;
    double worst = 0;
    std::string first;
    for (std::int64_t j = 0; j < d.n; ++j) {
      for (std::int64_t i = 0; i < d.ldc; ++i) {
        const std::size_t at = static_cast<std::size_t>(j * d.ldc + i);
        if (i >= d.m) {
          pad_touched += out.get(at) != c0_.get(at);
          continue;
        }
        const double r = ref_[j * d.m + i], g = out.value(at);
        const double err = std::fabs(g - r), bound = atol_ * rms_ + rtol_ * std::fabs(r);
        if (!(err <= bound)) {
          if (bad++ == 0) first = fmt::format("y[{}][{}] = {} vs reference {}", j, i, g, r);
        }
        if (std::isfinite(err)) worst = std::max(worst, err / (bound > 0 ? bound : 1));
      }
    }
    std::string why;
    if (bad > 0)
      why += fmt::format("{} elements out of tolerance, first {}; worst error / bound {}", bad,
                         first, worst);
    if (pad_touched > 0)
      why += fmt::format("{}wrote C rows past m (ldc padding)", why.empty() ? "" : "; ");
    return why;
  }

 private:
  void compute_reference() {
    const GemmDesc& d = d_;
    ref_.assign(static_cast<std::size_t>(d.m * d.n), 0.0);
    std::vector<double> wa(static_cast<std::size_t>(d.m * d.k)),
        xb(static_cast<std::size_t>(d.n * d.k));
    for (std::int64_t i = 0; i < d.m; ++i)
      for (std::int64_t p = 0; p < d.k; ++p) wa[i * d.k + p] = a_.value(i * d.lda + p);
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t p = 0; p < d.k; ++p) xb[j * d.k + p] = b_.value(j * d.ldb + p);
    const double scale =
        c_.alpha * (c_.op == GemmOp::kScaledGemm && !c_.weight_only ? double(c_.scale_a) * c_.scale_b : 1.0);
    for (std::int64_t j = 0; j < d.n; ++j) {
      const double* x = &xb[j * d.k];
      // _rms: token j's RMS, sqrt(mean of squares + eps), once per token.
      double ss = 0;
      for (std::int64_t p = 0; p < d.k && c_.rms; ++p) ss += x[p] * x[p];
      const double den = c_.rms ? std::sqrt(ss / static_cast<double>(d.k) + c_.rms_eps) : 1.0;
      for (std::int64_t i = 0; i < d.m; ++i) {
        const double* w = &wa[i * d.k];
        double s = 0;
        for (std::int64_t p = 0; p < d.k; ++p) s += w[p] * x[p];
        if (c_.rms) s /= den;
        double v = scale * s * (c_.weight_only ? static_cast<double>(row_scales_[i]) : 1.0);
        if (d.beta != 0) v += d.beta * c0_.value(j * d.ldc + i);
        if (d.epilogue != Epilogue::kNone) v += bias_.value(i);
        ref_[j * d.m + i] = activation(d.epilogue, v);
      }
    }
    double rms = 0;
    for (double v : ref_) rms += v * v;
    rms_ = std::sqrt(rms / ref_.size());
  }

  void upload() {
    const GemmDesc& d = d_;
    if (!da_.allocate(a_.raw.size()).is_ok() || !db_.allocate(b_.raw.size()).is_ok() ||
        !dc_.allocate(c0_.raw.size()).is_ok() || !dbias_.allocate(bias_.raw.size()).is_ok() ||
        !dscale_.allocate(std::max<std::size_t>(8, row_scales_.size()) * sizeof(float)).is_ok()) {
      error_ = "device allocation";
      return;
    }
    // scale_a at byte 0, scale_b at byte 16: validate() wants 16-byte aligned scale pointers.
    const float scales[8] = {c_.scale_a, 0.f, 0.f, 0.f, c_.scale_b, 0.f, 0.f, 0.f};
    if (cudaMemcpy(da_.get(), a_.raw.data(), a_.raw.size(), cudaMemcpyHostToDevice) !=
            cudaSuccess ||
        cudaMemcpy(db_.get(), b_.raw.data(), b_.raw.size(), cudaMemcpyHostToDevice) !=
            cudaSuccess ||
        cudaMemcpy(dbias_.get(), bias_.raw.data(), bias_.raw.size(), cudaMemcpyHostToDevice) !=
            cudaSuccess ||
        (c_.weight_only ? cudaMemcpy(dscale_.get(), row_scales_.data(), row_scales_.size() * sizeof(float),
                                     cudaMemcpyHostToDevice)
                        : cudaMemcpy(dscale_.get(), scales, sizeof(scales), cudaMemcpyHostToDevice)) != cudaSuccess) {
      error_ = "upload";
      return;
    }
    args_.desc = d;
    args_.ops.a = da_.get();
    args_.ops.b = db_.get();
    args_.ops.c = dc_.get();
    args_.ops.bias = d.epilogue != Epilogue::kNone ? dbias_.get() : nullptr;
    args_.ops.scale_a = c_.op == GemmOp::kScaledGemm ? dscale_.as<float>() : nullptr;
    args_.ops.scale_b = c_.op == GemmOp::kScaledGemm && !c_.weight_only ? dscale_.as<float>() + 4 : nullptr;
    const Status v = validate(d, args_.ops);
    if (!v.is_ok()) error_ = "test case is not a valid GEMM: " + v.to_string();
  }

  Case c_;
  std::uint64_t seed_;
  GemmDesc d_;
  HostArray a_, b_, bias_, c0_;  ///< host images: W[m][lda], x[n][ldb], bias[m], C before the run
  std::vector<double> ref_;      ///< [n][m]: the fp64 reference
  std::vector<float> row_scales_;  ///< weight-only: one per weight row
  double rms_ = 0, atol_ = 0, rtol_ = 0;
  DeviceBuffer da_, db_, dc_, dbias_, dscale_;
  GemmArgs args_;
  std::string error_;
};

}  // namespace tunable::skinny_test
