// Where a few-row residual-add + RMSNorm spends its per-call time (docs/fused-ops.md).
// Graph-timed per-call medians on rotated bf16 inputs (as tunable_fused_bench times them) of:
//   empty_pdl            an empty kernel launched with PDL (the launch and dependency floor);
//   noreduce_b<B>_t<T>   the norm's loads and stores (x, residual, weight in; residual, out back)
//                        over B blocks of T threads per row, without the reduction: what the
//                        memory chain alone costs;
//   warpreduce_*, blockreduce_*  the same with a sum of squares the output depends on, reduced over
//                        the warp (shuffles) or the block (shuffles, shared memory, a barrier);
//   rms_*                the library's register, staged and cluster launch configurations;
//   rms_w<W>_*           the streaming kernel, each block walking up to W rows (docs/fused-ops.md).
//
//   tunable_norm_chain [--rows 1,16,64] [--hidden 4096,8192,16384] [--reps 20] [--csv out.csv] [--only rms_w,..]
#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph_timing.hpp"
#include "cuda/cuda_util.hpp"
#include "tune/cuda_timing.hpp"
#include "kernels/norm/rms_norm.cuh"

namespace tunable::bench {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(const Status& s, const char* what) {
  if (!s.is_ok()) throw std::runtime_error(std::string(what) + ": " + s.to_string());
}

using bf16 = __nv_bfloat16;
using V = kernels::Vec<bf16, 8>;

__global__ void kernel_empty_pdl() {
  kernels::pdl_prologue([] {});
}

/// The memory chain of the fused norm without its reduction: residual <- x + residual, out <-
/// residual * w, one 16-byte vector per thread, `gridDim.x / rows` blocks per row. MODE 1 and 2
/// add a reduction of the sum of squares the output depends on: 1 over the warp (shuffles only),
/// 2 over the block (shuffles, shared memory, one barrier). What part of the reduction costs: 3 the
/// thread's own sum of squares and the division and rsqrt, no shuffles; 4 as 1 with an approximate
/// division; 5 no reduction but a dependent chain of 64 FMAs before the output; 6 the warp's sum by
/// two redux.sync on a fixed-point copy instead of shuffles.
template <int MODE>
__global__ void kernel_noreduce(const __grid_constant__ kernels::RmsNormParams p) {
  __shared__ alignas(16) float scratch[32];
  const int per_row = static_cast<int>(gridDim.x / p.rows);
  const std::int64_t row = blockIdx.x / per_row;
  const int v = static_cast<int>(blockIdx.x % per_row) * blockDim.x + threadIdx.x;
  const bf16* x = static_cast<const bf16*>(p.x) + row * p.x_stride;
  bf16* res = static_cast<bf16*>(p.residual) + row * p.residual_stride;
  const bf16* w = static_cast<const bf16*>(p.weight);
  kernels::pdl_prologue([&] {
    const std::int64_t bytes = static_cast<std::int64_t>(blockDim.x) * 16;
    kernels::prefetch_l2(x + (v - threadIdx.x) * 8, bytes);
    kernels::prefetch_l2(res + (v - threadIdx.x) * 8, bytes);
    kernels::prefetch_l2(w + (v - threadIdx.x) * 8, bytes);
  });
  if (v * 8 >= p.hidden) return;
  V xv = kernels::load_vec<V>(x + v * 8);
  const V rv = kernels::load_vec<V>(res + v * 8);
  const V wv = kernels::load_vec<V, kernels::LoadPolicy::kReadOnly>(w + v * 8);
  kernels::add_residual(xv, rv);
  kernels::store_vec(res + v * 8, xv);
  float scale = 1.0f;
  if constexpr (MODE == 5) {
    // A dependent chain of 64 FMAs between the loads and the output's store (0.19 us measured), no shuffles.
    float c = kernels::to_float(xv.v[0]);
    for (int j = 0; j < 64; ++j) c = fmaf(c, 0.999f, 1e-7f);
    scale = 1.0f + c * 1e-30f;
  } else if constexpr (MODE > 0) {
    float ss = 0.0f;
    for (int j = 0; j < 8; ++j) ss = fmaf(kernels::to_float(xv.v[j]), kernels::to_float(xv.v[j]), ss);
    if constexpr (MODE == 1 || MODE == 4) ss = kernels::warp_reduce(ss, kernels::SumOp{});
    if constexpr (MODE == 2) ss = kernels::group_reduce(ss, blockDim.x >> 5, scratch, kernels::SumOp{});
    if constexpr (MODE == 6) {
      // The warp's sum as fixed point through two redux.sync (max of the bit patterns, then the integer
      // sum): a deterministic sum without the five shuffle steps (an experiment: no range guards).
      const unsigned top = __reduce_max_sync(0xffffffffu, __float_as_uint(ss)) >> 23;
      const float up = __uint_as_float((254u + 25u - top) << 23), down = __uint_as_float((top - 25u) << 23);
      ss = static_cast<float>(__reduce_add_sync(0xffffffffu, __float2uint_rn(ss * up))) * down;
    }
    scale = MODE == 4 ? rsqrtf(__fdividef(ss, static_cast<float>(p.hidden)) + p.eps)
                      : rsqrtf(ss / static_cast<float>(p.hidden) + p.eps);
  }
  V o;
  for (int j = 0; j < 8; ++j) o.v[j] = kernels::from_float<bf16>(kernels::rms_norm_value(xv.v[j], wv.v[j], scale, false));
  kernels::store_vec(static_cast<bf16*>(p.out) + row * p.out_stride + v * 8, o);
}

/// kernel_noreduce by MODE (Variant::noreduce), with the variant names' prefixes.
void (*const kNoreduceKernels[])(kernels::RmsNormParams) = {
    kernel_noreduce<0>, kernel_noreduce<1>, kernel_noreduce<2>, kernel_noreduce<3>,
    kernel_noreduce<4>, kernel_noreduce<5>, kernel_noreduce<6>};
const char* const kNoreduceNames[] = {"noreduce",    "warpreduce", "blockreduce", "localreduce",
                                      "warpfastdiv", "fmachain",   "warpredux"};
static_assert(std::size(kNoreduceNames) == std::size(kNoreduceKernels), "one name per mode");

struct Variant {
  std::string name;
  int noreduce = -1;  // >= 0: kernel_noreduce<noreduce>
  int blocks = 1;  // noreduce: blocks per row
  int threads = 0;
  kernels::RmsNormLaunch launch;
};

std::vector<Variant> variants(int hidden) {
  std::vector<Variant> out;
  const int nvec = hidden / 8;
  for (int mode = 0; mode < static_cast<int>(std::size(kNoreduceKernels)); ++mode) {
    for (int b : {1, 2, 4, 8, 16}) {
      if (nvec % b || nvec / b > 1024 || nvec / b < 32) continue;
      const std::string name =
          std::string(kNoreduceNames[mode]) + "_b" + std::to_string(b) + "_t" + std::to_string(nvec / b);
      out.push_back({name, mode, b, nvec / b, {}});
    }
  }
  // A library launch configuration named `name`: `t` threads per row (or block), `items` vectors each.
  auto library = [&](const std::string& name, int t, int items) -> kernels::RmsNormLaunch& {
    Variant v;
    v.name = name;
    v.launch.threads_per_row = t;
    v.launch.items = items;
    out.push_back(v);
    return out.back().launch;
  };
  const auto shape = [](int t, int items) { return "_t" + std::to_string(t) + "_i" + std::to_string(items); };
  for (int t : {128, 256, 512, 1024}) {
    const int items = nvec / t;
    if (nvec % t || (items != 1 && items != 2 && items != 4 && items != 8)) continue;
    for (bool ew : {false, true}) {
      if (ew && items > 4) continue;
      library("rms" + shape(t, items) + (ew ? "_ew" : ""), t, items).early_weight = ew;
    }
  }
  for (int t : {512, 1024}) library("rms_staged_t" + std::to_string(t), t, 1).staged = true;
  // The streaming kernel (each block walking up to `w` rows). Its L2 prefetch of the row after the
  // next is always on (measured on and off: lab/INDEX.md, fused-round11).
  for (int w : {2, 4, 8, 16}) {
    for (int t : {256, 512, 1024}) {
      const int items = nvec / t;
      if (nvec % t || (items != 1 && items != 2 && items != 4) || (items == 4 && t > 512)) continue;
      library("rms_w" + std::to_string(w) + shape(t, items), t, items).stream = w;
    }
  }
  for (int c : {2, 4, 8}) {
    for (int items : {1, 2}) {
      const int t = nvec / c / items;
      if (nvec % (c * items) || t > 1024 || t < 32) continue;
      library("rms_c" + std::to_string(c) + shape(t, items), t, items).cluster = c;
    }
  }
  return out;
}

}  // namespace
}  // namespace tunable::bench

int main(int argc, char** argv) {
  using namespace tunable;
  using namespace tunable::bench;
  std::vector<std::int64_t> rows = {1, 16, 64};
  std::vector<int> hidden = {4096, 8192, 16384};
  int reps = 20;
  std::size_t calls_min = 200;
  std::string csv_path;
  CLI::App app{"per-call time of few-row fused add + RMSNorm variants (graphs, rotated inputs)"};
  app.add_option("--rows", rows)->delimiter(',')->capture_default_str();
  app.add_option("--hidden", hidden)->delimiter(',')->capture_default_str();
  app.add_option("--reps", reps)->capture_default_str();
  app.add_option("--calls", calls_min, "calls per graph (rounded up to whole rotations)")->capture_default_str();
  app.add_option("--csv", csv_path);
  std::vector<std::string> only;
  app.add_option("--only", only, "run only variants whose names start with one of these")->delimiter(',');
  CLI11_PARSE(app, argc, argv);
  try {
    check(cudaSetDevice(0), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "properties");
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    FILE* csv = csv_path.empty() ? nullptr : std::fopen(csv_path.c_str(), "w");
    if (csv) std::fprintf(csv, "rows,hidden,variant,graph_us,copies,calls\n");
    const double empty = graph_us(s, 1000, [&](std::size_t) {
      check(kernels::launch_kernel(kernel_empty_pdl, dim3(1), dim3(32), 0, s), "empty");
    }, reps);
    std::printf("device %s; empty PDL kernel %.3f us per call in a graph\n", prop.name, empty);
    if (csv) std::fprintf(csv, "0,0,empty_pdl,%.4f,0,1000\n", empty);
    for (int h : hidden) {
      for (std::int64_t r : rows) {
        // x, residual, out per copy (and one weight per copy, as tunable_fused_bench rotates it).
        const std::size_t row_bytes = static_cast<std::size_t>(r) * h * 2;
        const std::size_t per_copy = 3 * row_bytes + static_cast<std::size_t>(h) * 2;
        const std::size_t copies = std::max<std::size_t>(2, std::min<std::size_t>(4096, 2 * prop.l2CacheSize / per_copy + 1));
        DeviceBuffer buf;
        check(buf.allocate(per_copy * copies), "alloc");
        check(fill_random(buf.get(), DataType::kBF16, per_copy * copies / 2, 7, 1.0f, nullptr), "fill");
        check(cudaDeviceSynchronize(), "fill");
        auto params = [&](std::size_t i) {
          char* base = buf.as<char>() + (i % copies) * per_copy;
          kernels::RmsNormParams p{};
          p.x = base;
          p.residual = base + row_bytes;
          p.out = base + 2 * row_bytes;
          p.weight = base + 3 * row_bytes;
          p.rows = r;
          p.x_stride = p.residual_stride = p.out_stride = h;
          p.hidden = h;
          p.eps = 1e-6f;
          p.quant = kernels::NormQuant::kNone;
          return p;
        };
        const std::size_t calls = copies * ((calls_min + copies - 1) / copies);
        for (const Variant& v : variants(h)) {
          if (!only.empty() && std::none_of(only.begin(), only.end(), [&](const std::string& o) { return v.name.rfind(o, 0) == 0; }))
            continue;
          auto call = [&](std::size_t i) {
            const kernels::RmsNormParams p = params(i);
            if (v.noreduce >= 0) {
              auto* k = kNoreduceKernels[v.noreduce];
              check(kernels::launch_kernel(k, dim3(static_cast<unsigned>(r * v.blocks)), dim3(v.threads), 0, s, p),
                    v.name.c_str());
            } else {
              check(kernels::launch_rms_norm(p, kernels::FloatType::kBF16, v.launch, s), v.name.c_str());
            }
          };
          const double us = graph_us(s, calls, call, reps);
          std::printf("[%4lld, %5d] %-24s %7.3f us  %5.2fx empty PDL\n", static_cast<long long>(r), h,
                      v.name.c_str(), us, us / empty);
          if (csv) std::fprintf(csv, "%lld,%d,%s,%.4f,%zu,%zu\n", static_cast<long long>(r), h, v.name.c_str(), us, copies, calls);
        }
      }
    }
    if (csv) std::fclose(csv);
    cudaStreamDestroy(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tunable_norm_chain: %s\n", e.what());
    return 1;
  }
  return 0;
}
