// Next-token selection on the GPU, so that a decode step never waits for the host: greedy argmax
// and seeded sampling with temperature, top-k and top-p, over rows of logits (bf16 or fp16, as the
// output projection writes them). Both finish a step for the next one: the chosen token becomes
// the row's next input id and its position advances by one.
//
// Greedy takes the first index of the largest logit (torch.argmax's choice among ties); the rows
// are split over many blocks, and the last block of a row to finish reduces the blocks' partials
// (a counter per row, reset by that block), so one launch covers the 256k-entry vocabularies.
//
// Sampling is exact and reproducible: one block per row finds the thresholds by bisection on the
// logits' order-preserving integer keys (top-k: the largest t with at least k logits >= t; top-p:
// the largest t whose kept mass is >= top_p of the top-k mass, as Hugging Face's warpers keep it),
// then draws u in [0, kept mass) from Philox (seed, row, position) and walks a block-wide prefix sum
// in index order. Every sum has a fixed order, so a seed gives the same tokens on every run.
#pragma once

#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <cstdint>

#include "kernels/common/device_utils.cuh"

namespace tunable::kernels {

/// Advances a row after its token is chosen: next_ids[row] = token, positions[row] += 1.
struct StepAdvance {
  int* next_ids;
  int* positions;  ///< may be null (nothing to advance)
};

inline constexpr int kArgmaxThreads = 256;

template <class T>
struct ArgmaxParams {
  const T* logits;
  std::int64_t stride;  ///< elements between rows
  int vocab;
  float* part_val;      ///< [rows][gridDim.x]
  int* part_idx;
  unsigned* counters;   ///< [rows], zero between launches
  StepAdvance advance;
};

/// (value, index) order of argmax: larger value first, then the smaller index; NaN never wins.
__device__ __forceinline__ bool argmax_better(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

__device__ __forceinline__ void argmax_warp(float* v, int* i) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, *v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, *i, o);
    if (argmax_better(ov, oi, *v, *i)) {
      *v = ov;
      *i = oi;
    }
  }
}

/// Block-wide argmax; every thread gets the result. blockDim.x a multiple of 32, at most 1024.
__device__ __forceinline__ void argmax_block(float* v, int* i) {
  __shared__ float sv[32];
  __shared__ int si[32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  argmax_warp(v, i);
  __syncthreads();
  if (lane == 0) {
    sv[warp] = *v;
    si[warp] = *i;
  }
  __syncthreads();
  *v = lane < warps ? sv[lane] : -INFINITY;
  *i = lane < warps ? si[lane] : 0x7fffffff;
  argmax_warp(v, i);
}

template <class T>
__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(ArgmaxParams<T> p) {
  __shared__ bool last_s;
  pdl_launch_dependents();
  pdl_wait();
  const int row = blockIdx.y;
  const T* x = p.logits + row * p.stride;
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < p.vocab; j += gridDim.x * blockDim.x) {
    const float v = to_float(x[j]);
    if (argmax_better(v, j, bv, bi)) {
      bv = v;
      bi = j;
    }
  }
  argmax_block(&bv, &bi);
  if (threadIdx.x == 0) {
    p.part_val[row * gridDim.x + blockIdx.x] = bv;
    p.part_idx[row * gridDim.x + blockIdx.x] = bi;
    __threadfence();
    last_s = atomicAdd(&p.counters[row], 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_s) return;
  __threadfence();
  bv = -INFINITY;
  bi = 0x7fffffff;
  for (int b = threadIdx.x; b < static_cast<int>(gridDim.x); b += blockDim.x) {
    const float v = __ldcg(p.part_val + row * gridDim.x + b);
    const int i = __ldcg(p.part_idx + row * gridDim.x + b);
    if (argmax_better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  argmax_block(&bv, &bi);
  if (threadIdx.x == 0) {
    // All logits NaN (a broken model) still gives a valid token id.
    p.advance.next_ids[row] = bi < p.vocab ? bi : 0;
    if (p.advance.positions) p.advance.positions[row] += 1;
    p.counters[row] = 0u;
  }
}

inline constexpr int kSampleThreads = 1024;

/// The sampling settings, read from device memory so that one captured decode graph serves every
/// temperature, top-k, top-p and seed (the host writes them before a generation).
struct SamplingSettings {
  float inv_temperature;  ///< > 0
  int top_k;              ///< 0: off
  float top_p;            ///< 1: off
  unsigned long long seed;
};

template <class T>
struct SampleParams {
  const T* logits;
  std::int64_t stride;
  int vocab;
  const SamplingSettings* settings;
  const int* positions;   ///< [rows]: the Philox offset, so each step of a sequence draws afresh
  StepAdvance advance;
};

/// Order-preserving map of floats onto unsigned integers (larger float, larger key).
__device__ __forceinline__ unsigned float_key(float f) {
  const unsigned b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

/// The block's sum, in every thread; `scratch` (one V per warp) may be reused by the next call (the
/// barrier first: a previous call's readers are done).
template <class V>
__device__ __forceinline__ V block_sum(V v, V* scratch) {
  __syncthreads();
  return group_reduce(v, static_cast<int>(blockDim.x) >> 5, scratch, SumOp{});
}

template <class T>
__global__ void __launch_bounds__(kSampleThreads) sample_kernel(SampleParams<T> p) {
  __shared__ float fscratch[32];
  __shared__ unsigned uscratch[32];
  __shared__ float excl_s[kSampleThreads / 32];
  pdl_launch_dependents();
  pdl_wait();
  const int row = blockIdx.x;
  const T* x = p.logits + row * p.stride;
  const SamplingSettings set = *p.settings;
  const float inv_t = set.inv_temperature;
  // Each thread owns a contiguous range (in index order, for the prefix walk at the end).
  const int per = (p.vocab + blockDim.x - 1) / blockDim.x;
  const int j0 = min(p.vocab, static_cast<int>(threadIdx.x) * per), j1 = min(p.vocab, j0 + per);
  float mx = -INFINITY;
  for (int j = j0; j < j1; ++j) mx = fmaxf(mx, to_float(x[j]) * inv_t);
  {
    __shared__ float ms[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if ((threadIdx.x & 31) == 0) ms[threadIdx.x >> 5] = mx;
    __syncthreads();
    mx = (threadIdx.x & 31) < (blockDim.x >> 5) ? ms[threadIdx.x & 31] : -INFINITY;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  }
  auto count_at_least = [&](unsigned t) {
    unsigned c = 0;
    for (int j = j0; j < j1; ++j) c += float_key(to_float(x[j]) * inv_t) >= t;
    return block_sum(c, uscratch);
  };
  auto mass_at_least = [&](unsigned t) {
    float s = 0.f;
    for (int j = j0; j < j1; ++j) {
      const float v = to_float(x[j]) * inv_t;
      if (float_key(v) >= t) s += __expf(v - mx);
    }
    return block_sum(s, fscratch);
  };
  unsigned thr = 0;  // keep logits with key >= thr
  const unsigned top = float_key(mx);
  if (set.top_k > 0 && set.top_k < p.vocab) {
    unsigned lo = 0, hi = top;  // count(>= lo) >= k holds; find the largest such key
    while (lo < hi) {
      const unsigned mid = lo + (hi - lo + 1) / 2;
      if (count_at_least(mid) >= static_cast<unsigned>(set.top_k)) lo = mid;
      else hi = mid - 1;
    }
    thr = lo;
  }
  if (set.top_p < 1.f) {
    const float target = set.top_p * mass_at_least(thr);
    unsigned lo = thr, hi = top;
    while (lo < hi) {
      const unsigned mid = lo + (hi - lo + 1) / 2;
      if (mass_at_least(mid) >= target) lo = mid;
      else hi = mid - 1;
    }
    thr = lo;
  }
  float local = 0.f;
  for (int j = j0; j < j1; ++j) {
    const float v = to_float(x[j]) * inv_t;
    if (float_key(v) >= thr) local += __expf(v - mx);
  }
  // Exclusive prefix of the per-thread masses in thread (= index) order.
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float inc = local;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float y = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += y;
  }
  __syncthreads();
  if (lane == 31) excl_s[warp] = inc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float run = 0.f;
    for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) {
      const float t = excl_s[w];
      excl_s[w] = run;
      run += t;
    }
    fscratch[0] = run;
  }
  __syncthreads();
  const float total = fscratch[0];
  const float excl = excl_s[warp] + inc - local;
  __shared__ float u_s;
  __shared__ int chosen_s, last_kept_s;
  if (threadIdx.x == 0) {
    curandStatePhilox4_32_10_t rng;
    curand_init(set.seed, static_cast<unsigned long long>(row), static_cast<unsigned long long>(p.positions[row]), &rng);
    u_s = curand_uniform(&rng) * total;  // (0, total]
    chosen_s = -1;
    last_kept_s = -1;
  }
  __syncthreads();
  const float u = u_s;
  if (local > 0.f) {
    float c = excl;
    int pick = -1;
    const bool claim = excl < u && u <= excl + local;
    for (int j = j0; j < j1; ++j) {
      const float v = to_float(x[j]) * inv_t;
      if (float_key(v) < thr) continue;
      pick = j;
      c += __expf(v - mx);
      if (claim && c >= u) break;
    }
    // Rounding can make two neighbours claim u (the later index wins) or none (the last kept token).
    if (claim) atomicMax(&chosen_s, pick);
    atomicMax(&last_kept_s, pick);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int tok = chosen_s >= 0 ? chosen_s : last_kept_s;
    if (tok < 0) tok = 0;  // no finite logit at all (a broken model): still a valid id
    p.advance.next_ids[row] = tok;
    if (p.advance.positions) p.advance.positions[row] += 1;
  }
}

}  // namespace tunable::kernels
