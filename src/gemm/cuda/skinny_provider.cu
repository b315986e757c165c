// Provider<GemmArgs> for the skinny GEMM kernels of kernels/gemv: configurations, their generated
// names and the inverse parser, per-variant constraints (can_implement), split-K workspace sizing,
// and the enumeration of the 10-51 variants worth timing for one decode problem.
#include "gemm/cuda/skinny_provider.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <regex>
#include <utility>

#include "core/cuda_check.hpp"
#include "kernels/gemv/skinny_gemv.cuh"
#include "kernels/gemv/skinny_mma.cuh"
#include "kernels/gemv/skinny_tma.cuh"
#include "kernels/gemv/skinny_wgmma.cuh"
#include "gemm/cuda/skinny_wgt.hpp"

namespace tunable {
namespace {

namespace kern = ::tunable::kernels;

/// Largest workspace a variant may ask for (the tuner's dispatch workspace limit).
constexpr std::size_t kMaxWorkspace = std::size_t{32} << 20;
/// Largest fixed or automatic K-split count.
constexpr int kMaxSplits = 64;
constexpr std::int64_t kMaxGemvTokens = 8;
constexpr std::int64_t kMaxMmaTokens = 64;
constexpr std::int64_t kMaxTmaTokens = 16;

/// kMmaPipe: the MMA kernel with two register stages of weight loads (skinny_mmap_kernel);
/// kMmaTma: the MMA kernel whose weight arrives by TMA into a shared-memory ring (skinny_mmt_kernel);
/// kWgmma: warpgroup MMA on 64-row tiles, weight and tokens by TMA (skinny_wgt_kernel).
enum class Family { kGemv, kMma, kMmaPipe, kMmaTma, kWgmma };

/// Largest wave target of the wave-balanced split policy (ks w<W>).
constexpr int kMaxWaves = 8;

const char* family_name(Family f) {
  return f == Family::kGemv      ? "gemv"
         : f == Family::kMma     ? "mma"
         : f == Family::kMmaPipe ? "mmap"
         : f == Family::kMmaTma  ? "mmt"
                                 : "wgt";
}

struct SkinnyConfig {
  Family family = Family::kGemv;
  DataType dtype = DataType::kBF16;  ///< A and B: bf16, fp16 or fp8e4m3
  int rows = 1;      ///< gemv: weight rows per warp (1, 2, 4); mma: rows per block (16, 32; wgt 64)
  int width = 256;   ///< gemv: threads per block (128, 256); mma: warps splitting K (4, 8, 16;
                     ///< mmap 16 only at 16 rows; mmt: 4 or 8 consumer warps at 16 rows; wgt: 4,
                     ///< one warpgroup)
  int splits = 0;    ///< K splits: 0 = auto (sized from the device), else 1..kMaxSplits
  int waves = 0;     ///< with splits == 0: 0 = auto, else wave-balanced splits for >= waves waves
  int cluster = 0;   ///< mmap with splits == waves == 0: 2 or 4 = K split over a block cluster
  bool wc = false;   ///< mma, mmap: warp-contiguous K order (name suffix "_wc"; round 11)
  int boxes = 0;     ///< mmt, wgt: 128-byte boxes of each row per stage (name suffix "_b<boxes>s<stages>")
  int stages = 0;    ///< mmt, wgt: stages in the shared-memory ring
  bool pair = false; ///< mmt: one block per SM, the first (tiles - SMs) of them on two tiles (suffix "_pair";
                     ///< round 18)
  bool bal = false;  ///< mmt: one block per SM, left-over tiles cut in K over groups of blocks, tokens by TMA
                     ///< (suffix "_bal", unsplit; round 20)

  kern::SkinnyMmtGrid mmt_grid() const {
    return bal ? kern::SkinnyMmtGrid::kBal : pair ? kern::SkinnyMmtGrid::kPair : kern::SkinnyMmtGrid::kTiles;
  }

  std::string name() const {
    const std::string ks = splits != 0    ? std::to_string(splits)
                           : waves != 0   ? fmt::format("w{}", waves)
                           : cluster != 0 ? fmt::format("c{}", cluster)
                                          : std::string("auto");
    if (family == Family::kGemv)
      return fmt::format("skinny_gemv_{}_r{}_t{}_ks{}", short_name(dtype), rows, width, ks);
    const bool ring = family == Family::kMmaTma || family == Family::kWgmma;
    const std::string shape = ring ? fmt::format("_b{}s{}", boxes, stages) : "";
    return fmt::format("skinny_{}_{}_bm{}_wk{}_ks{}{}{}{}{}", family_name(family), short_name(dtype), rows,
                       width, ks, shape, pair ? "_pair" : "", bal ? "_bal" : "", wc ? "_wc" : "");
  }

  bool valid() const {
    if (dtype != DataType::kBF16 && dtype != DataType::kF16 && dtype != DataType::kF8E4M3)
      return false;
    if (splits < 0 || splits > kMaxSplits) return false;
    if (waves < 0 || waves > kMaxWaves || (waves != 0 && splits != 0)) return false;
    if (cluster != 0 && (cluster != 2 && cluster != 4)) return false;
    if (cluster != 0 && (family != Family::kMmaPipe || splits != 0 || waves != 0)) return false;
    if (wc && (family == Family::kGemv || family == Family::kMmaTma || family == Family::kWgmma)) return false;
    if (pair && (family != Family::kMmaTma || width != kern::kSkinnyMmtPairWarps)) return false;
    if (bal && (family != Family::kMmaTma || width != kern::kSkinnyMmtPairWarps || splits != 1 || pair)) return false;
    if (family == Family::kMmaTma   ? kern::skinny_mmt_shape_index(boxes, stages, mmt_grid()) < 0
        : family == Family::kWgmma ? kern::skinny_wgt_shape_index(boxes, stages) < 0
                                    : boxes != 0 || stages != 0)
      return false;
    if (family == Family::kGemv)
      return (rows == 1 || rows == 2 || rows == 4) && (width == 128 || width == 256);
    if (family == Family::kMmaTma) return rows == 16 && (width == 4 || width == 8);
    if (family == Family::kWgmma) return rows == 64 && width == 4;
    return (rows == 16 || rows == 32) &&
           (width == 4 || width == 8 || (width == 16 && (family == Family::kMma || rows == 16)));
  }

  /// Inverse of name(); nullopt for anything name() would not have produced.
  static std::optional<SkinnyConfig> parse(const std::string& s) {
    static const std::regex re(
        "^skinny_(gemv|mmap|mmt|mma|wgt)_([a-z0-9]+)_(r|bm)([0-9]{1,3})_(t|wk)([0-9]{1,3})_ks(auto|w[0-9]|c[0-9]|[0-9]{1,2})(_b([0-9]{1,2})s([0-9]))?(_pair)?(_bal)?(_wc)?$");
    std::smatch m;
    if (!std::regex_match(s, m, re)) return std::nullopt;
    SkinnyConfig c;
    c.family = m[1] == "gemv"  ? Family::kGemv
               : m[1] == "mma" ? Family::kMma
               : m[1] == "mmap" ? Family::kMmaPipe
               : m[1] == "mmt"  ? Family::kMmaTma
                                : Family::kWgmma;
    const auto t = parse_data_type(m[2].str());
    if (!t) return std::nullopt;
    c.dtype = *t;
    c.rows = std::stoi(m[4].str());
    c.width = std::stoi(m[6].str());
    const std::string ks = m[7].str();
    c.splits = ks == "auto" || ks[0] == 'w' || ks[0] == 'c' ? 0 : std::stoi(ks);
    c.waves = ks[0] == 'w' ? std::stoi(ks.substr(1)) : 0;
    c.cluster = ks[0] == 'c' ? std::stoi(ks.substr(1)) : 0;
    c.boxes = m[8].matched ? std::stoi(m[9].str()) : 0;
    c.stages = m[8].matched ? std::stoi(m[10].str()) : 0;
    c.pair = m[11].matched;
    c.bal = m[12].matched;
    c.wc = m[13].matched;
    // Canonical spelling only (family letters, no leading zeros, no aliases such as "BFloat16").
    if (!c.valid() || c.name() != s) return std::nullopt;
    return c;
  }

  std::int64_t vec() const { return 16 / static_cast<std::int64_t>(size_of(dtype)); }
  std::int64_t max_tokens() const {
    return family == Family::kGemv ? kMaxGemvTokens : family == Family::kMmaTma ? kMaxTmaTokens : kMaxMmaTokens;
  }
  /// K elements per split granule (what one warp covers in one pass; mmt: one stage).
  std::int64_t granule() const {
    const int v = static_cast<int>(vec());
    return family == Family::kGemv     ? kern::skinny_gemv_granule(v)
           : family == Family::kMmaTma ? kern::skinny_mmt_granule(v, boxes)
           : family == Family::kWgmma  ? kern::skinny_wgt_granule(v, boxes)
                                       : kern::skinny_mma_granule(v, width);
  }
};

Status not_supported(std::string msg) { return Status(StatusCode::kNotSupported, std::move(msg)); }
Status misaligned(std::string msg) { return Status(StatusCode::kMisaligned, std::move(msg)); }

/// What every skinny variant needs of the problem, whatever its dtype and family.
Status check_scope(const GemmDesc& d) {
  if (d.op == GemmOp::kGemmStridedBatched && d.batch != 1)
    return not_supported(fmt::format("skinny kernels run one GEMM, not a batch of {}", d.batch));
  if (d.transa != Transpose::kT || d.transb != Transpose::kN)
    return not_supported(fmt::format("skinny kernels take tn problems (W as A^T, x as B), got {}{}",
                                     to_char(d.transa), to_char(d.transb)));
  if (d.op == GemmOp::kScaledGemm) {
    if (d.dtype != DataType::kF8E4M3 || b_type(d) != DataType::kF8E4M3)
      return not_supported(fmt::format("skinny ScaledGemm takes fp8e4m3 x fp8e4m3, not {} x {}",
                                       short_name(d.dtype), short_name(b_type(d))));
    if (d.out_dtype != DataType::kBF16 && d.out_dtype != DataType::kF16 && d.out_dtype != DataType::kF32)
      return not_supported(fmt::format("skinny ScaledGemm writes bf16, fp16 or fp32, not {}",
                                        short_name(d.out_dtype)));
  } else {
    if (d.dtype != DataType::kBF16 && d.dtype != DataType::kF16)
      return not_supported(fmt::format("skinny GEMMs take bf16 or fp16, not {}", short_name(d.dtype)));
    if (d.out_dtype != d.dtype)
      return not_supported(fmt::format("skinny {} GEMMs write {}, not {}", short_name(d.dtype),
                                       short_name(d.dtype), short_name(d.out_dtype)));
  }
  if (d.m < 1 || d.n < 1 || d.k < 1) return not_supported("empty problem");
  if (d.n > kMaxMmaTokens)
    return not_supported(fmt::format("skinny kernels take n <= {} tokens, got {}", kMaxMmaTokens, d.n));
  // The split planning and the kernels' K loops (k + granule, kb + kc) run in int: k keeps a
  // factor of two of headroom.
  if (d.m > INT32_MAX || d.k > (std::int64_t{1} << 30))
    return not_supported(fmt::format("skinny kernels take m < 2^31 and k <= 2^30, got m = {}, k = {}", d.m, d.k));
  return Status::ok();
}

/// Shape and leading-dimension requirements of the 16-byte loads (pointers are checked apart).
Status check_vector_shape(const GemmDesc& d, std::int64_t vec) {
  if (d.k % vec != 0)
    return not_supported(fmt::format("k = {} is not a multiple of {} ({} elements per 16-byte load)",
                                      d.k, vec, short_name(d.dtype)));
  if (d.lda % vec != 0 || d.ldb % vec != 0)
    return misaligned(fmt::format("lda = {} and ldb = {} must be multiples of {} (16-byte rows of {})",
                                  d.lda, d.ldb, vec, short_name(d.dtype)));
  return Status::ok();
}

/// Split bound of the automatic policy: partial sums (written and read back as fp32) may cost at
/// most half the weight bytes, the workspace at most kMaxWorkspace, and a split at least a granule.
std::int64_t auto_split_cap(const SkinnyConfig& c, const GemmDesc& d) {
  const std::int64_t traffic = d.k * static_cast<std::int64_t>(size_of(d.dtype)) / (16 * d.n);
  const std::int64_t ws = static_cast<std::int64_t>(kMaxWorkspace / (sizeof(float) * d.n * d.m));
  const std::int64_t granules = (d.k + c.granule() - 1) / c.granule();
  return std::max<std::int64_t>(1, std::min({traffic, ws, granules, std::int64_t{kMaxSplits}}));
}

/// Split bound of the wave-balanced policy: tighter on partial traffic than auto (at most 1/8 of
/// the weight bytes: 2 * s * n * m * 4 <= m * k * e / 8), same workspace and granule bounds.
std::int64_t wave_split_cap(const SkinnyConfig& c, const GemmDesc& d) {
  const std::int64_t traffic = d.k * static_cast<std::int64_t>(size_of(d.dtype)) / (64 * d.n);
  return std::max<std::int64_t>(1, std::min(traffic, auto_split_cap(c, d)));
}

/// Most splits a run of `c` on `d` can use (what the workspace is sized for).
std::int64_t split_bound(const SkinnyConfig& c, const GemmDesc& d) {
  if (c.cluster != 0) return 1;  // reduced in distributed shared memory: no workspace
  if (c.splits != 0) return c.splits;
  return c.waves != 0 ? wave_split_cap(c, d) : auto_split_cap(c, d);
}

kern::SkinnyIn skinny_in(DataType t) {
  return t == DataType::kBF16 ? kern::SkinnyIn::kBF16
         : t == DataType::kF16 ? kern::SkinnyIn::kF16
                               : kern::SkinnyIn::kE4M3;
}

kern::SkinnyOut skinny_out(DataType t) {
  return t == DataType::kBF16 ? kern::SkinnyOut::kBF16
         : t == DataType::kF16 ? kern::SkinnyOut::kF16
                               : kern::SkinnyOut::kF32;
}

kern::SkinnyAct skinny_act(Epilogue e) {
  return e == Epilogue::kBiasRelu ? kern::SkinnyAct::kRelu
         : e == Epilogue::kBiasGelu ? kern::SkinnyAct::kGelu
                                    : kern::SkinnyAct::kNone;
}

class SkinnySolution final : public Solution<GemmArgs> {
 public:
  explicit SkinnySolution(const SkinnyConfig& c) : cfg_(c), name_(c.name()) {}
  const std::string& name() const override { return name_; }

  Status can_implement(const GemmArgs& a) const override {
    const GemmDesc& d = a.desc;
    TUNABLE_RETURN_IF_ERROR(check_scope(d));
    if (d.dtype != cfg_.dtype)
      return not_supported(fmt::format("{} runs {} inputs, not {}", name_, short_name(cfg_.dtype),
                                       short_name(d.dtype)));
    if (d.n > cfg_.max_tokens())
      return not_supported(fmt::format("{} takes n <= {} tokens, got {}", name_, cfg_.max_tokens(), d.n));
    TUNABLE_RETURN_IF_ERROR(check_vector_shape(d, cfg_.vec()));
    const auto addr_a = reinterpret_cast<std::uintptr_t>(a.ops.a);
    const auto addr_b = reinterpret_cast<std::uintptr_t>(a.ops.b);
    if (addr_a % 16 != 0 || addr_b % 16 != 0)
      return misaligned(fmt::format("{} needs 16-byte aligned A and B (16-byte loads)", name_));
    if (cfg_.family == Family::kWgmma) {
      const std::size_t smem = kern::skinny_wgt_smem(kern::skinny_mma_token_tiles(static_cast<int>(d.n)),
                                                     cfg_.boxes, cfg_.stages);
      if (smem > kern::kSkinnyWgtSmemLimit)
        return not_supported(fmt::format("{} needs {} bytes of shared memory at n = {} tokens (limit {})",
                                         name_, smem, d.n, kern::kSkinnyWgtSmemLimit));
      // Hopper's fp8 wgmma adds inside the tensor core below fp32 precision; the kernel promotes
      // every 128 products, which bf16 and fp16 outputs cannot see but an fp32 output can.
      if (d.dtype == DataType::kF8E4M3 && d.out_dtype == DataType::kF32)
        return not_supported(fmt::format("{}: fp8 wgmma sums 128 products below fp32 precision; fp32 output "
                                         "needs a variant with fp32 accumulation",
                                         name_));
    }
    if (cfg_.splits > 0) {
      const std::int64_t granules = (d.k + cfg_.granule() - 1) / cfg_.granule();
      if (cfg_.splits > granules)
        return not_supported(fmt::format("{}: k = {} holds only {} split granule(s) of {}", name_, d.k,
                                         granules, cfg_.granule()));
    }
    if (workspace_bytes(a) > kMaxWorkspace)
      return not_supported(fmt::format("{} would need {} bytes of split-K workspace (limit {})", name_,
                                       workspace_bytes(a), kMaxWorkspace));
    return Status::ok();
  }

  std::size_t workspace_bytes(const GemmArgs& a) const override {
    const GemmDesc& d = a.desc;
    if (d.m < 1 || d.n < 1 || d.k < 1) return 0;
    // The balanced grid's partials: one 16 x n slice per block, fewer blocks than tiles whenever a
    // tile is left over (the SM count is the launcher's to know).
    if (cfg_.bal)
      return static_cast<std::size_t>((d.m + 15) / 16) * 16 * sizeof(float) * static_cast<std::size_t>(d.n);
    const std::int64_t s = split_bound(cfg_, d);
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
    if (!o.a || !o.b || !o.c) return Status(StatusCode::kInvalidArgument, "A, B and C must not be null");
    if (has_bias && !o.bias)
      return Status(StatusCode::kInvalidArgument, "the epilogue needs a bias pointer, got null");
    if (d.op == GemmOp::kScaledGemm && (!o.scale_a || !o.scale_b))
      return Status(StatusCode::kInvalidArgument, "ScaledGemm needs scale_a and scale_b");
    const std::size_t need = this->workspace_bytes(a);
    if (need > 0 && (workspace == nullptr || workspace_bytes < need))
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{} needs {} bytes of workspace, got {}", name_, need,
                                workspace == nullptr ? 0 : workspace_bytes));

    kern::SkinnyLaunch l;
    kern::SkinnyParams& p = l.p;
    p.w = o.a;
    p.x = o.b;
    p.y = o.c;
    p.bias = has_bias ? o.bias : nullptr;
    p.scale_a = d.op == GemmOp::kScaledGemm ? o.scale_a : nullptr;
    p.scale_b = d.op == GemmOp::kScaledGemm ? o.scale_b : nullptr;
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
    l.splits = cfg_.splits;
    l.waves = cfg_.waves;
    l.cluster = cfg_.cluster;
    l.max_splits = static_cast<int>(cfg_.waves != 0 ? wave_split_cap(cfg_, d) : auto_split_cap(cfg_, d));
    l.partial_bytes = workspace == nullptr ? 0 : workspace_bytes;
    // The TMA kernel's small rings let the block scheduler pack 2-3 blocks on some SMs and leave
    // others idle; capping blocks per SM at what the grid needs spreads it (NOTES-skinny round 16:
    // llama3_8b qkv M = 8 23.1 -> 18.1 us, gemma_2b down M = 8 29.7 -> 24.7 in graphs). The same cap
    // on the register-fed kernels and the GEMV gained nothing the tuner lacked and cost mma 12 % on
    // 2304 x 16384 (round 17), so it stays theirs to ask for (the timeline tool's --spread).
    l.spread = cfg_.family == Family::kMmaTma;

    const cudaError_t e =
        cfg_.family == Family::kGemv
            ? kern::skinny_gemv(skinny_in(d.dtype), cfg_.rows, cfg_.width, l, stream)
        : cfg_.family == Family::kMma
            ? kern::skinny_mma(skinny_in(d.dtype), cfg_.rows, cfg_.width, cfg_.wc, l, stream)
        : cfg_.family == Family::kMmaPipe
            ? kern::skinny_mmap(skinny_in(d.dtype), cfg_.rows, cfg_.width, cfg_.wc, l, stream)
        : cfg_.family == Family::kMmaTma
            ? kern::skinny_mmt(skinny_in(d.dtype), cfg_.width, cfg_.boxes, cfg_.stages, l, stream, cfg_.mmt_grid())
            : kern::skinny_wgt(skinny_in(d.dtype), cfg_.boxes, cfg_.stages, l, stream);
    if (e == cudaErrorStreamCaptureUnsupported && cfg_.bal)
      return not_supported(fmt::format(
          "{}: its arrival counters for this stream are allocated at the stream's first call outside CUDA "
          "graph capture; run it once on this stream before capturing",
          name_));
    if (e == cudaErrorNotSupported)
      return not_supported(fmt::format(
          "{}: this device, build or driver lacks what it needs (tensor cores sm_80+, fp8 sm_89+, clusters "
          "and TMA sm_90+ with cuTensorMapEncodeTiled, wgmma sm_90a code)",
          name_));
    TUNABLE_CUDA_CHECK(e);
    return Status::ok();
  }

 private:
  SkinnyConfig cfg_;
  std::string name_;
};

/// The variants worth timing for `d` (before can_implement filtering): for n <= 8 the GEMV family
/// (every block shape with automatic splits, plus fixed splits for the two widest) and the MMA
/// family; above 8 tokens the MMA family with automatic and fixed splits.
///
/// Added after the first H100 run (bench/NOTES-skinny.md, "Round 2"): the pipelined MMA kernel
/// (mmap) unsplit, auto and wave-balanced, and wave-balanced splits (ksw2/ksw4) for the shapes
/// that won there, and cluster split-K of mmap (ksc2/ksc4). Round 7: 16 warps on 16 rows; round 9:
/// the plain MMA kernel with 16 warps on 32 rows above 8 tokens; round 11: warp-contiguous K
/// order (_wc) of mma and mmap; round 14: the TMA-fed kernel (mmt, n <= 16); round 16: the wgmma
/// kernel (wgt, 6); round 18: the paired mmt grid (2); round 20: the balanced mmt grid (2). At most 65
/// (n <= 8), 68 (n 9-16) and 53 (n > 16) before filtering.
std::vector<SkinnyConfig> candidate_configs(const GemmDesc& d) {
  std::vector<SkinnyConfig> out;
  auto add = [&](Family f, int rows, int width, int splits) {
    out.push_back(SkinnyConfig{f, d.dtype, rows, width, splits});
  };
  auto add_waves = [&](Family f, int rows, int width, int waves) {
    out.push_back(SkinnyConfig{f, d.dtype, rows, width, 0, waves});
  };
  auto add_cluster = [&](int rows, int width, int cluster) {
    out.push_back(SkinnyConfig{Family::kMmaPipe, d.dtype, rows, width, 0, 0, cluster});
  };
  if (d.n <= kMaxGemvTokens) {
    for (int r : {1, 2, 4})
      for (int t : {128, 256}) add(Family::kGemv, r, t, 0);
    for (int r : {1, 2})
      for (int s : {1, 2, 4, 8}) add(Family::kGemv, r, 256, s);
    for (int bm : {16, 32})
      for (int wk : {4, 8}) add(Family::kMma, bm, wk, 0);
    for (int s : {1, 2, 4}) {
      add(Family::kMma, 16, 8, s);
      add(Family::kMma, 32, 4, s);
    }
    // Round 2 (10): pipelined MMA, wave-balanced splits.
    for (int bm : {16, 32})
      for (int wk : {4, 8}) add(Family::kMmaPipe, bm, wk, 1);
    add(Family::kMmaPipe, 16, 8, 0);
    add_waves(Family::kMmaPipe, 16, 8, 2);
    add_waves(Family::kMmaPipe, 32, 4, 2);
    add_waves(Family::kGemv, 1, 256, 2);
    add_waves(Family::kGemv, 2, 256, 2);
    add_waves(Family::kMma, 16, 8, 2);
    add_cluster(16, 8, 2);
    add_cluster(32, 4, 4);
  } else {
    for (int bm : {16, 32})
      for (int wk : {4, 8}) {
        add(Family::kMma, bm, wk, 0);
        for (int s : {1, 2, 4, 8}) add(Family::kMma, bm, wk, s);
      }
    // Round 2 (12): pipelined MMA, wave-balanced splits.
    for (int bm : {16, 32})
      for (int wk : {4, 8}) add(Family::kMmaPipe, bm, wk, 1);
    add(Family::kMmaPipe, 16, 8, 0);
    add(Family::kMmaPipe, 32, 4, 0);
    add_waves(Family::kMmaPipe, 16, 8, 2);
    add_waves(Family::kMmaPipe, 16, 8, 4);
    add_waves(Family::kMmaPipe, 32, 4, 2);
    add_waves(Family::kMma, 16, 8, 2);
    add_waves(Family::kMma, 16, 8, 4);
    add_waves(Family::kMma, 32, 4, 2);
    add_cluster(16, 8, 2);
    add_cluster(32, 4, 4);
  }
  // Round 7 (4-5): 16 warps on 16 rows; round 9 (2, above 8 tokens): 16 warps on 32 rows, half the
  // x re-reads of 16-row blocks at 128 registers. The pipelined kernel only while its two stages
  // keep the 128-register budget (n <= 16).
  add(Family::kMma, 16, 16, 0);
  add(Family::kMma, 16, 16, 1);
  if (d.n > kMaxGemvTokens) {
    add(Family::kMma, 16, 16, 2);
    add(Family::kMma, 32, 16, 0);
    add(Family::kMma, 32, 16, 1);
  }
  if (d.n <= 16) {
    add(Family::kMmaPipe, 16, 16, 1);
    add_cluster(16, 16, 2);
  }
  // Round 11: the warp-contiguous K order (faster streaming per block in one wave): the pipelined
  // kernel unsplit, wave-balanced and cluster-split; the plain kernel unsplit (its lower register
  // count admits more blocks per SM, one wave where mmap needs two).
  const std::size_t first_wc = out.size();
  add(Family::kMmaPipe, 16, 8, 1);
  add_waves(Family::kMmaPipe, 16, 8, 2);
  add_cluster(16, 8, 2);
  add(Family::kMmaPipe, 32, 4, 1);
  add(Family::kMma, 16, 8, 1);
  add(Family::kMma, 16, 16, 1);
  if (d.n > kMaxGemvTokens) {
    add(Family::kMma, 32, 8, 1);
    add(Family::kMma, 32, 16, 1);
  }
  if (d.n <= 16) {
    add(Family::kMmaPipe, 16, 16, 1);
    add_cluster(16, 16, 2);
  }
  for (std::size_t i = first_wc; i < out.size(); ++i) out[i].wc = true;
  // Round 14: the weight by TMA into a shared-memory ring (no LSU, L1 or registers on its path).
  if (d.n <= kMaxTmaTokens) {
    // Shapes from the timeline sweeps (NOTES round 14): every built ring shape unsplit with 4 and 8
    // consumer warps (each won some row: 8 x 2 llama3_8b qkv at 16 tokens, 8 x 3 llama3_405b_tp8
    // qkv, 16 x 2 gemma_2b down at 16), and 8 x 2 with automatic splits.
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtShapes)
      for (int wk : {4, 8}) out.push_back({Family::kMmaTma, d.dtype, 16, wk, 1, 0, 0, false, sh.boxes, sh.stages});
    out.push_back({Family::kMmaTma, d.dtype, 16, 4, 0, 0, 0, false, 8, 2});
    // Round 18: one block per SM with two tiles on the first (tiles - SMs), so a grid of 1-2 tiles per
    // SM cannot pack onto half the SMs (2304 x 16384: 144 tiles on 61-109 of 132 SMs unpaired).
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtPairShapes)
      out.push_back(
          {Family::kMmaTma, d.dtype, 16, kern::kSkinnyMmtPairWarps, 1, 0, 0, false, sh.boxes, sh.stages, true});
    // Round 20: one block per SM with the tiles beyond a whole number per SM cut in K over groups of
    // blocks, tokens by TMA (2304 x 16384: 1.09 tiles' bytes on every SM instead of 2 on 12 of them).
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtBalShapes)
      out.push_back({Family::kMmaTma, d.dtype, 16, kern::kSkinnyMmtPairWarps, 1, 0, 0, false, sh.boxes, sh.stages,
                     false, true});
  }
  // Round 16: warpgroup MMA on 64-row tiles, every ring shape unsplit and with automatic splits (each
  // won some 37-100 MB weight; wave-balanced and fixed 2-4 splits won nothing, NOTES round 16).
  for (const kern::SkinnyRingShape& sh : kern::kSkinnyWgtShapes) {
    for (int s : {1, 0}) out.push_back({Family::kWgmma, d.dtype, 64, 4, s, 0, 0, false, sh.boxes, sh.stages});
  }
  return out;
}

class SkinnyProvider final : public Provider<GemmArgs> {
 public:
  std::string name() const override { return "skinny"; }

  Status enumerate(const GemmArgs& args, std::vector<SolutionPtr<GemmArgs>>* out) const override {
    const GemmDesc& d = args.desc;
    TUNABLE_RETURN_IF_ERROR(check_scope(d));
    TUNABLE_RETURN_IF_ERROR(check_vector_shape(d, 16 / static_cast<std::int64_t>(size_of(d.dtype))));
    for (const SkinnyConfig& c : candidate_configs(d)) {
      auto s = std::make_shared<SkinnySolution>(c);
      if (s->can_implement(args).is_ok()) out->push_back(std::move(s));
    }
    return Status::ok();
  }

  SolutionPtr<GemmArgs> from_name(const std::string& name, const GemmArgs&) const override {
    const auto c = SkinnyConfig::parse(name);
    if (!c) return nullptr;
    return std::make_shared<SkinnySolution>(*c);
  }
};

}  // namespace

std::shared_ptr<const Provider<GemmArgs>> skinny_gemm_provider() {
  static const auto p = std::make_shared<SkinnyProvider>();
  return p;
}

std::vector<std::string> skinny_gemm_variant_names() {
  std::vector<std::string> names;
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    for (int s : {0, 1, 2, 4, 8, 16}) {
      for (int r : {1, 2, 4})
        for (int w : {128, 256}) names.push_back(SkinnyConfig{Family::kGemv, t, r, w, s}.name());
      for (int bm : {16, 32})
        for (int wk : {4, 8}) names.push_back(SkinnyConfig{Family::kMma, t, bm, wk, s}.name());
    }
  }
  // Round 2, after the first lists (whose order stays as it was): the pipelined MMA family with the
  // same split settings, then the wave-balanced policy (w2, w4) for every family and shape.
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    for (int s : {0, 1, 2, 4, 8, 16})
      for (int bm : {16, 32})
        for (int wk : {4, 8}) names.push_back(SkinnyConfig{Family::kMmaPipe, t, bm, wk, s}.name());
    for (int w : {2, 4}) {
      for (int r : {1, 2, 4})
        for (int th : {128, 256}) names.push_back(SkinnyConfig{Family::kGemv, t, r, th, 0, w}.name());
      for (Family f : {Family::kMma, Family::kMmaPipe})
        for (int bm : {16, 32})
          for (int wk : {4, 8}) names.push_back(SkinnyConfig{f, t, bm, wk, 0, w}.name());
    }
    // Cluster split-K of the pipelined MMA kernel (ksc2, ksc4).
    for (int c : {2, 4})
      for (int bm : {16, 32})
        for (int wk : {4, 8})
          names.push_back(SkinnyConfig{Family::kMmaPipe, t, bm, wk, 0, 0, c}.name());
  }
  // Rounds 7 and 9: 16 warps on 16 rows (both MMA families) and on 32 rows (the plain one), every
  // split setting.
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    for (const auto& [f, rows] : {std::pair{Family::kMma, 16}, {Family::kMmaPipe, 16}, {Family::kMma, 32}}) {
      for (int s : {0, 1, 2, 4, 8, 16}) names.push_back(SkinnyConfig{f, t, rows, 16, s}.name());
      for (int w : {2, 4}) names.push_back(SkinnyConfig{f, t, rows, 16, 0, w}.name());
    }
    for (int c : {2, 4}) names.push_back(SkinnyConfig{Family::kMmaPipe, t, 16, 16, 0, 0, c}.name());
  }
  // Round 11: the warp-contiguous K order (_wc) of every MMA shape and split setting.
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    auto wc = [&](Family f, int bm, int wk, int splits, int waves, int cluster) {
      names.push_back(SkinnyConfig{f, t, bm, wk, splits, waves, cluster, true}.name());
    };
    for (const auto& [bm, wk] : {std::pair{16, 4}, {16, 8}, {16, 16}, {32, 4}, {32, 8}, {32, 16}}) {
      for (int s : {0, 1, 2, 4, 8, 16}) wc(Family::kMma, bm, wk, s, 0, 0);
      for (int w : {2, 4}) wc(Family::kMma, bm, wk, 0, w, 0);
    }
    for (const auto& [bm, wk] : {std::pair{16, 4}, {16, 8}, {16, 16}, {32, 4}, {32, 8}}) {
      for (int s : {0, 1, 2, 4, 8, 16}) wc(Family::kMmaPipe, bm, wk, s, 0, 0);
      for (int w : {2, 4}) wc(Family::kMmaPipe, bm, wk, 0, w, 0);
      for (int c : {2, 4}) wc(Family::kMmaPipe, bm, wk, 0, 0, c);
    }
  }
  // Round 14: the TMA-fed kernel, 4 or 8 consumer warps, every built ring shape and split setting.
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    for (int wk : {4, 8}) {
      for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtShapes) {
        for (int s : {0, 1, 2, 4, 8, 16})
          names.push_back(SkinnyConfig{Family::kMmaTma, t, 16, wk, s, 0, 0, false, sh.boxes, sh.stages}.name());
        for (int w : {2, 4})
          names.push_back(SkinnyConfig{Family::kMmaTma, t, 16, wk, 0, w, 0, false, sh.boxes, sh.stages}.name());
      }
    }
  }
  // Round 16: the wgmma kernel, every built ring shape and split setting.
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyWgtShapes) {
      for (int s : {0, 1, 2, 4, 8, 16})
        names.push_back(SkinnyConfig{Family::kWgmma, t, 64, 4, s, 0, 0, false, sh.boxes, sh.stages}.name());
      for (int w : {2, 4})
        names.push_back(SkinnyConfig{Family::kWgmma, t, 64, 4, 0, w, 0, false, sh.boxes, sh.stages}.name());
    }
  }
  // Round 18: the paired TMA kernel, unsplit, automatic and two splits.
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtPairShapes)
      for (int s : {1, 0, 2})
        names.push_back(SkinnyConfig{Family::kMmaTma, t, 16, kern::kSkinnyMmtPairWarps, s, 0, 0, false, sh.boxes,
                                     sh.stages, true}
                            .name());
  }
  // Round 20: the balanced TMA kernel (unsplit only).
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtBalShapes)
      names.push_back(SkinnyConfig{Family::kMmaTma, t, 16, kern::kSkinnyMmtPairWarps, 1, 0, 0, false, sh.boxes,
                                   sh.stages, false, true}
                          .name());
  }
  return names;
}

}  // namespace tunable
