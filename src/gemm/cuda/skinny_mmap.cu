// The pipelined MMA family (skinny_mmap_kernel of kernels/gemv/skinny_mma.cuh) as tuning
// candidates: the MMA kernel with two register stages of weight loads, software-pipelined, and the
// only family that can split K over a thread-block cluster (ks c2 / c4). Instantiates the
// pipelined MMA kernels.
#include "gemm/cuda/skinny_family.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "kernels/gemv/skinny_mma.cuh"

namespace tunable {
namespace {

namespace kern = ::tunable::kernels;

class MmapFamily final : public SkinnyFamilyBridge {
 public:
  SkinnyFamily family() const override { return SkinnyFamily::kMmaPipe; }
  std::int64_t max_tokens() const override { return 64; }

  /// 16 rows per block x 4, 8 or 16 warps along K and 32 rows x 4 or 8 (16 warps on 32 rows would
  /// hold one block of 16 warps at 128 registers and spill), in either K order, every split
  /// including the cluster ones.
  const std::vector<SkinnyShape>& shapes() const override {
    static const std::vector<SkinnyShape> all = [] {
      std::vector<SkinnyShape> v;
      for (bool wc : {false, true})
        for (const auto& [block_rows, k_warps] :
             {std::pair{16, 4}, {16, 8}, {16, 16}, {32, 4}, {32, 8}})
          v.push_back(
              SkinnyShape::of(block_rows, k_warps).warp_contiguous(wc).with_cluster_splits());
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
    // Unsplit every 4- and 8-warp block; automatic, wave-balanced and cluster splits for the shapes
    // that won the first sweeps (16 x 8 and 32 x 4).
    for (int block_rows : {16, 32})
      for (int k_warps : {4, 8}) add(block_rows, k_warps, KSplit::splits(1));
    add(16, 8, KSplit::automatic());
    if (!few) add(32, 4, KSplit::automatic());
    add(16, 8, KSplit::balanced(2));
    if (!few) add(16, 8, KSplit::balanced(4));
    add(32, 4, KSplit::balanced(2));
    add(16, 8, KSplit::over_cluster(2));
    add(32, 4, KSplit::over_cluster(4));
    // 16 warps on 16 rows only while the two register stages keep the 128-register budget
    // (n <= 16).
    if (d.n <= 16) {
      add(16, 16, KSplit::splits(1));
      add(16, 16, KSplit::over_cluster(2));
    }
    // The warp-contiguous K order: each warp streams longer contiguous runs of a row, faster per
    // block when one wave covers the weight.
    add(16, 8, KSplit::splits(1), true);
    add(16, 8, KSplit::balanced(2), true);
    add(16, 8, KSplit::over_cluster(2), true);
    add(32, 4, KSplit::splits(1), true);
    if (d.n <= 16) {
      add(16, 16, KSplit::splits(1), true);
      add(16, 16, KSplit::over_cluster(2), true);
    }
  }

  Status launch(const SkinnyConfig& c, kern::SkinnyIn in, kern::SkinnyLaunch& l,
                const kern::SkinnyDevice& dev, SkinnyState& state,
                cudaStream_t stream) const override {
    l.cluster = c.ks.cluster;
    return skinny_launch_status(
        kern::skinny_mmap(in, c.rows, c.width, c.wc, l, dev, &state, stream), c.name());
  }
};

}  // namespace

const SkinnyFamilyBridge& skinny_mmap_family() {
  static const MmapFamily f;
  return f;
}

}  // namespace tunable
