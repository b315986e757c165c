// Graph timing shared by the fused-op benchmarks (tunable_fused_bench, tunable_norm_chain): the
// per-call time of many launches captured into one CUDA graph, so launch overhead between calls is
// what a CUDA-graph decode step sees rather than what the host adds. Errors throw (the tools exit
// on them; a failed replay leaks its graph).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cuda_util.hpp"

namespace tunable::bench {

inline void graph_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
inline void graph_check(const Status& s, const char* what) {
  if (!s.is_ok()) throw std::runtime_error(std::string(what) + ": " + s.to_string());
}

inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Per-call time in us of `calls` launches (`call(i)`, i = 0 .. calls - 1) captured into one graph;
/// median over `reps` timed replays after two warm-up replays.
inline double graph_us(cudaStream_t s, std::size_t calls, const std::function<void(std::size_t)>& call, int reps) {
  cudaGraph_t graph = nullptr;
  graph_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), "begin capture");
  try {
    for (std::size_t i = 0; i < calls; ++i) call(i);
  } catch (...) {
    cudaStreamEndCapture(s, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  graph_check(cudaStreamEndCapture(s, &graph), "end capture");
  cudaGraphExec_t exec = nullptr;
  graph_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  CudaEvent e0, e1;
  graph_check(e0.create(), "event");
  graph_check(e1.create(), "event");
  std::vector<double> t;
  for (int r = -2; r < reps; ++r) {  // two warm-up replays
    graph_check(cudaEventRecord(e0.get(), s), "record");
    graph_check(cudaGraphLaunch(exec, s), "graph launch");
    graph_check(cudaEventRecord(e1.get(), s), "record");
    graph_check(cudaEventSynchronize(e1.get()), "sync");
    float ms = 0;
    graph_check(cudaEventElapsedTime(&ms, e0.get(), e1.get()), "elapsed");
    if (r >= 0) t.push_back(1e3 * ms / static_cast<double>(calls));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return median_of(t);
}

}  // namespace tunable::bench
