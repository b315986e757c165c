// The mapping from cuBLAS GEMM arguments to our problems, for every case PyTorch produces and the
// ones the interposer must forward untouched.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include "interpose/cublas_map.hpp"

namespace tunable {
namespace {

// F.linear(x[M, K], W[N, K]) without bias, as PyTorch calls cublasGemmEx: transa T, transb N, m = N,
// n = M (tokens), k = K, 16-bit in and out, fp32 compute, host scalars, beta 0.
CublasGemmCall linear_call(cudaDataType_t t, std::int64_t n_out, std::int64_t tokens, std::int64_t k,
                           const float* alpha, const float* beta) {
  CublasGemmCall c;
  c.transa = CUBLAS_OP_T, c.transb = CUBLAS_OP_N;
  c.m = n_out, c.n = tokens, c.k = k;
  c.a_type = c.b_type = c.c_type = t;
  c.lda = k, c.ldb = k, c.ldc = n_out;
  c.compute = CUBLAS_COMPUTE_32F;
  c.alpha = alpha, c.beta = beta;
  return c;
}

const float kOne = 1.0f, kZero = 0.0f, kHalfF = 0.5f, kTwo = 2.0f;

TEST(CublasMap, PytorchLinearIsTheTnDecodeProblem) {
  for (auto [t, dt] : {std::pair{CUDA_R_16BF, DataType::kBF16}, std::pair{CUDA_R_16F, DataType::kF16}}) {
    GemmDesc d;
    std::string why;
    ASSERT_TRUE(map_cublas_gemm(linear_call(t, 4096, 16, 14336, &kOne, &kZero), &d, &why)) << why;
    EXPECT_EQ(d.op, GemmOp::kGemm);
    EXPECT_EQ(d.dtype, dt);
    EXPECT_EQ(d.out_dtype, dt);
    EXPECT_EQ(d.transa, Transpose::kT);
    EXPECT_EQ(d.transb, Transpose::kN);
    EXPECT_EQ(d.m, 4096);
    EXPECT_EQ(d.n, 16);
    EXPECT_EQ(d.k, 14336);
    EXPECT_EQ(d.lda, 14336);
    EXPECT_EQ(d.ldb, 14336);
    EXPECT_EQ(d.ldc, 4096);
    EXPECT_EQ(d.alpha, 1.0);
    EXPECT_EQ(d.beta, 0.0);
    // The signature a results file stores it under: PyTorch TunableOp's for the same call.
    EXPECT_EQ(params_signature(d), "tn_4096_16_14336_ld_14336_14336_4096");
  }
}

TEST(CublasMap, EveryTransposeAndConjugateOfRealData) {
  const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
  for (cublasOperation_t a : ops)
    for (cublasOperation_t b : ops) {
      CublasGemmCall c = linear_call(CUDA_R_32F, 64, 48, 80, &kOne, &kZero);
      c.transa = a, c.transb = b;
      c.lda = a == CUBLAS_OP_N ? 64 : 80;
      c.ldb = b == CUBLAS_OP_N ? 80 : 48;
      GemmDesc d;
      std::string why;
      ASSERT_TRUE(map_cublas_gemm(c, &d, &why)) << why;
      EXPECT_EQ(d.transa, a == CUBLAS_OP_N ? Transpose::kN : Transpose::kT);
      EXPECT_EQ(d.transb, b == CUBLAS_OP_N ? Transpose::kN : Transpose::kT);
    }
}

TEST(CublasMap, Fp32FollowsComputeTypeAndMathMode) {
  struct Case {
    cublasComputeType_t compute;
    cublasMath_t math;
    DataType want;
  } cases[] = {
      {CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH, DataType::kF32},
      {CUBLAS_COMPUTE_32F, CUBLAS_TF32_TENSOR_OP_MATH, DataType::kTF32},  // torch allow_tf32
      {CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_TF32_TENSOR_OP_MATH, DataType::kF32},
      {CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_DEFAULT_MATH, DataType::kTF32},
      {CUBLAS_COMPUTE_32F_FAST_16F, CUBLAS_DEFAULT_MATH, DataType::kTF32},
      {CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_DEFAULT_MATH, DataType::kTF32},
  };
  for (const auto& k : cases) {
    CublasGemmCall c = linear_call(CUDA_R_32F, 64, 8, 128, &kOne, &kZero);
    c.compute = k.compute;
    c.math_mode = k.math;
    GemmDesc d;
    std::string why;
    ASSERT_TRUE(map_cublas_gemm(c, &d, &why)) << why;
    EXPECT_EQ(d.dtype, k.want) << static_cast<int>(k.compute) << " math " << static_cast<int>(k.math);
    EXPECT_EQ(d.out_dtype, DataType::kF32);
  }
}

TEST(CublasMap, SgemmAndHgemmAsGemmExSeesThem) {
  GemmDesc d;
  std::string why;
  ASSERT_TRUE(map_cublas_gemm(sgemm_call(CUBLAS_OP_N, CUBLAS_OP_N, 512, 1024, 2048, &kHalfF, 512, 2048, &kTwo,
                                         512, CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_POINTER_MODE_HOST),
                              &d, &why))
      << why;
  EXPECT_EQ(d.dtype, DataType::kTF32);
  EXPECT_EQ(d.alpha, 0.5);
  EXPECT_EQ(d.beta, 2.0);
  const __half ha = __float2half(0.25f), hb = __float2half(1.0f);
  ASSERT_TRUE(map_cublas_gemm(hgemm_call(CUBLAS_OP_T, CUBLAS_OP_N, 256, 8, 512, &ha, 512, 512, &hb, 256,
                                         CUBLAS_POINTER_MODE_HOST),
                              &d, &why))
      << why;
  EXPECT_EQ(d.dtype, DataType::kF16);  // fp32 accumulation: at least as precise as Hgemm's fp16
  EXPECT_EQ(d.alpha, 0.25);
  EXPECT_EQ(d.beta, 1.0);
}

TEST(CublasMap, Fp64AndItsScalars) {
  const double a = 1.5, b = -0.5;
  CublasGemmCall c = linear_call(CUDA_R_64F, 32, 32, 32, nullptr, nullptr);
  c.compute = CUBLAS_COMPUTE_64F;
  c.alpha = &a, c.beta = &b;
  GemmDesc d;
  std::string why;
  ASSERT_TRUE(map_cublas_gemm(c, &d, &why)) << why;
  EXPECT_EQ(d.dtype, DataType::kF64);
  EXPECT_EQ(d.alpha, 1.5);
  EXPECT_EQ(d.beta, -0.5);
  c.compute = CUBLAS_COMPUTE_32F;  // fp64 data at fp32 compute is not ours
  EXPECT_FALSE(map_cublas_gemm(c, &d, &why));
  EXPECT_NE(why.find("fp64"), std::string::npos) << why;
}

TEST(CublasMap, StridedBatchedKeepsStridesIncludingBroadcast) {
  CublasGemmCall c = linear_call(CUDA_R_16BF, 64, 32, 128, &kOne, &kZero);
  c.transa = CUBLAS_OP_N, c.transb = CUBLAS_OP_N;  // bmm(x[b, M, K], y[b, K, N]) in column-major terms
  c.lda = 64, c.ldb = 128, c.ldc = 64;
  c.strided = true;
  c.batch = 12;
  c.stride_a = 0;  // a broadcast operand (expand) has stride 0
  c.stride_b = 128 * 32, c.stride_c = 64 * 32;
  GemmDesc d;
  std::string why;
  ASSERT_TRUE(map_cublas_gemm(c, &d, &why)) << why;
  EXPECT_EQ(d.op, GemmOp::kGemmStridedBatched);
  EXPECT_EQ(d.batch, 12);
  EXPECT_EQ(d.stride_a, 0);
  EXPECT_EQ(d.stride_b, 128 * 32);
  EXPECT_EQ(d.stride_c, 64 * 32);
}

TEST(CublasMap, WhatIsForwardedAndWhy) {
  GemmDesc d;
  std::string why;
  auto forwarded = [&](CublasGemmCall c, const char* reason) {
    EXPECT_FALSE(map_cublas_gemm(c, &d, &why)) << reason;
    EXPECT_NE(why.find(reason), std::string::npos) << "why: " << why;
  };
  CublasGemmCall c = linear_call(CUDA_R_16BF, 64, 8, 128, &kOne, &kZero);
  c.pointer_mode = CUBLAS_POINTER_MODE_DEVICE;
  forwarded(c, "device pointers");
  c = linear_call(CUDA_R_16BF, 64, 8, 128, &kOne, &kZero);
  c.c_type = CUDA_R_32F;  // bf16 in, fp32 out (cublasGemmEx allows it)
  forwarded(c, "C of another type");
  c = linear_call(CUDA_C_32F, 64, 8, 128, &kOne, &kZero);
  forwarded(c, "data types");
  c = linear_call(CUDA_R_8I, 64, 8, 128, &kOne, &kZero);
  forwarded(c, "data types");
  c = linear_call(CUDA_R_16BF, 64, 8, 128, &kOne, &kZero);
  c.b_type = CUDA_R_16F;
  forwarded(c, "data types");
  c = linear_call(CUDA_R_16BF, 64, 0, 128, &kOne, &kZero);
  forwarded(c, "empty problem");
  c = linear_call(CUDA_R_16BF, 64, 8, 128, &kOne, &kZero);
  c.compute = CUBLAS_COMPUTE_32I;
  forwarded(c, "compute type");
  c = linear_call(CUDA_R_16BF, 64, 8, 128, &kOne, &kZero);
  c.lda = 16;  // lda below the rows of A as stored: cuBLAS reports it; we do not serve it
  forwarded(c, "not a problem we serve");
  c = linear_call(CUDA_R_16BF, 64, 8, 128, nullptr, &kZero);
  forwarded(c, "null alpha");
}

// cublasLtMatmul as PyTorch calls it: F.linear with a bias (an epilogue, beta 0), addmm's GELU,
// torch._scaled_mm (FP8 with scale pointers, bf16 out), and what goes to cuBLASLt as it came.
CublasLtCall lt_call(cudaDataType_t t, std::int64_t n_out, std::int64_t tokens, std::int64_t k) {
  CublasLtCall c;
  c.base = linear_call(t, n_out, tokens, k, &kOne, &kZero);
  return c;
}

TEST(CublasLtMap, BiasEpiloguesFp8AndPlain) {
  static const int bias_storage = 0;
  const void* bias = &bias_storage;
  GemmDesc d;
  std::string why;
  CublasLtCall c = lt_call(CUDA_R_16BF, 4096, 8, 4096);
  ASSERT_TRUE(map_cublaslt_matmul(c, &d, &why)) << why;
  EXPECT_EQ(d.op, GemmOp::kGemm);
  for (auto [epi, ours] : {std::pair{CUBLASLT_EPILOGUE_BIAS, Epilogue::kBias},
                           std::pair{CUBLASLT_EPILOGUE_RELU_BIAS, Epilogue::kBiasRelu},
                           std::pair{CUBLASLT_EPILOGUE_GELU_BIAS, Epilogue::kBiasGelu}}) {
    c.epilogue = epi;
    c.bias = bias;
    ASSERT_TRUE(map_cublaslt_matmul(c, &d, &why)) << why;
    EXPECT_EQ(d.op, GemmOp::kGemmAndBias);
    EXPECT_EQ(d.epilogue, ours);
    EXPECT_EQ(params_signature(d).empty(), false);
  }
  // C apart from D with beta 0: D is the output.
  c.c_is_d = false;
  ASSERT_TRUE(map_cublaslt_matmul(c, &d, &why)) << why;
  // torch._scaled_mm: e4m3 x e4m3 (and e5m2 B), bf16 out, per-tensor scales.
  static const float sa = 1, sb = 1;
  CublasLtCall f = lt_call(CUDA_R_8F_E4M3, 4096, 16, 4096);
  f.base.c_type = CUDA_R_16BF;
  f.scale_a = &sa, f.scale_b = &sb;
  ASSERT_TRUE(map_cublaslt_matmul(f, &d, &why)) << why;
  EXPECT_EQ(d.op, GemmOp::kScaledGemm);
  EXPECT_EQ(d.out_dtype, DataType::kBF16);
  EXPECT_FALSE(d.dtype_b.has_value());
  f.base.b_type = CUDA_R_8F_E5M2;
  ASSERT_TRUE(map_cublaslt_matmul(f, &d, &why)) << why;
  EXPECT_EQ(d.dtype_b, DataType::kF8E5M2);
}

TEST(CublasLtMap, WhatIsForwardedAndWhy) {
  static const int bias_storage = 0;
  static const float scale = 1;
  auto forwarded = [](const CublasLtCall& c, const char* reason) {
    GemmDesc d;
    std::string why;
    EXPECT_FALSE(map_cublaslt_matmul(c, &d, &why)) << reason;
    EXPECT_NE(why.find(reason), std::string::npos) << "why: " << why;
  };
  CublasLtCall c = lt_call(CUDA_R_16BF, 64, 8, 128);
  c.epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  c.bias = &bias_storage;
  forwarded(c, "epilogue");
  c = lt_call(CUDA_R_16BF, 64, 8, 128);
  c.epilogue = CUBLASLT_EPILOGUE_BIAS;
  forwarded(c, "without a bias pointer");
  c.bias = &bias_storage;
  c.bias_type_set = true;
  c.bias_type = CUDA_R_32F;  // fp32 bias for a bf16 output
  forwarded(c, "a bias of type");
  c = lt_call(CUDA_R_16BF, 64, 8, 128);
  c.base.beta = &kOne;
  c.c_is_d = false;
  forwarded(c, "C apart from D with beta != 0");
  c = lt_call(CUDA_R_16BF, 64, 8, 128);
  c.unsupported = "a matrix layout other than column-major";
  forwarded(c, "column-major");
  c = lt_call(CUDA_R_16BF, 64, 8, 128);
  c.scale_type = CUDA_R_16F;
  forwarded(c, "scale type");
  CublasLtCall f = lt_call(CUDA_R_8F_E4M3, 64, 16, 128);
  f.base.c_type = CUDA_R_16BF;
  forwarded(f, "both A and B scale pointers");
  f.scale_a = &scale, f.scale_b = &scale;
  f.scale_d = &scale;
  forwarded(f, "FP8 output scale");
  f.scale_d = nullptr;
  f.fast_accum = true;
  forwarded(f, "fast accumulation");
  f.fast_accum = false;
  f.base.c_type = CUDA_R_8F_E4M3;
  forwarded(f, "FP8 with types");
  f.base.c_type = CUDA_R_16BF;
  f.base.a_type = f.base.b_type = CUDA_R_8F_E5M2;  // cuBLASLt has no e5m2 x e5m2 kernel
  forwarded(f, "FP8 with types");
  // e4m3 x bf16 is tunable's weight-only problem, never a cuBLASLt call's: it is left to cuBLASLt.
  f.base.a_type = CUDA_R_8F_E4M3;
  f.base.b_type = CUDA_R_16BF;
  forwarded(f, "FP8 with types");
  f.base.a_type = f.base.b_type = CUDA_R_8F_E4M3;
  f.base.c_type = CUDA_R_32F;  // into fp32 with a bias of unset type: cuBLASLt reads bf16
  f.epilogue = CUBLASLT_EPILOGUE_BIAS;
  f.bias = &bias_storage;
  forwarded(f, "default (bf16) bias");
  c = lt_call(CUDA_R_16BF, 64, 8, 128);
  c.scale_a = &scale;  // scales belong to FP8
  forwarded(c, "scale or amax pointers on a non-FP8 matmul");
  c = lt_call(CUDA_R_16BF, 64, 8, 128);
  c.scale_c = &scale;
  forwarded(c, "a C scale");
  c = lt_call(CUDA_R_16BF, 64, 8, 128);
  c.c_at_d = true, c.c_is_d = false;
  forwarded(c, "one address with different layouts");
}

}  // namespace
}  // namespace tunable
