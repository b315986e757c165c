// The weight-only FP8 GEMV (skinny_wov_kernel of kernels/gemv/skinny_wov.cuh) as tuning candidates:
// the weight-only problem (e4m3 weights with row scales x bf16/fp16 tokens, n <= 8) on CUDA cores,
// beside the wo family's tensor-core kernels. Instantiates its kernels.
#include <fmt/format.h>

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

  /// Rows per warp 1, 2, 4 at 256 threads (the bf16 GEMV's winners were all 256-thread blocks).
  const std::vector<SkinnyShape>& shapes() const override {
    static const std::vector<SkinnyShape> all = [] {
      std::vector<SkinnyShape> v;
      for (int rows_per_warp : {1, 2, 4}) v.push_back(SkinnyShape::of(rows_per_warp, 256));
      return v;
    }();
    return all;
  }

  std::int64_t granule(const SkinnyConfig&) const override {
    return kern::skinny_gemv_granule(kern::skinny_detail::E4M3Traits::kVec);
  }

  /// Every shape with automatic splits, fixed and wave-balanced splits for one and two rows per warp.
  void candidates(const GemmDesc& d, std::vector<SkinnyConfig>* out) const override {
    if (d.n > max_tokens()) return;
    auto add = [&](int rows_per_warp, KSplit ks) {
      out->push_back(SkinnyShape::of(rows_per_warp, 256).config(family(), d.dtype, ks));
    };
    for (int rows_per_warp : {1, 2, 4}) add(rows_per_warp, KSplit::automatic());
    for (int rows_per_warp : {1, 2}) {
      for (int s : {1, 2, 4}) add(rows_per_warp, KSplit::splits(s));
      add(rows_per_warp, KSplit::balanced(2));
    }
  }

  /// What validate() already refuses, for callers that run a solution directly.
  Status check(const SkinnyConfig&, const GemmDesc& d, const std::string& name) const override {
    if (d.scale_mode != ScaleMode::kRowwise || d.out_dtype != b_type(d))
      return Status(StatusCode::kNotSupported,
                    fmt::format("{} needs rowwise (per-row) scales and an output of the tokens' type {}", name,
                                short_name(b_type(d))));
    return Status::ok();
  }

  Status launch(const SkinnyConfig& c, kern::SkinnyIn, kern::SkinnyLaunch& l, const kern::SkinnyDevice& dev,
                SkinnyState& state, cudaStream_t stream) const override {
    return skinny_launch_status(kern::skinny_wov(c.rows, c.width, l, dev, &state, stream), c.name());
  }
};

}  // namespace

const SkinnyFamilyBridge& skinny_wov_family() {
  static const WovFamily f;
  return f;
}

}  // namespace tunable
