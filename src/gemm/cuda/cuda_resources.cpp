#include "gemm/cuda/cuda_resources.hpp"

#include <fmt/format.h>

#include "gemm/cuda/skinny_state.hpp"

namespace tunable {

cudaDataType_t cuda_type(DataType t) {
  switch (t) {
    case DataType::kF64: return CUDA_R_64F;
    case DataType::kF32:
    case DataType::kTF32: return CUDA_R_32F;
    case DataType::kF16: return CUDA_R_16F;
    case DataType::kBF16: return CUDA_R_16BF;
    case DataType::kF8E4M3: return CUDA_R_8F_E4M3;
    case DataType::kF8E5M2: return CUDA_R_8F_E5M2;
  }
  return CUDA_R_32F;
}

Status LtPlan::create(const GemmDesc& d, bool fast_accum, std::shared_ptr<LtPlan>* out) {
  // No cuBLASLt kernel takes an fp8 A with a 16-bit B; asking would only hide that behind a failed
  // heuristic (or, in a version that grew one, run it without the row scales it needs).
  if (is_weight_only(d))
    return Status(StatusCode::kNotSupported,
                  fmt::format("cuBLASLt has no kernel for e4m3 weights with {} tokens (weight-only ScaledGemm)",
                              short_name(::tunable::b_type(d))));
  auto p = std::make_shared<LtPlan>();
  p->a_type = cuda_type(d.dtype);
  p->b_type = cuda_type(::tunable::b_type(d));
  p->c_type = cuda_type(d.out_dtype);
  p->fast_accum = fast_accum;
  if (d.dtype == DataType::kF64) {
    p->compute = CUBLAS_COMPUTE_64F;
    p->scale_type = CUDA_R_64F;
  } else {
    p->compute = d.dtype == DataType::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    p->scale_type = CUDA_R_32F;
  }
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->op, p->compute, p->scale_type));
  const cublasOperation_t ta = d.transa == Transpose::kN ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t tb = d.transb == Transpose::kN ? CUBLAS_OP_N : CUBLAS_OP_T;
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_DEFAULT;
  switch (d.epilogue) {
    case Epilogue::kNone: break;
    case Epilogue::kBias: ep = CUBLASLT_EPILOGUE_BIAS; break;
    case Epilogue::kBiasRelu: ep = CUBLASLT_EPILOGUE_RELU_BIAS; break;
    case Epilogue::kBiasGelu: ep = CUBLASLT_EPILOGUE_GELU_BIAS; break;
  }
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
  if (d.epilogue != Epilogue::kNone) {
    const cudaDataType_t bt = p->c_type;
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                        &bt, sizeof bt));
  }
  if (d.op == GemmOp::kScaledGemm) {
    const std::int8_t fa = fast_accum ? 1 : 0;
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof fa));
    TUNABLE_RETURN_IF_ERROR(p->placeholder_scales.allocate(8 * sizeof(float)));
    const float ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    TUNABLE_CUDA_CHECK(cudaMemcpy(p->placeholder_scales.get(), ones, sizeof ones, cudaMemcpyHostToDevice));
    const void* sa = p->placeholder_scales.as<float>();
    const void* sb = p->placeholder_scales.as<float>() + 4;  // 16-byte aligned, as cuBLASLt needs
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
    if (d.scale_mode == ScaleMode::kRowwise) {
      // Outer-vector scales (cuBLAS 12.9+): the heuristic only offers kernels that apply them.
      const cublasLtMatmulMatrixScale_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode));
      TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode));
    }
  }
  TUNABLE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, p->a_type, a_rows(d), a_cols(d), d.lda));
  TUNABLE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, p->b_type, b_rows(d), b_cols(d), d.ldb));
  TUNABLE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->c, p->c_type, d.m, d.n, d.ldc));
  if (d.op == GemmOp::kGemmStridedBatched && d.batch > 1) {
    const std::int32_t bc = static_cast<std::int32_t>(d.batch);
    const std::int64_t sa = d.stride_a, sb = d.stride_b, sc = d.stride_c;
    for (auto [layout, stride] : {std::pair{p->a, sa}, {p->b, sb}, {p->c, sc}}) {
      TUNABLE_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
      TUNABLE_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
  }
  *out = std::move(p);
  return Status::ok();
}

LtPlan::~LtPlan() {
  if (a) cublasLtMatrixLayoutDestroy(a);
  if (b) cublasLtMatrixLayoutDestroy(b);
  if (c) cublasLtMatrixLayoutDestroy(c);
  if (op) cublasLtMatmulDescDestroy(op);
}

Status LtPlan::run(cublasLtHandle_t lt, const cublasLtMatmulAlgo_t* algo, const GemmArgs& args,
                   void* ws, std::size_t ws_bytes, cudaStream_t stream) {
  const GemmDesc& d = args.desc;
  std::lock_guard<std::mutex> lock(mu);
  if (d.epilogue != Epilogue::kNone) {
    const void* bias = args.ops.bias;
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  if (d.op == GemmOp::kScaledGemm) {
    const void* sa = args.ops.scale_a;
    const void* sb = args.ops.scale_b;
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
  }
  // A kernel that cuBLASLt's heuristic offered for these alignments may still refuse the call's
  // pointers (a bias epilogue with 2-byte aligned operands does): kNotSupported, not a library
  // error, so that callers can tell a refusal from a failure.
  cublasStatus_t s;
  if (scale_type == CUDA_R_64F) {
    const double alpha = d.alpha, beta = d.beta;
    s = cublasLtMatmul(lt, op, &alpha, args.ops.a, a, args.ops.b, b, &beta, args.ops.c, c, args.ops.c, c, algo, ws,
                       ws_bytes, stream);
  } else {
    const float alpha = static_cast<float>(d.alpha), beta = static_cast<float>(d.beta);
    s = cublasLtMatmul(lt, op, &alpha, args.ops.a, a, args.ops.b, b, &beta, args.ops.c, c, args.ops.c, c, algo, ws,
                       ws_bytes, stream);
  }
  if (s == CUBLAS_STATUS_NOT_SUPPORTED)
    return Status(StatusCode::kNotSupported, "cublasLtMatmul refuses this call (CUBLAS_STATUS_NOT_SUPPORTED)");
  TUNABLE_CUBLAS_CHECK(s);
  return Status::ok();
}

Status CudaGemmResources::create(int ordinal, std::size_t workspace_bytes,
                                 std::unique_ptr<CudaGemmResources>* out) {
  auto r = std::unique_ptr<CudaGemmResources>(new CudaGemmResources());
  r->ordinal_ = ordinal;
  r->ws_limit_ = workspace_bytes;
  r->skinny_ = std::make_unique<SkinnyState>(ordinal);
  DeviceGuard on_device;  // the handles and streams belong to `ordinal`; the caller's device stays
  TUNABLE_RETURN_IF_ERROR(on_device.set(ordinal));
  TUNABLE_CUBLAS_CHECK(cublasCreate(&r->blas_));
  TUNABLE_CUBLAS_CHECK(cublasLtCreate(&r->lt_));
  TUNABLE_RETURN_IF_ERROR(r->tuning_.create());
  *out = std::move(r);
  return Status::ok();
}

CudaGemmResources::~CudaGemmResources() {
  plans_.clear();
  if (lt_) cublasLtDestroy(lt_);
  if (blas_) cublasDestroy(blas_);
}

Status CudaGemmResources::workspace(cudaStream_t stream, std::size_t bytes, void** ptr) {
  *ptr = nullptr;
  if (bytes > ws_limit_)
    return Status(StatusCode::kNotSupported,
                  fmt::format("workspace of {} bytes exceeds the limit of {}", bytes, ws_limit_));
  std::lock_guard<std::mutex> lock(ws_mu_);
  auto it = workspaces_.find(stream);
  if (it == workspaces_.end()) {
    // Allocated at the first call on a stream outside capture, whatever that call needs, so a
    // later captured call (perhaps of a solution that does need one) finds it.
    const bool capturing = stream_capturing(stream);
    if (capturing && bytes == 0) return Status::ok();
    if (capturing)
      return Status(StatusCode::kNotSupported,
                    "this stream was first used inside CUDA graph capture, where its GEMM "
                    "workspace cannot be allocated: run one GEMM on it before capturing");
    DeviceBuffer buf;
    TUNABLE_RETURN_IF_ERROR(buf.allocate(ws_limit_));
    it = workspaces_.emplace(stream, std::move(buf)).first;
  }
  *ptr = bytes ? it->second.get() : nullptr;
  return Status::ok();
}

Status CudaGemmResources::plan(const GemmDesc& d, bool fast_accum, std::shared_ptr<LtPlan>* out) {
  std::lock_guard<std::mutex> lock(plan_mu_);
  auto key = std::make_pair(gemm_key(GemmArgs{d, {}}), fast_accum);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    std::shared_ptr<LtPlan> p;
    TUNABLE_RETURN_IF_ERROR(LtPlan::create(d, fast_accum, &p));
    it = plans_.emplace(key, std::move(p)).first;
  }
  *out = it->second;
  return Status::ok();
}

}  // namespace tunable
