#include "interpose/cublas_map.hpp"

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
    default: return std::nullopt;  // complex, integer and fp8 types: cublasGemmEx serves them as they are
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

}  // namespace tunable
