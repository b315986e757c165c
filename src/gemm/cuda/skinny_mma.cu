// The register-fed MMA family (skinny_mma_kernel of kernels/gemv/skinny_mma.cuh) as tuning
// candidates: tensor-core split-K GEMM with the weight on the MMA's M side, n <= 64 tokens.
// Instantiates the plain MMA kernels.
#include "gemm/cuda/skinny_family.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "kernels/gemv/skinny_mma.cuh"

namespace tunable {
namespace {

namespace kern = ::tunable::kernels;

class MmaFamily final : public SkinnyFamilyBridge {
 public:
  SkinnyFamily family() const override { return SkinnyFamily::kMma; }
  std::int64_t max_tokens() const override { return 64; }

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
    return kern::skinny_mma_granule(16 / static_cast<int>(size_of(c.dtype)), c.width);
  }

  void candidates(const GemmDesc& d, std::vector<SkinnyConfig>* out) const override {
    auto add = [&](int block_rows, int k_warps, KSplit ks, bool wc = false) {
      out->push_back(
          SkinnyShape::of(block_rows, k_warps).warp_contiguous(wc).config(family(), d.dtype, ks));
    };
    const bool few = d.n <= 8;  // one 8-token MMA tile
    // Every 4- and 8-warp block with automatic splits; fixed splits for the shapes that fill the
    // device with the fewest blocks; wave-balanced splits where fixed ones left a ragged last wave.
    for (int block_rows : {16, 32})
      for (int k_warps : {4, 8}) {
        add(block_rows, k_warps, KSplit::automatic());
        if (!few)
          for (int s : {1, 2, 4, 8}) add(block_rows, k_warps, KSplit::splits(s));
      }
    if (few) {
      for (int s : {1, 2, 4}) {
        add(16, 8, KSplit::splits(s));
        add(32, 4, KSplit::splits(s));
      }
      add(16, 8, KSplit::balanced(2));
    } else {
      add(16, 8, KSplit::balanced(2));
      add(16, 8, KSplit::balanced(4));
      add(32, 4, KSplit::balanced(2));
    }
    // 16 warps on one block hold a whole SM's warps at the 128-register budget, so 128-264 row
    // blocks fill the device without split-K; above 8 tokens also on 32 rows, which halves the x
    // re-reads of 16-row blocks.
    add(16, 16, KSplit::automatic());
    add(16, 16, KSplit::splits(1));
    if (!few) {
      add(16, 16, KSplit::splits(2));
      add(32, 16, KSplit::automatic());
      add(32, 16, KSplit::splits(1));
    }
    // The warp-contiguous K order, unsplit: each warp streams longer contiguous runs of a row,
    // faster per block when one wave covers the weight (its lower register count than mmap admits
    // more blocks per SM: one wave where mmap needs two).
    add(16, 8, KSplit::splits(1), true);
    add(16, 16, KSplit::splits(1), true);
    if (!few) {
      add(32, 8, KSplit::splits(1), true);
      add(32, 16, KSplit::splits(1), true);
    }
  }

  Status launch(const SkinnyConfig& c, kern::SkinnyIn in, kern::SkinnyLaunch& l,
                const kern::SkinnyDevice& dev, SkinnyState& state,
                cudaStream_t stream) const override {
    return skinny_launch_status(kern::skinny_mma(in, c.rows, c.width, c.wc, l, dev, &state, stream),
                                c.name());
  }
};

}  // namespace

const SkinnyFamilyBridge& skinny_mma_family() {
  static const MmaFamily f;
  return f;
}

}  // namespace tunable
