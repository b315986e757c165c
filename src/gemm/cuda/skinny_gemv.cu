// The GEMV family (kernels/gemv/skinny_gemv.cuh) as tuning candidates: CUDA-core split-K GEMV for
// n <= 8 tokens. Instantiates the GEMV kernels.
#include "gemm/cuda/skinny_family.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "kernels/gemv/skinny_gemv.cuh"

namespace tunable {
namespace {

namespace kern = ::tunable::kernels;

class GemvFamily final : public SkinnyFamilyBridge {
 public:
  SkinnyFamily family() const override { return SkinnyFamily::kGemv; }
  std::int64_t max_tokens() const override { return 8; }

  /// Rows per warp 1, 2, 4 x threads per block 128, 256.
  const std::vector<SkinnyShape>& shapes() const override {
    static const std::vector<SkinnyShape> all = [] {
      std::vector<SkinnyShape> v;
      for (int rows_per_warp : {1, 2, 4})
        for (int threads : {128, 256}) v.push_back(SkinnyShape::of(rows_per_warp, threads));
      return v;
    }();
    return all;
  }

  std::int64_t granule(const SkinnyConfig& c) const override {
    return kern::skinny_gemv_granule(16 / static_cast<int>(size_of(c.dtype)));
  }

  /// Every block shape with automatic splits, and fixed and wave-balanced splits for the two widest
  /// (one and two rows per warp, 256 threads), which fill the device with the fewest blocks.
  void candidates(const GemmDesc& d, std::vector<SkinnyConfig>* out) const override {
    if (d.n > max_tokens()) return;
    auto add = [&](int rows_per_warp, int threads, KSplit ks) {
      out->push_back(SkinnyShape::of(rows_per_warp, threads).config(family(), d.dtype, ks));
    };
    for (int rows_per_warp : {1, 2, 4})
      for (int threads : {128, 256}) add(rows_per_warp, threads, KSplit::automatic());
    for (int rows_per_warp : {1, 2})
      for (int s : {1, 2, 4, 8}) add(rows_per_warp, 256, KSplit::splits(s));
    for (int rows_per_warp : {1, 2}) add(rows_per_warp, 256, KSplit::balanced(2));
  }

  Status launch(const SkinnyConfig& c, kern::SkinnyIn in, kern::SkinnyLaunch& l,
                const kern::SkinnyDevice& dev, SkinnyState& state,
                cudaStream_t stream) const override {
    return skinny_launch_status(kern::skinny_gemv(in, c.rows, c.width, l, dev, &state, stream),
                                c.name());
  }
};

}  // namespace

const SkinnyFamilyBridge& skinny_gemv_family() {
  static const GemvFamily f;
  return f;
}

}  // namespace tunable
