// Fused ops: argument validation, TunableOp-style signatures and cache keys (built and parsed in
// one place). Host only: nothing here touches CUDA, so it runs (and is tested) without a GPU.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "ops/ops_args.hpp"

namespace tunable {
namespace {

Status bad(std::string s) { return Status(StatusCode::kInvalidArgument, std::move(s)); }
Status parse_error(std::string s) { return Status(StatusCode::kParseError, std::move(s)); }

/// Rows limit: its power-of-two bucket (2^30) stays a row count the signature parser reads back and
/// a grid the reference kernel can launch.
constexpr std::int64_t kMaxRows = std::int64_t{1} << 30;
/// Row length limit: keeps every in-row index of the kernels within 32 bits.
constexpr std::int64_t kMaxHidden = std::int64_t{1} << 28;

bool supported_dtype(DataType t) {
  return t == DataType::kBF16 || t == DataType::kF16 || t == DataType::kF32;
}

Status check_dtype(DataType t) {
  if (supported_dtype(t)) return Status::ok();
  return Status(StatusCode::kNotSupported,
                fmt::format("fused ops take bf16, fp16 or fp32 data, not {}", short_name(t)));
}

Status check_count(const char* what, std::int64_t v, std::int64_t max) {
  if (v <= 0) return bad(fmt::format("{} must be positive (got {})", what, v));
  if (v > max) return bad(fmt::format("{} must be <= {} (got {})", what, max, v));
  return Status::ok();
}

/// stride >= min_len, and rows rows of it addressable in bytes without overflow.
Status check_stride(const char* what, std::int64_t stride, std::int64_t min_len, std::int64_t rows,
                    std::size_t elem) {
  if (stride < min_len)
    return bad(fmt::format("{} must be >= {} (got {})", what, min_len, stride));
  const std::int64_t max_elems = std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(elem);
  if (stride > max_elems / rows)
    return bad(fmt::format("{} = {} times {} rows overflows the address range", what, stride, rows));
  return Status::ok();
}

Status check_pointer(const char* what, const void* p, std::size_t align) {
  if (p == nullptr) return bad(fmt::format("{} must not be null", what));
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  if (addr % align != 0)
    return Status(StatusCode::kMisaligned,
                  fmt::format("{} ({:#x}) is not aligned to its {}-byte elements", what, addr, align));
  return Status::ok();
}

Status check_enums(NormWeight w, Fp8Scaling f) {
  if (w != NormWeight::kLlama && w != NormWeight::kGemma)
    return bad(fmt::format("weight convention {} is not kLlama or kGemma", static_cast<int>(w)));
  if (f != Fp8Scaling::kNone && f != Fp8Scaling::kStatic && f != Fp8Scaling::kDynamicPerToken)
    return bad(fmt::format("fp8 scaling {} is not kNone, kStatic or kDynamicPerToken", static_cast<int>(f)));
  return Status::ok();
}

/// The bytes an operand covers: `rows` rows of `len` bytes, `stride` bytes apart.
struct Span {
  const char* name;
  std::int64_t lo = 0, rows = 1, stride = 0, len = 0;
  bool written = false;
};

Span span(const char* name, const void* p, std::int64_t rows, std::int64_t stride, std::int64_t len,
          std::size_t elem, bool written) {
  const auto e = static_cast<std::int64_t>(elem);
  return Span{name, static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p)), rows, stride * e, len * e, written};
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

/// Whether two operands share a byte. Rows with one stride (a slice of a wider buffer next to
/// another slice of it) are checked row by row; otherwise by their whole extents, which may refuse
/// an interleaving that does not touch.
bool overlap(const Span& a, const Span& b) {
  // 128-bit ends: a pointer plus an extent validate() allows may pass 2^63.
  const __int128 a_end = static_cast<__int128>(a.lo) + (a.rows - 1) * a.stride + a.len,
                 b_end = static_cast<__int128>(b.lo) + (b.rows - 1) * b.stride + b.len;
  if (a.lo >= b_end || b.lo >= a_end) return false;
  if (a.stride != b.stride || a.rows == 1 || b.rows == 1) return true;
  // Row i of a meets row j of b iff d - a.len < (i - j) * S < d + b.len, d = b.lo - a.lo.
  const std::int64_t S = a.stride, d = b.lo - a.lo;
  const std::int64_t k_lo = std::max(-(b.rows - 1), floor_div(d - a.len, S) + 1);
  const std::int64_t k_hi = std::min(a.rows - 1, -floor_div(-(d + b.len), S) - 1);
  return k_lo <= k_hi;
}

/// A kernel reads each operand while it writes others (through the non-coherent path, in another
/// block's order): any byte shared by a written operand and another operand is refused, except the
/// pair the caller allows (in place: the same pointer and stride).
Status check_overlaps(const std::vector<Span>& spans, std::pair<int, int> allowed = {-1, -1}) {
  for (std::size_t i = 0; i < spans.size(); ++i)
    for (std::size_t j = i + 1; j < spans.size(); ++j) {
      const Span &a = spans[i], &b = spans[j];
      if (!a.written && !b.written) continue;
      if (static_cast<int>(i) == allowed.first && static_cast<int>(j) == allowed.second) continue;
      if (overlap(a, b)) return bad(fmt::format("{} and {} overlap in memory", a.name, b.name));
    }
  return Status::ok();
}

const char* fp8_suffix(Fp8Scaling f) {
  switch (f) {
    case Fp8Scaling::kNone: return "";
    case Fp8Scaling::kStatic: return "_fp8static";
    case Fp8Scaling::kDynamicPerToken: return "_fp8dyn";
  }
  return "";
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t at = s.find(sep, begin);
    out.push_back(s.substr(begin, at == std::string::npos ? std::string::npos : at - begin));
    if (at == std::string::npos) return out;
    begin = at + 1;
  }
}

/// A positive decimal without sign or leading zeros, <= max.
bool parse_positive(const std::string& s, std::int64_t max, std::int64_t* out) {
  if (s.empty() || s.size() > 18 || s[0] == '0') return false;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}

/// "<prefix><dtype>_<rest...>": the dtype and the remaining tokens.
Status parse_op_prefix(const std::string& op_sig, const std::string& prefix, DataType* dtype,
                       std::vector<std::string>* rest) {
  if (op_sig.compare(0, prefix.size(), prefix) != 0)
    return parse_error(fmt::format("op signature '{}' does not start with {}", op_sig, prefix));
  std::vector<std::string> tok = split(op_sig.substr(prefix.size()), '_');
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    if (tok[0] == tunableop_name(t)) {
      *dtype = t;
      rest->assign(tok.begin() + 1, tok.end());
      return Status::ok();
    }
  }
  return parse_error(fmt::format("op signature '{}': '{}' is not BFloat16, Half or float", op_sig,
                                 tok[0]));
}

/// "rows_<R>_<dim_name>_<D>" with R a power of two.
Status parse_params(const std::string& params_sig, const char* dim_name, std::int64_t* rows,
                    std::int64_t* dim) {
  const std::vector<std::string> tok = split(params_sig, '_');
  if (tok.size() != 4 || tok[0] != "rows" || tok[2] != dim_name)
    return parse_error(fmt::format("params signature '{}' is not rows_<R>_{}_<N>", params_sig, dim_name));
  if (!parse_positive(tok[1], kMaxRows, rows))
    return parse_error(fmt::format("params signature '{}': bad row count '{}'", params_sig, tok[1]));
  if ((*rows & (*rows - 1)) != 0)
    return parse_error(fmt::format("params signature '{}': rows {} is not a power of two (a bucket)",
                                   params_sig, *rows));
  if (!parse_positive(tok[3], kMaxHidden, dim))
    return parse_error(fmt::format("params signature '{}': bad {} '{}'", params_sig, dim_name, tok[3]));
  return Status::ok();
}

}  // namespace

std::size_t out_size(DataType dtype, Fp8Scaling fp8) {
  return fp8 == Fp8Scaling::kNone ? size_of(dtype) : 1;
}

std::int64_t rows_bucket(std::int64_t rows) {
  std::int64_t b = 1;
  while (b < rows) b <<= 1;
  return b;
}

// ---- validation ------------------------------------------------------------------------------------

Status validate(const NormArgs& a, bool with_pointers) {
  const NormProblem& p = a.prob;
  TUNABLE_RETURN_IF_ERROR(check_dtype(p.dtype));
  TUNABLE_RETURN_IF_ERROR(check_enums(p.weight, p.fp8));
  TUNABLE_RETURN_IF_ERROR(check_count("rows", p.rows, kMaxRows));
  TUNABLE_RETURN_IF_ERROR(check_count("hidden", p.hidden, kMaxHidden));
  const std::size_t es = size_of(p.dtype), oes = out_size(p.dtype, p.fp8);
  TUNABLE_RETURN_IF_ERROR(check_stride("x_row_stride", a.x_stride, p.hidden, p.rows, es));
  TUNABLE_RETURN_IF_ERROR(check_stride("out_row_stride", a.out_stride, p.hidden, p.rows, oes));
  if (p.fused)
    TUNABLE_RETURN_IF_ERROR(check_stride("residual_row_stride", a.residual_stride, p.hidden, p.rows, es));
  // eps = 0 turns an all-zero row (a padded token) into 0 * rsqrt(0) = NaN.
  if (!std::isfinite(a.eps) || !(a.eps > 0))
    return bad(fmt::format("eps must be finite and > 0 (got {})", a.eps));
  if (!with_pointers) return Status::ok();

  TUNABLE_RETURN_IF_ERROR(check_pointer("x", a.x, es));
  TUNABLE_RETURN_IF_ERROR(check_pointer("weight", a.weight, es));
  TUNABLE_RETURN_IF_ERROR(check_pointer("out", a.out, oes));
  if (p.fused) TUNABLE_RETURN_IF_ERROR(check_pointer("residual", a.residual, es));
  if (p.fp8 == Fp8Scaling::kStatic)
    TUNABLE_RETURN_IF_ERROR(check_pointer("fp8 scale (static scaling)", a.scale, sizeof(float)));
  if (p.fp8 == Fp8Scaling::kDynamicPerToken)
    TUNABLE_RETURN_IF_ERROR(check_pointer("fp8 token_scales (dynamic per-token scaling)",
                                          a.token_scales, sizeof(float)));
  if (a.out == a.x) {
    if (p.fp8 != Fp8Scaling::kNone)
      return bad("out may equal x (in place) only without an FP8 output");
    if (a.out_stride != a.x_stride)
      return bad(fmt::format("out equals x (in place) but out_row_stride {} != x_row_stride {}",
                             a.out_stride, a.x_stride));
  }
  std::vector<Span> spans = {span("out", a.out, p.rows, a.out_stride, p.hidden, oes, true),
                             span("x", a.x, p.rows, a.x_stride, p.hidden, es, false),
                             span("weight", a.weight, 1, p.hidden, p.hidden, es, false)};
  if (p.fused) spans.push_back(span("residual", a.residual, p.rows, a.residual_stride, p.hidden, es, true));
  if (p.fp8 == Fp8Scaling::kStatic) spans.push_back(span("fp8 scale", a.scale, 1, 1, 1, sizeof(float), false));
  if (p.fp8 == Fp8Scaling::kDynamicPerToken)
    spans.push_back(span("fp8 token_scales", a.token_scales, p.rows, 1, 1, sizeof(float), true));
  // out == x with equal strides is the in-place norm (each element read before it is written).
  return check_overlaps(spans, a.out == a.x ? std::pair<int, int>{0, 1} : std::pair<int, int>{-1, -1});
}

Status validate(const ActArgs& a, bool with_pointers) {
  const ActProblem& p = a.prob;
  TUNABLE_RETURN_IF_ERROR(check_dtype(p.dtype));
  if (p.act != Activation::kSilu && p.act != Activation::kGeluTanh)
    return bad(fmt::format("activation {} is not kSilu or kGeluTanh", static_cast<int>(p.act)));
  TUNABLE_RETURN_IF_ERROR(check_enums(NormWeight::kLlama, p.fp8));
  if (p.fp8 == Fp8Scaling::kDynamicPerToken)
    return Status(StatusCode::kNotSupported,
                  "act_and_mul offers FP8 output with a static scale only, not dynamic per-token");
  TUNABLE_RETURN_IF_ERROR(check_count("rows", p.rows, kMaxRows));
  TUNABLE_RETURN_IF_ERROR(check_count("d", p.d, kMaxHidden / 2));
  const std::size_t es = size_of(p.dtype), oes = out_size(p.dtype, p.fp8);
  TUNABLE_RETURN_IF_ERROR(check_stride("x_row_stride", a.x_stride, 2 * p.d, p.rows, es));
  TUNABLE_RETURN_IF_ERROR(check_stride("out_row_stride", a.out_stride, p.d, p.rows, oes));
  if (!with_pointers) return Status::ok();

  TUNABLE_RETURN_IF_ERROR(check_pointer("x", a.x, es));
  TUNABLE_RETURN_IF_ERROR(check_pointer("out", a.out, oes));
  if (p.fp8 == Fp8Scaling::kStatic)
    TUNABLE_RETURN_IF_ERROR(check_pointer("fp8 scale (static scaling)", a.scale, sizeof(float)));
  std::vector<Span> spans = {span("out", a.out, p.rows, a.out_stride, p.d, oes, true),
                             span("x", a.x, p.rows, a.x_stride, 2 * p.d, es, false)};
  if (p.fp8 == Fp8Scaling::kStatic) spans.push_back(span("fp8 scale", a.scale, 1, 1, 1, sizeof(float), false));
  return check_overlaps(spans);
}

// ---- signatures ---------------------------------------------------------------------------------------

std::string op_signature(const NormProblem& p) {
  return fmt::format("{}_{}{}{}", p.fused ? "FusedAddRmsNormTunableOp" : "RmsNormTunableOp",
                     tunableop_name(p.dtype), p.weight == NormWeight::kGemma ? "_gemma" : "",
                     fp8_suffix(p.fp8));
}

std::string params_signature(const NormProblem& p) {
  return fmt::format("rows_{}_hidden_{}", rows_bucket(p.rows), p.hidden);
}

std::string op_signature(const ActProblem& p) {
  return fmt::format("ActAndMulTunableOp_{}_{}{}", tunableop_name(p.dtype),
                     p.act == Activation::kSilu ? "silu" : "gelutanh", fp8_suffix(p.fp8));
}

std::string params_signature(const ActProblem& p) {
  return fmt::format("rows_{}_d_{}", rows_bucket(p.rows), p.d);
}

Status parse_norm_signature(const std::string& op_sig, const std::string& params_sig,
                            NormProblem* out) {
  NormProblem p;
  std::vector<std::string> rest;
  const bool fused = op_sig.rfind("FusedAddRmsNormTunableOp_", 0) == 0;
  TUNABLE_RETURN_IF_ERROR(parse_op_prefix(
      op_sig, fused ? "FusedAddRmsNormTunableOp_" : "RmsNormTunableOp_", &p.dtype, &rest));
  p.fused = fused;
  std::size_t i = 0;
  if (i < rest.size() && rest[i] == "gemma") {
    p.weight = NormWeight::kGemma;
    ++i;
  }
  if (i < rest.size() && rest[i] == "fp8static") {
    p.fp8 = Fp8Scaling::kStatic;
    ++i;
  } else if (i < rest.size() && rest[i] == "fp8dyn") {
    p.fp8 = Fp8Scaling::kDynamicPerToken;
    ++i;
  }
  if (i != rest.size())
    return parse_error(fmt::format("op signature '{}': unexpected '{}' (expected [_gemma][_fp8static|_fp8dyn])",
                                   op_sig, rest[i]));
  TUNABLE_RETURN_IF_ERROR(parse_params(params_sig, "hidden", &p.rows, &p.hidden));
  *out = p;
  return Status::ok();
}

Status parse_act_signature(const std::string& op_sig, const std::string& params_sig,
                           ActProblem* out) {
  ActProblem p;
  std::vector<std::string> rest;
  TUNABLE_RETURN_IF_ERROR(parse_op_prefix(op_sig, "ActAndMulTunableOp_", &p.dtype, &rest));
  if (rest.empty() || (rest[0] != "silu" && rest[0] != "gelutanh"))
    return parse_error(fmt::format("op signature '{}': expected _silu or _gelutanh after the dtype", op_sig));
  p.act = rest[0] == "silu" ? Activation::kSilu : Activation::kGeluTanh;
  std::size_t i = 1;
  if (i < rest.size() && rest[i] == "fp8static") {
    p.fp8 = Fp8Scaling::kStatic;
    ++i;
  }
  if (i != rest.size())
    return parse_error(fmt::format("op signature '{}': unexpected '{}' (expected [_fp8static])", op_sig, rest[i]));
  TUNABLE_RETURN_IF_ERROR(parse_params(params_sig, "d", &p.rows, &p.d));
  *out = p;
  return Status::ok();
}

ProblemKey norm_key(const NormArgs& a) {
  const NormProblem& p = a.prob;
  return ProblemKey{0, p.fused, static_cast<std::int64_t>(p.dtype), static_cast<std::int64_t>(p.weight),
                    static_cast<std::int64_t>(p.fp8), rows_bucket(p.rows), p.hidden};
}

ProblemKey act_key(const ActArgs& a) {
  const ActProblem& p = a.prob;
  return ProblemKey{1, 0, static_cast<std::int64_t>(p.dtype), static_cast<std::int64_t>(p.act),
                    static_cast<std::int64_t>(p.fp8), rows_bucket(p.rows), p.d};
}

}  // namespace tunable
