#include "gemm/cuda/cublaslt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <vector>

namespace tunable {
namespace {

constexpr std::size_t kLtAlignment = 16;  // bytes every cuBLASLt candidate is checked against

bool aligned(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

Status lt_pointer_check(const GemmArgs& a, std::size_t align) {
  if (!aligned(a.ops.a, align) || !aligned(a.ops.b, align) || !aligned(a.ops.c, align) ||
      (a.ops.bias && !aligned(a.ops.bias, align)))
    return Status(StatusCode::kMisaligned,
                  fmt::format("this cuBLASLt configuration was chosen for {}-byte aligned A, B, C and bias", align));
  return Status::ok();
}

/// The largest power of two up to kLtAlignment that every operand pointer of `a` is aligned to
/// (kLtAlignment when the call carries no pointers: tuning's own buffers are aligned).
std::size_t operand_alignment(const GemmArgs& a) {
  if (a.ops.a == nullptr) return kLtAlignment;
  std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(a.ops.a) | reinterpret_cast<std::uintptr_t>(a.ops.b) |
                        reinterpret_cast<std::uintptr_t>(a.ops.c) | reinterpret_cast<std::uintptr_t>(a.ops.bias);
  std::size_t align = 1;
  while (align < kLtAlignment && (bits & align) == 0) align <<= 1;
  return align;
}

// Every field a candidate's name records; a field cuBLASLt will not report makes the name
// meaningless (it would rebuild another configuration), so the whole read fails.
template <class T>
Status config_get(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T* v) {
  std::size_t written = 0;
  *v = T{};
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, v, sizeof *v, &written));
  return Status::ok();
}

Status config_of(const cublasLtMatmulAlgo_t& algo, bool fast_accum, LtConfig* out) {
  std::int32_t id = 0, splitk = 0;
  std::uint32_t tile = 0, stages = 0, reduction = 0, swizzle = 0, custom = 0;
  std::uint16_t cluster = 0, inner = 0;
  TUNABLE_RETURN_IF_ERROR(config_get(algo, CUBLASLT_ALGO_CONFIG_ID, &id));
  TUNABLE_RETURN_IF_ERROR(config_get(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile));
  TUNABLE_RETURN_IF_ERROR(config_get(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages));
  TUNABLE_RETURN_IF_ERROR(config_get(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk));
  TUNABLE_RETURN_IF_ERROR(config_get(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &reduction));
  TUNABLE_RETURN_IF_ERROR(config_get(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle));
  TUNABLE_RETURN_IF_ERROR(config_get(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom));
  TUNABLE_RETURN_IF_ERROR(config_get(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster));
  TUNABLE_RETURN_IF_ERROR(config_get(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner));
  LtConfig c;
  c.algo = id;
  c.tile = static_cast<int>(tile);
  c.stages = static_cast<int>(stages);
  c.splitk = splitk;
  c.reduction = static_cast<int>(reduction);
  c.swizzle = static_cast<int>(swizzle);
  c.custom = static_cast<int>(custom);
  c.cluster = static_cast<int>(cluster);
  c.inner = static_cast<int>(inner);
  c.fast_accum = fast_accum;
  *out = c;
  return Status::ok();
}

Status build_algo(cublasLtHandle_t lt, const LtPlan& p, const LtConfig& c, cublasLtMatmulAlgo_t* algo) {
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoInit(lt, p.compute, p.scale_type, p.a_type, p.b_type,
                                              p.c_type, p.c_type, c.algo, algo));
  const std::uint32_t tile = c.tile, stages = c.stages, red = c.reduction, swz = c.swizzle,
                      custom = c.custom;
  const std::int32_t splitk = c.splitk;
  const std::uint16_t cluster = static_cast<std::uint16_t>(c.cluster), inner = static_cast<std::uint16_t>(c.inner);
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile));
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages));
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk));
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red));
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz));
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom));
  // Cluster and inner shape are Hopper-era attributes; older algorithms reject them when non-zero.
  if (cluster)
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster));
  if (inner)
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner));
  return Status::ok();
}

class LtSolution final : public Solution<GemmArgs> {
 public:
  LtSolution(CudaGemmResources* res, std::shared_ptr<LtPlan> plan, GemmDesc desc, LtConfig cfg,
             cublasLtMatmulAlgo_t algo, std::size_t ws, std::string name, Status valid,
             std::size_t align = kLtAlignment)
      : res_(res), plan_(std::move(plan)), desc_(desc), cfg_(cfg), algo_(algo), ws_(ws),
        name_(std::move(name)), valid_(std::move(valid)), key_(gemm_key(GemmArgs{desc_, {}})), align_(align) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const GemmArgs& a) const override {
    TUNABLE_RETURN_IF_ERROR(valid_);
    if (gemm_key(a) != key_)
      return Status(StatusCode::kInvalidArgument, "solution was built for another problem");
    return a.ops.a ? lt_pointer_check(a, align_) : Status::ok();
  }
  std::size_t workspace_bytes(const GemmArgs&) const override { return ws_; }
  Status run(const GemmArgs& a, void* ws, std::size_t ws_bytes, Stream stream) const override {
    return plan_->run(res_->lt(), &algo_, a, ws, ws_bytes, reinterpret_cast<cudaStream_t>(stream));
  }

 private:
  CudaGemmResources* res_;
  std::shared_ptr<LtPlan> plan_;
  GemmDesc desc_;
  LtConfig cfg_;
  cublasLtMatmulAlgo_t algo_;
  std::size_t ws_;
  std::string name_;
  Status valid_;
  ProblemKey key_;  // checked on every tuned call: computed once
  std::size_t align_;  // the operand alignment the configuration was chosen for
};

/// Builds a checked solution; `valid` carries AlgoCheck's verdict (kNotSupported when it fails).
SolutionPtr<GemmArgs> make_lt_solution(CudaGemmResources* res, const GemmDesc& d, const LtConfig& c,
                                       const std::string& name_override = "",
                                       std::size_t align = kLtAlignment) {
  std::shared_ptr<LtPlan> plan;
  Status st = res->plan(d, c.fast_accum, &plan);
  cublasLtMatmulAlgo_t algo{};
  cublasLtMatmulHeuristicResult_t chk{};
  if (st.is_ok()) st = build_algo(res->lt(), *plan, c, &algo);
  if (st.is_ok()) {
    cublasStatus_t s = cublasLtMatmulAlgoCheck(res->lt(), plan->op, plan->a, plan->b, plan->c,
                                               plan->c, &algo, &chk);
    if (s != CUBLAS_STATUS_SUCCESS)
      st = Status(StatusCode::kNotSupported,
                  fmt::format("cublasLtMatmulAlgoCheck rejects {}: {}", c.name(), cublas_error_text(s)));
    else if (chk.workspaceSize > res->workspace_limit())
      st = Status(StatusCode::kNotSupported,
                  fmt::format("needs {} bytes of workspace, limit {}", chk.workspaceSize,
                              res->workspace_limit()));
  }
  return std::make_shared<LtSolution>(res, plan, d, c, algo, chk.workspaceSize,
                                      name_override.empty() ? c.name() : name_override, st, align);
}

Status heuristics(CudaGemmResources* res, const GemmDesc& d, bool fast_accum, int want,
                  std::vector<cublasLtMatmulHeuristicResult_t>* out, std::size_t align_bytes = kLtAlignment) {
  std::shared_ptr<LtPlan> plan;
  TUNABLE_RETURN_IF_ERROR(res->plan(d, fast_accum, &plan));
  cublasLtMatmulPreference_t pref = nullptr;
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&cublasLtMatmulPreferenceDestroy)> guard(
      pref, cublasLtMatmulPreferenceDestroy);
  const std::size_t ws = res->workspace_limit();
  TUNABLE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  const auto align = static_cast<std::uint32_t>(align_bytes);
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align));
  out->assign(want, cublasLtMatmulHeuristicResult_t{});
  int got = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(res->lt(), plan->op, plan->a, plan->b, plan->c,
                                                    plan->c, pref, want, out->data(), &got);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) got = 0;
  else TUNABLE_CUBLAS_CHECK(s);
  out->resize(got);
  if (got > 0) return Status::ok();
  // What FP8 asks of the layout, said where it is the likely reason (cuBLASLt gives none).
  std::string why;
  if (d.op == GemmOp::kScaledGemm) {
    if (d.transa != Transpose::kT || d.transb != Transpose::kN)
      why = "; its FP8 kernels take the TN layout only";
    else if (d.m % 16 || d.n % 16 || d.k % 16 || d.lda % 16 || d.ldb % 16 || d.ldc % 16)
      why = "; its FP8 kernels want m, n, k and the leading dimensions in multiples of 16";
    else if (d.out_dtype == DataType::kF32 && d.epilogue != Epilogue::kNone)
      why = "; it has no FP8 kernel with an fp32 output and a bias";
  }
  return Status(StatusCode::kNotSupported,
                fmt::format("cuBLASLt has no algorithm for {} {}{}", op_signature(d), params_signature(d), why));
}

// ---- Default ----

class CublasDefault final : public Solution<GemmArgs> {
 public:
  CublasDefault(CudaGemmResources* res) : res_(res) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const GemmArgs& a) const override { return validate(a.desc); }
  std::size_t workspace_bytes(const GemmArgs&) const override { return res_->workspace_limit(); }
  Status run(const GemmArgs& a, void* ws, std::size_t ws_bytes, Stream stream) const override {
    const GemmDesc& d = a.desc;
    const cublasOperation_t ta = d.transa == Transpose::kN ? CUBLAS_OP_N : CUBLAS_OP_T;
    const cublasOperation_t tb = d.transb == Transpose::kN ? CUBLAS_OP_N : CUBLAS_OP_T;
    const cudaDataType_t t = cuda_type(d.dtype), ct = cuda_type(d.out_dtype);
    const cublasComputeType_t comp = d.dtype == DataType::kF64    ? CUBLAS_COMPUTE_64F
                                     : d.dtype == DataType::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                  : CUBLAS_COMPUTE_32F;
    const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = static_cast<int>(d.k),
              lda = static_cast<int>(d.lda), ldb = static_cast<int>(d.ldb), ldc = static_cast<int>(d.ldc);
    const float af = static_cast<float>(d.alpha), bf = static_cast<float>(d.beta);
    const double ad = d.alpha, bd = d.beta;
    const void* alpha = d.dtype == DataType::kF64 ? static_cast<const void*>(&ad) : &af;
    const void* beta = d.dtype == DataType::kF64 ? static_cast<const void*>(&bd) : &bf;
    return res_->with_blas(reinterpret_cast<cudaStream_t>(stream), ws, ws_bytes, [&](cublasHandle_t h) {
      if (d.op == GemmOp::kGemmStridedBatched) {
        TUNABLE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            h, ta, tb, m, n, k, alpha, a.ops.a, t, lda, d.stride_a, a.ops.b, t, ldb, d.stride_b,
            beta, a.ops.c, ct, ldc, d.stride_c, static_cast<int>(d.batch), comp, CUBLAS_GEMM_DEFAULT));
      } else {
        TUNABLE_CUBLAS_CHECK(cublasGemmEx(h, ta, tb, m, n, k, alpha, a.ops.a, t, lda, a.ops.b, t, ldb,
                                          beta, a.ops.c, ct, ldc, comp, CUBLAS_GEMM_DEFAULT));
      }
      return Status::ok();
    });
  }

 private:
  CudaGemmResources* res_;
  std::string name_ = "Default";
};

// cuBLASLt has no FP8 kernel with an fp32 output and an fp32 bias (its FP8 bias epilogue wants a
// bf16 bias there). Default serves that problem all the same: it writes the bias into every column
// of C and runs the GEMM with beta = 1 and no epilogue, which rounds alpha * A B + bias once, as the
// fused epilogue would.
bool bias_through_c(const GemmDesc& d) {
  return d.op == GemmOp::kScaledGemm && d.out_dtype == DataType::kF32 && d.epilogue == Epilogue::kBias;
}

/// The GEMM Default runs for a bias_through_c problem: no epilogue, beta = 1, C read.
GemmArgs bias_as_c(const GemmArgs& a) {
  GemmArgs g = a;
  g.desc.epilogue = Epilogue::kNone;
  g.desc.beta = 1.0;
  g.ops.bias = nullptr;
  return g;
}

/// C[0:m, j] = bias for every column j: one copy, then copies of the columns done so far, doubling
/// (log2(n) + 1 asynchronous copies, no kernel, capturable). Padding rows of C are not touched.
Status broadcast_bias(const GemmDesc& d, const void* bias, void* c, cudaStream_t stream) {
  const std::size_t width = static_cast<std::size_t>(d.m) * size_of(d.out_dtype);
  const std::size_t pitch = static_cast<std::size_t>(d.ldc) * size_of(d.out_dtype);
  TUNABLE_CUDA_CHECK(cudaMemcpyAsync(c, bias, width, cudaMemcpyDeviceToDevice, stream));
  for (std::int64_t done = 1; done < d.n;) {
    const std::int64_t count = std::min(done, d.n - done);
    TUNABLE_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(c) + done * pitch, pitch, c, pitch, width,
                                         static_cast<std::size_t>(count), cudaMemcpyDeviceToDevice, stream));
    done += count;
  }
  return Status::ok();
}

// cuBLASLt heuristic #0 for the problem and the call's operand alignment (as PyTorch asks cuBLASLt:
// the API promises any element-aligned pointer, and a configuration chosen for 16-byte aligned
// operands may refuse or misread others), found at first use and cached per (problem, alignment).
class LtDefault final : public Solution<GemmArgs> {
 public:
  LtDefault(CudaGemmResources* res) : res_(res) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const GemmArgs& a) const override {
    const bool via_c = bias_through_c(a.desc);
    if (via_c && a.desc.ldc > std::numeric_limits<std::int32_t>::max() / 4)
      return Status(StatusCode::kNotSupported,
                    fmt::format("ldc = {} is too large for the copies that put the fp32 bias into C", a.desc.ldc));
    const GemmArgs g = via_c ? bias_as_c(a) : a;
    SolutionPtr<GemmArgs> s;
    TUNABLE_RETURN_IF_ERROR(resolve(g, &s));
    return s->can_implement(g);
  }
  std::size_t workspace_bytes(const GemmArgs& a) const override {
    const GemmArgs g = bias_through_c(a.desc) ? bias_as_c(a) : a;
    SolutionPtr<GemmArgs> s;
    return resolve(g, &s).is_ok() ? s->workspace_bytes(g) : 0;
  }
  Status run(const GemmArgs& a, void* ws, std::size_t ws_bytes, Stream stream) const override {
    if (!bias_through_c(a.desc)) {
      SolutionPtr<GemmArgs> s;
      TUNABLE_RETURN_IF_ERROR(resolve(a, &s));
      return misaligned_if_refused(a, s->run(a, ws, ws_bytes, stream));
    }
    const GemmArgs g = bias_as_c(a);
    SolutionPtr<GemmArgs> s;
    TUNABLE_RETURN_IF_ERROR(resolve(g, &s));  // before writing C: a refusal leaves C alone
    TUNABLE_RETURN_IF_ERROR(broadcast_bias(a.desc, a.ops.bias, a.ops.c, reinterpret_cast<cudaStream_t>(stream)));
    return misaligned_if_refused(g, s->run(g, ws, ws_bytes, stream));
  }

 private:
  // The same problem with 16-byte aligned operands has a kernel (or the heuristic would have refused
  // it there too): a refusal of less aligned pointers is about their alignment.
  static Status misaligned_if_refused(const GemmArgs& a, Status st) {
    const std::size_t align = operand_alignment(a);
    if (st.code() != StatusCode::kNotSupported || align >= kLtAlignment) return st;
    return Status(StatusCode::kMisaligned,
                  fmt::format("cuBLASLt refuses this problem's operands aligned to {} bytes ({}); 16-byte aligned "
                              "A, B, C{} are served",
                              align, st.message(), a.ops.bias ? " and bias" : ""));
  }

  Status resolve(const GemmArgs& a, SolutionPtr<GemmArgs>* out) const {
    const std::size_t align = operand_alignment(a);
    const auto key = std::make_pair(gemm_key(GemmArgs{a.desc, {}}), align);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      std::vector<cublasLtMatmulHeuristicResult_t> h;
      const Status st = heuristics(res_, a.desc, false, 1, &h, align);
      if (st.code() == StatusCode::kNotSupported && align < kLtAlignment) {
        // Misaligned only if 16-byte aligned operands would have a kernel.
        std::vector<cublasLtMatmulHeuristicResult_t> aligned_h;
        if (heuristics(res_, a.desc, false, 1, &aligned_h).is_ok() && !aligned_h.empty())
          return Status(StatusCode::kMisaligned,
                        fmt::format("cuBLASLt offers no kernel for this problem with operands aligned to {} bytes; "
                                    "16-byte aligned A, B, C{} are served",
                                    align, a.ops.bias ? " and bias" : ""));
      }
      TUNABLE_RETURN_IF_ERROR(st);
      if (h.empty())
        return Status(align < kLtAlignment ? StatusCode::kMisaligned : StatusCode::kNotSupported,
                      fmt::format("cuBLASLt offers no kernel for this problem with operands aligned to {} bytes",
                                  align));
      LtConfig c;
      TUNABLE_RETURN_IF_ERROR(config_of(h[0].algo, false, &c));
      it = cache_.emplace(key, make_lt_solution(res_, a.desc, c, "Default", align)).first;
    }
    *out = it->second;
    return Status::ok();
  }
  CudaGemmResources* res_;
  std::string name_ = "Default";
  mutable std::mutex mu_;
  mutable std::map<std::pair<ProblemKey, std::size_t>, SolutionPtr<GemmArgs>> cache_;
};

// ---- providers ----

class LtHeuristicProvider final : public Provider<GemmArgs> {
 public:
  explicit LtHeuristicProvider(CudaGemmResources* res) : res_(res) {}
  std::string name() const override { return "cublaslt_heuristic"; }
  Status enumerate(const GemmArgs& a, std::vector<SolutionPtr<GemmArgs>>* out) const override {
    const GemmDesc& d = a.desc;
    for (bool fa : {false, true}) {
      if (fa && d.op != GemmOp::kScaledGemm) break;
      std::vector<cublasLtMatmulHeuristicResult_t> h;
      Status st = heuristics(res_, d, fa, 64, &h);
      if (!st.is_ok()) {
        if (!fa) return st;
        continue;
      }
      for (const auto& r : h) {
        LtConfig c;
        if (config_of(r.algo, fa, &c).is_ok()) out->push_back(make_lt_solution(res_, d, c));  // else unnameable
      }
    }
    return Status::ok();
  }
  SolutionPtr<GemmArgs> from_name(const std::string& n, const GemmArgs& a) const override {
    auto c = LtConfig::parse(n);
    return c ? make_lt_solution(res_, a.desc, *c) : nullptr;
  }

 private:
  CudaGemmResources* res_;
};

// The exhaustive space, AlgoCheck-filtered and ranked so that `budget_` configurations are
// timed: the ones whose last wave fills the GPU best, spread over (algo, tile) groups.
class LtExhaustiveProvider final : public Provider<GemmArgs> {
 public:
  LtExhaustiveProvider(CudaGemmResources* res, int budget) : res_(res), budget_(budget) {}
  std::string name() const override { return "cublaslt_exhaustive"; }

  Status enumerate(const GemmArgs& a, std::vector<SolutionPtr<GemmArgs>>* out) const override {
    if (budget_ <= 0) return Status::ok();
    const GemmDesc& d = a.desc;
    std::shared_ptr<LtPlan> plan;
    TUNABLE_RETURN_IF_ERROR(res_->plan(d, false, &plan));
    std::vector<int> ids(512);
    int nid = 0;
    TUNABLE_CUBLAS_CHECK(cublasLtMatmulAlgoGetIds(res_->lt(), plan->compute, plan->scale_type,
                                                  plan->a_type, plan->b_type, plan->c_type,
                                                  plan->c_type, static_cast<int>(ids.size()),
                                                  ids.data(), &nid));
    struct Found {
      LtConfig cfg;
      double fill;  // waves / ceil(waves): how full the last wave is
    };
    std::vector<Found> found;
    // Two phases per algorithm: (tile, stages) pairs that pass AlgoCheck in their plainest form,
    // then the other knobs around each valid pair. Most pairs are invalid, so this keeps the
    // number of AlgoCheck calls in the thousands. Each algorithm gets an equal share.
    constexpr int kMaxChecks = 40000;  // AlgoCheck calls per problem (microseconds each)
    const int per_algo = std::max(400, kMaxChecks / std::max(1, nid));
    const std::vector<int> splits = split_candidates(d);
    for (int i = 0; i < nid; ++i) {
      cublasLtMatmulAlgo_t algo;
      if (cublasLtMatmulAlgoInit(res_->lt(), plan->compute, plan->scale_type, plan->a_type,
                                 plan->b_type, plan->c_type, plan->c_type, ids[i], &algo) !=
          CUBLAS_STATUS_SUCCESS)
        continue;
      int checks = 0;
      auto check = [&](const LtConfig& c) -> bool {
        if (checks >= per_algo) return false;
        cublasLtMatmulAlgo_t al;
        if (!build_algo(res_->lt(), *plan, c, &al).is_ok()) return false;
        ++checks;
        cublasLtMatmulHeuristicResult_t chk{};
        if (cublasLtMatmulAlgoCheck(res_->lt(), plan->op, plan->a, plan->b, plan->c, plan->c, &al,
                                    &chk) != CUBLAS_STATUS_SUCCESS)
          return false;
        if (chk.workspaceSize > res_->workspace_limit()) return false;
        const double w = std::max(1e-6, static_cast<double>(chk.wavesCount));
        found.push_back({c, w / std::ceil(w)});
        return true;
      };
      // An algorithm whose capabilities cuBLASLt will not report is skipped, not guessed at.
      std::vector<std::uint32_t> tiles, stages;
      std::int32_t split_ok = 0, custom_cap = 0;
      std::uint32_t red_mask = 0, swz_max = 0;
      if (!cap_array(algo, CUBLASLT_ALGO_CAP_TILE_IDS, &tiles) ||
          !cap_array(algo, CUBLASLT_ALGO_CAP_STAGES_IDS, &stages) ||
          !cap_scalar(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &split_ok) ||
          !cap_scalar(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &red_mask) ||
          !cap_scalar(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swz_max) ||
          !cap_scalar(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &custom_cap))
        continue;
      const int custom_max = std::min(3, static_cast<int>(custom_cap));
      std::vector<std::pair<std::uint32_t, std::uint32_t>> base;
      for (std::uint32_t tile : tiles)
        for (std::uint32_t st : stages)
          if (check(LtConfig{ids[i], static_cast<int>(tile), static_cast<int>(st), 1, 0, 0, 0, 0, 0, false}))
            base.emplace_back(tile, st);
      // Cluster shapes (AUTO, 1x1, 2x1, 1x2, 2x2) only mean something to Hopper kernels.
      const int clusters[] = {0, 2, 3, 5, 6};
      for (auto [tile, st] : base)
        for (int sk : split_ok ? splits : std::vector<int>{1})
          for (std::uint32_t red : reductions(sk, red_mask))
            for (std::uint32_t swz = 0; swz <= std::min<std::uint32_t>(swz_max, 1); ++swz)
              for (int custom = 0; custom <= custom_max; ++custom)
                for (int cl : clusters) {
                  if (sk == 1 && swz == 0 && custom == 0 && cl == 0) continue;  // the base config
                  LtConfig c{ids[i], static_cast<int>(tile), static_cast<int>(st), sk,
                             static_cast<int>(red), static_cast<int>(swz), custom, cl, 0, false};
                  if (!check(c) && cl != 0) break;  // a rejected cluster: larger ones fail too
                }
    }
    // Rank: fullest last wave first; then less split-K (cheaper reduction). Round-robin over
    // (algo, tile) so one family cannot take the whole budget.
    std::stable_sort(found.begin(), found.end(), [](const Found& x, const Found& y) {
      if (x.fill != y.fill) return x.fill > y.fill;
      return x.cfg.splitk < y.cfg.splitk;
    });
    std::map<std::pair<int, int>, std::vector<const Found*>> groups;
    for (const auto& f : found) groups[{f.cfg.algo, f.cfg.tile}].push_back(&f);
    std::set<std::string> taken;
    for (std::size_t round = 0; static_cast<int>(taken.size()) < budget_; ++round) {
      bool any = false;
      for (auto& [key, v] : groups) {
        if (round >= v.size() || static_cast<int>(taken.size()) >= budget_) continue;
        any = true;
        const std::string n = v[round]->cfg.name();
        if (taken.insert(n).second) out->push_back(make_lt_solution(res_, d, v[round]->cfg));
      }
      if (!any) break;
    }
    return Status::ok();
  }

  SolutionPtr<GemmArgs> from_name(const std::string& n, const GemmArgs& a) const override {
    auto c = LtConfig::parse(n);
    return c ? make_lt_solution(res_, a.desc, *c) : nullptr;
  }

 private:
  // A capability list; one 0 entry where the algorithm has none (tile and stage ids 0 mean
  // "undefined", which cuBLASLt accepts).
  static bool cap_array(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr,
                        std::vector<std::uint32_t>* v) {
    std::size_t sz = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &sz) != CUBLAS_STATUS_SUCCESS) return false;
    v->assign(std::max<std::size_t>(1, sz / sizeof(std::uint32_t)), 0);
    return sz == 0 || cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v->data(), sz, &sz) == CUBLAS_STATUS_SUCCESS;
  }
  template <class T>
  static bool cap_scalar(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr, T* v) {
    std::size_t sz = 0;
    *v = T{};
    return cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v, sizeof *v, &sz) == CUBLAS_STATUS_SUCCESS;
  }
  // Split-K factors that leave at least 128 of K per split.
  static std::vector<int> split_candidates(const GemmDesc& d) {
    std::vector<int> v;
    for (int s : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32})
      if (s == 1 || d.k / s >= 128) v.push_back(s);
    return v;
  }
  static std::vector<std::uint32_t> reductions(int sk, std::uint32_t mask) {
    if (sk <= 1) return {CUBLASLT_REDUCTION_SCHEME_NONE};
    std::vector<std::uint32_t> v;
    for (std::uint32_t r : {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                            CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE})
      if (mask & r) v.push_back(r);
    return v;
  }

  CudaGemmResources* res_;
  int budget_;
};

}  // namespace

std::string LtConfig::name() const {
  return fmt::format("cublasLt_a{}_t{}_s{}_k{}_r{}_w{}_c{}_cl{}_i{}{}", algo, tile, stages, splitk,
                     reduction, swizzle, custom, cluster, inner, fast_accum ? "_fa" : "");
}

std::optional<LtConfig> LtConfig::parse(const std::string& name) {
  static const std::regex re(
      "^cublasLt_a(\\d{1,6})_t(\\d{1,6})_s(\\d{1,6})_k(-1|\\d{1,4})_r(\\d{1,3})_w(\\d{1,3})_c(\\d{1,3})"
      "_cl(\\d{1,4})_i(\\d{1,4})(_fa)?$");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  LtConfig c;
  c.algo = std::stoi(m[1]);
  c.tile = std::stoi(m[2]);
  c.stages = std::stoi(m[3]);
  c.splitk = std::stoi(m[4]);
  c.reduction = std::stoi(m[5]);
  c.swizzle = std::stoi(m[6]);
  c.custom = std::stoi(m[7]);
  c.cluster = std::stoi(m[8]);
  c.inner = std::stoi(m[9]);
  c.fast_accum = m[10].matched;
  // -1: cuBLASLt's heuristic hands some algorithms (e.g. 12, for fp32) back with SPLITK_NUM -1, and
  // the tuner times them as they came; the name keeps it so the stored result rebuilds.
  if (c.splitk < 1 && c.splitk != -1) return std::nullopt;
  return c;
}

SolutionPtr<GemmArgs> make_cuda_default(CudaGemmResources* res, const GemmDesc& d) {
  if (d.op == GemmOp::kGemm || d.op == GemmOp::kGemmStridedBatched)
    return std::make_shared<CublasDefault>(res);
  return std::make_shared<LtDefault>(res);
}

std::shared_ptr<const Provider<GemmArgs>> make_lt_heuristic_provider(CudaGemmResources* res) {
  return std::make_shared<LtHeuristicProvider>(res);
}

std::shared_ptr<const Provider<GemmArgs>> make_lt_exhaustive_provider(CudaGemmResources* res, int budget) {
  return std::make_shared<LtExhaustiveProvider>(res, budget);
}

}  // namespace tunable
