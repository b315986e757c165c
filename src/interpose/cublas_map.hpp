// What a cuBLAS GEMM call asks for, as one of our GEMM problems: the first half of the cuBLAS
// interposer (a program's cublasGemmEx / cublasSgemm_v2 / cublasHgemm / strided-batched calls served
// by tuned solutions). A call is mapped only when our problem computes what cuBLAS was asked to, at
// least as accurately; everything else is forwarded to the real cuBLAS as it came, with the reason.
#pragma once

#include <cublas_v2.h>
#include <library_types.h>

#include <cstdint>
#include <string>

#include "tunable/gemm.hpp"

namespace tunable {

/// The arguments of one cuBLAS GEMM entry point, with the handle's state that changes its meaning.
struct CublasGemmCall {
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  std::int64_t m = 0, n = 0, k = 0;
  cudaDataType_t a_type = CUDA_R_32F, b_type = CUDA_R_32F, c_type = CUDA_R_32F;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t batch = 1;  ///< > 1, or any value with `strided`, for the strided-batched entry points
  bool strided = false;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;      ///< cublasGetMathMode of the handle
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  const void* alpha = nullptr;  ///< scalars of the compute type's scalar type (float for 32F)
  const void* beta = nullptr;
};

/// The fields of the legacy typed entry points, filled as cublasGemmEx would receive them:
/// cublasSgemm_v2 (fp32; TF32 when the handle's math mode allows it) and cublasHgemm (fp16 data and
/// scalars, fp16 compute).
CublasGemmCall sgemm_call(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha,
                          int lda, int ldb, const float* beta, int ldc, cublasMath_t math_mode,
                          cublasPointerMode_t pointer_mode);
CublasGemmCall hgemm_call(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha,
                          int lda, int ldb, const void* beta, int ldc, cublasPointerMode_t pointer_mode);

/// Our problem for `call` (validated with tunable::validate), or false with `why` naming what makes
/// it one to forward: device-pointer scalars (reading them would synchronize), a compute type less
/// precise than ours or of another kind, mixed or unsupported data types, empty or invalid sizes.
bool map_cublas_gemm(const CublasGemmCall& call, GemmDesc* desc, std::string* why);

}  // namespace tunable
