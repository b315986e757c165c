// How fast can a kernel stream a [rows x row_bytes] weight when blocks own row tiles (and K splits)
// the way the skinny GEMM kernels partition it? No arithmetic, only the loads, so whatever this
// reaches is the ceiling for that partition (bench/NOTES-skinny.md round 17). Sweeps rows per block,
// K splits, a per-tile rotated K start (blocks out of phase along K) and a padded row stride, and
// prints each against a contiguous read of the same bytes and a device-to-device copy, all timed
// as CUDA graphs of back-to-back launches over copies rotated through > L2. --pdl times every
// launch the way the GEMM kernels chain (programmatic dependent launch: each kernel triggers the
// next at its start and waits for the previous grid before its first load), next to the plain one.
//
//   tunable_dram_stream [--shapes 2304x16384,2048x32768] [--reps 15] [--pdl]
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "dram_stream: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // 16-byte loads in flight per thread and row
constexpr unsigned kNever = 0x12345678u;

// The loads' values are XOR-folded so the compiler keeps every load.
__device__ __forceinline__ void fold(uint4& acc, const uint4 (&v)[kUnroll]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    acc.x ^= v[u].x;
    acc.y ^= v[u].y;
    acc.z ^= v[u].z;
    acc.w ^= v[u].w;
  }
}

// Kept live without writing: `never` is a value the folds cannot take (the pool is filled with
// 0x5a bytes, whose XOR over any count of 16-byte vectors has every byte 0x00 or 0x5a).
__device__ __forceinline__ void keep_live(const uint4& acc, unsigned never, uint4* sink) {
  if (acc.x == never) sink[blockIdx.x * kThreads + threadIdx.x] = acc;
}

// The GEMM kernels' PDL protocol (kernels/common/device_utils.cuh): let the next launch be
// scheduled, then wait for the previous grid; both are no-ops in a launch without the attribute.
__device__ __forceinline__ void pdl_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

struct Part {
  int rows_per_block;  // rows a block streams together (along K in lock-step)
  int ksplit;          // K splits per row tile
  int rotate;          // 1: tile t starts its K walk at a tile-dependent offset and wraps
};

// Every row of a tile advances through K together, as in the tensor-core kernels; the warps split
// the tile's rows and each warp reads kUnroll x 512 contiguous bytes of a row per step.
__global__ void __launch_bounds__(kThreads) stream_tiles(const uint4* __restrict__ w, long ld_vec, int rows,
                                                         int kvec, Part p, unsigned never, uint4* __restrict__ sink) {
  pdl_start();
  const int tile = blockIdx.x / p.ksplit, split = blockIdx.x % p.ksplit;
  const int r0 = tile * p.rows_per_block;
  const int per = (kvec + p.ksplit - 1) / p.ksplit;
  const int k0 = split * per, k1 = min(kvec, k0 + per);
  const int len = k1 - k0;
  if (len <= 0) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  constexpr int kWarps = kThreads / 32;
  const int step = 32 * kUnroll;
  const int nsteps = (len + step - 1) / step;
  // Spread the tiles' starting points evenly over the walk so concurrent tiles touch different
  // column offsets of their rows.
  const int start = p.rotate ? (int)((long)tile * nsteps / max(1, (rows + p.rows_per_block - 1) / p.rows_per_block)) : 0;
  uint4 acc = make_uint4(0, 0, 0, 0);
  // Rows per warp: a tile of fewer rows than warps splits each row's steps across warps instead.
  const int rpw = max(1, p.rows_per_block / kWarps);
  const int wpr = max(1, kWarps / p.rows_per_block);  // warps sharing one row
  const int my_row0 = (p.rows_per_block >= kWarps) ? warp * rpw : warp / wpr;
  const int sub = (p.rows_per_block >= kWarps) ? 0 : warp % wpr;
  for (int si = sub; si < nsteps; si += wpr) {
    const int s = (si + start) % nsteps;
    const int kb = k0 + s * step;
    for (int rr = 0; rr < rpw; ++rr) {
      const int r = r0 + my_row0 + rr;
      if (r >= rows || my_row0 + rr >= p.rows_per_block) break;
      const uint4* row = w + (long)r * ld_vec;
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int kk = kb + u * 32 + lane;
        v[u] = kk < k1 ? __ldg(row + kk) : make_uint4(0, 0, 0, 0);
      }
      fold(acc, v);
    }
  }
  keep_live(acc, never, sink);
}

// The same bytes as one contiguous stream, grid-stride, the same loads in flight per thread.
__global__ void __launch_bounds__(kThreads) stream_flat(const uint4* __restrict__ w, long nvec, unsigned never,
                                                        uint4* __restrict__ sink) {
  pdl_start();
  uint4 acc = make_uint4(0, 0, 0, 0);
  const long stride = (long)gridDim.x * kThreads * kUnroll;
  for (long i = (long)blockIdx.x * kThreads * kUnroll + threadIdx.x; i < nvec; i += stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long j = i + (long)u * kThreads;
      v[u] = j < nvec ? __ldg(w + j) : make_uint4(0, 0, 0, 0);
    }
    fold(acc, v);
  }
  keep_live(acc, never, sink);
}

/// kernel<<<grid, kThreads, 0, s>>>(args...), programmatic-dependent when `pdl`.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), unsigned grid, bool pdl, cudaStream_t s, Args... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(kThreads);
  cfg.stream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl ? 1 : 0;
  check(cudaLaunchKernelEx(&cfg, kernel, args...), "launch");
}

template <class Launch>
double graph_us(Launch launch, int copies, int reps, cudaStream_t s) {
  constexpr int kPerGraph = 24;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
  for (int i = 0; i < kPerGraph; ++i) launch(i % copies, s);
  check(cudaStreamEndCapture(s, &g), "end capture");
  check(cudaGraphInstantiate(&ge, g, 0), "instantiate");
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  check(cudaGraphLaunch(ge, s), "warm-up");
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(a, s), "record");
    check(cudaGraphLaunch(ge, s), "graph launch");
    check(cudaEventRecord(b, s), "record");
    check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    t.push_back(ms * 1000.0 / kPerGraph);
  }
  check(cudaGetLastError(), "launch");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Streaming-read ceiling of the skinny kernels' weight partitions"};
  std::string shapes = "2304x16384,2304x32768,2048x32768,2432x32768,6144x8192,4096x8192,4096x28672,16384x13312";
  int reps = 15;
  bool pdl = false;
  app.add_option("--shapes", shapes, "rows x row bytes, comma separated");
  app.add_flag("--pdl", pdl, "also time every point with programmatic dependent launch");
  app.add_option("--reps", reps, "graph replays per point (median reported)")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);

  int dev = 0, sms = 0;
  check(cudaGetDevice(&dev), "device");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
  const size_t pool_bytes = size_t(640) << 20;
  char* pool = nullptr;
  check(cudaMalloc(&pool, pool_bytes), "pool");
  check(cudaMemset(pool, 0x5a, pool_bytes), "fill");
  uint4* sink = nullptr;
  check(cudaMalloc(&sink, size_t(1) << 26), "sink");
  cudaStream_t s;
  check(cudaStreamCreate(&s), "stream");

  // The suite's floor: bytes / copy bandwidth, the copy counting its bytes twice (read + write).
  const size_t copy_bytes = size_t(256) << 20;
  const double copy_us = graph_us(
      [&](int c, cudaStream_t st) {
        check(cudaMemcpyAsync(pool + (c % 2 ? copy_bytes : 0), pool + (c % 2 ? 0 : copy_bytes), copy_bytes,
                              cudaMemcpyDeviceToDevice, st), "copy");
      },
      2, reps, s);
  const double copy_bw = 2.0 * copy_bytes / (copy_us * 1e-6);
  std::printf("%d SMs, copy bandwidth %.0f GB/s (256 MiB device-to-device copies)\n", sms, copy_bw / 1e9);

  std::stringstream ss(shapes);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int rows = 0;
    long row_bytes = 0;
    if (std::sscanf(item.c_str(), "%dx%ld", &rows, &row_bytes) != 2 || rows <= 0 || row_bytes % 16) {
      std::fprintf(stderr, "dram_stream: bad shape '%s' (rows x row bytes, a multiple of 16)\n", item.c_str());
      return 2;
    }
    for (long pad : {0L, 256L}) {
      const long ld = row_bytes + pad;
      const size_t bytes = size_t(rows) * ld;
      const int copies = std::max<int>(2, std::min<size_t>(pool_bytes / bytes, (size_t(300) << 20) / bytes + 1));
      if (size_t(copies) * bytes > pool_bytes) continue;
      auto base = [&](int c) { return reinterpret_cast<const uint4*>(pool + size_t(c) * bytes); };
      const double floor_bytes = double(rows) * row_bytes;
      const double floor_us = floor_bytes / copy_bw * 1e6;
      for (const bool with_pdl : {false, true}) {
        if (with_pdl && !pdl) continue;
        const char* mode = with_pdl ? "PDL" : "plain";
        const double flat_us = graph_us(
            [&](int c, cudaStream_t st) {
              launch(stream_flat, unsigned(sms * 4), with_pdl, st, base(c), long(floor_bytes / 16), kNever, sink);
            },
            copies, reps, s);
        std::printf("\n%d rows x %ld B (ld %ld), %.1f MB, %d copies, %s launches: floor %.2f us, flat read %.2f us "
                    "(%.3f of floor)\n",
                    rows, row_bytes, ld, floor_bytes / 1e6, copies, mode, floor_us, flat_us, floor_us / flat_us);
        for (int rpb : {1, 8, 16, 64})
          for (int ks : {1, 2, 4, 8})
            for (int rot : {0, 1}) {
              const Part p{rpb, ks, rot};
              const long tiles = (rows + rpb - 1) / rpb;
              const long blocks = tiles * ks;
              if (blocks > (1 << 14)) continue;  // the sink holds 2^14 blocks x kThreads vectors
              const double us = graph_us(
                  [&](int c, cudaStream_t st) {
                    launch(stream_tiles, unsigned(blocks), with_pdl, st, base(c), ld / 16, rows, int(row_bytes / 16), p,
                           kNever, sink);
                  },
                  copies, reps, s);
              std::printf("  %s rows/block %2d ksplit %d rotate %d: %5ld blocks %8.2f us  %.3f of floor\n", mode, rpb,
                          ks, rot, blocks, us, floor_us / us);
            }
      }
    }
  }
  return 0;
}
