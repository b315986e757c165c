#include "interpose/cublas_map.hpp"

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <fmt/format.h>

#include <optional>

namespace tunable {
namespace {

std::optional<DataType> data_type(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_64F: return DataType::kF64;
    case CUDA_R_32F: return DataType::kF32;
    case CUDA_R_16F: return DataType::kF16;
    case CUDA_R_16BF: return DataType::kBF16;
    default: return std::nullopt;  // complex, integer and fp8 types (fp8: cublasLtMatmul, mapped apart)
  }
}

std::optional<Transpose> transpose(cublasOperation_t op) {
  switch (op) {
    case CUBLAS_OP_N: return Transpose::kN;
    case CUBLAS_OP_T:
    case CUBLAS_OP_C: return Transpose::kT;  // the conjugate of a real matrix is its transpose
    default: return std::nullopt;
  }
}

enum class Scalar { kHalf, kFloat, kDouble };

/// Our dtype for fp32 data under `compute` and the handle's math mode, and the scalars' type; or why
/// not. Reduced-precision compute types (TF32, fp16, bf16 inside) map to TF32, which is at least as
/// precise as any of them; pedantic fp32 forbids TF32.
bool f32_kind(const CublasGemmCall& c, DataType* dt, std::string* why) {
  switch (c.compute) {
    case CUBLAS_COMPUTE_32F:
      *dt = (c.math_mode & CUBLAS_TF32_TENSOR_OP_MATH) != 0 ? DataType::kTF32 : DataType::kF32;
      return true;
    case CUBLAS_COMPUTE_32F_PEDANTIC: *dt = DataType::kF32; return true;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF: *dt = DataType::kTF32; return true;
    default:
      *why = fmt::format("compute type {} for fp32 data", static_cast<int>(c.compute));
      return false;
  }
}

bool scalar_of(cublasComputeType_t compute, Scalar* s) {
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC: *s = Scalar::kHalf; return true;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF: *s = Scalar::kFloat; return true;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC: *s = Scalar::kDouble; return true;
    default: return false;
  }
}

double read_scalar(const void* p, Scalar s) {
  switch (s) {
    case Scalar::kHalf: return static_cast<double>(__half2float(*static_cast<const __half*>(p)));
    case Scalar::kFloat: return static_cast<double>(*static_cast<const float*>(p));
    case Scalar::kDouble: return *static_cast<const double*>(p);
  }
  return 0;
}

}  // namespace

CublasGemmCall sgemm_call(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha,
                          int lda, int ldb, const float* beta, int ldc, cublasMath_t math_mode,
                          cublasPointerMode_t pointer_mode) {
  CublasGemmCall c;
  c.transa = ta, c.transb = tb, c.m = m, c.n = n, c.k = k;
  c.a_type = c.b_type = c.c_type = CUDA_R_32F;
  c.lda = lda, c.ldb = ldb, c.ldc = ldc;
  c.compute = CUBLAS_COMPUTE_32F;  // cublasSgemm follows the handle's math mode for TF32
  c.math_mode = math_mode;
  c.pointer_mode = pointer_mode;
  c.alpha = alpha, c.beta = beta;
  return c;
}

CublasGemmCall hgemm_call(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha,
                          int lda, int ldb, const void* beta, int ldc, cublasPointerMode_t pointer_mode) {
  CublasGemmCall c;
  c.transa = ta, c.transb = tb, c.m = m, c.n = n, c.k = k;
  c.a_type = c.b_type = c.c_type = CUDA_R_16F;
  c.lda = lda, c.ldb = ldb, c.ldc = ldc;
  c.compute = CUBLAS_COMPUTE_16F;
  c.pointer_mode = pointer_mode;
  c.alpha = alpha, c.beta = beta;
  return c;
}

bool map_cublas_gemm(const CublasGemmCall& c, GemmDesc* desc, std::string* why) {
  why->clear();
  if (c.pointer_mode != CUBLAS_POINTER_MODE_HOST) {
    *why = "alpha and beta are device pointers (reading them would synchronize)";
    return false;
  }
  if (c.alpha == nullptr || c.beta == nullptr) {
    *why = "null alpha or beta";
    return false;
  }
  if (c.m <= 0 || c.n <= 0 || c.k <= 0 || (c.strided && c.batch <= 0)) {
    *why = fmt::format("empty problem (m {}, n {}, k {}, batch {})", c.m, c.n, c.k, c.batch);
    return false;
  }
  const auto ta = transpose(c.transa), tb = transpose(c.transb);
  const auto at = data_type(c.a_type), bt = data_type(c.b_type), ct = data_type(c.c_type);
  if (!ta || !tb) {
    *why = "an operation other than N, T or C";
    return false;
  }
  if (!at || !bt || !ct || *at != *bt) {
    *why = fmt::format("data types A {}, B {}, C {}", static_cast<int>(c.a_type), static_cast<int>(c.b_type),
                       static_cast<int>(c.c_type));
    return false;
  }
  if (*ct != *at) {  // e.g. fp16 inputs into an fp32 C: our GEMMs write their input type
    *why = fmt::format("C of another type than A and B ({} vs {})", static_cast<int>(c.c_type),
                       static_cast<int>(c.a_type));
    return false;
  }
  Scalar scalar;
  if (!scalar_of(c.compute, &scalar)) {
    *why = fmt::format("compute type {}", static_cast<int>(c.compute));
    return false;
  }
  DataType dt = *at;
  switch (*at) {
    case DataType::kF64:
      if (scalar != Scalar::kDouble) {
        *why = "fp64 data with a compute type other than fp64";
        return false;
      }
      break;
    case DataType::kF32:
      if (!f32_kind(c, &dt, why)) return false;
      break;
    default:  // fp16 / bf16 data: ours accumulate in fp32, as precise as any compute type cuBLAS takes
      if (scalar == Scalar::kDouble) {
        *why = "16-bit data with fp64 compute";
        return false;
      }
      break;
  }
  GemmDesc d = GemmDesc::make(dt, *ta, *tb, c.m, c.n, c.k);
  d.out_dtype = dt == DataType::kTF32 ? DataType::kF32 : dt;
  d.lda = c.lda, d.ldb = c.ldb, d.ldc = c.ldc;
  if (c.strided) {
    d.op = GemmOp::kGemmStridedBatched;
    d.batch = c.batch;
    d.stride_a = c.stride_a, d.stride_b = c.stride_b, d.stride_c = c.stride_c;
  }
  d.alpha = read_scalar(c.alpha, scalar);
  d.beta = read_scalar(c.beta, scalar);
  const Status v = validate(d);
  if (!v.is_ok()) {
    *why = "not a problem we serve: " + v.message();
    return false;
  }
  *desc = d;
  return true;
}

bool map_cublaslt_matmul(const CublasLtCall& call, GemmDesc* desc, std::string* why) {
  why->clear();
  if (!call.unsupported.empty()) {
    *why = call.unsupported;
    return false;
  }
  const CublasGemmCall& c = call.base;
  if (call.fast_accum) {
    *why = "FP8 fast accumulation (our FP8 GEMMs accumulate fully)";
    return false;
  }
  if (!call.c_is_d) {
    if (c.pointer_mode != CUBLAS_POINTER_MODE_HOST || c.beta == nullptr) {
      *why = "C apart from D with device-pointer scalars";
      return false;
    }
  }
  // The scalars' type follows the compute type for every call we serve (32F compute: float).
  const bool f32_compute = c.compute == CUBLAS_COMPUTE_32F || c.compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
                           c.compute == CUBLAS_COMPUTE_32F_FAST_TF32 || c.compute == CUBLAS_COMPUTE_32F_FAST_16F ||
                           c.compute == CUBLAS_COMPUTE_32F_FAST_16BF;
  if (f32_compute && call.scale_type != CUDA_R_32F) {
    *why = fmt::format("scale type {} with 32-bit compute", static_cast<int>(call.scale_type));
    return false;
  }
  if (call.c_at_d && !call.c_is_d) {
    *why = "C and D at one address with different layouts";
    return false;
  }
  if (call.scale_c != nullptr || call.scale_d_out != nullptr) {
    *why = "a C scale or D output scale";
    return false;
  }
  GemmDesc d;
  const bool fp8 = c.a_type == CUDA_R_8F_E4M3 || c.a_type == CUDA_R_8F_E5M2;
  if (!fp8 && (call.scale_a != nullptr || call.scale_b != nullptr || call.scale_d != nullptr ||
               call.amax_d != nullptr)) {
    *why = "scale or amax pointers on a non-FP8 matmul";
    return false;
  }
  if (fp8) {
    if (call.scale_a == nullptr || call.scale_b == nullptr) {
      *why = "FP8 without both A and B scale pointers";
      return false;
    }
    if (call.scale_d != nullptr || call.amax_d != nullptr) {
      *why = "an FP8 output scale or amax";
      return false;
    }
    if (!f32_compute || c.pointer_mode != CUBLAS_POINTER_MODE_HOST || c.alpha == nullptr || c.beta == nullptr) {
      *why = "FP8 with other than 32-bit compute and host scalars";
      return false;
    }
    const auto ta = transpose(c.transa), tb = transpose(c.transb);
    const auto out = data_type(c.c_type);
    if (!ta || !tb || !out || (c.b_type != CUDA_R_8F_E4M3 && c.b_type != CUDA_R_8F_E5M2) || c.strided ||
        (c.a_type == CUDA_R_8F_E5M2 && c.b_type == CUDA_R_8F_E5M2)) {  // cuBLASLt has no e5m2 x e5m2
      *why = fmt::format("FP8 with types A {}, B {}, D {} or batches", static_cast<int>(c.a_type),
                         static_cast<int>(c.b_type), static_cast<int>(c.c_type));
      return false;
    }
    d = GemmDesc::make(c.a_type == CUDA_R_8F_E4M3 ? DataType::kF8E4M3 : DataType::kF8E5M2, *ta, *tb, c.m, c.n, c.k);
    d.op = GemmOp::kScaledGemm;
    if (c.b_type != c.a_type) d.dtype_b = c.b_type == CUDA_R_8F_E4M3 ? DataType::kF8E4M3 : DataType::kF8E5M2;
    d.out_dtype = *out;
    d.lda = c.lda, d.ldb = c.ldb, d.ldc = c.ldc;
    d.alpha = *static_cast<const float*>(c.alpha);
    d.beta = *static_cast<const float*>(c.beta);
  } else if (!map_cublas_gemm(c, &d, why)) {
    return false;
  }
  if (!call.c_is_d && d.beta != 0) {
    *why = "C apart from D with beta != 0 (our GEMMs update C in place)";
    return false;
  }
  switch (call.epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT: break;
    case CUBLASLT_EPILOGUE_BIAS: d.epilogue = Epilogue::kBias; break;
    case CUBLASLT_EPILOGUE_RELU_BIAS: d.epilogue = Epilogue::kBiasRelu; break;
    case CUBLASLT_EPILOGUE_GELU_BIAS: d.epilogue = Epilogue::kBiasGelu; break;
    default:
      *why = fmt::format("epilogue {}", call.epilogue);
      return false;
  }
  if (d.epilogue != Epilogue::kNone) {
    if (call.bias == nullptr) {
      *why = "a bias epilogue without a bias pointer";
      return false;
    }
    // Unset, the bias has the output's type, except FP8 into fp32, where cuBLASLt reads a bf16 bias.
    if (d.op == GemmOp::kScaledGemm && d.out_dtype == DataType::kF32 && !call.bias_type_set) {
      *why = "an FP8 matmul into fp32 with cuBLASLt's default (bf16) bias";
      return false;
    }
    if (call.bias_type_set && data_type(call.bias_type) != std::optional<DataType>(d.out_dtype)) {
      *why = fmt::format("a bias of type {} for an output of another type", static_cast<int>(call.bias_type));
      return false;
    }
    if (d.op == GemmOp::kGemmStridedBatched || d.beta != 0) {
      *why = "a bias epilogue with batches or beta != 0";
      return false;
    }
    if (d.op == GemmOp::kGemm) d.op = GemmOp::kGemmAndBias;
  }
  const Status v = validate(d);
  if (!v.is_ok()) {
    *why = "not a problem we serve: " + v.message();
    return false;
  }
  *desc = d;
  return true;
}

}  // namespace tunable
