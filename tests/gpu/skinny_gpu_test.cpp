// GPU tests of the skinny GEMM kernels (kernels/gemv through skinny_gemm_provider): every variant
// of the case's dtype against an fp64 host reference on fresh random inputs.
//
// Inputs are random bit patterns of the element type (a few zeros and subnormals, the rest
// normals of magnitude 2^-4..2), so the reference sees exactly what the GPU sees; fp8 cases use
// the same e4m3 bytes on both sides. Padding of A and B past k holds NaN (a read past k shows),
// C is poisoned with NaN before every run when beta == 0 (C must not be read) and its padding
// rows past m must come back untouched, and the split-K workspace is filled with NaN (it must not
// need zeroing). Each variant either refuses the problem with kNotSupported / kMisaligned and a
// message, or runs, matches the reference and gives the same bits on a second run.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_util.hpp"
#include "gemm/cuda/skinny_provider.hpp"

namespace tunable {
namespace {

// ---- element formats on the host ---------------------------------------------------------------

struct Format {
  int bytes, ebits, mbits;
  bool e4m3;  ///< no infinities; only S.1111.111 is NaN
  int bias() const { return (1 << (ebits - 1)) - 1; }
};

Format format_of(DataType t) {
  switch (t) {
    case DataType::kBF16: return {2, 8, 7, false};
    case DataType::kF16: return {2, 5, 10, false};
    case DataType::kF8E4M3: return {1, 4, 3, true};
    default: return {4, 8, 23, false};
  }
}

std::uint32_t nan_bits(DataType t) {
  switch (t) {
    case DataType::kBF16: return 0x7fc0u;
    case DataType::kF16: return 0x7e00u;
    case DataType::kF8E4M3: return 0x7fu;
    default: return 0x7fc00000u;
  }
}

double decode(const Format& f, std::uint32_t bits) {
  const std::uint32_t sign = (bits >> (f.ebits + f.mbits)) & 1u;
  const int e = static_cast<int>((bits >> f.mbits) & ((1u << f.ebits) - 1));
  const std::uint32_t m = bits & ((1u << f.mbits) - 1);
  const int emax = (1 << f.ebits) - 1;
  if (f.e4m3 ? (e == emax && m == (1u << f.mbits) - 1) : e == emax)
    return (f.e4m3 || m != 0) ? std::nan("") : (sign ? -INFINITY : INFINITY);
  const double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias() - f.mbits)
                          : std::ldexp(static_cast<double>(m + (1u << f.mbits)), e - f.bias() - f.mbits);
  return sign ? -v : v;
}

/// A random value's bits: 1/64 zeros, 1/64 subnormals, else normals in [2^lo, 2^(hi+1)).
std::uint32_t random_bits(const Format& f, std::mt19937_64& rng, int lo, int hi) {
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

// ---- cases -----------------------------------------------------------------------------------------

struct Case {
  DataType in = DataType::kBF16;
  DataType out = DataType::kBF16;
  GemmOp op = GemmOp::kGemm;
  Epilogue ep = Epilogue::kNone;
  std::int64_t rows = 256;   ///< desc.m: weight rows (N of the linear layer)
  std::int64_t tokens = 1;   ///< desc.n: tokens (M of the linear layer)
  std::int64_t k = 512;
  std::int64_t lda_pad = 0, ldb_pad = 0, ldc_pad = 0;
  double alpha = 1.0, beta = 0.0;
  float scale_a = 1.f, scale_b = 1.f;
  bool rejected = false;  ///< every variant must refuse (k or a leading dimension off the vector width)

  std::string name() const {
    std::string s = fmt::format("{}_{}_N{}_M{}_K{}", short_name(in), short_name(out), rows, tokens, k);
    if (lda_pad || ldb_pad || ldc_pad) s += fmt::format("_pad{}x{}x{}", lda_pad, ldb_pad, ldc_pad);
    if (alpha != 1.0) s += "_alpha";
    if (beta != 0.0) s += "_beta";
    if (ep == Epilogue::kBias) s += "_bias";
    if (ep == Epilogue::kBiasRelu) s += "_relu";
    if (ep == Epilogue::kBiasGelu) s += "_gelu";
    if (rejected) s += "_rejected";
    return s;
  }
};

std::vector<Case> all_cases() {
  std::vector<Case> v;
  const std::int64_t tokens[] = {1, 2, 3, 7, 8, 9, 16, 31, 33, 64};
  for (DataType t : {DataType::kBF16, DataType::kF16}) {
    for (std::int64_t m : tokens) {
      Case plain;
      plain.in = plain.out = t;
      plain.tokens = m;
      v.push_back(plain);
      Case strided = plain;  // k = 1000: 125 vectors, not a multiple of any chunk
      strided.rows = 300;
      strided.k = 1000;
      strided.lda_pad = 8;
      strided.ldb_pad = 16;
      strided.ldc_pad = 5;
      strided.alpha = 1.25;
      strided.beta = 0.5;
      v.push_back(strided);
      Case bias = plain;  // rows not a multiple of 16
      bias.op = GemmOp::kGemmAndBias;
      bias.ep = Epilogue::kBias;
      bias.rows = 77;
      bias.k = 264;
      bias.lda_pad = 24;
      v.push_back(bias);
    }
    for (std::int64_t m : {1, 8, 64}) {
      Case tiny;  // one and three 16-byte vectors of K
      tiny.in = tiny.out = t;
      tiny.tokens = m;
      tiny.rows = 40;
      tiny.k = 8;
      v.push_back(tiny);
      tiny.rows = 33;
      tiny.k = 24;
      v.push_back(tiny);
    }
    {
      Case few;  // fewer weight rows than one 16-row tile (the TMA box hangs past m) and K off a stage
      few.in = few.out = t;
      few.tokens = 9;
      few.rows = 7;
      few.k = 1032;
      v.push_back(few);
    }
    for (Epilogue e : {Epilogue::kBiasRelu, Epilogue::kBiasGelu}) {
      for (std::int64_t m : {4, 40}) {
        Case act;
        act.in = act.out = t;
        act.op = GemmOp::kGemmAndBias;
        act.ep = e;
        act.rows = 200;
        act.tokens = m;
        v.push_back(act);
      }
    }
    // k, lda or ldb off the 8-element vector width: every variant refuses.
    for (std::int64_t m : {1, 16}) {
      Case off;
      off.in = off.out = t;
      off.tokens = m;
      off.k = 1002;
      off.rejected = true;
      v.push_back(off);
    }
    Case lda;
    lda.in = lda.out = t;
    lda.lda_pad = 4;
    lda.rejected = true;
    v.push_back(lda);
    Case ldb = lda;
    ldb.lda_pad = 0;
    ldb.ldb_pad = 2;
    ldb.tokens = 5;
    v.push_back(ldb);
  }
  // Weights of realistic size: several waves, real split-K plans.
  for (std::int64_t m : {1, 8, 64}) {
    Case big;
    big.rows = 2048;
    big.k = 4096;
    big.tokens = m;
    v.push_back(big);
  }
  {
    Case big;
    big.in = big.out = DataType::kF16;
    big.rows = 4096;
    big.k = 2048;
    big.tokens = 16;
    v.push_back(big);
    big.in = big.out = DataType::kBF16;
    big.rows = 4100;
    big.tokens = 3;
    big.beta = -1.0;
    v.push_back(big);
  }
  // FP8 e4m3 ScaledGemm: per-tensor scales, bf16 out unless stated.
  for (std::int64_t m : tokens) {
    Case f;
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.tokens = m;
    f.scale_a = 0.5f;
    f.scale_b = 1.5f;
    v.push_back(f);
    Case g = f;  // k = 1008: 63 vectors of 16
    g.rows = 300;
    g.k = 1008;
    g.lda_pad = 32;
    g.ldb_pad = 16;
    g.ldc_pad = 3;
    g.ep = Epilogue::kBias;
    v.push_back(g);
  }
  for (DataType out : {DataType::kF16, DataType::kF32}) {
    for (std::int64_t m : {5, 40}) {
      Case f;
      f.in = DataType::kF8E4M3;
      f.out = out;
      f.op = GemmOp::kScaledGemm;
      f.tokens = m;
      f.rows = 129;
      f.k = 2048;
      f.alpha = 0.75;
      f.beta = out == DataType::kF32 ? 0.25 : 0.0;
      f.scale_a = 2.f;
      f.scale_b = 0.125f;
      v.push_back(f);
    }
  }
  for (std::int64_t m : {1, 64}) {
    Case f;
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.rows = 2048;
    f.k = 4096;
    f.tokens = m;
    f.scale_a = 0.25f;
    v.push_back(f);
  }
  // The paired TMA grid (skinny_mmt_*_pair) on a 132-SM H100: 144 tiles (12 blocks of two, the last
  // tile 12 rows) and 287 tiles (143 blocks of two and one alone, the last tile 4 rows).
  {
    Case pair;
    pair.rows = 2300;
    pair.k = 1024;
    pair.tokens = 16;
    pair.beta = 0.5;
    v.push_back(pair);
    Case f;
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.rows = 4580;
    f.k = 512;
    f.tokens = 8;
    f.ep = Epilogue::kBias;
    v.push_back(f);
  }
  // The balanced TMA grid (skinny_mmt_*_bal) on 132 SMs: 144 tiles (groups of 11 blocks share the last
  // 12, 1-2 stages of K each) and 287 tiles (two whole tiles per block, groups of 5-6 share the last
  // 23). The cases above give the groups more blocks than stages (empty slices).
  {
    Case bal;
    bal.rows = 2300;
    bal.k = 8192;
    bal.tokens = 9;
    bal.beta = 0.5;
    bal.ldc_pad = 8;
    v.push_back(bal);
    Case f;
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.rows = 4580;
    f.k = 8192;
    f.tokens = 16;
    f.ep = Epilogue::kBias;
    v.push_back(f);
  }
  {
    Case f;  // k = 1000 is not a multiple of 16 fp8 elements
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.k = 1000;
    f.tokens = 4;
    f.rejected = true;
    v.push_back(f);
  }
  return v;
}

// ---- one problem on the device ------------------------------------------------------------------------

/// Tolerance of the output type: |got - ref| <= atol * rms(ref) + rtol * |ref|. Inputs are exact
/// in both computations, so the error is the output rounding plus fp32 accumulation.
void tolerance_of(DataType out, double* atol, double* rtol) {
  switch (out) {
    case DataType::kBF16: *atol = 2e-3, *rtol = 1.0 / 256; return;
    case DataType::kF16: *atol = 5e-4, *rtol = 1.0 / 1024; return;
    default: *atol = 1e-5, *rtol = 1e-5; return;
  }
}

double activation(Epilogue e, double v) {
  if (e == Epilogue::kBiasRelu) return v > 0 ? v : 0;
  if (e == Epilogue::kBiasGelu) return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  return v;
}

class SkinnyGpu : public ::testing::TestWithParam<Case> {};

TEST_P(SkinnyGpu, EveryVariantRefusesOrMatchesTheReference) {
  const Case& c = GetParam();
  int dev = 0, major = 0, minor = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), cudaSuccess);
  const int cc = major * 10 + minor;

  GemmDesc d = GemmDesc::make(c.in, Transpose::kT, Transpose::kN, c.rows, c.tokens, c.k);
  d.op = c.op;
  d.out_dtype = c.out;
  d.epilogue = c.ep;
  d.lda = c.k + c.lda_pad;
  d.ldb = c.k + c.ldb_pad;
  d.ldc = c.rows + c.ldc_pad;
  d.alpha = c.alpha;
  d.beta = c.beta;
  const Format fin = format_of(c.in), fout = format_of(c.out);

  // Host inputs; the padding past k of every row is NaN.
  std::mt19937_64 rng(0x5eed0000u + std::hash<std::string>{}(c.name()));
  HostArray a(c.in, static_cast<std::size_t>(d.lda * d.m)), b(c.in, static_cast<std::size_t>(d.ldb * d.n));
  for (std::int64_t i = 0; i < d.m; ++i)
    for (std::int64_t p = 0; p < d.lda; ++p)
      a.set(i * d.lda + p, p < d.k ? random_bits(fin, rng, -4, 0) : nan_bits(c.in));
  for (std::int64_t j = 0; j < d.n; ++j)
    for (std::int64_t p = 0; p < d.ldb; ++p)
      b.set(j * d.ldb + p, p < d.k ? random_bits(fin, rng, -4, 0) : nan_bits(c.in));
  HostArray bias(c.out, static_cast<std::size_t>(d.m));
  for (std::int64_t i = 0; i < d.m; ++i) bias.set(i, random_bits(fout, rng, -2, 1));
  // C before the run: NaN everywhere when beta == 0, else random values; padding rows NaN.
  HostArray c0(c.out, static_cast<std::size_t>(d.ldc * d.n));
  for (std::int64_t j = 0; j < d.n; ++j)
    for (std::int64_t i = 0; i < d.ldc; ++i)
      c0.set(j * d.ldc + i, i < d.m && d.beta != 0 ? random_bits(fout, rng, -2, 1) : nan_bits(c.out));

  // fp64 reference.
  std::vector<double> ref(static_cast<std::size_t>(d.m * d.n));
  {
    std::vector<double> wa(static_cast<std::size_t>(d.m * d.k)), xb(static_cast<std::size_t>(d.n * d.k));
    for (std::int64_t i = 0; i < d.m; ++i)
      for (std::int64_t p = 0; p < d.k; ++p) wa[i * d.k + p] = a.value(i * d.lda + p);
    for (std::int64_t j = 0; j < d.n; ++j)
      for (std::int64_t p = 0; p < d.k; ++p) xb[j * d.k + p] = b.value(j * d.ldb + p);
    const double scale = c.alpha * (c.op == GemmOp::kScaledGemm ? double(c.scale_a) * c.scale_b : 1.0);
    for (std::int64_t j = 0; j < d.n; ++j) {
      for (std::int64_t i = 0; i < d.m; ++i) {
        const double* w = &wa[i * d.k];
        const double* x = &xb[j * d.k];
        double s = 0;
        for (std::int64_t p = 0; p < d.k; ++p) s += w[p] * x[p];
        double v = scale * s;
        if (d.beta != 0) v += d.beta * c0.value(j * d.ldc + i);
        if (d.epilogue != Epilogue::kNone) v += bias.value(i);
        ref[j * d.m + i] = activation(d.epilogue, v);
      }
    }
  }
  double rms = 0;
  for (double v : ref) rms += v * v;
  rms = std::sqrt(rms / ref.size());
  double atol = 0, rtol = 0;
  tolerance_of(c.out, &atol, &rtol);

  // Device copies.
  DeviceBuffer da, db, dc, dbias, dscale;
  ASSERT_TRUE(da.allocate(a.raw.size()).is_ok());
  ASSERT_TRUE(db.allocate(b.raw.size()).is_ok());
  ASSERT_TRUE(dc.allocate(c0.raw.size()).is_ok());
  ASSERT_TRUE(dbias.allocate(bias.raw.size()).is_ok());
  // scale_a at byte 0, scale_b at byte 16: validate() wants 16-byte aligned scale pointers.
  ASSERT_TRUE(dscale.allocate(8 * sizeof(float)).is_ok());
  const float scales[8] = {c.scale_a, 0.f, 0.f, 0.f, c.scale_b, 0.f, 0.f, 0.f};
  ASSERT_EQ(cudaMemcpy(da.get(), a.raw.data(), a.raw.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.get(), b.raw.data(), b.raw.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dbias.get(), bias.raw.data(), bias.raw.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dscale.get(), scales, sizeof(scales), cudaMemcpyHostToDevice), cudaSuccess);

  GemmArgs args;
  args.desc = d;
  args.ops.a = da.get();
  args.ops.b = db.get();
  args.ops.c = dc.get();
  args.ops.bias = d.epilogue != Epilogue::kNone ? dbias.get() : nullptr;
  args.ops.scale_a = c.op == GemmOp::kScaledGemm ? dscale.as<float>() : nullptr;
  args.ops.scale_b = c.op == GemmOp::kScaledGemm ? dscale.as<float>() + 4 : nullptr;
  {
    const Status v = validate(d, args.ops);
    ASSERT_TRUE(v.is_ok()) << "test case is not a valid GEMM: " << v.to_string();
  }

  // The provider's view: out-of-width shapes enumerate nothing, with a reason.
  const auto provider = skinny_gemm_provider();
  {
    std::vector<SolutionPtr<GemmArgs>> cands;
    const Status st = provider->enumerate(args, &cands);
    if (c.rejected) {
      EXPECT_FALSE(st.is_ok());
      EXPECT_TRUE(cands.empty());
    } else {
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_FALSE(cands.empty());
    }
  }

  const std::string prefix_gemv = fmt::format("skinny_gemv_{}_", short_name(c.in));
  const std::string prefix_mma = fmt::format("skinny_mma_{}_", short_name(c.in));
  // The pipelined and TMA-fed MMA families (skinny_mmap_*, skinny_mmt_*) are checked as MMA; the
  // TMA-fed one is also counted on its own (sm_90, n <= 16).
  const std::string prefix_mmap = fmt::format("skinny_mmap_{}_", short_name(c.in));
  const std::string prefix_mmt = fmt::format("skinny_mmt_{}_", short_name(c.in));
  // The wgmma kernel (skinny_wgt_*, sm_90a, n <= 64) likewise, counted on its own.
  const std::string prefix_wgt = fmt::format("skinny_wgt_{}_", short_name(c.in));
  int ran_gemv = 0, ran_mma = 0, ran_mmt = 0, ran_wgt = 0, ran_pair = 0, ran_bal = 0;
  // TUNABLE_SKINNY_ONLY=<substring>: only the variants whose names hold it (the sanitizer runs, which
  // would take hours over every name); the per-family counts below are then not checked.
  const char* only = std::getenv("TUNABLE_SKINNY_ONLY");
  DeviceBuffer ws;
  std::vector<std::uint8_t> got(c0.raw.size()), again(c0.raw.size());
  for (const std::string& name : skinny_gemm_variant_names()) {
    const bool is_gemv = name.rfind(prefix_gemv, 0) == 0;
    const bool is_mmt = name.rfind(prefix_mmt, 0) == 0;
    const bool is_wgt = name.rfind(prefix_wgt, 0) == 0;
    const bool is_mma = name.rfind(prefix_mma, 0) == 0 || name.rfind(prefix_mmap, 0) == 0 || is_mmt || is_wgt;
    if (!is_gemv && !is_mma) continue;
    if (only != nullptr && name.find(only) == std::string::npos) continue;
    SCOPED_TRACE(name);
    const auto sol = provider->from_name(name, args);
    ASSERT_NE(sol, nullptr);
    const Status can = sol->can_implement(args);
    // Wave-balanced splits (ksw<W>) fall back to fewer splits, so they take every problem too.
    // The warp-contiguous suffix (_wc) changes the K order within a block, not what it accepts;
    // neither does the TMA ring's shape (_b<boxes>s<stages>, the last 5 or 6 characters).
    const bool wc = name.size() > 3 && name.compare(name.size() - 3, 3, "_wc") == 0;
    const std::size_t end = is_mmt || is_wgt ? name.find("_b", name.find("_ks")) : name.size() - (wc ? 3 : 0);
    const bool basic = name.find("_ksauto") != std::string::npos ||
                       name.find("_ksw") != std::string::npos || name.find("_ks1") + 4 == end;
    if (!can.is_ok()) {
      EXPECT_TRUE(can.code() == StatusCode::kNotSupported || can.code() == StatusCode::kMisaligned)
          << can.to_string();
      EXPECT_FALSE(can.message().empty());
      // Unsplit and auto variants take every aligned problem within their token limit.
      // The wgmma kernel's 1 KB-per-row ring (b8s2) does not fit in shared memory above 32 tokens.
      // fp8 into fp32 output is refused (its tensor-core sums are below fp32 precision).
      const bool wgt_fits = !(is_wgt && c.tokens > 32 && name.compare(name.size() - 5, 5, "_b8s2") == 0) &&
                            !(c.in == DataType::kF8E4M3 && c.out == DataType::kF32);
      if (!c.rejected && basic &&
          (is_mmt ? c.tokens <= 16 && cc >= 90 : is_wgt ? cc == 90 && wgt_fits : is_mma || c.tokens <= 8))
        ADD_FAILURE() << "refused an aligned problem it should run: " << can.to_string();
      continue;
    }
    ASSERT_FALSE(c.rejected) << "accepted a problem off the vector width";

    const std::size_t wsb = sol->workspace_bytes(args);
    ASSERT_LE(wsb, std::size_t{32} << 20);
    if (wsb > ws.size()) {
      ASSERT_TRUE(ws.allocate(wsb).is_ok());
    }
    void* wsp = wsb > 0 ? ws.get() : nullptr;

    auto run_once = [&](std::vector<std::uint8_t>* out) -> Status {
      if (cudaMemcpy(dc.get(), c0.raw.data(), c0.raw.size(), cudaMemcpyHostToDevice) != cudaSuccess)
        return Status(StatusCode::kCudaError, "C upload");
      if (wsb > 0 && cudaMemset(wsp, 0xff, wsb) != cudaSuccess)  // NaN partials
        return Status(StatusCode::kCudaError, "workspace poison");
      const Status st = sol->run(args, wsp, wsb, nullptr);
      if (!st.is_ok()) return st;
      const cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) return Status(StatusCode::kCudaError, cudaGetErrorString(e));
      if (cudaMemcpy(out->data(), dc.get(), out->size(), cudaMemcpyDeviceToHost) != cudaSuccess)
        return Status(StatusCode::kCudaError, "C download");
      return Status::ok();
    };

    const Status st = run_once(&got);
    if (st.code() == StatusCode::kNotSupported) {
      // Only a device or build without the needed tensor-core code may say so after
      // can_implement passed; this suite targets sm_90a builds.
      const int need = is_mmt || is_wgt ? 90 : c.in == DataType::kF8E4M3 ? 89 : 80;
      if (is_mma && cc < need) continue;
      if (is_wgt && cc != 90) continue;  // sm_90a code runs on compute capability 9.0 only
      ADD_FAILURE() << "run refused after can_implement passed: " << st.to_string();
      continue;
    }
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    (is_gemv ? ran_gemv : ran_mma)++;
    ran_mmt += is_mmt;
    ran_wgt += is_wgt;
    ran_pair += is_mmt && name.size() > 5 && name.compare(name.size() - 5, 5, "_pair") == 0;
    ran_bal += is_mmt && name.size() > 4 && name.compare(name.size() - 4, 4, "_bal") == 0;

    HostArray out(c.out, c0.size());
    out.raw = got;
    std::size_t bad = 0, pad_touched = 0;
    double worst = 0;
    std::string first;
    for (std::int64_t j = 0; j < d.n; ++j) {
      for (std::int64_t i = 0; i < d.ldc; ++i) {
        const std::size_t at = static_cast<std::size_t>(j * d.ldc + i);
        if (i >= d.m) {
          pad_touched += out.get(at) != c0.get(at);
          continue;
        }
        const double r = ref[j * d.m + i], g = out.value(at);
        const double err = std::fabs(g - r), bound = atol * rms + rtol * std::fabs(r);
        if (!(err <= bound)) {
          if (bad++ == 0) first = fmt::format("y[{}][{}] = {} vs reference {}", j, i, g, r);
        }
        if (std::isfinite(err)) worst = std::max(worst, err / (bound > 0 ? bound : 1));
      }
    }
    EXPECT_EQ(bad, 0u) << bad << " elements out of tolerance, first " << first
                       << "; worst error / bound " << worst;
    EXPECT_EQ(pad_touched, 0u) << "wrote C rows past m (ldc padding)";

    // Deterministic: the same bits again.
    ASSERT_TRUE(run_once(&again).is_ok());
    EXPECT_TRUE(again == got) << "second run gave different bits";
  }
  if (!c.rejected && only == nullptr) {
    if (c.tokens <= 8) {
      EXPECT_GT(ran_gemv, 0) << "no GEMV variant ran";
    }
    const int need = c.in == DataType::kF8E4M3 ? 89 : 80;
    if (cc >= need) {
      EXPECT_GT(ran_mma, 0) << "no MMA variant ran";
    }
    if (cc >= 90 && c.tokens <= 16) {
      EXPECT_GT(ran_mmt, 0) << "no TMA-fed MMA variant ran";
      EXPECT_GT(ran_pair, 0) << "no paired TMA-fed MMA variant ran";
      EXPECT_GT(ran_bal, 0) << "no balanced TMA-fed MMA variant ran";
    }
    if (cc == 90 && !(c.in == DataType::kF8E4M3 && c.out == DataType::kF32)) {
      EXPECT_GT(ran_wgt, 0) << "no wgmma variant ran";
    }
  }
}

// The balanced grid's arrival counters (one set per stream, allocated at the stream's first
// balanced launch outside graph capture): a first call inside capture is refused with a clear
// message and launches nothing; after one call outside capture, captured calls replayed from a graph
// give the same bits as the direct call (the counters return to zero at the end of every launch).
/// The current device's compute capability major and SM count.
void device_shape(int* major, int* sms) {
  int dev = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev), cudaSuccess);
}

/// Weight rows of a grid with 12 16-row tiles beyond one per SM, as llama3_405b_tp8 qkv on an H100.
std::int64_t rows_twelve_tiles_over(int sms) { return 16 * (static_cast<std::int64_t>(sms) + 12); }

TEST(SkinnyBal, CountersAcrossCaptureAndGraphReplays) {
  int major = 0, sms = 0;
  device_shape(&major, &sms);
  if (major < 9) GTEST_SKIP() << "the balanced TMA kernel needs sm_90";
  const std::int64_t m = rows_twelve_tiles_over(sms), n = 8, k = 2048;
  GemmDesc d = GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, m, n, k);
  DeviceBuffer da, db, dc;
  ASSERT_TRUE(da.allocate(static_cast<std::size_t>(m * k * 2)).is_ok());
  ASSERT_TRUE(db.allocate(static_cast<std::size_t>(n * k * 2)).is_ok());
  ASSERT_TRUE(dc.allocate(static_cast<std::size_t>(m * n * 2)).is_ok());
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_TRUE(fill_random(da.get(), DataType::kBF16, static_cast<std::size_t>(m * k), 11, 1.f, s).is_ok());
  ASSERT_TRUE(fill_random(db.get(), DataType::kBF16, static_cast<std::size_t>(n * k), 12, 1.f, s).is_ok());
  GemmArgs args;
  args.desc = d;
  args.ops.a = da.get();
  args.ops.b = db.get();
  args.ops.c = dc.get();
  const auto sol = skinny_gemm_provider()->from_name("skinny_mmt_bf16_bm16_wk8_ks1_b8s4_bal", args);
  ASSERT_NE(sol, nullptr);
  ASSERT_TRUE(sol->can_implement(args).is_ok());
  DeviceBuffer ws;
  const std::size_t wsb = sol->workspace_bytes(args);
  ASSERT_GT(wsb, 0u);
  ASSERT_TRUE(ws.allocate(wsb).is_ok());
  auto capture = [&](cudaGraph_t* g) -> Status {
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess)
      return Status(StatusCode::kCudaError, "begin capture");
    const Status st = sol->run(args, ws.get(), wsb, s);
    if (cudaStreamEndCapture(s, g) != cudaSuccess) return Status(StatusCode::kCudaError, "end capture");
    return st;
  };
  cudaGraph_t g = nullptr;
  const Status first = capture(&g);
  EXPECT_EQ(first.code(), StatusCode::kNotSupported) << first.to_string();
  EXPECT_NE(first.message().find("before capturing"), std::string::npos) << first.message();
  if (g != nullptr) {
    std::size_t nodes = 1;
    ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &nodes), cudaSuccess);
    EXPECT_EQ(nodes, 0u) << "the refused call captured work";
    ASSERT_EQ(cudaGraphDestroy(g), cudaSuccess);
  }
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);

  const std::size_t bytes = static_cast<std::size_t>(m * n * 2);
  std::vector<std::uint8_t> direct(bytes), replay(bytes);
  ASSERT_TRUE(fill_nan(dc.get(), DataType::kBF16, static_cast<std::size_t>(m * n), s).is_ok());
  ASSERT_TRUE(sol->run(args, ws.get(), wsb, s).is_ok());
  ASSERT_EQ(cudaMemcpyAsync(direct.data(), dc.get(), bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::size_t nans = 0;
  for (std::size_t i = 0; i < bytes; i += 2) nans += (direct[i + 1] & 0x7f) == 0x7f && (direct[i] & 0x80) != 0;
  EXPECT_EQ(nans, 0u) << "the direct call left outputs unwritten";

  ASSERT_TRUE(capture(&g).is_ok());
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_TRUE(fill_nan(dc.get(), DataType::kBF16, static_cast<std::size_t>(m * n), s).is_ok());
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(replay.data(), dc.get(), bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_TRUE(replay == direct) << "graph replay " << rep << " gave other bits than the direct call";
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// The TMA rings under load: every one-block-per-SM variant (and an unpaired one) on a 405b-qkv-like
// weight (tiles beyond one per SM, 16 tokens, K = 16384) launched many times back to back, each time
// right after a launch on another weight copy, must give the same bits every time. Round 21 found a
// ring whose slots were refilled by TMA without a proxy fence after the consumers' ordinary loads:
// sanitizer-clean, right on most launches, other bits on 2-100 % of them.
TEST(SkinnyRing, SameBitsOverManyLaunches) {
  int major = 0, sms = 0;
  device_shape(&major, &sms);
  if (major < 9) GTEST_SKIP() << "the TMA-fed kernels need sm_90";
  const std::int64_t m = rows_twelve_tiles_over(sms), n = 16, k = 16384;
  constexpr int kLaunches = 48;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  for (DataType t : {DataType::kBF16, DataType::kF16}) {
    const std::string dt = t == DataType::kBF16 ? "bf16" : "fp16";
    DeviceBuffer wa, wb, x, y;
    ASSERT_TRUE(wa.allocate(static_cast<std::size_t>(m * k * 2)).is_ok());
    ASSERT_TRUE(wb.allocate(static_cast<std::size_t>(m * k * 2)).is_ok());
    ASSERT_TRUE(x.allocate(static_cast<std::size_t>(n * k * 2)).is_ok());
    ASSERT_TRUE(y.allocate(static_cast<std::size_t>(m * n * 2)).is_ok());
    ASSERT_TRUE(fill_random(wa.get(), t, static_cast<std::size_t>(m * k), 21, 1.f, s).is_ok());
    ASSERT_TRUE(fill_random(wb.get(), t, static_cast<std::size_t>(m * k), 22, 1.f, s).is_ok());
    ASSERT_TRUE(fill_random(x.get(), t, static_cast<std::size_t>(n * k), 23, 1.f, s).is_ok());
    for (const std::string shape :
         {"b8s2", "b8s3", "b16s2", "b8s3_pair", "b8s4_pair", "b8s3_bal", "b8s4_bal", "b8s6_bal"}) {
      const std::string name = fmt::format("skinny_mmt_{}_bm16_wk8_ks1_{}", dt, shape);
      GemmArgs args;
      args.desc = GemmDesc::make(t, Transpose::kT, Transpose::kN, m, n, k);
      args.ops.b = x.get();
      args.ops.c = y.get();
      args.ops.a = wa.get();
      const auto sol = skinny_gemm_provider()->from_name(name, args);
      ASSERT_NE(sol, nullptr) << name;
      ASSERT_TRUE(sol->can_implement(args).is_ok()) << name;
      GemmArgs other = args;
      other.ops.a = wb.get();
      DeviceBuffer ws;
      const std::size_t wsb = sol->workspace_bytes(args);
      if (wsb > 0) ASSERT_TRUE(ws.allocate(wsb).is_ok());
      const std::size_t bytes = static_cast<std::size_t>(m * n * 2);
      std::vector<std::uint8_t> first(bytes), again(bytes);
      int changed = 0;
      for (int r = 0; r < kLaunches; ++r) {
        ASSERT_TRUE(sol->run(other, ws.get(), wsb, s).is_ok()) << name;
        ASSERT_TRUE(fill_nan(y.get(), t, static_cast<std::size_t>(m * n), s).is_ok());
        ASSERT_TRUE(sol->run(args, ws.get(), wsb, s).is_ok()) << name;
        ASSERT_EQ(cudaMemcpyAsync((r == 0 ? first : again).data(), y.get(), bytes, cudaMemcpyDeviceToHost, s),
                  cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
        if (r > 0) changed += again != first;
      }
      EXPECT_EQ(changed, 0) << name << ": other bits on " << changed << " of " << kLaunches - 1 << " repeats";
    }
  }
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(Cases, SkinnyGpu, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name(); });

}  // namespace
}  // namespace tunable
