// Provider<GemmArgs> for the skinny GEMM kernels of kernels/gemv: what every family shares (the
// problem's scope, split-K bounds and workspace sizing, filling the launch from the GEMM's
// arguments) around each family's bridge (skinny_family.hpp), which knows its own shapes, candidate
// table and launcher.
#include "gemm/cuda/skinny_provider.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/cuda_check.hpp"
#include "gemm/cuda/skinny_config.hpp"
#include "gemm/cuda/skinny_family.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "kernels/gemv/common.cuh"

namespace tunable {

Status skinny_launch_status(cudaError_t e, const std::string& name) {
  if (e == cudaErrorNotSupported)
    return Status(
        StatusCode::kNotSupported,
        fmt::format(
            "{}: this device, build or driver lacks what it needs (tensor cores sm_80+, fp8 "
            "sm_89+, clusters and TMA sm_90+ with cuTensorMapEncodeTiled, wgmma sm_90a code)",
            name));
  TUNABLE_CUDA_CHECK(e);
  return Status::ok();
}

namespace {

namespace kern = ::tunable::kernels;

/// Largest workspace a variant may ask for (the tuner's dispatch workspace limit).
constexpr std::size_t kMaxWorkspace = std::size_t{32} << 20;
/// Most tokens any family takes (the MMA families' eight 8-token tiles).
constexpr std::int64_t kMaxTokens = 64;

Status not_supported(std::string msg) {
  return Status(StatusCode::kNotSupported, std::move(msg));
}
Status misaligned(std::string msg) {
  return Status(StatusCode::kMisaligned, std::move(msg));
}

/// Elements of `t` in one 16-byte load.
std::int64_t vec_of(DataType t) {
  return 16 / static_cast<std::int64_t>(size_of(t));
}

/// What every skinny variant needs of the problem, whatever its dtype and family.
Status check_scope(const GemmDesc& d) {
  if (d.op == GemmOp::kGemmStridedBatched && d.batch != 1)
    return not_supported(fmt::format("skinny kernels run one GEMM, not a batch of {}", d.batch));
  if (d.transa != Transpose::kT || d.transb != Transpose::kN)
    return not_supported(fmt::format("skinny kernels take tn problems (W as A^T, x as B), got {}{}",
                                     to_char(d.transa), to_char(d.transb)));
  if (d.op == GemmOp::kScaledGemm) {
    if (d.dtype != DataType::kF8E4M3 || (b_type(d) != DataType::kF8E4M3 && !is_weight_only(d)))
      return not_supported(
          fmt::format("skinny ScaledGemm takes fp8e4m3 x fp8e4m3, bf16 or fp16, not {} x {}",
                      short_name(d.dtype), short_name(b_type(d))));
    if (d.out_dtype != DataType::kBF16 && d.out_dtype != DataType::kF16 &&
        d.out_dtype != DataType::kF32)
      return not_supported(fmt::format("skinny ScaledGemm writes bf16, fp16 or fp32, not {}",
                                       short_name(d.out_dtype)));
  } else {
    if (d.dtype != DataType::kBF16 && d.dtype != DataType::kF16)
      return not_supported(
          fmt::format("skinny GEMMs take bf16 or fp16, not {}", short_name(d.dtype)));
    if (d.out_dtype != d.dtype)
      return not_supported(fmt::format("skinny {} GEMMs write {}, not {}", short_name(d.dtype),
                                       short_name(d.dtype), short_name(d.out_dtype)));
  }
  if (d.m < 1 || d.n < 1 || d.k < 1) return not_supported("empty problem");
  if (d.n > kMaxTokens)
    return not_supported(
        fmt::format("skinny kernels take n <= {} tokens, got {}", kMaxTokens, d.n));
  // The split planning and the kernels' K loops (k + granule, kb + kc) run in int: k keeps a
  // factor of two of headroom.
  if (d.m > INT32_MAX || d.k > (std::int64_t{1} << 30))
    return not_supported(
        fmt::format("skinny kernels take m < 2^31 and k <= 2^30, got m = {}, k = {}", d.m, d.k));
  return Status::ok();
}

/// Shape and leading-dimension requirements of the 16-byte loads (pointers are checked apart): k
/// in whole vectors of A's type, rows of A and B starting on 16 bytes.
Status check_vector_shape(const GemmDesc& d) {
  const std::int64_t vec = vec_of(d.dtype), vec_b = vec_of(b_type(d));
  if (d.k % vec != 0)
    return not_supported(
        fmt::format("k = {} is not a multiple of {} ({} elements per 16-byte load)", d.k, vec,
                    short_name(d.dtype)));
  if (d.lda % vec != 0 || d.ldb % vec_b != 0)
    return misaligned(fmt::format("lda = {} and ldb = {} must be multiples of {} and {} (16-byte rows of {} and {})",
                                  d.lda, d.ldb, vec, vec_b, short_name(d.dtype), short_name(b_type(d))));
  return Status::ok();
}

/// Split bound of the automatic policy: partial sums (written and read back as fp32) may cost at
/// most half the weight bytes, the workspace at most kMaxWorkspace, and a split at least a granule.
std::int64_t auto_split_cap(std::int64_t granule, const GemmDesc& d) {
  const std::int64_t traffic = d.k * static_cast<std::int64_t>(size_of(d.dtype)) / (16 * d.n);
  const std::int64_t ws = static_cast<std::int64_t>(kMaxWorkspace / (sizeof(float) * d.n * d.m));
  const std::int64_t granules = (d.k + granule - 1) / granule;
  return std::max<std::int64_t>(1,
                                std::min({traffic, ws, granules, std::int64_t{kSkinnyMaxSplits}}));
}

/// Split bound of the wave-balanced policy: tighter on partial traffic than auto (at most 1/8 of
/// the weight bytes: 2 * s * n * m * 4 <= m * k * e / 8), same workspace and granule bounds.
std::int64_t wave_split_cap(std::int64_t granule, const GemmDesc& d) {
  const std::int64_t traffic = d.k * static_cast<std::int64_t>(size_of(d.dtype)) / (64 * d.n);
  return std::max<std::int64_t>(1, std::min(traffic, auto_split_cap(granule, d)));
}

kern::SkinnyIn skinny_in(DataType t) {
  return t == DataType::kBF16  ? kern::SkinnyIn::kBF16
         : t == DataType::kF16 ? kern::SkinnyIn::kF16
                               : kern::SkinnyIn::kE4M3;
}

kern::SkinnyOut skinny_out(DataType t) {
  return t == DataType::kBF16  ? kern::SkinnyOut::kBF16
         : t == DataType::kF16 ? kern::SkinnyOut::kF16
                               : kern::SkinnyOut::kF32;
}

kern::SkinnyAct skinny_act(Epilogue e) {
  return e == Epilogue::kBiasRelu   ? kern::SkinnyAct::kRelu
         : e == Epilogue::kBiasGelu ? kern::SkinnyAct::kGelu
                                    : kern::SkinnyAct::kNone;
}

class SkinnySolution final : public Solution<GemmArgs> {
 public:
  SkinnySolution(const SkinnyConfig& c, SkinnyState* state)
      : cfg_(c), name_(c.name()), family_(skinny_family(c.family)), state_(state) {}
  const std::string& name() const override { return name_; }

  Status can_implement(const GemmArgs& a) const override {
    const GemmDesc& d = a.desc;
    TUNABLE_RETURN_IF_ERROR(check_scope(d));
    if (d.dtype != cfg_.dtype)
      return not_supported(fmt::format("{} runs {} inputs, not {}", name_, short_name(cfg_.dtype),
                                       short_name(d.dtype)));
    if (is_weight_only(d) != family_.weight_only())
      return not_supported(is_weight_only(d)
                               ? fmt::format("{} does not run e4m3 weights with {} tokens (the wo family does)",
                                             name_, short_name(b_type(d)))
                               : fmt::format("{} runs e4m3 weights with 16-bit tokens only", name_));
    // What validate() refuses, for callers that run a solution directly (the launcher would only say
    // "invalid value").
    if (d.scale_mode == ScaleMode::kRowwiseRms && !family_.weight_only())
      return not_supported(fmt::format("{} does not RMS-normalize its tokens (_rms: the weight-only families do)", name_));
    if (family_.weight_only() && (d.scale_mode == ScaleMode::kTensor || d.out_dtype != b_type(d)))
      return not_supported(fmt::format("{} needs rowwise (per-row) scales and an output of the tokens' type {}",
                                       name_, short_name(b_type(d))));
    if (d.n > family_.max_tokens())
      return not_supported(
          fmt::format("{} takes n <= {} tokens, got {}", name_, family_.max_tokens(), d.n));
    TUNABLE_RETURN_IF_ERROR(check_vector_shape(d));
    const auto addr_a = reinterpret_cast<std::uintptr_t>(a.ops.a);
    const auto addr_b = reinterpret_cast<std::uintptr_t>(a.ops.b);
    if (addr_a % 16 != 0 || addr_b % 16 != 0)
      return misaligned(fmt::format("{} needs 16-byte aligned A and B (16-byte loads)", name_));
    TUNABLE_RETURN_IF_ERROR(family_.check(cfg_, d, name_));
    if (needs_whole_rows(d) && splits_k(cfg_.ks))
      return not_supported(fmt::format("{} splits K, and the RMS-normalized problem (_rms) needs each token's "
                                       "whole row in one block",
                                       name_));
    if (cfg_.ks.fixed > 0) {
      const std::int64_t granule = family_.granule(cfg_);
      const std::int64_t granules = (d.k + granule - 1) / granule;
      if (cfg_.ks.fixed > granules)
        return not_supported(fmt::format("{}: k = {} holds only {} split granule(s) of {}", name_,
                                         d.k, granules, granule));
    }
    if (workspace_bytes(a) > kMaxWorkspace)
      return not_supported(fmt::format("{} would need {} bytes of split-K workspace (limit {})",
                                       name_, workspace_bytes(a), kMaxWorkspace));
    return Status::ok();
  }

  std::size_t workspace_bytes(const GemmArgs& a) const override {
    const GemmDesc& d = a.desc;
    if (d.m < 1 || d.n < 1 || d.k < 1) return 0;
    if (const auto own = family_.workspace(cfg_, d)) return *own;
    const std::int64_t s = split_bound(d);
    return s > 1 ? static_cast<std::size_t>(s) * sizeof(float) * static_cast<std::size_t>(d.n) *
                       static_cast<std::size_t>(d.m)
                 : 0;
  }

  Status run(const GemmArgs& a, void* workspace, std::size_t workspace_bytes,
             Stream stream) const override {
    TUNABLE_RETURN_IF_ERROR(can_implement(a));
    const GemmDesc& d = a.desc;
    const GemmOperands& o = a.ops;
    const bool has_bias = d.epilogue != Epilogue::kNone;
    if (!o.a || !o.b || !o.c)
      return Status(StatusCode::kInvalidArgument, "A, B and C must not be null");
    if (has_bias && !o.bias)
      return Status(StatusCode::kInvalidArgument, "the epilogue needs a bias pointer, got null");
    const bool wo = is_weight_only(d);
    if (d.op == GemmOp::kScaledGemm && (!o.scale_a || (!wo && !o.scale_b)))
      return Status(StatusCode::kInvalidArgument,
                    wo ? "weight-only ScaledGemm needs scale_a" : "ScaledGemm needs scale_a and scale_b");
    const std::size_t need = this->workspace_bytes(a);
    if (need > 0 && (workspace == nullptr || workspace_bytes < need))
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{} needs {} bytes of workspace, got {}", name_, need,
                                workspace == nullptr ? 0 : workspace_bytes));
    if (state_ == nullptr)
      return Status(
          StatusCode::kInvalidArgument,
          fmt::format("{}: this provider was made without a SkinnyState, so it cannot launch",
                      name_));
    kern::SkinnyDevice dev;
    TUNABLE_RETURN_IF_ERROR(state_->device(&dev));

    kern::SkinnyLaunch l;
    kern::SkinnyParams& p = l.p;
    p.w = o.a;
    p.x = o.b;
    p.y = o.c;
    p.bias = has_bias ? o.bias : nullptr;
    const bool rowwise = has_rowwise_scales(d);
    const bool rms = d.scale_mode == ScaleMode::kRowwiseRms;
    p.scale_a = d.op == GemmOp::kScaledGemm && !rowwise ? o.scale_a : nullptr;
    p.scale_b = d.op == GemmOp::kScaledGemm && !rowwise ? o.scale_b : nullptr;
    p.row_scale = rowwise ? o.scale_a : nullptr;
    p.col_scale = rowwise && !wo ? o.scale_b : nullptr;  // 16-bit tokens carry no scale
    p.partial = static_cast<float*>(workspace);
    p.lda = d.lda;
    p.ldb = d.ldb;
    p.ldc = d.ldc;
    p.m = static_cast<int>(d.m);
    p.n = static_cast<int>(d.n);
    p.k = static_cast<int>(d.k);
    p.alpha = static_cast<float>(d.alpha);
    p.beta = static_cast<float>(d.beta);
    p.out = skinny_out(d.out_dtype);
    p.act = skinny_act(d.epilogue);
    p.rms = rms;
    p.rms_eps = static_cast<float>(d.rms_eps);
    l.splits = needs_whole_rows(d) ? 1 : cfg_.ks.fixed;  // automatic: one split (can_implement refused the others)
    l.waves = cfg_.ks.waves;
    const std::int64_t granule = family_.granule(cfg_);
    l.max_splits = static_cast<int>(cfg_.ks.waves != 0 ? wave_split_cap(granule, d)
                                                       : auto_split_cap(granule, d));
    l.partial_bytes = workspace == nullptr ? 0 : workspace_bytes;
    return family_.launch(cfg_, skinny_in(d.dtype), l, dev, *state_,
                          reinterpret_cast<cudaStream_t>(stream));
  }

 private:
  /// Most splits a run on `d` can use (what the workspace is sized for).
  std::int64_t split_bound(const GemmDesc& d) const {
    if (cfg_.ks.cluster != 0) return 1;  // reduced in distributed shared memory: no workspace
    if (needs_whole_rows(d)) return 1;
    if (cfg_.ks.fixed != 0) return cfg_.ks.fixed;
    const std::int64_t granule = family_.granule(cfg_);
    return cfg_.ks.waves != 0 ? wave_split_cap(granule, d) : auto_split_cap(granule, d);
  }

  SkinnyConfig cfg_;
  std::string name_;
  const SkinnyFamilyBridge& family_;
  SkinnyState* state_;
};

/// Default of the weight-only problem, which cuBLAS(Lt) cannot run: one fixed configuration of the
/// wo family (16 rows x 8 warps along K, automatic splits: the shape the MMA families' tuning picks
/// most at decode sizes), launched once per 8 tokens above 8. Those larger calls read the weight
/// once per 8 tokens: the wo kernels are decode kernels; a prefill quantizes its activations
/// (W8A8) instead.
class WeightOnlyDefault final : public Solution<GemmArgs> {
 public:
  explicit WeightOnlyDefault(SkinnyState* state) : inner_(config(), state) {}
  const std::string& name() const override { return name_; }

  Status can_implement(const GemmArgs& a) const override {
    TUNABLE_RETURN_IF_ERROR(validate(a.desc));
    if (!is_weight_only(a.desc))
      return not_supported("the weight-only Default runs fp8e4m3 x bf16/fp16 ScaledGemm only");
    return inner_.can_implement(part(a, 0));
  }
  std::size_t workspace_bytes(const GemmArgs& a) const override {
    if (a.desc.n < 1) return 0;
    // A narrower last part may take more splits (the automatic cap divides by n), so both count.
    const std::int64_t last = (a.desc.n - 1) / kPart * kPart;
    return std::max(inner_.workspace_bytes(part(a, 0)), inner_.workspace_bytes(part(a, last)));
  }
  Status run(const GemmArgs& a, void* ws, std::size_t ws_bytes, Stream stream) const override {
    TUNABLE_RETURN_IF_ERROR(can_implement(a));
    for (std::int64_t j0 = 0; j0 < a.desc.n; j0 += kPart)
      TUNABLE_RETURN_IF_ERROR(inner_.run(part(a, j0), ws, ws_bytes, stream));
    return Status::ok();
  }

 private:
  static constexpr std::int64_t kPart = kWeightOnlyTokens;
  static SkinnyConfig config() {
    return SkinnyShape::of(16, 8).config(SkinnyFamily::kWeightOnly, DataType::kF8E4M3, KSplit::automatic());
  }
  /// Tokens [j0, j0 + 8) of `a` (clamped to n): B's and C's columns from j0 on.
  static GemmArgs part(const GemmArgs& a, std::int64_t j0) {
    GemmArgs g = a;
    g.desc.n = std::min(kPart, a.desc.n - j0);
    g.ops.b = static_cast<const char*>(a.ops.b) + j0 * a.desc.ldb * static_cast<std::int64_t>(size_of(b_type(a.desc)));
    g.ops.c = static_cast<char*>(a.ops.c) + j0 * a.desc.ldc * static_cast<std::int64_t>(size_of(a.desc.out_dtype));
    return g;
  }
  SkinnySolution inner_;
  std::string name_ = "Default";
};

class SkinnyProvider final : public Provider<GemmArgs> {
 public:
  explicit SkinnyProvider(SkinnyState* state) : state_(state) {}
  std::string name() const override { return "skinny"; }

  Status enumerate(const GemmArgs& args, std::vector<SolutionPtr<GemmArgs>>* out) const override {
    const GemmDesc& d = args.desc;
    TUNABLE_RETURN_IF_ERROR(check_scope(d));
    TUNABLE_RETURN_IF_ERROR(check_vector_shape(d));
    for (const SkinnyConfig& c : skinny_candidate_configs(d)) {
      auto s = std::make_shared<SkinnySolution>(c, state_);
      if (s->can_implement(args).is_ok()) out->push_back(std::move(s));
    }
    return Status::ok();
  }

  SolutionPtr<GemmArgs> from_name(const std::string& name, const GemmArgs&) const override {
    const auto c = SkinnyConfig::parse(name);
    if (!c) return nullptr;
    return std::make_shared<SkinnySolution>(*c, state_);
  }

 private:
  SkinnyState* state_;
};

}  // namespace

std::shared_ptr<const Provider<GemmArgs>> skinny_gemm_provider(SkinnyState* state) {
  return std::make_shared<SkinnyProvider>(state);
}

SolutionPtr<GemmArgs> skinny_weight_only_default(SkinnyState* state) {
  return std::make_shared<WeightOnlyDefault>(state);
}

std::vector<std::string> skinny_gemm_variant_names() {
  std::vector<KSplit> splits = {KSplit::automatic()};
  for (int n : {1, 2, 4, 8, 16}) splits.push_back(KSplit::splits(n));
  for (int w : {2, 4}) splits.push_back(KSplit::balanced(w));
  for (int c : {2, 4}) splits.push_back(KSplit::over_cluster(c));
  std::vector<std::string> names;
  for (const SkinnyFamilyBridge* f : skinny_families())
    for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3})
      for (const SkinnyShape& s : f->shapes())
        for (const KSplit& ks : splits)
          if (s.takes(ks) && s.config(f->family(), t, ks).valid()) names.push_back(s.config(f->family(), t, ks).name());
  return names;
}

}  // namespace tunable
