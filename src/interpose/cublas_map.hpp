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

/// One cublasLtMatmul call as its descriptors describe it (read by the interposer with
/// cublasLtMatmulDescGetAttribute / cublasLtMatrixLayoutGetAttribute). `base` holds what a plain GEMM
/// has, with C being the output D (its type, leading dimension and stride).
struct CublasLtCall {
  CublasGemmCall base;
  cudaDataType_t scale_type = CUDA_R_32F;
  bool c_is_d = true;             ///< C and D are the same matrix (else beta must be 0: C is not read)
  std::uint32_t epilogue = 1;     ///< cublasLtEpilogue_t; 1 = CUBLASLT_EPILOGUE_DEFAULT
  const void* bias = nullptr;
  bool bias_type_set = false;     ///< CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE given (else the output's)
  cudaDataType_t bias_type = CUDA_R_32F;
  const void* scale_a = nullptr;  ///< FP8: device pointers to one float each
  const void* scale_b = nullptr;
  const void* scale_d = nullptr;  ///< an FP8 output's scale, and its amax: we do not serve those
  const void* amax_d = nullptr;
  const void* scale_c = nullptr;  ///< C's scale and D's output scale: not served either
  const void* scale_d_out = nullptr;
  bool c_at_d = false;            ///< C and D share a pointer (then they must share a layout too)
  bool fast_accum = false;
  std::string unsupported;        ///< set by the reader for anything else it found (row order, ...)
};

/// Our problem for `call`, or false with `why`: everything map_cublas_gemm refuses, plus epilogues
/// other than none, bias, ReLU + bias and GELU + bias, a bias of another type than the output, a
/// bias with batches or beta != 0, C apart from D with beta != 0, FP8 without both scales or with an
/// FP8 output, fast accumulation, and whatever the reader marked unsupported.
bool map_cublaslt_matmul(const CublasLtCall& call, GemmDesc* desc, std::string* why);

}  // namespace tunable
