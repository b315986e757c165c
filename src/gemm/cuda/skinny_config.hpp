// Configurations of the skinny GEMM kernels (kernels/gemv) and their names. One function builds a
// name from a configuration and its inverse parses it back, so a results file rebuilds exactly the
// kernel it names; which configurations exist is what each kernel family's shape table says
// (skinny_family.hpp, one bridge file per family).
//
// Names (dtype: bf16, fp16 or fp8e4m3, the A/B type):
//   skinny_gemv_<dtype>_r<rows per warp: 1|2|4>_t<threads: 128|256>_ks<split>        (n <= 8)
//   skinny_mma_<dtype>_bm<rows per block: 16|32>_wk<warps along K: 4|8|16>_ks<split>[_wc]
//   skinny_mmap_<dtype>_bm<16|32>_wk<4|8; 16 at bm16>_ks<split>[_wc]   (two register stages of
//                                                                       weight loads, pipelined)
//   skinny_mmt_<dtype>_bm16_wk<4|8>_ks<split>_b<boxes>s<stages>[_pair|_bal]  (n <= 16, sm_90; the
//                                    weight fed by TMA into a ring of stages x boxes x 2 KB)
//   skinny_wgt_<dtype>_bm64_wk4_ks<split>_b<boxes>s<stages>  (sm_90a; warpgroup MMA on 64-row
//                                    tiles, weight and tokens by TMA; no fp8 into an fp32 output)
//   skinny_wo_fp8e4m3_bm<16|32>_wk<4|8|16>_ks<split>[_wc]  (n <= 8; weight-only: e4m3 weights with
//                                    row scales times bf16/fp16 tokens, converted in registers)
//   skinny_wov_fp8e4m3_r<1|2|4>_t256_ks<split>[_cvt]  (n <= 8; the weight-only problem on CUDA
//                                    cores; _cvt: the weight converts by the hardware's cvt
//                                    instruction instead of the byte trick)
// split: auto (sized from the device's SM count and the kernel's occupancy: at least one full
// wave), 1..64 (that many K splits, fewer when K holds fewer split granules), w<1..8>
// (wave-balanced: any count, not only powers of two, so the grid gives >= W waves of resident
// blocks with the last one >= 90 % full; partial traffic capped at 1/8 of the weight bytes), c<2|4>
// (mmap only: K split over a thread-block cluster of that many blocks, reduced in distributed
// shared memory: sm_90, no workspace, one kernel). _wc: the warp-contiguous K order; _pair / _bal:
// the mmt grids with one block per SM (two tiles on the first blocks / left-over tiles cut in K
// over groups of blocks, unsplit only). The token tile (1/2/4/8 tokens for the GEMV, 8/16/32/64 for
// the MMA kernels) is the smallest that holds desc.n, so the problem implies it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gemm/gemm_args.hpp"

namespace tunable {

enum class SkinnyFamily {
  kGemv,     ///< "gemv": CUDA-core GEMV (skinny_gemv.cuh)
  kMma,      ///< "mma": register-fed tensor-core MMA (skinny_mma.cuh)
  kMmaPipe,  ///< "mmap": the MMA kernel with two register stages of weight loads (skinny_mma.cuh)
  kMmaTma,   ///< "mmt": the MMA kernel whose weight arrives by TMA (skinny_tma.cuh)
  kWgmma,    ///< "wgt": warpgroup MMA on 64-row tiles, weight and tokens by TMA (skinny_wgmma.cuh)
  kWeightOnly,  ///< "wo": e4m3 weights x 16-bit tokens, register-fed MMA (skinny_wo.cuh)
  kWeightOnlyGemv,  ///< "wov": e4m3 weights x 16-bit tokens on CUDA cores (skinny_wov.cuh)
};

/// The family's tag in names: gemv, mma, mmap, mmt, wgt, wo, wov.
const char* skinny_family_tag(SkinnyFamily f);

/// Grids of the TMA-fed MMA kernel (kernels::SkinnyMmtGrid): one block per 16-row tile; one block
/// per SM with two tiles on the first blocks (suffix _pair); one block per SM with the left-over
/// tiles cut in K over groups of blocks (suffix _bal).
enum class SkinnyGrid { kTiles, kPair, kBal };

/// The K-split setting of a configuration (the name's ks field): at most one field is non-zero,
/// all zero is "auto".
struct KSplit {
  int fixed = 0;    ///< ks<N>: N K splits (1..64)
  int waves = 0;    ///< ks w<W>: wave-balanced splits for >= W waves (1..8)
  int cluster = 0;  ///< ks c<C>: K split over a thread-block cluster of C blocks (2 or 4)

  static KSplit automatic() { return {}; }
  static KSplit splits(int n) {
    KSplit k;
    k.fixed = n;
    return k;
  }
  static KSplit balanced(int waves) {
    KSplit k;
    k.waves = waves;
    return k;
  }
  static KSplit over_cluster(int blocks) {
    KSplit k;
    k.cluster = blocks;
    return k;
  }
  bool is_auto() const { return fixed == 0 && waves == 0 && cluster == 0; }
  bool operator==(const KSplit& o) const {
    return fixed == o.fixed && waves == o.waves && cluster == o.cluster;
  }
  bool operator!=(const KSplit& o) const { return !(*this == o); }
};

/// Largest fixed K-split count (ks64) and wave target (ksw8).
constexpr int kSkinnyMaxSplits = 64;
constexpr int kSkinnyMaxWaves = 8;

struct SkinnyConfig {
  SkinnyFamily family = SkinnyFamily::kGemv;
  DataType dtype = DataType::kBF16;  ///< A and B: bf16, fp16 or fp8e4m3 (wo: A, fp8e4m3 only)
  /// gemv, wov: weight rows per warp (1, 2, 4); the MMA families: weight rows per block (16, 32; mmt
  /// 16, wgt 64).
  int rows = 1;
  /// gemv, wov: threads per block (128, 256; wov 256); mma, mmap, wo: warps splitting K (4, 8, 16); mmt: consumer
  /// warps (4, 8); wgt: 4 (one warpgroup).
  int width = 256;
  KSplit ks;        ///< the K-split setting
  bool wc = false;  ///< mma, mmap: warp-contiguous K order (suffix _wc)
  /// mmt, wgt: 128-byte boxes of each row per ring stage (suffix _b<boxes>s<stages>)
  int boxes = 0;
  int stages = 0;                        ///< mmt, wgt: stages in the ring
  SkinnyGrid grid = SkinnyGrid::kTiles;  ///< mmt: its grid (suffix _pair, _bal)
  bool cvt = false;  ///< wov: the e4m3 weight converts by the hardware's cvt (suffix _cvt)

  std::string name() const;
  /// Whether the families are built for it: its shape is in its family's shape table, takes its
  /// K split, and dtype is bf16, fp16 or fp8e4m3 (the weight-only family: fp8e4m3).
  bool valid() const;
  /// Inverse of name(): nullopt for anything name() of a valid configuration would not produce
  /// (canonical spelling only: no leading zeros, no aliases such as "BFloat16").
  static std::optional<SkinnyConfig> parse(const std::string& name);

  bool operator==(const SkinnyConfig& o) const;
  bool operator!=(const SkinnyConfig& o) const { return !(*this == o); }
};

/// Every valid configuration, family by family (each shape of its table x bf16, fp16, fp8e4m3, or
/// fp8e4m3 alone for the weight-only family, x every K split the shape takes): exactly the names
/// SkinnyConfig::parse accepts.
std::vector<SkinnyConfig> skinny_all_configs();

/// The configurations the tuner times for `d`: the candidate table of every family that runs its
/// kind of problem (the weight-only family's alone for is_weight_only, the others' otherwise),
/// before can_implement filtering (so possibly some the problem refuses).
std::vector<SkinnyConfig> skinny_candidate_configs(const GemmDesc& d);

}  // namespace tunable
