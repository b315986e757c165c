// The project's skinny GEMM kernels for decode (kernels/gemv) as tuning candidates.
//
// Scope: y[M,N] = x[M,K] * W[N,K]^T in cuBLAS "tn" form (desc.m = N weight rows, desc.n = M <= 64
// tokens, desc.k = K, transa = T, transb = N); bf16 and fp16 Gemm / GemmAndBias (bias, relu, gelu)
// and fp8 e4m3 ScaledGemm (bf16, fp16 or fp32 out, per-tensor or rowwise scales, optional bias; or
// e4m3 weights alone with 16-bit tokens, the weight-only family, n <= 8). The candidate
// names and what they mean: skinny_config.hpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gemm/gemm_args.hpp"
#include "tune/solution.hpp"

namespace tunable {

class SkinnyState;

/// The skinny-GEMM provider. Its solutions launch with `state` (the context's
/// CudaGemmResources::skinny(), or a SkinnyState of the current device that outlives them);
/// enumeration, from_name, can_implement and workspace_bytes make no CUDA calls and never touch it.
std::shared_ptr<const Provider<GemmArgs>> skinny_gemm_provider(SkinnyState* state);

/// Default of the weight-only problem (is_weight_only; cuBLAS(Lt) has no kernel for it): a fixed
/// configuration of the wo family, launched per 8 tokens above 8. Launches with `state` as the
/// provider's solutions do.
SolutionPtr<GemmArgs> skinny_weight_only_default(SkinnyState* state);

/// The variants the GPU suite walks for every problem: each family's shapes x bf16, fp16, fp8e4m3 (the
/// weight-only family: fp8e4m3) x
/// the split settings auto, 1, 2, 4, 8, 16, w2, w4 and c2, c4 where the shape takes them. from_name
/// rebuilds each of them; skinny_all_configs() (skinny_config.hpp) is every name it accepts.
std::vector<std::string> skinny_gemm_variant_names();

}  // namespace tunable
