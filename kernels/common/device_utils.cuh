// Device helpers shared by the fused-op kernels: element conversion, FP8 e4m3 saturation,
// 16-byte vector load/store, the one warp/group reduction (shuffle + shared memory) and the one
// runtime-dtype-to-template dispatch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace tunable::kernels {

/// Largest finite e4m3 value; FP8 outputs saturate to +-kFp8E4M3Max.
inline constexpr float kFp8E4M3Max = 448.0f;
/// Floor of a dynamic per-token scale (vLLM's value): an all-zero row still gets a finite scale.
inline constexpr float kFp8MinScale = 1.0f / (kFp8E4M3Max * 512.0f);

using fp8_e4m3 = __nv_fp8_e4m3;

template <class T>
inline constexpr bool kIsFp8 = std::is_same_v<T, fp8_e4m3>;

// ---- element conversion (fp32 math everywhere, one rounding on the way out) --------------------

template <class T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
/// bf16 -> fp32 as an integer shift, which the compiler can recompute instead of keeping fp32
/// copies of a cached row alive in registers.
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __uint_as_float(static_cast<unsigned int>(__bfloat16_as_ushort(v)) << 16);
}

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
/// Round to nearest e4m3, saturating to +-448 (NaN stays NaN).
template <>
__device__ __forceinline__ fp8_e4m3 from_float<fp8_e4m3>(float v) {
  fp8_e4m3 r;
  r.__x = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
  return r;
}

// ---- vectors --------------------------------------------------------------------------------------

/// N elements of T moved as one access: 16 bytes for the vectorized kernels, one element for the
/// scalar fallbacks. Pointers passed to load_vec/store_vec must be aligned to sizeof(Vec).
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

/// Elements of T in one 16-byte access.
template <class T>
inline constexpr int kVec16 = 16 / static_cast<int>(sizeof(T));

namespace detail {
template <int Bytes>
struct Word;
template <> struct Word<16> { using type = uint4; };
template <> struct Word<8> { using type = uint2; };
template <> struct Word<4> { using type = unsigned int; };
template <> struct Word<2> { using type = unsigned short; };
template <> struct Word<1> { using type = unsigned char; };
}  // namespace detail

/// Cache policy of a vector load.
enum class LoadPolicy {
  kCoherent,  ///< plain load: the buffer may be written by this kernel (the residual, an in-place x)
  kReadOnly,  ///< read-only path (ld.global.nc): no kernel of this launch writes it (weights)
};
// No evict-first (ld.global.cs) policy: on the H100 it made act-and-mul 3-4 % slower than plain
// loads at 100-400 MB (docs/fused-ops.md).

template <class V, LoadPolicy P = LoadPolicy::kCoherent>
__device__ __forceinline__ V load_vec(const void* p) {
  using W = typename detail::Word<sizeof(V)>::type;
  const W* q = static_cast<const W*>(p);
  W w;
  if constexpr (P == LoadPolicy::kReadOnly) {
    w = __ldg(q);
  } else {
    w = *q;
  }
  V v;
  memcpy(&v, &w, sizeof(V));
  return v;
}

template <class V>
__device__ __forceinline__ void store_vec(void* p, const V& v) {
  using W = typename detail::Word<sizeof(V)>::type;
  W w;
  memcpy(&w, &v, sizeof(V));
  *static_cast<W*>(p) = w;
}

// ---- reductions -----------------------------------------------------------------------------------

struct SumOp {
  template <class V>
  __device__ __forceinline__ V operator()(V a, V b) const { return a + b; }
  template <class V>
  static __device__ __forceinline__ V identity() { return V(0); }
};

/// Max (exact, like fmaxf for numbers). Its identity 0 serves group reductions of non-negative
/// values (amax); warp reductions use no identity, so any values reduce.
struct MaxOp {
  template <class V>
  __device__ __forceinline__ V operator()(V a, V b) const { return a > b ? a : b; }
  template <class V>
  static __device__ __forceinline__ V identity() { return V(0); }
};

/// Reduces v over the warp; every lane receives the result.
template <class V, class Op>
__device__ __forceinline__ V warp_reduce(V v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Reduces v over each group of `group_warps` consecutive warps of the block (a whole block when
/// group_warps == blockDim.x / 32); every thread of a group receives its group's result.
/// group_warps must be uniform over the block and <= 32. When it is > 1 every thread of the block
/// must call this (one __syncthreads) and `scratch` (one V per warp of the block) must not be
/// reused by another reduction before the block's next barrier.
template <class V, class Op>
__device__ __forceinline__ V group_reduce(V v, int group_warps, V* scratch, Op op) {
  v = warp_reduce(v, op);
  if (group_warps == 1) return v;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int first = warp - warp % group_warps;
  v = lane < group_warps ? scratch[first + lane] : Op::template identity<V>();
  return warp_reduce(v, op);
}

/// One cluster reduction's landing place in each block of a cluster: every sender (a block, or each
/// warp of each block) writes its value into its own entry of `v` in every block with st.async,
/// which completes on `bar`. At most kMaxSenders senders over the cluster.
struct ClusterPushSlot {
  static constexpr unsigned kMaxSenders = 64;
  alignas(8) std::uint64_t bar;
  float v[kMaxSenders];
};

/// Values each block sends per cluster reduction: one per warp (PER_WARP) or one.
template <bool PER_WARP>
__device__ __forceinline__ unsigned cluster_push_senders() {
  return PER_WARP ? blockDim.x >> 5 : 1;
}

/// First half of the cluster reductions (cluster_push_reduce<PER_WARP>), before any global memory is
/// touched, so it overlaps the predecessor under PDL: thread 0 arms `n` slots (each expects one
/// 4-byte value from each sender of every block of the cluster), then every thread arrives on the
/// cluster barrier that tells the other blocks the slots exist. Every thread of every block must
/// call it, once.
template <bool PER_WARP>
__device__ __forceinline__ void cluster_push_init(ClusterPushSlot* slots, int n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned senders_per_block = cluster_push_senders<PER_WARP>();
  if (threadIdx.x == 0) {
    unsigned blocks = 0;
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(blocks));
    for (int i = 0; i < n; ++i) {
      const auto bar = static_cast<std::uint32_t>(__cvta_generic_to_shared(&slots[i].bar));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                   "r"(blocks * senders_per_block * 4u)
                   : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#else
  (void)slots, (void)n;
#endif
}

/// Reduces v over a thread-block cluster (sm_90+) by pushing it into every block's `slot` and
/// waiting for all values to land in this block's: one one-way trip through distributed shared
/// memory. (Reading the other blocks' values between two cluster barriers instead cost the norm
/// 1.2-1.6 us more per call at 1-64 rows on the H100.) PER_WARP: v is each warp's own value
/// (warp_reduce'd) and every warp pushes it, so no block barrier precedes the push; otherwise v
/// is uniform over the block and warp 0 pushes it. Every block combines the values in the same
/// order (lane i takes senders i and i + 32, then warp_reduce), so all get the same bits, the same
/// on every launch. `first`: this block's first cluster reduction, which also waits for
/// cluster_push_init's barrier. Every thread of every block calls it with the same slots in the
/// same order; each slot serves one reduction per launch. A block leaves only after every value
/// addressed to it has landed, so no write targets a block that has exited.
template <bool PER_WARP, class Op>
__device__ __forceinline__ float cluster_push_reduce(float v, ClusterPushSlot* slot, bool first, Op op) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (first) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  unsigned blocks = 0, rank = 0;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(blocks));
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const unsigned senders = cluster_push_senders<PER_WARP>();
  const auto bar = static_cast<std::uint32_t>(__cvta_generic_to_shared(&slot->bar));
  if ((PER_WARP || warp == 0) && lane < blocks) {
    const unsigned index = rank * senders + (PER_WARP ? warp : 0);
    const auto dst = static_cast<std::uint32_t>(__cvta_generic_to_shared(&slot->v[index]));
    std::uint32_t rdst = 0, rbar = 0;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rdst) : "r"(dst), "r"(lane));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(bar), "r"(lane));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(rdst),
                 "r"(__float_as_uint(v)), "r"(rbar)
                 : "memory");
  }
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar)
        : "memory");
  } while (!done);
  const unsigned n = blocks * senders;
  float r = lane < n ? slot->v[lane] : Op::template identity<float>();
  if (lane + 32 < n) r = op(r, slot->v[lane + 32]);
  return warp_reduce(r, op);
#else
  (void)slot, (void)first, (void)op;
  return v;  // never launched below sm_90 (cluster launches are refused on the host)
#endif
}

// ---- programmatic dependent launch (sm_90+) -------------------------------------------------------

/// Waits until the previous grid in the stream has completed and its writes are visible (a no-op
/// without a programmatic launch). No value may be loaded from or stored to global memory before
/// it, so a PDL launch is exactly as safe as a serialized one; only L2 prefetch hints may precede
/// it (pdl_prologue).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets the next PDL kernel of the stream be scheduled (it still waits for this grid to finish in
/// its own pdl_wait): its launch latency overlaps this kernel instead of following it.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Threads one SM holds at most (sm_80 .. sm_90): sizes the first-wave estimate of pdl_prologue.
inline constexpr int kMaxThreadsPerSm = 2048;

/// This block's index in the grid, x fastest (the order blocks are dispatched in).
__device__ __forceinline__ std::int64_t block_linear() {
  return blockIdx.x + static_cast<std::int64_t>(gridDim.x) * (blockIdx.y + static_cast<std::int64_t>(gridDim.y) * blockIdx.z);
}

/// Whether this block is (at most) in the grid's first wave: its linear index is below
/// SM ids x the blocks one SM holds by thread count alone. %nsmid can exceed the SMs present and
/// registers or shared memory can lower the occupancy, so this errs towards "yes", which only
/// costs a later block a few redundant prefetches.
__device__ __forceinline__ bool in_first_wave() {
  unsigned nsm = 0;
  asm("mov.u32 %0, %%nsmid;" : "=r"(nsm));
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  return block_linear() < static_cast<std::int64_t>(nsm) * (kMaxThreadsPerSm / threads);
}

/// Pulls the 128-byte lines of [p, p + bytes) into L2, the block's threads taking every
/// blockDim.x-th line. A hint: nothing reaches registers or L1, and L2 is the point of coherence
/// for the preceding grid's writes, so it can run before pdl_wait.
__device__ __forceinline__ void prefetch_l2(const void* p, std::int64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (bytes <= 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = a & ~static_cast<std::uintptr_t>(127);
  const std::int64_t lines = static_cast<std::int64_t>((a + bytes - first + 127) / 128);
  for (std::int64_t l = threadIdx.x; l < lines; l += blockDim.x)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(first + static_cast<std::uintptr_t>(l) * 128));
#else
  (void)p;
  (void)bytes;
#endif
}

/// Pulls ceil(bytes / 128) 128-byte steps from the start of each of `rows` rows `row_stride` bytes
/// apart into L2 (the line holding each step's address), every step of every row spread over the
/// block's threads at once: one issue round for a few lines of many rows, where prefetch_l2 per row
/// would take a round per row. A hint, like prefetch_l2.
__device__ __forceinline__ void prefetch_l2_rows(const void* base, std::int64_t row_stride, int rows,
                                                 std::int64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (rows <= 0 || bytes <= 0) return;
  const int lines = static_cast<int>((bytes + 127) / 128);
  for (int i = threadIdx.x; i < rows * lines; i += blockDim.x) {
    const int r = i / lines, l = i - r * lines;
    const char* a = static_cast<const char*>(base) + r * row_stride + static_cast<std::int64_t>(l) * 128;
    asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
  }
#else
  (void)base, (void)row_stride, (void)rows, (void)bytes;
#endif
}

/// This block's share of a buffer that every block reads (the norm weight): the buffer split into
/// equal 128-byte-aligned chunks over the grid's blocks, so it is requested once, not per block.
__device__ __forceinline__ void prefetch_l2_share(const void* p, std::int64_t bytes) {
  const std::int64_t blocks = static_cast<std::int64_t>(gridDim.x) * gridDim.y * gridDim.z;
  const std::int64_t chunk = ((bytes + blocks - 1) / blocks + 127) / 128 * 128;
  const std::int64_t begin = block_linear() * chunk;
  if (begin < bytes) prefetch_l2(static_cast<const char*>(p) + begin, bytes - begin < chunk ? bytes - begin : chunk);
}

/// The PDL protocol of every kernel here: trigger the next programmatic launch (it waits for this
/// grid in its own prologue, so only its launch and hints overlap this kernel), issue `hint()` (L2
/// prefetch hints only, which are coherent with the preceding grid's writes), then wait for the
/// preceding grid.
template <class Hint>
__device__ __forceinline__ void pdl_hint_then_wait(Hint&& hint) {
  pdl_launch_dependents();
  hint();
  pdl_wait();
}

/// First statements of every fused-op kernel: pdl_hint_then_wait where, in the grid's first wave,
/// `prefetch()` pulls the block's inputs into L2 (prefetch_l2 only), so their DRAM latency overlaps
/// the preceding kernel's tail instead of following it. Later waves start after the wait has
/// resolved and skip the hints.
template <class Prefetch>
__device__ __forceinline__ void pdl_prologue(Prefetch&& prefetch) {
  pdl_hint_then_wait([&] {
    if (in_first_wave()) prefetch();
  });
}

/// Whether `kernel` may be launched with programmatic stream serialization on the current device:
/// compute capability >= 9.0 and device code built for sm_90+ (otherwise pdl_wait() compiled to
/// nothing and an early start would race). The build half is cached per kernel signature: one
/// build compiles all kernels of a signature for the same architectures.
template <class Kernel>
bool pdl_supported(Kernel kernel) {
  static const int ptx = [&] {
    cudaFuncAttributes a{};
    if (cudaFuncGetAttributes(&a, kernel) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return a.ptxVersion;
  }();
  if (ptx < 90) return false;
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return major >= 9;
}

/// Launch attributes beyond the grid: programmatic dependent launch (the caller has checked the
/// kernel and device allow it), a thread-block cluster shape (sm_90), and a preferred shared-memory
/// carveout in percent of the SM's maximum (-1: the kernel's own setting). The carveout is a launch
/// attribute, not the function's, so that graphs capturing one kernel at several grid sizes keep each
/// launch's own.
struct LaunchAttrs {
  bool pdl = false;
  dim3 cluster{1, 1, 1};
  int carveout = -1;
};

/// kernel<<<grid, block, smem, stream>>>(args...) through cudaLaunchKernelEx with `attrs`.
template <class... Params, class... Args>
cudaError_t launch_kernel_with(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                               cudaStream_t stream, const LaunchAttrs& attrs, Args&&... args) {
  cudaLaunchAttribute attr[3];
  unsigned n = 0;
  if (attrs.pdl) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  const dim3 cluster = attrs.cluster;
  if (cluster.x * cluster.y * cluster.z > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster.x;
    attr[n].val.clusterDim.y = cluster.y;
    attr[n++].val.clusterDim.z = cluster.z;
  }
  if (attrs.carveout >= 0) {
    attr[n].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    attr[n++].val.sharedMemCarveout = static_cast<unsigned>(attrs.carveout);
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = n;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  // The status is returned; a refused launch must not also stay pending for the next, unrelated
  // cudaGetLastError (a later candidate's or the caller's own).
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e;
}

/// kernel<<<grid, block, smem, stream>>>(args...): programmatic-dependent when `pdl`, in clusters of
/// `cluster` blocks when that is more than one block.
template <class... Params, class... Args>
cudaError_t launch_kernel_ex(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                             cudaStream_t stream, bool pdl, dim3 cluster, Args&&... args) {
  return launch_kernel_with(kernel, grid, block, smem, stream, LaunchAttrs{pdl, cluster, -1},
                            std::forward<Args>(args)...);
}

/// kernel<<<grid, block, smem, stream>>>(args...), with programmatic dependent launch where the
/// kernel and device support it.
template <class... Params, class... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                          cudaStream_t stream, Args&&... args) {
  return launch_kernel_ex(kernel, grid, block, smem, stream, pdl_supported(kernel), dim3(1, 1, 1),
                          std::forward<Args>(args)...);
}

/// kernel<<<grid, block, smem, stream>>>(args...) in clusters of `cluster_x` blocks along x, with
/// programmatic dependent launch. Clusters need sm_90 device code and a device of compute
/// capability >= 9.0 (the PDL condition): cudaErrorNotSupported otherwise.
template <class... Params, class... Args>
cudaError_t launch_kernel_cluster(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                                  cudaStream_t stream, unsigned cluster_x, Args&&... args) {
  if (!pdl_supported(kernel)) return cudaErrorNotSupported;
  return launch_kernel_ex(kernel, grid, block, smem, stream, true, dim3(cluster_x, 1, 1),
                          std::forward<Args>(args)...);
}

// ---- dispatch ---------------------------------------------------------------------------------------

/// The element types the fused-op kernels are instantiated for. Kernels name their own types so
/// that device code depends on nothing above it; the library maps its DataType onto these.
enum class FloatType { kF32, kF16, kBF16 };

/// Calls fn(T{}) with the element type of `t`; cudaErrorInvalidValue for a value outside the enum.
template <class Fn>
cudaError_t dispatch_float_type(FloatType t, Fn&& fn) {
  switch (t) {
    case FloatType::kF32: return fn(float{});
    case FloatType::kF16: return fn(__half{});
    case FloatType::kBF16: return fn(__nv_bfloat16{});
  }
  return cudaErrorInvalidValue;
}

/// Grid-size arithmetic in 64 bits.
__host__ __device__ inline constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace tunable::kernels
