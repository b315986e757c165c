// Weight-only FP8 GEMV on CUDA cores (n <= 8 tokens): the weight-only problem of skinny_wo.cuh
// (e4m3 weights with row scales, bf16/fp16 tokens) on skinny_gemv_kernel, whose bf16 kernels stream
// decode weights at the copy rate with less per-call cost than the MMA kernels (no cross-warp
// reduction in shared memory, one warp per row from the first load). Lane l reads 16-byte vectors
// (16 e4m3) l, l + 32, ... of each of its warp's rows; each weight vector is converted once (the
// byte trick of E4M3Traits: value * 2^-8, undone by acc_scale) and meets the two 16-byte token
// vectors at the same K offset, converted once for the warp's rows. The weight converts either by
// that byte trick or by the hardware's cvt (E4M3CvtTraits): the caller picks.
#pragma once

#include <cuda_runtime.h>

#include "kernels/gemv/common.cuh"
#include "kernels/gemv/skinny_gemv.cuh"

namespace tunable::kernels {

/// Runs the weight-only GEMV on `stream`: rows_per_warp in {1, 2, 4}, 256 threads, l.p.n <= 8,
/// l.p.out bf16 or fp16 (the tokens' type), l.p.row_scale set and l.p.col_scale null; with l.p.rms
/// one split (l.splits 1); `cvt`: the weight converts by the hardware's cvt (E4M3CvtTraits) instead of
/// the byte trick (E4M3Traits).
inline cudaError_t skinny_wov(int rows_per_warp, int threads, bool cvt, const SkinnyLaunch& l,
                              const SkinnyDevice& dev, SkinnyKernelCache* cache, cudaStream_t stream) {
  using namespace skinny_detail;
  if (threads != 256 || l.p.n < 1 || l.p.n > 8 || l.p.row_scale == nullptr || l.p.col_scale != nullptr)
    return cudaErrorInvalidValue;
  auto run = [&](auto w, auto x) {
    using W = decltype(w);
    using X = decltype(x);
    return skinny_dispatch_int<1, 2, 4, 8>(skinny_gemv_token_tile(l.p.n), [&](auto mt) {
      return skinny_dispatch_int<1, 2, 4>(rows_per_warp, [&](auto rpw) {
        return l.p.rms ? skinny_gemv_launch<W, X, mt.value, rpw.value, 8, true>(l, dev, cache, stream)
                       : skinny_gemv_launch<W, X, mt.value, rpw.value, 8, false>(l, dev, cache, stream);
      });
    });
  };
  auto with_weight = [&](auto x) {
    return cvt ? run(E4M3CvtTraits{}, x) : run(E4M3Traits{}, x);
  };
  if (l.p.out == SkinnyOut::kBF16) return with_weight(Bf16Traits{});
  if (l.p.out == SkinnyOut::kF16) return with_weight(F16Traits{});
  return cudaErrorInvalidValue;
}

}  // namespace tunable::kernels
