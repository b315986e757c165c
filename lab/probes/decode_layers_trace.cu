// Where the persistent decode kernel's step goes (kernels/model/decode_layers.cuh, built here with
// its trace hooks): a model of real dimensions with random e4m3 weights, timed launches (median ms,
// weight bytes / time against the measured copy bandwidth), then one traced launch whose per-block
// timestamps split each layer into its stages (median and slowest block), the barrier latency (last
// arrival to first release) and the time the producer lanes waited for a free slot and the compute
// warps for a full one. Built twice: with the math, and with TUNABLE_DECODE_LAYERS_NO_MATH (the
// compute warps only wait for and release each chunk: the structure's streaming ceiling).
//
//   tunable_decode_layers_trace --model gemma-2b [--layers 18] [--pos 200] [--json FILE]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#define TUNABLE_DECODE_LAYERS_TRACE 1
#include "kernels/model/decode_layers.cuh"

namespace k = tunable::kernels;
using T = __nv_bfloat16;

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__global__ void fill_e4m3(std::uint8_t* p, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = static_cast<std::uint8_t>((h & 0x80u) | ((3u + (h >> 8) % 7u) << 3) | (h & 7u));  // no NaN
  }
}

__global__ void fill_bf16(T* p, std::size_t n, float v, unsigned seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 16;
    p[i] = __float2bfloat16(v * ((h & 1023u) / 512.f - 1.f));
  }
}

__global__ void fill_f32(float* p, std::size_t n, float v) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

struct Dims {
  int hidden, inter, heads, kv, hd, layers;
};

int main(int argc, char** argv) {
  CLI::App app{"persistent decode kernel timeline"};
  std::string model = "gemma-2b", json;
  int layers = 0, pos = 200, reps = 20;
  app.add_option("--model", model)->check(CLI::IsMember({"gemma-2b", "llama-3-8b"}));
  app.add_option("--layers", layers, "layers (default: the model's)");
  app.add_option("--pos", pos, "the new token's position");
  app.add_option("--reps", reps);
  app.add_option("--json", json);
  CLI11_PARSE(app, argc, argv);
  Dims d = model == "gemma-2b" ? Dims{2048, 16384, 8, 1, 256, 18} : Dims{4096, 14336, 32, 8, 128, 32};
  if (layers > 0) d.layers = layers;
  const int max_seq = std::max(512, pos + 1);

  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int slots = static_cast<int>(std::min<std::size_t>(
      k::kDlMaxSlots, (prop.sharedMemPerBlockOptin - k::kDlScratchBytes - 1024) / k::kDlSlotBytes));
  const std::size_t smem = k::decode_layers_smem(slots);

  // Weights.
  std::vector<k::DecodeLayerWeights> table(d.layers);
  std::vector<void*> allocs;
  std::size_t wbytes = 0;
  for (int l = 0; l < d.layers; ++l)
    for (int s = 0; s < 4; ++s) {
      const int rows = s == 0 ? (d.heads + 2 * d.kv) * d.hd : s == 1 ? d.hidden : s == 2 ? 2 * d.inter : d.hidden;
      const int cols = s == 1 ? d.heads * d.hd : s == 3 ? d.inter : d.hidden;
      std::uint8_t* w = nullptr;
      float* sc = nullptr;
      CK(cudaMalloc(&w, static_cast<std::size_t>(rows) * cols));
      CK(cudaMalloc(&sc, rows * 4));
      fill_e4m3<<<1024, 256>>>(w, static_cast<std::size_t>(rows) * cols, 17u * l + s);
      fill_f32<<<64, 256>>>(sc, rows, 0.02f / std::sqrt(static_cast<float>(cols)));
      table[l].w[s] = w;
      table[l].scale[s] = sc;
      allocs.push_back(w);
      allocs.push_back(sc);
      wbytes += static_cast<std::size_t>(rows) * cols;
    }
  k::DecodeLayerWeights* dtable = nullptr;
  CK(cudaMalloc(&dtable, table.size() * sizeof(table[0])));
  CK(cudaMemcpy(dtable, table.data(), table.size() * sizeof(table[0]), cudaMemcpyHostToDevice));

  // Activations, cache, attention partials.
  const int group = d.heads / d.kv;
  const std::size_t layer_elems = static_cast<std::size_t>(d.kv) * max_seq * d.hd;
  T *resid, *qkv, *att, *act, *kc, *vc;
  CK(cudaMalloc(&resid, d.hidden * 2));
  CK(cudaMalloc(&qkv, (d.heads + 2 * d.kv) * d.hd * 2));
  CK(cudaMalloc(&att, d.heads * d.hd * 2));
  CK(cudaMalloc(&act, d.inter * 2));
  CK(cudaMalloc(&kc, layer_elems * d.layers * 2));
  CK(cudaMalloc(&vc, layer_elems * d.layers * 2));
  fill_bf16<<<1024, 256>>>(kc, layer_elems * d.layers, 1.f, 5);
  fill_bf16<<<1024, 256>>>(vc, layer_elems * d.layers, 1.f, 6);
  int* dpos;
  float *freq, *pacc, *pml;
  unsigned *counters, *barrier;
  int* error;
  CK(cudaMalloc(&dpos, 4));
  CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&freq, d.hd / 2 * 4));
  fill_f32<<<1, 256>>>(freq, d.hd / 2, 1e-3f);
  CK(cudaMalloc(&pacc, static_cast<std::size_t>(d.kv) * k::kDlMaxSpans * group * d.hd * 4));
  CK(cudaMalloc(&pml, static_cast<std::size_t>(d.kv) * k::kDlMaxSpans * group * 2 * 4));
  CK(cudaMalloc(&counters, d.kv * 4));
  CK(cudaMemset(counters, 0, d.kv * 4));
  CK(cudaMalloc(&barrier, 8));
  CK(cudaMemset(barrier, 0, 8));
  CK(cudaMalloc(&error, 4));
  CK(cudaMemset(error, 0, 4));

  k::DecodeLayersParams<T> p{};
  p.layers = dtable;
  p.num_layers = d.layers;
  p.hidden = d.hidden;
  p.inter = d.inter;
  p.heads = d.heads;
  p.kv_heads = d.kv;
  p.max_seq = max_seq;
  p.eps = 1e-6f;
  p.attn_scale = 1.f / std::sqrt(static_cast<float>(d.hd));
  p.act = k::ActKind::kGeluTanh;
  p.resid = resid;
  p.qkv = qkv;
  p.att = att;
  p.act_out = act;
  p.k_cache = kc;
  p.v_cache = vc;
  p.layer_cache_elems = static_cast<std::int64_t>(layer_elems);
  p.positions = dpos;
  p.inv_freq = freq;
  p.part_acc = pacc;
  p.part_ml = pml;
  p.counters = counters;
  p.barrier = barrier;
  p.error = error;
  p.blocks = prop.multiProcessorCount;
  p.slots = slots;
  p.timeout_ns = 2000000000ull;

  auto launch = [&](auto kernel) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<prop.multiProcessorCount, k::kDlThreads, smem>>>(p);
    CK(cudaGetLastError());
  };
  auto run = [&](auto kernel) {
    fill_bf16<<<8, 256>>>(resid, d.hidden, 1.f, 9);
    launch(kernel);
  };
  auto timed = [&](auto kernel) {
    for (int i = 0; i < 3; ++i) run(kernel);
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
      fill_bf16<<<8, 256>>>(resid, d.hidden, 1.f, 9);
      CK(cudaEventRecord(a));
      launch(kernel);
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };

  // Copy bandwidth: 1 GiB device to device, read + write.
  void *ca, *cb;
  const std::size_t cbytes = 1ull << 30;
  CK(cudaMalloc(&ca, cbytes));
  CK(cudaMalloc(&cb, cbytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaMemcpy(cb, ca, cbytes, cudaMemcpyDeviceToDevice));
  CK(cudaEventRecord(e0));
  for (int i = 0; i < 5; ++i) CK(cudaMemcpy(cb, ca, cbytes, cudaMemcpyDeviceToDevice));
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float cms = 0;
  CK(cudaEventElapsedTime(&cms, e0, e1));
  const double copy_bw = 2.0 * cbytes * 5 / (cms * 1e-3);
  CK(cudaFree(ca));
  CK(cudaFree(cb));

  const auto kernel = k::decode_layers_kernel<T, 256>;
  const auto kernel128 = k::decode_layers_kernel<T, 128>;
  const float ms = d.hd == 256 ? timed(kernel) : timed(kernel128);
  const double gbs = wbytes / (ms * 1e-3) / 1e9;
  int err = 0;
  CK(cudaMemcpy(&err, error, 4, cudaMemcpyDeviceToHost));
#ifdef TUNABLE_DECODE_LAYERS_NO_MATH
  const char* variant = "no-math";
#else
  const char* variant = "full";
#endif
  std::printf("%s %s, %d layers, position %d, %d slots: %.3f ms per launch, weights %.2f GB at %.0f GB/s = %.3f of "
              "copy (%.0f GB/s)%s\n",
              model.c_str(), variant, d.layers, pos, slots, ms, wbytes / 1e9, gbs, gbs * 1e9 / copy_bw, copy_bw / 1e9,
              err ? " ERROR WORD SET" : "");

  // One traced launch.
  const int G = prop.multiProcessorCount;
  unsigned long long *trace, *waits;
  CK(cudaMalloc(&trace, static_cast<std::size_t>(G) * d.layers * k::decode_layers_detail::kDlTraceEvents * 8));
  CK(cudaMalloc(&waits, G * 2 * 8));
  CK(cudaMemset(waits, 0, G * 2 * 8));
  CK(cudaMemcpyToSymbol(k::decode_layers_detail::g_dl_trace, &trace, sizeof trace));
  CK(cudaMemcpyToSymbol(k::decode_layers_detail::g_dl_waits, &waits, sizeof waits));
  if (d.hd == 256) run(kernel); else run(kernel128);
  CK(cudaDeviceSynchronize());
  std::vector<unsigned long long> tr(static_cast<std::size_t>(G) * d.layers * k::decode_layers_detail::kDlTraceEvents), wt(G * 2);
  CK(cudaMemcpy(tr.data(), trace, tr.size() * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(wt.data(), waits, wt.size() * 8, cudaMemcpyDeviceToHost));
  auto at = [&](int b, int l, int e) { return static_cast<double>(tr[(static_cast<std::size_t>(b) * d.layers + l) * k::decode_layers_detail::kDlTraceEvents + e]); };
  const char* names[5] = {"qkv", "attention", "o", "gate_up", "down"};
  double stage_med[5] = {}, stage_max[5] = {}, bar_lat[5] = {}, bar_skew[5] = {};
  int n = 0;
  for (int l = 1; l + 1 < d.layers; ++l, ++n) {
    for (int st = 0; st < 5; ++st) {
      std::vector<double> dur(G), end(G), next(G);
      for (int b = 0; b < G; ++b) {
        dur[b] = at(b, l, 2 * st + 1) - at(b, l, 2 * st);
        end[b] = at(b, l, 2 * st + 1);
        next[b] = st < 4 ? at(b, l, 2 * st + 2) : at(b, l + 1, 0);
      }
      std::sort(dur.begin(), dur.end());
      stage_med[st] += dur[G / 2];
      stage_max[st] += dur.back();
      const double last_end = *std::max_element(end.begin(), end.end());
      std::sort(end.begin(), end.end());
      bar_skew[st] += last_end - end[G / 2];
      bar_lat[st] += *std::min_element(next.begin(), next.end()) - last_end;
    }
  }
  const double layer_ns = (at(0, d.layers - 2, 0) - at(0, 1, 0)) / std::max(1, d.layers - 3);
  std::printf("per layer (layers 1..%d): %.2f us; stage: median block / slowest block us; then barrier: slowest - "
              "median end, last end -> first release us\n",
              d.layers - 2, layer_ns / 1e3);
  for (int st = 0; st < 5; ++st)
    std::printf("  %-9s %7.2f / %7.2f   barrier skew %6.2f  latency %6.2f\n", names[st], stage_med[st] / n / 1e3,
                stage_max[st] / n / 1e3, bar_skew[st] / n / 1e3, bar_lat[st] / n / 1e3);
  std::vector<double> pw(G), cw(G);
  for (int b = 0; b < G; ++b) {
    pw[b] = wt[2 * b] / 1e3;
    cw[b] = wt[2 * b + 1] / 1e3;
  }
  std::sort(pw.begin(), pw.end());
  std::sort(cw.begin(), cw.end());
  std::printf("per step: producer waited for a free slot %.1f us (median block; max %.1f), compute warps for a full "
              "one %.1f us (median; max %.1f)\n",
              pw[G / 2], pw.back(), cw[G / 2], cw.back());
  if (!json.empty()) {
    std::ofstream f(json, std::ios::app);
    f << "{\"model\":\"" << model << "\",\"variant\":\"" << variant << "\",\"ms\":" << ms << ",\"gbs\":" << gbs
      << ",\"copy_gbs\":" << copy_bw / 1e9 << ",\"layer_us\":" << layer_ns / 1e3 << ",\"stage_med_us\":[";
    for (int st = 0; st < 5; ++st) f << (st ? "," : "") << stage_med[st] / n / 1e3;
    f << "],\"barrier_latency_us\":[";
    for (int st = 0; st < 5; ++st) f << (st ? "," : "") << bar_lat[st] / n / 1e3;
    f << "],\"producer_wait_us\":" << pw[G / 2] << ",\"consumer_wait_us\":" << cw[G / 2] << "}\n";
  }
  return err ? 1 : 0;
}
