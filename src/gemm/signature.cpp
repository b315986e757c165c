// GEMM validation and TunableOp-style signatures (built and parsed in one place).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <regex>
#include <tuple>

#include "gemm/gemm_args.hpp"

namespace tunable {
namespace {

Status bad(const std::string& s) { return Status(StatusCode::kInvalidArgument, s); }

const char* op_prefix(GemmOp op) {
  switch (op) {
    case GemmOp::kGemm: return "GemmTunableOp";
    case GemmOp::kGemmStridedBatched: return "GemmStridedBatchedTunableOp";
    case GemmOp::kGemmAndBias: return "GemmAndBiasTunableOp";
    case GemmOp::kScaledGemm: return "ScaledGemmTunableOp";
  }
  return "?";
}

const char* epilogue_suffix(Epilogue e) {
  switch (e) {
    case Epilogue::kNone: return "";
    case Epilogue::kBias: return "_ep_bias";
    case Epilogue::kBiasRelu: return "_ep_relu";
    case Epilogue::kBiasGelu: return "_ep_gelu";
  }
  return "";
}

bool is_fp8(DataType t) { return t == DataType::kF8E4M3 || t == DataType::kF8E5M2; }

}  // namespace

GemmDesc GemmDesc::make(DataType dtype, Transpose ta, Transpose tb, std::int64_t m,
                        std::int64_t n, std::int64_t k) {
  GemmDesc d;
  d.dtype = dtype;
  d.out_dtype = dtype == DataType::kTF32 ? DataType::kF32 : dtype;
  d.transa = ta;
  d.transb = tb;
  d.m = m;
  d.n = n;
  d.k = k;
  d.lda = std::max<std::int64_t>(1, a_rows(d));
  d.ldb = std::max<std::int64_t>(1, b_rows(d));
  d.ldc = std::max<std::int64_t>(1, m);
  return d;
}

Status validate(const GemmDesc& d) {
  if (d.m <= 0) return bad(fmt::format("m must be positive (got {})", d.m));
  if (d.n <= 0) return bad(fmt::format("n must be positive (got {})", d.n));
  if (d.k <= 0) return bad(fmt::format("k must be positive (got {})", d.k));
  constexpr std::int64_t kMaxDim = std::numeric_limits<std::int32_t>::max();
  if (d.m > kMaxDim || d.n > kMaxDim || d.k > kMaxDim)
    return bad(fmt::format("m, n, k must fit in 32 bits (got {}, {}, {})", d.m, d.n, d.k));
  if (d.lda < a_rows(d))
    return bad(fmt::format("lda must be >= {} (rows of A as stored, trans {}), got {}", a_rows(d),
                           to_char(d.transa), d.lda));
  if (d.ldb < b_rows(d))
    return bad(fmt::format("ldb must be >= {} (rows of B as stored, trans {}), got {}", b_rows(d),
                           to_char(d.transb), d.ldb));
  if (d.ldc < d.m) return bad(fmt::format("ldc must be >= m = {}, got {}", d.m, d.ldc));
  if (d.lda > kMaxDim || d.ldb > kMaxDim || d.ldc > kMaxDim)
    return bad("leading dimensions must fit in 32 bits");
  if (!std::isfinite(d.alpha) || !std::isfinite(d.beta))
    return bad(fmt::format("alpha and beta must be finite (got {}, {})", d.alpha, d.beta));

  const bool scaled = d.op == GemmOp::kScaledGemm;
  if (scaled) {
    if (!is_fp8(d.dtype))
      return Status(StatusCode::kNotSupported,
                    fmt::format("ScaledGemm takes fp8e4m3/fp8e5m2 inputs, not {}", short_name(d.dtype)));
    if (is_weight_only(d)) {
      if (d.transa != Transpose::kT || d.transb != Transpose::kN)
        return Status(StatusCode::kNotSupported,
                      fmt::format("weight-only ScaledGemm (fp8e4m3 x {}) takes tn problems (the weight as "
                                  "op(A) = A^T), not {}{}",
                                  short_name(b_type(d)), to_char(d.transa), to_char(d.transb)));
      if (d.scale_mode == ScaleMode::kTensor)
        return Status(StatusCode::kNotSupported,
                      "weight-only ScaledGemm needs rowwise scales (scale_a: one per row of op(A))");
      // The kernels compute in fp32: an eps that rounds to 0 or to infinity there would give NaN for
      // an all-zero token or zero for every one.
      if (d.scale_mode == ScaleMode::kRowwiseRms &&
          !(d.rms_eps >= std::numeric_limits<float>::min() && d.rms_eps <= std::numeric_limits<float>::max()))
        return bad(fmt::format("rms_eps must be a normal positive fp32 value, got {}", d.rms_eps));
      if (d.out_dtype != b_type(d))
        return Status(StatusCode::kNotSupported,
                      fmt::format("weight-only ScaledGemm writes B's type {}, not {}", short_name(b_type(d)),
                                  short_name(d.out_dtype)));
      // Only our kernels run it (cuBLASLt has none), and they load 16-byte vectors.
      if (d.k % 16 != 0)
        return Status(StatusCode::kNotSupported,
                      fmt::format("weight-only ScaledGemm needs k a multiple of 16 (16-byte e4m3 loads), got {}", d.k));
      if (d.k > (std::int64_t{1} << 30))
        return Status(StatusCode::kNotSupported, fmt::format("weight-only ScaledGemm takes k <= 2^30, got {}", d.k));
      if (d.lda % 16 != 0 || d.ldb % 8 != 0)
        return Status(StatusCode::kMisaligned,
                      fmt::format("weight-only ScaledGemm needs lda a multiple of 16 and ldb of 8 (16-byte rows), "
                                  "got {} and {}",
                                  d.lda, d.ldb));
    } else if (d.scale_mode == ScaleMode::kRowwiseRms) {
      return Status(StatusCode::kNotSupported,
                    "the RMS-normalized rowwise mode (_rms) goes with the weight-only ScaledGemm (fp8e4m3 x "
                    "bf16/fp16) only");
    } else if (!is_fp8(b_type(d))) {
      return Status(StatusCode::kNotSupported,
                    fmt::format("ScaledGemm takes fp8e4m3/fp8e5m2 inputs, not {} for B (a 16-bit B goes with "
                                "an fp8e4m3 A only: weight-only)",
                                short_name(b_type(d))));
    }
    if (d.out_dtype != DataType::kBF16 && d.out_dtype != DataType::kF16 &&
        d.out_dtype != DataType::kF32)
      return Status(StatusCode::kNotSupported,
                    fmt::format("ScaledGemm output must be bf16, fp16 or fp32, not {}",
                                short_name(d.out_dtype)));
    if (d.epilogue != Epilogue::kNone && d.epilogue != Epilogue::kBias)
      return Status(StatusCode::kNotSupported, "ScaledGemm supports no epilogue or a bias only");
  } else {
    if (d.scale_mode != ScaleMode::kTensor) return bad("rowwise scales need GemmOp::kScaledGemm");
    if (b_type(d) != d.dtype)
      return Status(StatusCode::kNotSupported,
                    fmt::format("A and B must have one type outside ScaledGemm (A {}, B {})",
                                short_name(d.dtype), short_name(b_type(d))));
    if (is_fp8(d.dtype))
      return Status(StatusCode::kNotSupported,
                    fmt::format("{} inputs need GemmOp::kScaledGemm", short_name(d.dtype)));
    const DataType want = d.dtype == DataType::kTF32 ? DataType::kF32 : d.dtype;
    if (d.out_dtype != want)
      return Status(StatusCode::kNotSupported,
                    fmt::format("{} GEMM writes {}, not {}", short_name(d.dtype), short_name(want),
                                short_name(d.out_dtype)));
  }
  if (d.op == GemmOp::kGemmAndBias) {
    if (d.epilogue == Epilogue::kNone) return bad("GemmAndBias needs an epilogue (bias, relu, gelu)");
    if (d.beta != 0) return bad(fmt::format("GemmAndBias requires beta = 0 (got {})", d.beta));
  } else if (!scaled && d.epilogue != Epilogue::kNone) {
    return bad("an epilogue needs GemmOp::kGemmAndBias");
  }
  // cuBLASLt's bias epilogue takes no beta; the weight-only problem runs on our kernels alone, which
  // add both (an FP8 decode step's residual add into a layer with an output bias).
  if (scaled && !is_weight_only(d) && d.epilogue == Epilogue::kBias && d.beta != 0)
    return bad(fmt::format("ScaledGemm with bias requires beta = 0 (got {})", d.beta));
  if (d.op == GemmOp::kGemmStridedBatched) {
    if (d.batch < 1) return bad(fmt::format("batch must be >= 1 (got {})", d.batch));
    if (d.batch > kMaxDim) return bad(fmt::format("batch must fit in 32 bits (got {})", d.batch));
    // stride * (batch - 1) + span elements must be addressable in bytes (tuning allocates that much).
    const std::int64_t max_elems = std::numeric_limits<std::int64_t>::max() / 8;
    for (auto [name, stride, sp] : {std::tuple{"stride_a", d.stride_a, span(d.lda, a_rows(d), a_cols(d))},
                                    std::tuple{"stride_b", d.stride_b, span(d.ldb, b_rows(d), b_cols(d))},
                                    std::tuple{"stride_c", d.stride_c, span(d.ldc, d.m, d.n)}})
      if (d.batch > 1 && stride > (max_elems - sp) / (d.batch - 1))
        return bad(fmt::format("{} = {} times {} batches overflows the address range", name, stride, d.batch));
    if (d.stride_a < 0 || d.stride_b < 0)
      return bad(fmt::format("stride_a and stride_b must be >= 0 (got {}, {})", d.stride_a, d.stride_b));
    if (d.batch > 1 && d.stride_c < span(d.ldc, d.m, d.n))
      return bad(fmt::format("stride_c must be >= ldc*(n-1)+m = {} so batch outputs do not overlap "
                             "(got {})", span(d.ldc, d.m, d.n), d.stride_c));
  } else if (d.batch != 1) {
    return bad(fmt::format("batch must be 1 outside GemmStridedBatched (got {})", d.batch));
  }
  return Status::ok();
}

Status validate(const GemmDesc& d, const GemmOperands& o) {
  TUNABLE_RETURN_IF_ERROR(validate(d));
  if (o.a == nullptr) return bad("operand A is null");
  if (o.b == nullptr) return bad("operand B is null");
  if (o.c == nullptr) return bad("operand C is null");
  const bool needs_bias = d.epilogue != Epilogue::kNone;
  if (needs_bias && o.bias == nullptr) return bad("the epilogue needs a bias pointer, got null");
  const bool wo = is_weight_only(d);
  if (wo && o.scale_a == nullptr) return bad("weight-only ScaledGemm needs scale_a (m floats on the device)");
  if (d.op == GemmOp::kScaledGemm && !wo && (o.scale_a == nullptr || o.scale_b == nullptr))
    return bad("ScaledGemm needs scale_a and scale_b device pointers");
  auto misaligned = [](const void* p, std::size_t align) {
    return reinterpret_cast<std::uintptr_t>(p) % align != 0;
  };
  // cuBLASLt refuses FP8 scale pointers that are not 16-byte aligned (CUBLAS_STATUS_NOT_SUPPORTED).
  if (d.op == GemmOp::kScaledGemm && (misaligned(o.scale_a, 16) || (!wo && misaligned(o.scale_b, 16))))
    return Status(StatusCode::kMisaligned, wo ? "weight-only ScaledGemm scale_a must be 16-byte aligned"
                                              : "ScaledGemm scale_a and scale_b must be 16-byte aligned");
  if (wo && (misaligned(o.a, 16) || misaligned(o.b, 16)))
    return Status(StatusCode::kMisaligned, "weight-only ScaledGemm needs 16-byte aligned A and B (16-byte loads)");
  const std::size_t in = size_of(d.dtype), in_b = size_of(b_type(d)), out = size_of(d.out_dtype);
  if (misaligned(o.a, in) || misaligned(o.b, in_b))
    return Status(StatusCode::kMisaligned,
                  fmt::format("A and B must be aligned to their element size ({} and {} bytes)", in,
                              in_b));
  if (misaligned(o.c, out) || (needs_bias && misaligned(o.bias, out)))
    return Status(StatusCode::kMisaligned,
                  fmt::format("C and bias must be aligned to their element size ({} bytes)", out));
  return Status::ok();
}

std::string op_signature(const GemmDesc& d) {
  const std::string ab = fmt::format("{}{}", static_cast<char>(std::toupper(to_char(d.transa))),
                                     static_cast<char>(std::toupper(to_char(d.transb))));
  if (d.op == GemmOp::kScaledGemm)
    return fmt::format("{}_{}_{}_{}_{}", op_prefix(d.op), tunableop_name(d.dtype),
                       tunableop_name(b_type(d)), tunableop_name(d.out_dtype), ab);
  return fmt::format("{}_{}_{}", op_prefix(d.op), tunableop_name(d.dtype), ab);
}

std::string params_signature(const GemmDesc& d) {
  std::string s = fmt::format("{}{}_{}_{}_{}", to_char(d.transa), to_char(d.transb), d.m, d.n, d.k);
  if (d.op == GemmOp::kGemmStridedBatched) s += fmt::format("_B_{}", d.batch);
  s += fmt::format("_ld_{}_{}_{}", d.lda, d.ldb, d.ldc);
  if (d.scale_mode == ScaleMode::kRowwise) s += "_rw";
  if (d.scale_mode == ScaleMode::kRowwiseRms) s += "_rms";
  s += epilogue_suffix(d.epilogue);
  return s;
}

Status parse_gemm_signature(const std::string& op_sig, const std::string& params_sig,
                            GemmDesc* out) {
  // std::regex recurses per character: bound the input before matching (the results file's lines
  // are bounded already; a direct caller's strings are not).
  constexpr std::size_t kMaxSignature = 512;
  if (op_sig.size() > kMaxSignature || params_sig.size() > kMaxSignature)
    return Status(StatusCode::kParseError,
                  fmt::format("GEMM signature longer than {} characters ({} and {})", kMaxSignature,
                              op_sig.size(), params_sig.size()));
  static const std::regex op_re(
      "^(GemmTunableOp|GemmStridedBatchedTunableOp|GemmAndBiasTunableOp|ScaledGemmTunableOp)_"
      "([A-Za-z0-9_]+?)_([NT])([NT])$");
  static const std::regex ps_re(
      "^([nt])([nt])_(\\d{1,10})_(\\d{1,10})_(\\d{1,10})(?:_B_(\\d{1,10}))?"
      "(?:_ld_(\\d{1,10})_(\\d{1,10})_(\\d{1,10}))?(_rw|_rms)?(?:_ep_(bias|relu|gelu))?$");
  std::smatch om, pm;
  if (!std::regex_match(op_sig, om, op_re))
    return Status(StatusCode::kParseError, fmt::format("'{}' is not a GEMM op signature", op_sig));
  if (!std::regex_match(params_sig, pm, ps_re))
    return Status(StatusCode::kParseError,
                  fmt::format("'{}' is not a GEMM params signature", params_sig));
  GemmDesc d;
  const std::string prefix = om[1];
  d.op = prefix == "GemmTunableOp"                 ? GemmOp::kGemm
         : prefix == "GemmStridedBatchedTunableOp" ? GemmOp::kGemmStridedBatched
         : prefix == "GemmAndBiasTunableOp"        ? GemmOp::kGemmAndBias
                                                   : GemmOp::kScaledGemm;
  const std::string types = om[2];
  if (d.op == GemmOp::kScaledGemm) {
    // "<A>_<B>_<C>", each a TunableOp type name that may itself contain '_'.
    static const std::regex t3(
        "^(Float8_e4m3fn|Float8_e5m2)_(Float8_e4m3fn|Float8_e5m2|BFloat16|Half)_([A-Za-z0-9]+)$");
    std::smatch tm;
    if (!std::regex_match(types, tm, t3))
      return Status(StatusCode::kParseError, fmt::format("bad ScaledGemm types in '{}'", op_sig));
    d.dtype = *parse_data_type(tm[1].str());
    if (tm[2] != tm[1]) d.dtype_b = *parse_data_type(tm[2].str());
    auto o = parse_data_type(tm[3].str());
    if (!o) return Status(StatusCode::kParseError, fmt::format("unknown output type in '{}'", op_sig));
    d.out_dtype = *o;
  } else {
    auto t = parse_data_type(types);
    if (!t) return Status(StatusCode::kParseError, fmt::format("unknown type '{}' in '{}'", types, op_sig));
    d.dtype = *t;
    d.out_dtype = *t == DataType::kTF32 ? DataType::kF32 : *t;
  }
  d.transa = *parse_transpose(pm[1].str()[0]);
  d.transb = *parse_transpose(pm[2].str()[0]);
  if (std::toupper(to_char(d.transa)) != om[3].str()[0] ||
      std::toupper(to_char(d.transb)) != om[4].str()[0])
    return Status(StatusCode::kParseError,
                  fmt::format("transposes of '{}' and '{}' disagree", op_sig, params_sig));
  d.m = std::stoll(pm[3]);
  d.n = std::stoll(pm[4]);
  d.k = std::stoll(pm[5]);
  const bool has_batch = pm[6].matched;
  if (has_batch != (d.op == GemmOp::kGemmStridedBatched))
    return Status(StatusCode::kParseError,
                  fmt::format("'{}': the _B_ batch field goes with GemmStridedBatched only", params_sig));
  d.batch = has_batch ? std::stoll(pm[6]) : 1;
  if (pm[7].matched) {
    d.lda = std::stoll(pm[7]);
    d.ldb = std::stoll(pm[8]);
    d.ldc = std::stoll(pm[9]);
  } else {  // pre-2.6 TunableOp files carry no leading dimensions: tight ones
    d.lda = a_rows(d);
    d.ldb = b_rows(d);
    d.ldc = d.m;
  }
  if (d.op == GemmOp::kGemmStridedBatched) {
    d.stride_a = span(d.lda, a_rows(d), a_cols(d));
    d.stride_b = span(d.ldb, b_rows(d), b_cols(d));
    d.stride_c = span(d.ldc, d.m, d.n);
  }
  if (pm[10].matched) {
    if (d.op != GemmOp::kScaledGemm)
      return Status(StatusCode::kParseError,
                    fmt::format("'{}': the {} (rowwise scales) field goes with ScaledGemm only", params_sig,
                                pm[10].str()));
    d.scale_mode = pm[10] == "_rw" ? ScaleMode::kRowwise : ScaleMode::kRowwiseRms;
  }
  if (pm[11].matched) {
    const std::string e = pm[11];
    d.epilogue = e == "bias" ? Epilogue::kBias : e == "relu" ? Epilogue::kBiasRelu : Epilogue::kBiasGelu;
  }
  Status st = validate(d);
  if (!st.is_ok())
    return Status(StatusCode::kParseError,
                  fmt::format("'{},{}' describes an invalid problem: {}", op_sig, params_sig,
                              st.message()));
  *out = d;
  return Status::ok();
}

ProblemKey gemm_key(const GemmArgs& a) {
  const GemmDesc& d = a.desc;
  // B's type is keyed even where it equals A's, so setting dtype_b to dtype is the same problem.
  return ProblemKey{static_cast<std::int64_t>(d.op), static_cast<std::int64_t>(d.dtype),
                    static_cast<std::int64_t>(d.out_dtype), to_char(d.transa), to_char(d.transb),
                    d.m, d.n, d.k, d.lda, d.ldb, d.ldc, d.batch, d.stride_a, d.stride_b,
                    d.stride_c, static_cast<std::int64_t>(d.epilogue),
                    static_cast<std::int64_t>(b_type(d)), static_cast<std::int64_t>(d.scale_mode), 0, 0};
}

Tolerance gemm_tolerance(const GemmDesc& d) {
  switch (d.dtype) {
    case DataType::kF64: return {1e-10, 1e-10};
    case DataType::kF32: return {1e-5, 1e-5};
    case DataType::kTF32: return {5e-3, 5e-3};
    case DataType::kF16: return {5e-3, 5e-3};
    case DataType::kBF16: return {2e-2, 2e-2};
    case DataType::kF8E4M3:
    case DataType::kF8E5M2: return {3e-2, 3e-2};
  }
  return {1e-5, 1e-5};
}

std::vector<std::string> gemm_neighbours(const GemmArgs& a, const std::vector<ResultRecord>& stored) {
  const GemmDesc& d = a.desc;
  if (d.op == GemmOp::kGemmStridedBatched) return {};
  const std::string op = op_signature(d);
  const auto b_tight = [](const GemmDesc& g) { return g.ldb == b_rows(g); };
  std::vector<std::pair<std::int64_t, std::string>> above;
  for (const ResultRecord& r : stored) {
    // cuBLAS(Lt) configurations are picked for one n; Default lends nothing Default would not do.
    const bool lends = r.solution != "Default" && r.solution.compare(0, 6, "cublas") != 0 &&
                       r.solution.compare(0, 6, "cuBLAS") != 0;
    const std::string& ps = r.params_signature;
    GemmDesc s;
    if (!lends || !parse_gemm_signature(op, ps, &s).is_ok() || s.n <= d.n || s.n > 2 * d.n) continue;
    if (s.op != d.op || s.m != d.m || s.k != d.k || s.lda != d.lda || s.ldc != d.ldc || s.epilogue != d.epilogue ||
        !(s.ldb == d.ldb || (b_tight(s) && b_tight(d))))
      continue;
    above.emplace_back(s.n, ps);
  }
  std::sort(above.begin(), above.end());
  std::vector<std::string> out;
  for (auto& a : above) out.push_back(std::move(a.second));
  return out;
}

}  // namespace tunable
