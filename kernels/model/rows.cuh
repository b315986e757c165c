// Row moves of the decode engine: the embedding lookup (with Gemma's sqrt(hidden) scale), which with
// scale 1 is also the gather of each sequence's last row before the output projection.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/device_utils.cuh"

namespace tunable::kernels {

template <class T>
struct EmbedParams {
  const int* ids;          ///< [rows], inside [0, vocab) (checked on the host for prompts)
  const T* table;          ///< [vocab, hidden]
  T* out;                  ///< [rows, hidden]
  int hidden;
  float scale;             ///< 1: a plain copy; else out = round(e * scale) (scale already in T's precision)
};

/// One block per row, 16-byte accesses (hidden a multiple of 8 elements, checked by the host).
template <class T>
__global__ void __launch_bounds__(256) embed_kernel(EmbedParams<T> p) {
  constexpr int kV = kVec16<T>;
  using V = Vec<T, kV>;
  pdl_launch_dependents();
  pdl_wait();
  const int row = blockIdx.x;
  const T* src = p.table + static_cast<std::int64_t>(p.ids[row]) * p.hidden;
  T* dst = p.out + static_cast<std::int64_t>(row) * p.hidden;
  for (int i = threadIdx.x * kV; i < p.hidden; i += blockDim.x * kV) {
    V v = load_vec<V, LoadPolicy::kReadOnly>(src + i);
    if (p.scale != 1.f) {
#pragma unroll
      for (int e = 0; e < kV; ++e) v.v[e] = from_float<T>(to_float(v.v[e]) * p.scale);
    }
    store_vec(dst + i, v);
  }
}

}  // namespace tunable::kernels
