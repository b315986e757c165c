// The wgmma skinny kernel's entry point, compiled in its own translation unit (skinny_wgt.cu) so
// its 33 instantiations build in parallel with the provider's.
#pragma once

#include <cuda_runtime.h>

#include "kernels/gemv/common.cuh"

namespace tunable::kernels {

/// skinny_wgt_dispatch of kernels/gemv/skinny_wgmma.cuh for `in`: boxes x stages one of kSkinnyWgtShapes,
/// l.p.n <= 64; cudaErrorNotSupported off sm_90a or when the ring does not fit at l.p.n tokens.
cudaError_t skinny_wgt(SkinnyIn in, int boxes, int stages, const SkinnyLaunch& l, cudaStream_t stream);

}  // namespace tunable::kernels
