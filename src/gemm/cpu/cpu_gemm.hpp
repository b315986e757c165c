// CPU GEMM providers (fp32, fp64): the reference, the project's cache-blocked kernel family and
// OpenBLAS at several thread counts, plus the tuning workload they share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gemm/gemm_args.hpp"
#include "tune/solution.hpp"
#include "tune/workload.hpp"

namespace tunable {

/// fp32/fp64 Gemm and GemmStridedBatched only; the message says what else was asked for.
Status cpu_supports(const GemmDesc& d);

/// C = alpha*op(A)op(B) + beta*C in extended precision (long double accumulation), written as
/// double into `out` (ldc = m, batch-major). Used as the numerics reference.
void reference_gemm_to_double(const GemmArgs& args, double* out);

/// "Default" on the CPU: OpenBLAS at the thread count it picked when loaded (what numpy or
/// PyTorch would run untuned).
SolutionPtr<GemmArgs> cpu_default_solution();

std::shared_ptr<const Provider<GemmArgs>> cpu_reference_provider();
std::shared_ptr<const Provider<GemmArgs>> cpu_blocked_provider();
std::shared_ptr<const Provider<GemmArgs>> openblas_provider();

/// "OpenBLAS <version> <config>", for the validators.
std::string openblas_version();

Status make_cpu_gemm_workload(const GemmArgs& args, const Options& opt,
                              std::unique_ptr<Workload<GemmArgs>>* out);

}  // namespace tunable
