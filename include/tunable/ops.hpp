// Fused LLM kernels behind the tuning runtime: RMSNorm, residual add + RMSNorm and
// activation-and-mul, each with an optional FP8 e4m3 output.
//
// Every entry point takes raw device pointers of a CUDA context's device, row-major rows whose
// starts are `*_row_stride` elements apart (stride >= row length), and a stream. Launch
// configurations (threads per row, rows per block, vector width, fast/accurate sigmoid) are the
// candidates of one TunableOp per op signature, e.g. "FusedAddRmsNormTunableOp_BFloat16_gemma" with
// params "rows_1024_hidden_4096" (rows rounded up to a power of two), so they share the results
// file and the verbose tree with GEMM. A disabled context runs the "Default" candidate, which
// handles every valid problem (misaligned pointers and odd sizes take a scalar path).
//
// Arguments are validated on the host before any CUDA call; a bad one gives a Status whose
// message names it (kInvalidArgument, kMisaligned for pointers not aligned to their element,
// kNotSupported for dtypes and combinations the ops do not serve). An output may not share a byte
// with any other operand (the in-place forms below excepted); slices of one wider buffer that do
// not touch are fine. rows <= 2^30; eps finite and > 0. Nothing aborts.
#pragma once

#include <cstdint>
#include <string>

#include "tunable/context.hpp"
#include "tunable/status.hpp"
#include "tunable/types.hpp"

namespace tunable {

/// How RMSNorm applies its weight vector w to y = x / rms(x).
enum class NormWeight {
  kLlama,  ///< y * w
  kGemma,  ///< y * (1 + w), with 1 + w formed in fp32
};

/// The activation of act_and_mul: out = act(gate) * up.
enum class Activation {
  kSilu,      ///< x * sigmoid(x) (Llama's SwiGLU)
  kGeluTanh,  ///< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Gemma's GeGLU)
};

/// FP8 e4m3 output of the fused ops; y is the fp32 result before rounding.
enum class Fp8Scaling {
  kNone,             ///< out has the input dtype
  kStatic,           ///< out = saturate(y / *scale), one per-tensor scale
  kDynamicPerToken,  ///< scale_r = max(max|y_r| / 448, 1 / (448 * 512)); out = saturate(y / scale_r)
                     ///< (an all-zero row gets the floor; a row holding Inf gets scale Inf, NaN outputs)
};

struct Fp8Output {
  Fp8Scaling scaling = Fp8Scaling::kNone;
  /// kStatic: device pointer to one float, finite and > 0 (it lives on the device, so the host
  /// cannot check it: 0 saturates every output, a negative scale flips signs, NaN gives NaN)
  const float* scale = nullptr;
  float* token_scales = nullptr;  ///< kDynamicPerToken: device array [rows], written by the op

  static Fp8Output none() { return {}; }
  static Fp8Output static_scale(const float* scale) { return {Fp8Scaling::kStatic, scale, nullptr}; }
  static Fp8Output dynamic_per_token(float* token_scales) {
    return {Fp8Scaling::kDynamicPerToken, nullptr, token_scales};
  }
};

/// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, in fp32, rounded once to the output type.
///   out:    [rows, out_row_stride] of `dtype`, or of fp8 e4m3 when fp8.scaling != kNone;
///           may equal x (in place; the strides must then be equal)
///   x:      [rows, x_row_stride] of `dtype` (bf16, fp16 or fp32)
///   weight: [hidden] of `dtype`
///   eps:    > 0 (0 would turn an all-zero row, a padded token, into NaN)
Status rms_norm(Context& ctx, void* out, const void* x, const void* weight, std::int64_t rows,
                std::int64_t hidden, std::int64_t x_row_stride, std::int64_t out_row_stride,
                float eps, DataType dtype, NormWeight convention = NormWeight::kLlama,
                Stream stream = nullptr, const Fp8Output& fp8 = Fp8Output::none());

/// residual <- round_dtype(x + residual), then out <- rms_norm(residual) as above: the rounded
/// residual (exactly bf16(x + r) for bf16) is what gets normalized.
///   residual: [rows, residual_row_stride] of `dtype`, read and written in place
///   out:      may equal x for vLLM's in-place form (x then holds the normalized rows on return;
///             equal strides required); it must not overlap residual or weight otherwise
Status fused_add_rms_norm(Context& ctx, void* out, const void* x, void* residual,
                          const void* weight, std::int64_t rows, std::int64_t hidden,
                          std::int64_t x_row_stride, std::int64_t residual_row_stride,
                          std::int64_t out_row_stride, float eps, DataType dtype,
                          NormWeight convention = NormWeight::kLlama, Stream stream = nullptr,
                          const Fp8Output& fp8 = Fp8Output::none());

/// out[r, i] = act(x[r, i]) * x[r, d + i] for i < d: each x row is [gate (d) | up (d)].
///   x:   [rows, x_row_stride >= 2 d] of `dtype`
///   out: [rows, out_row_stride >= d] of `dtype`, or fp8 e4m3 with fp8.scaling == kStatic
///        (dynamic per-token scaling is not offered for this op)
Status act_and_mul(Context& ctx, void* out, const void* x, std::int64_t rows, std::int64_t d,
                   std::int64_t x_row_stride, std::int64_t out_row_stride, DataType dtype,
                   Activation act = Activation::kSilu, Stream stream = nullptr,
                   const Fp8Output& fp8 = Fp8Output::none());

/// A fused-op problem as its tuning sees it (no pointers): for the questions below.
enum class FusedOp { kRmsNorm, kFusedAddRmsNorm, kActAndMul };
struct FusedOpProblem {
  FusedOp op = FusedOp::kRmsNorm;
  DataType dtype = DataType::kBF16;
  std::int64_t rows = 0;
  std::int64_t hidden = 0;                    ///< act_and_mul: d (each x row holds 2 d)
  NormWeight convention = NormWeight::kLlama;  ///< norms only
  Activation activation = Activation::kSilu;   ///< act_and_mul only
  Fp8Scaling fp8 = Fp8Scaling::kNone;
};

/// The signatures the problem's result is stored under in a results file (rows rounded up to their
/// bucket), e.g. ("FusedAddRmsNormTunableOp_BFloat16", "rows_1024_hidden_4096"); kInvalidArgument /
/// kNotSupported as the op itself would refuse the problem.
Status fused_op_signatures(const FusedOpProblem& problem, std::string* op_signature,
                           std::string* params_signature);

/// The launch configuration Default runs for the problem on the context's device (e.g.
/// "rms_bf16_t256_r1_v8"), so that a report can say what an untuned call ran.
Status fused_op_default_configuration(Context& ctx, const FusedOpProblem& problem, std::string* name);

/// Tunes the problem a pair of signatures names (as found in a results or untuned file), with
/// fresh random inputs, unless a result exists; `solution` receives the chosen candidate's name.
/// E.g. ("FusedAddRmsNormTunableOp_BFloat16", "rows_1024_hidden_4096").
Status tune_fused_op(Context& ctx, const std::string& op_signature,
                     const std::string& params_signature, std::string* solution = nullptr);

}  // namespace tunable
