// GEMM entry points: C = alpha * op(A) * op(B) + beta * C, column-major as in BLAS.
//
// One descriptor covers the four op families TunableOp tunes; the family decides the op
// signature ("GemmTunableOp_BFloat16_TN") and which providers are asked for candidates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tunable/context.hpp"
#include "tunable/status.hpp"
#include "tunable/types.hpp"

namespace tunable {

enum class GemmOp {
  kGemm,                ///< one GEMM
  kGemmStridedBatched,  ///< `batch` GEMMs at fixed strides
  kGemmAndBias,         ///< one GEMM plus a bias vector (length m) and an optional activation
  kScaledGemm,          ///< FP8 inputs with per-tensor scale pointers, or FP8 weights alone (see dtype_b)
};

enum class Epilogue {
  kNone,
  kBias,      ///< C = alpha*op(A)op(B) + bias (beta must be 0, except on the weight-only problem)
  kBiasRelu,  ///< relu(... + bias)
  kBiasGelu,  ///< gelu_tanh(... + bias)
};

/// How kScaledGemm's scale_a and scale_b apply.
enum class ScaleMode {
  kTensor,   ///< one float each: C = alpha * scale_a * scale_b * op(A) op(B)
  /// Outer vectors (PyTorch's rowwise _scaled_mm): scale_a holds m floats, one per row of op(A) (an
  /// output channel of F.linear's TN GEMM), scale_b n floats, one per column of op(B) (a token):
  /// C[i][j] = alpha * scale_a[i] * scale_b[j] * (op(A) op(B))[i][j]. Per-channel weight and
  /// per-token activation scales, what FP8 weights need to keep their accuracy. Weight-only
  /// problems (a 16-bit B) have no scale_b: C[i][j] = alpha * scale_a[i] * (op(A) op(B))[i][j].
  kRowwise,
  /// The weight-only problem with each token RMS-normalized on the way in: kRowwise's scale_a, and
  /// per column j of op(B) the factor 1 / sqrt(mean over k of op(B)[k][j]^2 + rms_eps), computed
  /// by the kernel from B itself: C[i][j] = alpha * scale_a[i] * r_j * (op(A) op(B))[i][j]
  /// (+ beta C + bias). An RMSNorm whose weight the caller folded into A's columns, run inside the
  /// GEMM, so an FP8 decode step launches no norm before it. is_weight_only problems only; "_rms"
  /// in the params signature.
  kRowwiseRms,
};

struct GemmDesc {
  GemmOp op = GemmOp::kGemm;
  DataType dtype = DataType::kF32;      ///< type of A and B (kTF32: fp32 data, TF32 math)
  /// kScaledGemm only: B's type where it differs from A's (fp8e4m3 x fp8e5m2, the mix FP8
  /// training uses for gradients); empty means B has `dtype` too. bf16 or fp16 with an fp8e4m3 A
  /// is the weight-only problem of FP8 decode (is_weight_only): tn, rowwise scales (scale_a per
  /// row of op(A), no scale_b), C of B's type; served by our kernels, which convert A in registers
  /// and are built for few tokens (cuBLASLt has no kernel for it, so Default is ours too).
  std::optional<DataType> dtype_b;
  DataType out_dtype = DataType::kF32;  ///< type of C; equals dtype except kScaledGemm and kTF32
  Transpose transa = Transpose::kN;
  Transpose transb = Transpose::kN;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t batch = 1;  ///< kGemmStridedBatched only
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  ///< elements between batch entries
  double alpha = 1.0;
  double beta = 0.0;
  /// kGemmAndBias: kBias, kBiasRelu or kBiasGelu; kScaledGemm: kBias, with beta = 0 except on the
  /// weight-only problem (our kernels add both)
  Epilogue epilogue = Epilogue::kNone;
  ScaleMode scale_mode = ScaleMode::kTensor;  ///< kScaledGemm only; kRowwise adds "_rw" to the params signature
  /// ScaleMode::kRowwiseRms only: the epsilon under the square root, a normal positive fp32 value
  /// (the kernels compute in fp32: 1.2e-38 to 3.4e38). Like alpha and beta it is not
  /// part of the signatures (it does not change which kernel is fastest); parsing gives 1e-6.
  double rms_eps = 1e-6;

  /// A plain GEMM with tight leading dimensions for the given transposes.
  static GemmDesc make(DataType dtype, Transpose ta, Transpose tb, std::int64_t m, std::int64_t n,
                       std::int64_t k);
};

struct GemmOperands {
  const void* a = nullptr;  ///< column-major, lda >= rows of A as stored
  const void* b = nullptr;
  void* c = nullptr;
  const void* bias = nullptr;       ///< kGemmAndBias / kScaledGemm: m elements of out_dtype
  /// kScaledGemm: device pointers to one float each, or to m and n floats (ScaleMode::kRowwise);
  /// 16-byte aligned. Weight-only problems (kRowwise or kRowwiseRms): scale_a only (m floats),
  /// scale_b ignored.
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
};

/// B's element type: `dtype_b` where set, `dtype` otherwise.
inline DataType b_type(const GemmDesc& d) { return d.dtype_b.value_or(d.dtype); }

/// Tokens (n) the weight-only kernels take in one launch; above it Default launches once per this
/// many, reading the weight again each time (a caller with many tokens quantizes them instead).
/// Weight-only problems also need k a multiple of 16, lda of 16 and ldb of 8, and 16-byte aligned
/// A and B (the kernels' 16-byte loads); validate() says so by name.
inline constexpr std::int64_t kWeightOnlyTokens = 8;

/// Whether `d` is the weight-only FP8 problem: ScaledGemm of an fp8e4m3 A with a 16-bit B.
inline bool is_weight_only(const GemmDesc& d) {
  return d.op == GemmOp::kScaledGemm && d.dtype == DataType::kF8E4M3 &&
         (b_type(d) == DataType::kBF16 || b_type(d) == DataType::kF16);
}

/// Checks dims, leading dimensions, strides, op/dtype combinations; the message names the field.
Status validate(const GemmDesc& desc);
/// Validation plus operand pointers (non-null; alignment to the element size).
Status validate(const GemmDesc& desc, const GemmOperands& operands);

/// TunableOp's op signature, e.g. "GemmTunableOp_BFloat16_TN".
std::string op_signature(const GemmDesc& desc);
/// TunableOp's params signature, e.g. "tn_4096_1_4096_ld_4096_4096_4096".
std::string params_signature(const GemmDesc& desc);
/// Inverse of the two above (alpha = 1, beta = 0, strides tight where the signature omits them).
Status parse_gemm_signature(const std::string& op_sig, const std::string& params_sig,
                            GemmDesc* out);

/// Runs the GEMM through the context: lookup, tune on a miss (if enabled and tuning), dispatch.
/// CPU contexts take host pointers (stream ignored); CUDA contexts take device pointers.
Status gemm(Context& ctx, const GemmDesc& desc, const GemmOperands& operands,
            Stream stream = nullptr);

/// For callers that have their own GEMM to fall back on (the cuBLAS interposer): runs the GEMM on
/// `stream` only when the context has a result for it other than Default (stored, or tuned now if
/// the context tunes and the stream is not being captured) that can take these operands; otherwise
/// launches nothing and sets `*served` to false, recording the miss as gemm() would. `workspace`
/// (`workspace_bytes`) is the caller's, used when large enough; inside a stream capture nothing is
/// tuned, allocated or synchronized. CUDA contexts only.
Status gemm_if_tuned(Context& ctx, const GemmDesc& desc, const GemmOperands& operands, Stream stream,
                     void* workspace, std::size_t workspace_bytes, bool* served);

/// Tunes `desc` now (fresh random inputs; no user operands needed) unless a result exists.
/// Fills `solution` with the chosen name when non-null.
Status tune_gemm(Context& ctx, const GemmDesc& desc, std::string* solution = nullptr);

/// One candidate the tuner would consider: its name (as results files write it) and its provider.
struct GemmCandidate {
  std::string name;
  std::string provider;  ///< "default", "cublaslt_heuristic", "cublaslt_exhaustive", "skinny", "openblas", ...
};

/// The candidates for `desc` on the context's device, unchecked and untimed: Default first, then
/// each provider's in its own order (cuBLASLt's heuristic results in cuBLASLt's ranking). With
/// `provider` set, only that provider's (its name as above; an unknown name gives an empty list).
/// For comparing against, e.g., what cuBLASLt's own heuristic would run.
Status gemm_candidates(Context& ctx, const GemmDesc& desc, std::vector<GemmCandidate>* out,
                       const std::string& provider = "");

/// Runs the candidate named `solution` on `operands` without lookup or tuning: exactly what a
/// results file naming it would run. kInvalidArgument when no provider knows the name,
/// kNotSupported when it cannot serve this call (e.g. the pointers' alignment).
Status gemm_with_solution(Context& ctx, const GemmDesc& desc, const std::string& solution,
                          const GemmOperands& operands, Stream stream = nullptr);

}  // namespace tunable
