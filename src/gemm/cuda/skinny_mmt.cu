// The TMA-fed MMA family (kernels/gemv/skinny_tma.cuh) as tuning candidates: the weight arrives by
// TMA into a shared-memory ring (no LSU, L1 or registers on its path), n <= 16 tokens, sm_90; one
// block per tile, or one block per SM (the paired and balanced grids). Instantiates its kernels.
#include <fmt/format.h>

#include "gemm/cuda/skinny_family.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "kernels/gemv/skinny_tma.cuh"

namespace tunable {
namespace {

namespace kern = ::tunable::kernels;

kern::SkinnyMmtGrid kernel_grid(SkinnyGrid g) {
  return g == SkinnyGrid::kPair  ? kern::SkinnyMmtGrid::kPair
         : g == SkinnyGrid::kBal ? kern::SkinnyMmtGrid::kBal
                                 : kern::SkinnyMmtGrid::kTiles;
}

class MmtFamily final : public SkinnyFamilyBridge {
 public:
  SkinnyFamily family() const override { return SkinnyFamily::kMmaTma; }
  std::int64_t max_tokens() const override { return 16; }

  /// 16-row tiles: 4 or 8 consumer warps on every ring shape built (kSkinnyMmtShapes); the paired
  /// grid on its shapes and the balanced grid (unsplit) on its, both with 8 consumer warps.
  const std::vector<SkinnyShape>& shapes() const override {
    static const std::vector<SkinnyShape> all = [] {
      std::vector<SkinnyShape> v;
      for (int k_warps : {4, 8})
        for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtShapes)
          v.push_back(SkinnyShape::of(16, k_warps).ring(sh.boxes, sh.stages));
      for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtPairShapes)
        v.push_back(SkinnyShape::of(16, kern::kSkinnyMmtPairWarps)
                        .ring(sh.boxes, sh.stages)
                        .on(SkinnyGrid::kPair));
      for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtBalShapes)
        v.push_back(SkinnyShape::of(16, kern::kSkinnyMmtPairWarps)
                        .ring(sh.boxes, sh.stages)
                        .on(SkinnyGrid::kBal)
                        .unsplit());
      return v;
    }();
    return all;
  }

  /// One ring stage.
  std::int64_t granule(const SkinnyConfig& c) const override {
    return kern::skinny_mmt_granule(16 / static_cast<int>(size_of(c.dtype)), c.boxes);
  }

  void candidates(const GemmDesc& d, std::vector<SkinnyConfig>* out) const override {
    if (d.n > max_tokens()) return;
    auto add = [&](const SkinnyShape& s, KSplit ks) {
      out->push_back(s.config(family(), d.dtype, ks));
    };
    // Every ring shape unsplit with 4 and 8 consumer warps (each won some row of the timeline
    // sweeps: 8 x 2 llama3_8b qkv at 16 tokens, 8 x 3 llama3_405b_tp8 qkv, 16 x 2 gemma_2b down at
    // 16), and 8 x 2 with automatic splits.
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtShapes)
      for (int k_warps : {4, 8})
        add(SkinnyShape::of(16, k_warps).ring(sh.boxes, sh.stages), KSplit::splits(1));
    add(SkinnyShape::of(16, 4).ring(8, 2), KSplit::automatic());
    // One block per SM with two tiles on the first (tiles - SMs), so a grid of 1-2 tiles per SM
    // cannot pack onto half the SMs (2304 x 16384: 144 tiles ran on 61-109 of 132 SMs unpaired).
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtPairShapes)
      add(SkinnyShape::of(16, kern::kSkinnyMmtPairWarps)
              .ring(sh.boxes, sh.stages)
              .on(SkinnyGrid::kPair),
          KSplit::splits(1));
    // One block per SM with the tiles beyond a whole number per SM cut in K over groups of blocks,
    // tokens by TMA (2304 x 16384: 1.09 tiles' bytes on every SM instead of 2 on 12 of them).
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyMmtBalShapes)
      add(SkinnyShape::of(16, kern::kSkinnyMmtPairWarps)
              .ring(sh.boxes, sh.stages)
              .on(SkinnyGrid::kBal),
          KSplit::splits(1));
  }

  /// The balanced grid's partials: one 16 x n slice per block, fewer blocks than tiles whenever a
  /// tile is left over (the SM count is the launcher's to know, so sized for one block per tile).
  std::optional<std::size_t> workspace(const SkinnyConfig& c, const GemmDesc& d) const override {
    if (c.grid != SkinnyGrid::kBal) return std::nullopt;
    return static_cast<std::size_t>((d.m + 15) / 16) * 16 * sizeof(float) *
           static_cast<std::size_t>(d.n);
  }

  Status launch(const SkinnyConfig& c, kern::SkinnyIn in, kern::SkinnyLaunch& l,
                const kern::SkinnyDevice& dev, SkinnyState& state,
                cudaStream_t stream) const override {
    // The small rings let the block scheduler pack 2-3 blocks on some SMs and leave others idle;
    // capping blocks per SM at what the grid needs spreads it (llama3_8b qkv M = 8: 23.1 -> 18.1
    // us, gemma_2b down M = 8: 29.7 -> 24.7 us in graphs on the H100). The same cap on the
    // register-fed kernels and the GEMV gained nothing the tuner lacked and cost mma 12 % on 2304 x
    // 16384, so it stays theirs to ask for (the timeline tool's --spread).
    l.spread = true;
    if (c.grid == SkinnyGrid::kBal && kern::skinny_mmt_bal_shares(l.p.m, dev.sms)) {
      const Status st = state.bal_counters(stream, kern::kSkinnyBalMaxShared, &l.p.bal_count);
      if (!st.is_ok()) return Status(st.code(), fmt::format("{}: {}", c.name(), st.message()));
    }
    return skinny_launch_status(kern::skinny_mmt(in, c.width, c.boxes, c.stages, l, dev, &state,
                                                 stream, kernel_grid(c.grid)),
                                c.name());
  }
};

}  // namespace

const SkinnyFamilyBridge& skinny_mmt_family() {
  static const MmtFamily f;
  return f;
}

}  // namespace tunable
