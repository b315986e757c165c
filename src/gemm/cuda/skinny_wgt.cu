#include "gemm/cuda/skinny_wgt.hpp"

#include "kernels/gemv/skinny_wgmma.cuh"

namespace tunable::kernels {

cudaError_t skinny_wgt(SkinnyIn in, int boxes, int stages, const SkinnyLaunch& l, cudaStream_t stream) {
  return skinny_dispatch_in(in, [&](auto tr) { return skinny_wgt_dispatch<decltype(tr)>(boxes, stages, l, stream); });
}

}  // namespace tunable::kernels
