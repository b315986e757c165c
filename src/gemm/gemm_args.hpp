// The argument bundle every GEMM solution takes, and small shape helpers.
#pragma once

#include <string>
#include <vector>

#include "tunable/gemm.hpp"
#include "tune/tunable_op.hpp"

namespace tunable {

struct GemmArgs {
  GemmDesc desc;
  GemmOperands ops;
};

/// Whether `d` carries per-row / per-column scale vectors (ScaleMode::kRowwise or kRowwiseRms: scale_a
/// per row of C, scale_b per column, none for the weight-only problem's 16-bit B) instead of one scale
/// per operand.
inline bool has_rowwise_scales(const GemmDesc& d) {
  return d.op == GemmOp::kScaledGemm && d.scale_mode != ScaleMode::kTensor;
}

/// Rows and columns of A, B and C as stored (column-major), given the transposes.
inline std::int64_t a_rows(const GemmDesc& d) { return d.transa == Transpose::kN ? d.m : d.k; }
inline std::int64_t a_cols(const GemmDesc& d) { return d.transa == Transpose::kN ? d.k : d.m; }
inline std::int64_t b_rows(const GemmDesc& d) { return d.transb == Transpose::kN ? d.k : d.n; }
inline std::int64_t b_cols(const GemmDesc& d) { return d.transb == Transpose::kN ? d.n : d.k; }

/// Elements spanned by one matrix: ld * (cols - 1) + rows.
inline std::int64_t span(std::int64_t ld, std::int64_t rows, std::int64_t cols) {
  return ld * (cols - 1) + rows;
}

/// Key of the per-op cache: every field that distinguishes problems of one op signature.
ProblemKey gemm_key(const GemmArgs& a);

/// The GEMM rule for problems that were never tuned (OpHooks::neighbours): the same problem (every
/// other field equal; B's leading dimension may follow n where B is stored tight) tuned at a token
/// count n' with n < n' <= 2n, the smallest first, whose solution is one of our kernels (not a
/// cuBLAS(Lt) configuration, not Default). Only from above: a kernel tuned for n' tokens covers
/// fewer with the tiles it was timed with; one tuned for fewer runs more than it was chosen for.
/// At most 2n, and no cuBLASLt configuration: those are picked for one n (tile, split-k, cluster)
/// and measured up to 2.5x slower than Default at other token counts. Strided-batched problems
/// borrow nothing (their strides follow n). docs/tuning-runtime.md has the measurements.
std::vector<std::string> gemm_neighbours(const GemmArgs& a, const std::vector<ResultRecord>& stored);

/// Default per-dtype numerics tolerances (atol in units of rms(ref), rtol).
Tolerance gemm_tolerance(const GemmDesc& d);

}  // namespace tunable
