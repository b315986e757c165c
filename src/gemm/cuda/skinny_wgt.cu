// The warpgroup-MMA family (kernels/gemv/skinny_wgmma.cuh) as tuning candidates: wgmma on 64-row
// tiles with weight and tokens fed by TMA, n <= 64 tokens, sm_90a. Instantiates its kernels in a
// translation unit of their own (33 instantiations, built in parallel with the other families).
#include <fmt/format.h>

#include "gemm/cuda/skinny_family.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "kernels/gemv/skinny_wgmma.cuh"

namespace tunable {
namespace {

namespace kern = ::tunable::kernels;

class WgtFamily final : public SkinnyFamilyBridge {
 public:
  SkinnyFamily family() const override { return SkinnyFamily::kWgmma; }
  std::int64_t max_tokens() const override { return 64; }

  /// One warpgroup on 64 rows, every ring shape built (kSkinnyWgtShapes).
  const std::vector<SkinnyShape>& shapes() const override {
    static const std::vector<SkinnyShape> all = [] {
      std::vector<SkinnyShape> v;
      for (const kern::SkinnyRingShape& sh : kern::kSkinnyWgtShapes)
        v.push_back(SkinnyShape::of(64, 4).ring(sh.boxes, sh.stages));
      return v;
    }();
    return all;
  }

  /// One ring stage.
  std::int64_t granule(const SkinnyConfig& c) const override {
    return kern::skinny_wgt_granule(16 / static_cast<int>(size_of(c.dtype)), c.boxes);
  }

  /// Every ring shape unsplit and with automatic splits: each won some 37-100 MB weight, where
  /// wave-balanced and fixed 2-4 splits won nothing.
  void candidates(const GemmDesc& d, std::vector<SkinnyConfig>* out) const override {
    for (const kern::SkinnyRingShape& sh : kern::kSkinnyWgtShapes)
      for (KSplit ks : {KSplit::splits(1), KSplit::automatic()})
        out->push_back(
            SkinnyShape::of(64, 4).ring(sh.boxes, sh.stages).config(family(), d.dtype, ks));
  }

  Status check(const SkinnyConfig& c, const GemmDesc& d, const std::string& name) const override {
    const std::size_t smem = kern::skinny_wgt_smem(
        kern::skinny_mma_token_tiles(static_cast<int>(d.n)), c.boxes, c.stages);
    if (smem > kern::kSkinnyWgtSmemLimit)
      return Status(StatusCode::kNotSupported,
                    fmt::format("{} needs {} bytes of shared memory at n = {} tokens (limit {})",
                                name, smem, d.n, kern::kSkinnyWgtSmemLimit));
    // Hopper's fp8 wgmma adds inside the tensor core below fp32 precision; the kernel promotes
    // every 128 products, which bf16 and fp16 outputs cannot see but an fp32 output can.
    if (d.dtype == DataType::kF8E4M3 && d.out_dtype == DataType::kF32)
      return Status(
          StatusCode::kNotSupported,
          fmt::format(
              "{}: fp8 wgmma sums 128 products below fp32 precision; fp32 output needs a variant "
              "with fp32 accumulation",
              name));
    return Status::ok();
  }

  Status launch(const SkinnyConfig& c, kern::SkinnyIn in, kern::SkinnyLaunch& l,
                const kern::SkinnyDevice& dev, SkinnyState& state,
                cudaStream_t stream) const override {
    return skinny_launch_status(kern::skinny_wgt(in, c.boxes, c.stages, l, dev, &state, stream),
                                c.name());
  }
};

}  // namespace

const SkinnyFamilyBridge& skinny_wgt_family() {
  static const WgtFamily f;
  return f;
}

}  // namespace tunable
