// Instantiations of the shared-memory pipelined MMA kernel (kernels/gemv/skinny_mmas.cuh), in a
// translation unit of their own so they compile in parallel with the other skinny families.
#include "kernels/gemv/skinny_mmas.cuh"

namespace tunable::kernels {

cudaError_t skinny_mmas(SkinnyIn in, int block_rows, int k_warps, const SkinnyLaunch& l, cudaStream_t stream) {
  if (block_rows % 16 != 0) return cudaErrorInvalidValue;
  SkinnyDevice dev;
  cudaError_t e = skinny_device(&dev);
  if (e != cudaSuccess) return e;
  return skinny_dispatch_in(in, [&](auto tr) {
    using Tr = decltype(tr);
    return skinny_dispatch_int<1, 2, 4>(block_rows / 16, [&](auto wm) {
      return skinny_dispatch_int<1, 2, 4, 8>(skinny_mma_token_tiles(l.p.n), [&](auto wn) {
        return skinny_dispatch_int<4>(k_warps, [&](auto kw) {
          return skinny_dispatch_int<1, 2, 4, 8>(l.cluster > 1 ? l.cluster : 1, [&](auto cs) {
            return skinny_mmas_launch<Tr, wm.value, wn.value, kw.value, cs.value>(l, dev, stream);
          });
        });
      });
    });
  });
}

}  // namespace tunable::kernels
