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
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/gemv/common.cuh"

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
  tunable::kernels::pdl_launch_dependents();
  tunable::kernels::pdl_wait();
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

// --mma-tokens: the same loads plus the fp8 GEMM's arithmetic, to see what the MMAs, the token loads and a
// split-K reduction in the kernel cost on top of a partition (docs/skinny-gemm.md). W [rows x kvec 16-byte vectors] e4m3
// times MT tokens x [MT x kvec vectors] e4m3: 8-row weight tiles on the N side of m16n8k32, the tokens on its M
// side (rows g and g + 8 of lane g * 4 + q), K split `ks` ways. Lane (g, q) of a warp step loads 16 bytes of
// weight row g and of tokens g and g + 8 at the same K offset (q + 4 s vectors into the split), two MMAs per
// load (bytes 0-7, 8-15; the K order inside a step is permuted the same way for both operands). Each block
// leaves its 16 x 8 fp32 sums in `partials`; with `reduce` the last block of a tile to finish (a counter per
// tile) adds the splits' partials in split order and writes y [MT x rows].
using E4M3 = tunable::kernels::skinny_detail::E4M3Traits;  // its m16n8k32 e4m3 MMA

struct MmaPart {
  int tiles, ks;
  int split_major;  // 1: block b is split b / tiles of tile b % tiles (co-resident blocks share a token slice)
  int reduce;
};

template <int MT, bool MMA>
__global__ void __launch_bounds__(kThreads) stream_mma(const uint4* __restrict__ w, long ld_vec, const uint4* __restrict__ x,
                                                      int kvec, MmaPart p, float* partials, unsigned* counters,
                                                      float* y, int rows) {
  pdl_start();
  const int tile = p.split_major ? blockIdx.x % p.tiles : blockIdx.x / p.ks;
  const int split = p.split_major ? blockIdx.x / p.tiles : blockIdx.x % p.ks;
  const int per = (kvec + p.ks - 1) / p.ks;
  const int k0 = split * per, k1 = min(kvec, k0 + per);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  constexpr int kWarps = kThreads / 32, kU = 4;
  const uint4* wrow = w + (long)(tile * 8 + g) * ld_vec;
  const uint4* xa_row = x + (long)g * kvec;
  const uint4* xb_row = x + (long)(g + 8) * kvec;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  const int nsteps = (k1 - k0 + 3) / 4;
  for (int s0 = warp; s0 < nsteps; s0 += kWarps * kU) {
    uint4 wv[kU], xa[kU], xb[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int kv = k0 + (s0 + u * kWarps) * 4 + q;
      const bool ok = s0 + u * kWarps < nsteps && kv < k1;
      wv[u] = ok ? __ldg(wrow + kv) : zero;
      xa[u] = ok && g < MT ? __ldg(xa_row + kv) : zero;
      xb[u] = ok && g + 8 < MT ? __ldg(xb_row + kv) : zero;
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      if constexpr (MMA) {
        E4M3::mma_frag(c, xa[u].x, xb[u].x, xa[u].y, xb[u].y, wv[u].x, wv[u].y);
        E4M3::mma_frag(c, xa[u].z, xb[u].z, xa[u].w, xb[u].w, wv[u].z, wv[u].w);
      } else {  // the same loads, XOR-folded: what the access pattern costs without the MMAs
        c[0] = __uint_as_float(__float_as_uint(c[0]) ^ wv[u].x ^ wv[u].y ^ wv[u].z ^ wv[u].w);
        c[1] = __uint_as_float(__float_as_uint(c[1]) ^ xa[u].x ^ xa[u].y ^ xa[u].z ^ xa[u].w);
        c[2] = __uint_as_float(__float_as_uint(c[2]) ^ xb[u].x ^ xb[u].y ^ xb[u].z ^ xb[u].w);
      }
    }
  }
  __shared__ float red[kWarps][32][4];
  __shared__ int last;
#pragma unroll
  for (int i = 0; i < 4; ++i) red[warp][lane][i] = c[i];
  __syncthreads();
  const int idx = threadIdx.x;  // < 128: lane idx / 4, accumulator idx % 4
  if (idx < 128) {
    float v = 0.f;
    for (int wi = 0; wi < kWarps; ++wi) v += red[wi][idx / 4][idx % 4];
    partials[((long)split * p.tiles + tile) * 128 + idx] = v;
  }
  if (!p.reduce) return;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(counters + tile, 1u) == unsigned(p.ks - 1);
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  if (idx < 128) {
    float v = 0.f;
    for (int sp = 0; sp < p.ks; ++sp) v += __ldcg(partials + ((long)sp * p.tiles + tile) * 128 + idx);
    const int ln = idx / 4, i = idx % 4;
    const int tok = ln / 4 + (i >= 2 ? 8 : 0), row = tile * 8 + (ln % 4) * 2 + (i & 1);
    if (tok < MT && row < rows) y[(long)tok * rows + row] = v;
  }
  if (threadIdx.x == 0) counters[tile] = 0;
}

/// kernel<<<grid, kThreads, 0, s>>>(args...), programmatic-dependent when `pdl`.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), unsigned grid, bool pdl, cudaStream_t s, Args... args) {
  check(tunable::kernels::launch_kernel_ex(kernel, dim3(grid), dim3(kThreads), 0, s, pdl, dim3(1, 1, 1), args...),
        "launch");
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

/// stream_mma<MT> on `blocks` blocks, programmatic-dependent.
void launch_mma(int mt, bool mma, unsigned blocks, cudaStream_t s, const uint4* w, long ld_vec, const uint4* x,
                int kvec, MmaPart p, float* partials, unsigned* counters, float* y, int rows) {
  switch (mt * 2 + (mma ? 1 : 0)) {
    case 2: launch(stream_mma<1, false>, blocks, true, s, w, ld_vec, x, kvec, p, partials, counters, y, rows); break;
    case 3: launch(stream_mma<1, true>, blocks, true, s, w, ld_vec, x, kvec, p, partials, counters, y, rows); break;
    case 16: launch(stream_mma<8, false>, blocks, true, s, w, ld_vec, x, kvec, p, partials, counters, y, rows); break;
    case 17: launch(stream_mma<8, true>, blocks, true, s, w, ld_vec, x, kvec, p, partials, counters, y, rows); break;
    case 32: launch(stream_mma<16, false>, blocks, true, s, w, ld_vec, x, kvec, p, partials, counters, y, rows); break;
    case 33: launch(stream_mma<16, true>, blocks, true, s, w, ld_vec, x, kvec, p, partials, counters, y, rows); break;
    default: std::fprintf(stderr, "dram_stream: --mma-tokens takes 1, 8 or 16\n"); std::exit(2);
  }
}

/// e4m3 bits of a positive integer v <= 32 that e4m3 holds exactly (v <= 16, or v even).
unsigned char e4m3_of(int v) {
  int e = 0;
  while ((2 << e) <= v) ++e;
  return static_cast<unsigned char>(((e + 7) << 3) | (((v << 3) >> e) - 8));
}

/// The --mma-tokens sweep: every shape (an e4m3 weight of rows x row bytes, rows a multiple of 8) at each
/// token count, K split 2 / 4 / 8 ways, tile- or split-major block order, the loads without the MMAs, partials
/// only or reduced in the kernel. Each reduced configuration is checked once on a weight whose values differ
/// by row and along K: W[r][16-byte chunk c] = (r % 8 + 1)(1 + c % 2), x[t][c] = (t + 1)(1 + c / 2 % 2), so
/// y[t][r] = row_bytes / 64 * 144 (r % 8 + 1)(t + 1) exactly; a wrong row, token or K pairing changes it.
int mma_sweep(const std::string& shapes, const std::vector<int>& tokens, char* pool, size_t pool_bytes, double copy_bw,
              int reps, cudaStream_t s) {
  constexpr int kMaxTok = 16, kMaxSplits = 16;
  const long max_row_bytes = 32768, max_rows = 16384;
  uint4* x = nullptr;
  float *partials = nullptr, *y = nullptr;
  unsigned* counters = nullptr;
  check(cudaMalloc(&x, kMaxTok * max_row_bytes), "x");
  check(cudaMalloc(&partials, sizeof(float) * kMaxSplits * (max_rows / 8) * 128), "partials");
  check(cudaMalloc(&y, sizeof(float) * kMaxTok * max_rows), "y");
  check(cudaMalloc(&counters, sizeof(unsigned) * (max_rows / 8)), "counters");
  check(cudaMemset(counters, 0, sizeof(unsigned) * (max_rows / 8)), "counters");
  std::stringstream ss(shapes);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int rows = 0;
    long row_bytes = 0;
    if (std::sscanf(item.c_str(), "%dx%ld", &rows, &row_bytes) != 2 || rows <= 0 || rows % 8 || rows > max_rows ||
        row_bytes <= 0 || row_bytes % 64 || row_bytes > max_row_bytes) {
      std::fprintf(stderr, "dram_stream: bad --mma-tokens shape '%s' (rows a multiple of 8 up to %ld, row bytes a "
                   "multiple of 64 up to %ld)\n", item.c_str(), max_rows, max_row_bytes);
      return 2;
    }
    const size_t bytes = size_t(rows) * row_bytes;
    const int copies = std::max<int>(2, std::min<size_t>(pool_bytes / bytes, (size_t(300) << 20) / bytes + 1));
    if (size_t(copies) * bytes > pool_bytes) {
      std::fprintf(stderr, "dram_stream: shape '%s' does not fit two copies in the pool\n", item.c_str());
      return 2;
    }
    const int kvec = int(row_bytes / 16), tiles = rows / 8;
    std::vector<unsigned char> hx(size_t(kMaxTok) * row_bytes), hw(bytes);
    for (int t = 0; t < kMaxTok; ++t)
      for (int c = 0; c < kvec; ++c)
        std::memset(&hx[size_t(t) * row_bytes + c * 16], e4m3_of((t + 1) * (1 + c / 2 % 2)), 16);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < kvec; ++c)
        std::memset(&hw[size_t(r) * row_bytes + c * 16], e4m3_of((r % 8 + 1) * (1 + c % 2)), 16);
    uint4* wchk = nullptr;
    check(cudaMalloc(&wchk, bytes), "check weight");
    check(cudaMemcpy(wchk, hw.data(), bytes, cudaMemcpyHostToDevice), "check weight");
    check(cudaMemcpy(x, hx.data(), hx.size(), cudaMemcpyHostToDevice), "x");
    auto base = [&](int c) { return reinterpret_cast<const uint4*>(pool + size_t(c) * bytes); };
    const double floor_us = double(bytes) / copy_bw * 1e6;
    std::printf("\n%d rows x %ld B e4m3, %.1f MB, %d copies: floor %.2f us (PDL launches, 8-row tiles)\n", rows,
                row_bytes, bytes / 1e6, copies, floor_us);
    for (int mt : tokens) {
      for (int ks : {2, 4, 8}) {
        for (int order : {0, 1}) {
          for (int reduce : {-1, 0, 1}) {  // -1: the loads of the MMA kernel without its MMAs, partials only
            const bool mma = reduce >= 0;
            const MmaPart p{tiles, ks, order, reduce > 0 ? 1 : 0};
            const unsigned blocks = unsigned(tiles * ks);
            const double us = graph_us(
                [&](int c, cudaStream_t st) {
                  launch_mma(mt, mma, blocks, st, base(c), kvec, x, kvec, p, partials, counters, y, rows);
                },
                copies, reps, s);
            std::string verdict;
            if (reduce > 0) {
              check(cudaMemsetAsync(y, 0xff, sizeof(float) * kMaxTok * rows, s), "poison y");
              launch_mma(mt, true, blocks, s, wchk, kvec, x, kvec, p, partials, counters, y, rows);
              std::vector<float> h(size_t(mt) * rows);
              check(cudaMemcpyAsync(h.data(), y, h.size() * sizeof(float), cudaMemcpyDeviceToHost, s), "y");
              check(cudaStreamSynchronize(s), "check");
              long bad = 0;
              for (int t = 0; t < mt; ++t)
                for (int r = 0; r < rows; ++r)
                  if (h[size_t(t) * rows + r] != float(row_bytes / 64 * 144) * float(r % 8 + 1) * float(t + 1)) ++bad;
              verdict = bad ? "  y WRONG (" + std::to_string(bad) + " values)" : "  y ok";
            }
            std::printf("  tokens %2d ksplit %2d %s %s: %5u blocks %8.2f us  %.3f of floor%s\n", mt, ks,
                        order ? "split-major" : "tile-major ", reduce < 0 ? "no MMA  " : reduce ? "reduced " : "partials", blocks, us,
                        floor_us / us, verdict.c_str());
          }
        }
      }
    }
    check(cudaFree(wchk), "free");
  }
  check(cudaFree(x), "free");
  check(cudaFree(partials), "free");
  check(cudaFree(y), "free");
  check(cudaFree(counters), "free");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Streaming-read ceiling of the skinny kernels' weight partitions"};
  std::string shapes = "2304x16384,2304x32768,2048x32768,2432x32768,6144x8192,4096x8192,4096x28672,16384x13312";
  int reps = 15;
  bool pdl = false;
  std::vector<int> mma_tokens;
  app.add_option("--shapes", shapes, "rows x row bytes, comma separated");
  app.add_option("--mma-tokens", mma_tokens,
                 "instead of the loads-only sweep: the fp8 MMA kernel on 8-row tiles for these token counts "
                 "(1, 8 or 16), PDL-chained")
      ->delimiter(',');
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

  if (!mma_tokens.empty()) return mma_sweep(shapes, mma_tokens, pool, pool_bytes, copy_bw, reps, s);

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
