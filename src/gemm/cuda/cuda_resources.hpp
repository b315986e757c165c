// Per-context CUDA state of the GEMM providers: cuBLAS/cuBLASLt handles, the tuning stream, the
// per-stream dispatch workspaces, the cache of cuBLASLt plans (descriptors per problem) and the
// skinny kernels' host state.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <map>
#include <memory>
#include <mutex>

#include "cuda/cublas_check.hpp"
#include "cuda/cuda_util.hpp"
#include "gemm/gemm_args.hpp"

namespace tunable {

/// cublasLt descriptors of one problem; shared by every algorithm tried on it. The pointer
/// attributes (bias, scales) change per call and are set under `mu`.
struct LtPlan {
  cudaDataType_t a_type{}, b_type{}, c_type{}, scale_type{};
  cublasComputeType_t compute{};
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  bool fast_accum = false;
  // Scaled GEMMs: cuBLASLt picks scale-aware kernels only when the scale pointers are set before
  // the heuristic query, so the plan owns two device floats (1.0) it points at until a run.
  DeviceBuffer placeholder_scales;
  std::mutex mu;

  static Status create(const GemmDesc& d, bool fast_accum, std::shared_ptr<LtPlan>* out);
  ~LtPlan();
  /// Runs D = C = alpha*op(A)op(B) + beta*C (+ epilogue) with `algo`.
  Status run(cublasLtHandle_t lt, const cublasLtMatmulAlgo_t* algo, const GemmArgs& args,
             void* ws, std::size_t ws_bytes, cudaStream_t stream);
};

class SkinnyState;  // gemm/cuda/skinny_state.hpp

class CudaGemmResources {
 public:
  static Status create(int ordinal, std::size_t workspace_bytes,
                       std::unique_ptr<CudaGemmResources>* out);
  ~CudaGemmResources();

  int ordinal() const { return ordinal_; }
  cublasLtHandle_t lt() const { return lt_; }
  cudaStream_t tuning_stream() const { return tuning_.get(); }
  std::size_t workspace_limit() const { return ws_limit_; }

  /// cuBLAS handle use is serialized: its stream and workspace are per-call state.
  template <class Fn>
  Status with_blas(cudaStream_t stream, void* ws, std::size_t ws_bytes, Fn fn) {
    std::lock_guard<std::mutex> lock(blas_mu_);
    TUNABLE_CUBLAS_CHECK(cublasSetStream(blas_, stream));
    TUNABLE_CUBLAS_CHECK(cublasSetWorkspace(blas_, ws, ws_bytes));
    return fn(blas_);
  }

  /// The dispatch workspace of `stream` (allocated on first use outside graph capture).
  Status workspace(cudaStream_t stream, std::size_t bytes, void** ptr);
  /// The cached plan of a problem.
  Status plan(const GemmDesc& d, bool fast_accum, std::shared_ptr<LtPlan>* out);
  /// The skinny kernels' device facts, kernel caches and per-stream counters (freed with this).
  SkinnyState& skinny() { return *skinny_; }

 private:
  int ordinal_ = 0;
  std::size_t ws_limit_ = 0;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  CudaStream tuning_;
  std::mutex blas_mu_, ws_mu_, plan_mu_;
  std::map<cudaStream_t, DeviceBuffer> workspaces_;
  std::map<std::pair<ProblemKey, bool>, std::shared_ptr<LtPlan>> plans_;
  std::unique_ptr<SkinnyState> skinny_;
};

/// cudaDataType of a tunable DataType (tf32 is stored as CUDA_R_32F).
cudaDataType_t cuda_type(DataType t);

}  // namespace tunable
