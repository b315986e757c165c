// The weight-only FP8 GEMV (skinny_wov of kernels/gemv/skinny_wov.cuh) as tuning candidates:
// the weight-only problem (e4m3 weights with row scales x bf16/fp16 tokens, n <= 8) on CUDA cores,
// beside the wo family's tensor-core kernels. Instantiates its kernels.
#include "gemm/cuda/skinny_family.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "kernels/gemv/skinny_wov.cuh"

namespace tunable {
namespace {

namespace kern = ::tunable::kernels;

class WovFamily final : public SkinnyFamilyBridge {
 public:
  SkinnyFamily family() const override { return SkinnyFamily::kWeightOnlyGemv; }
  std::int64_t max_tokens() const override { return kWeightOnlyTokens; }
  bool weight_only() const override { return true; }

  /// Rows per warp 1, 2, 4 at 256 threads (the bf16 GEMV's winners were all 256-thread blocks),
  /// each with either e4m3 conversion.
  const std::vector<SkinnyShape>& shapes() const override {
    static const std::vector<SkinnyShape> all = [] {
      std::vector<SkinnyShape> v;
      for (bool cvt : {false, true})
        for (int rows_per_warp : {1, 2, 4}) v.push_back(SkinnyShape::of(rows_per_warp, 256).converted_by_cvt(cvt));
      return v;
    }();
    return all;
  }

  std::int64_t granule(const SkinnyConfig&) const override {
    return kern::skinny_gemv_granule(kern::skinny_detail::E4M3Traits::kVec);
  }

  /// Every shape with automatic splits, fixed and wave-balanced splits for one and two rows per warp,
  /// each with both conversions: which is faster depends on the problem (E4M3CvtTraits).
  void candidates(const GemmDesc& d, std::vector<SkinnyConfig>* out) const override {
    if (d.n > max_tokens()) return;
    for (bool cvt : {false, true}) {
      auto add = [&](int rows_per_warp, KSplit ks) {
        add_weight_only_candidate(
            d, SkinnyShape::of(rows_per_warp, 256).converted_by_cvt(cvt).config(family(), d.dtype, ks), out);
      };
      for (int rows_per_warp : {1, 2, 4}) add(rows_per_warp, KSplit::automatic());
      for (int rows_per_warp : {1, 2}) {
        for (int s : {1, 2, 4}) add(rows_per_warp, KSplit::splits(s));
        add(rows_per_warp, KSplit::balanced(2));
      }
    }
  }

  Status launch(const SkinnyConfig& c, kern::SkinnyIn, kern::SkinnyLaunch& l, const kern::SkinnyDevice& dev,
                SkinnyState& state, cudaStream_t stream) const override {
    return skinny_launch_status(kern::skinny_wov(c.rows, c.width, c.cvt, l, dev, &state, stream), c.name());
  }
};

}  // namespace

const SkinnyFamilyBridge& skinny_wov_family() {
  static const WovFamily f;
  return f;
}

}  // namespace tunable
