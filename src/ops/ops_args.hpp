// Argument bundles, signatures and launch configurations of the fused ops (host-only; no CUDA).
//
// Op signatures name everything that selects kernels, TunableOp style:
//   RmsNormTunableOp_<dtype>[_gemma][_fp8static|_fp8dyn]
//   FusedAddRmsNormTunableOp_<dtype>[_gemma][_fp8static|_fp8dyn]
//   ActAndMulTunableOp_<dtype>_<silu|gelutanh>[_fp8static]
// with <dtype> TunableOp's spelling (BFloat16, Half, float). Params signatures carry the sizes,
// rows rounded up to a power of two: "rows_1024_hidden_4096" (norms), "rows_16_d_14336" (act).
// Candidate names are generated from a config and parsed back by its inverse:
//   rms_<vec16|scalar>_t<threads per row>_r<rows per block>_i<items>
//   rms_vec16_t<threads per row>_r<rows per block>_i<items>_ew   (weight loaded with the row)
//   rms_vec16_c<cluster blocks per row>_t<threads per block>_i<items>   (sm_90 cluster)
//   rms_vec16_w<rows each block walks>_t<threads per block>_i<items>   (streaming)
//   rms_<vec16|scalar>_staged_t<threads>
//   act_<vec16|scalar>_t<threads>_i<items>[_fastsigmoid]
//   act_vec16_t<threads>_i1_r<rows per thread>[_fastsigmoid]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tunable/ops.hpp"
#include "tune/tunable_op.hpp"

namespace tunable {

// ---- problems and arguments ---------------------------------------------------------------------

/// What an RMSNorm op signature + params signature describe.
struct NormProblem {
  bool fused = false;  ///< residual add first (FusedAddRmsNorm)
  DataType dtype = DataType::kBF16;
  NormWeight weight = NormWeight::kLlama;
  Fp8Scaling fp8 = Fp8Scaling::kNone;
  std::int64_t rows = 0;  ///< the call's rows (the params signature holds rows_bucket(rows))
  std::int64_t hidden = 0;
};

struct NormArgs {
  NormProblem prob;
  std::int64_t x_stride = 0, residual_stride = 0, out_stride = 0;  ///< elements between rows
  float eps = 1e-6f;
  const void* x = nullptr;        ///< [rows, x_stride] of dtype
  void* residual = nullptr;       ///< [rows, residual_stride] of dtype (fused only)
  const void* weight = nullptr;   ///< [hidden] of dtype
  void* out = nullptr;            ///< [rows, out_stride] of dtype, or fp8 e4m3
  const float* scale = nullptr;   ///< kStatic: one float
  float* token_scales = nullptr;  ///< kDynamicPerToken: [rows]
};

/// What an act-and-mul op signature + params signature describe.
struct ActProblem {
  DataType dtype = DataType::kBF16;
  Activation act = Activation::kSilu;
  Fp8Scaling fp8 = Fp8Scaling::kNone;  ///< kNone or kStatic
  std::int64_t rows = 0;
  std::int64_t d = 0;  ///< output columns; x rows hold 2 d
};

struct ActArgs {
  ActProblem prob;
  std::int64_t x_stride = 0, out_stride = 0;  ///< elements between rows
  const void* x = nullptr;                    ///< [rows, x_stride] of dtype: [gate | up]
  void* out = nullptr;                        ///< [rows, out_stride] of dtype, or fp8 e4m3
  const float* scale = nullptr;               ///< kStatic: one float
};

/// Bytes per element of the output (1 with an FP8 output).
std::size_t out_size(DataType dtype, Fp8Scaling fp8);
/// Smallest power of two >= rows (rows >= 1): the rows a params signature records.
std::int64_t rows_bucket(std::int64_t rows);

// ---- validation (host only, before any CUDA call) ------------------------------------------------

/// Sizes, strides, dtype and FP8 mode; `with_pointers`: also non-null pointers aligned to their
/// element, aliasing rules. Messages name the offending argument.
Status validate(const NormArgs& a, bool with_pointers = true);
Status validate(const ActArgs& a, bool with_pointers = true);

// ---- signatures ---------------------------------------------------------------------------------------

std::string op_signature(const NormProblem& p);
std::string params_signature(const NormProblem& p);
std::string op_signature(const ActProblem& p);
std::string params_signature(const ActProblem& p);
/// Inverses: kParseError naming the part that does not parse.
Status parse_norm_signature(const std::string& op_sig, const std::string& params_sig,
                            NormProblem* out);
Status parse_act_signature(const std::string& op_sig, const std::string& params_sig,
                           ActProblem* out);

/// Cache keys of the TunableOps (the integers behind op + params signature).
ProblemKey norm_key(const NormArgs& a);
ProblemKey act_key(const ActArgs& a);

// ---- launch configurations ----------------------------------------------------------------------------

struct NormConfig {
  bool vec16 = true;         ///< 16-byte accesses; false: one element per access
  bool staged = false;       ///< block per row, row in shared memory; any hidden size
  int threads_per_row = 256; ///< a multiple of 32, <= 1024
  int rows_per_block = 1;    ///< register kernel only
  int items = 1;             ///< vectors cached per thread (1, 2, 4, 8); register kernel only
  bool early_weight = false; ///< register kernel (vec16, items <= 4): weight loads issued with the row's
  int cluster = 1;           ///< 2, 4, 8: a row split over a cluster of blocks (vec16, items 1-2, sm_90)
  int stream = 0;            ///< 2, 4: the streaming kernel, each block walking that many rows (vec16)
  bool operator==(const NormConfig& o) const {
    return vec16 == o.vec16 && staged == o.staged && threads_per_row == o.threads_per_row &&
           rows_per_block == o.rows_per_block && items == o.items &&
           early_weight == o.early_weight && cluster == o.cluster && stream == o.stream;
  }
};

struct ActConfig {
  bool vec16 = true;
  int threads = 256;  ///< a multiple of 32, <= 1024
  int items = 1;      ///< vectors per thread (1, 2, 4)
  bool fast = false;  ///< exp2-based sigmoid
  int rows_per_thread = 1;  ///< 2 or 4: the rows kernel (vec16, items 1)
  bool operator==(const ActConfig& o) const {
    return vec16 == o.vec16 && threads == o.threads && items == o.items && fast == o.fast &&
           rows_per_thread == o.rows_per_thread;
  }
};

std::string config_name(const NormConfig& c);
std::string config_name(const ActConfig& c);
std::optional<NormConfig> parse_norm_config(std::string_view name);
std::optional<ActConfig> parse_act_config(std::string_view name);

/// Whether `c` can run `a` (sizes, launch limits, and alignment of a's pointers and strides when
/// they are set); kNotSupported or kMisaligned saying why.
Status config_fits(const NormArgs& a, const NormConfig& c);
Status config_fits(const ActArgs& a, const ActConfig& c);
/// True when every pointer and stride of `a` allows 16-byte accesses (null pointers count as aligned).
bool vec16_aligned(const NormArgs& a);
bool vec16_aligned(const ActArgs& a);

/// The Default candidate's choice, from the sizes and alignment of `a`; always fits. `clusters`:
/// the device runs the thread-block cluster kernel (sm_90; cluster_candidates_supported()).
NormConfig default_config(const NormArgs& a, bool clusters);
ActConfig default_config(const ActArgs& a);
/// The tuning candidates for a's problem (Default excluded), each fitting a's sizes.
std::vector<NormConfig> candidate_configs(const NormArgs& a);
std::vector<ActConfig> candidate_configs(const ActArgs& a);

}  // namespace tunable
