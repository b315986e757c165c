// cuBLAS / cuBLASLt solutions: Default (what PyTorch runs untuned), cuBLASLt heuristic results
// and cuBLASLt's exhaustive configuration space. Every cuBLASLt solution's name encodes its full
// algorithm configuration and is parsed back to rebuild the same algorithm.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "gemm/cuda/cuda_resources.hpp"
#include "tune/solution.hpp"

namespace tunable {

struct LtConfig {
  int algo = 0, tile = 0, stages = 0, splitk = 1, reduction = 0, swizzle = 0, custom = 0,
      cluster = 0, inner = 0;
  bool fast_accum = false;
  /// "cublasLt_a{algo}_t{tile}_s{stages}_k{splitk}_r{red}_w{swz}_c{custom}_cl{cluster}_i{inner}[_fa]"
  std::string name() const;
  static std::optional<LtConfig> parse(const std::string& name);
};

/// Default: cublasGemmEx / cublasGemmStridedBatchedEx for Gemm and GemmStridedBatched (PyTorch's
/// untuned path); cuBLASLt heuristic #0 for GemmAndBias and ScaledGemm (the paths PyTorch routes
/// to cuBLASLt).
SolutionPtr<GemmArgs> make_cuda_default(CudaGemmResources* res, const GemmDesc& d);

std::shared_ptr<const Provider<GemmArgs>> make_lt_heuristic_provider(CudaGemmResources* res);
/// `budget`: configurations timed per problem (see Options::exhaustive_candidates).
std::shared_ptr<const Provider<GemmArgs>> make_lt_exhaustive_provider(CudaGemmResources* res, int budget);

}  // namespace tunable
