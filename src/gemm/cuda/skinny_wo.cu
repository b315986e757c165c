// The weight-only FP8 family (skinny_wo_kernel of kernels/gemv/skinny_wo.cuh) as tuning
// candidates: e4m3 weights with per-row scales times bf16/fp16 tokens, n <= 8, the decode step of a
// model whose weights are FP8 and whose activations stay 16-bit. Instantiates its kernels.
#include <utility>

#include "gemm/cuda/skinny_family.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "kernels/gemv/skinny_wo.cuh"

namespace tunable {
namespace {

namespace kern = ::tunable::kernels;

class WoFamily final : public SkinnyFamilyBridge {
 public:
  SkinnyFamily family() const override { return SkinnyFamily::kWeightOnly; }
  std::int64_t max_tokens() const override { return kWeightOnlyTokens; }
  bool weight_only() const override { return true; }

  /// 16 or 32 rows per block x 4, 8 or 16 warps along K, in either K order.
  const std::vector<SkinnyShape>& shapes() const override {
    static const std::vector<SkinnyShape> all = [] {
      std::vector<SkinnyShape> v;
      for (bool wc : {false, true})
        for (int block_rows : {16, 32})
          for (int k_warps : {4, 8, 16})
            v.push_back(SkinnyShape::of(block_rows, k_warps).warp_contiguous(wc));
      return v;
    }();
    return all;
  }

  std::int64_t granule(const SkinnyConfig& c) const override {
    return kern::skinny_mma_granule(kern::skinny_detail::E4M3Traits::kVec, c.width);
  }

  /// The register-fed MMA family's table for one token tile, with every 4- and 8-warp block also
  /// unsplit: automatic splits stop at one wave, and a grid of 1.2-1.5 waves of 8-warp blocks (Llama's
  /// 384-tile QKV) then loses to one wave of twice as many 4-warp blocks. Fixed and wave-balanced
  /// splits on the two shapes that fill the device with the fewest blocks, 16 warps on one block (a
  /// whole SM's warps) and the warp-contiguous K order.
  void candidates(const GemmDesc& d, std::vector<SkinnyConfig>* out) const override {
    if (d.n > max_tokens()) return;
    auto add = [&](int block_rows, int k_warps, KSplit ks, bool wc = false) {
      add_weight_only_candidate(d, SkinnyShape::of(block_rows, k_warps).warp_contiguous(wc).config(family(), d.dtype, ks),
                                out);
    };
    for (int block_rows : {16, 32})
      for (int k_warps : {4, 8}) {
        add(block_rows, k_warps, KSplit::automatic());
        add(block_rows, k_warps, KSplit::splits(1));
      }
    for (int s : {2, 4}) {
      add(16, 8, KSplit::splits(s));
      add(32, 4, KSplit::splits(s));
    }
    add(16, 8, KSplit::balanced(2));
    add(16, 16, KSplit::automatic());
    add(16, 16, KSplit::splits(1));
    for (auto [block_rows, k_warps] : {std::pair{16, 4}, {16, 8}, {16, 16}, {32, 8}})
      add(block_rows, k_warps, KSplit::splits(1), true);
  }

  Status launch(const SkinnyConfig& c, kern::SkinnyIn, kern::SkinnyLaunch& l, const kern::SkinnyDevice& dev,
                SkinnyState& state, cudaStream_t stream) const override {
    return skinny_launch_status(kern::skinny_wo(c.rows, c.width, c.wc, l, dev, &state, stream), c.name());
  }
};

}  // namespace

const SkinnyFamilyBridge& skinny_wo_family() {
  static const WoFamily f;
  return f;
}

}  // namespace tunable
