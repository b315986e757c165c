// Graph timing of the fused-op benchmarks (tunable_fused_bench, tunable_norm_chain): the per-call
// time of many launches captured into one CUDA graph, so launch overhead between calls is what a
// CUDA-graph decode step sees rather than what the host adds. The capture and replays are the
// library's (CallTimer::time_graph: the tuner's graph tie-break times the same way); this adds the
// benches' contract: calls that throw, errors thrown, the median in us.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tunable/measure.hpp"

namespace tunable::bench {

/// Per-call time in us of `calls` launches (`call(i)`, i = 0 .. calls - 1) captured into one graph:
/// the median of `reps` timed replays (after one untimed replay). An exception from `call` ends the
/// capture and is thrown again; a failed capture or replay throws std::runtime_error.
inline double graph_us(cudaStream_t s, std::size_t calls, const std::function<void(std::size_t)>& call, int reps) {
  std::string thrown;
  CallTimer timer(s);
  std::vector<double> ms;
  const Status st = timer.time_graph(
      static_cast<int>(calls),
      [&](int i) {
        try {
          call(static_cast<std::size_t>(i));
          return Status::ok();
        } catch (const std::exception& e) {  // the capture must end before anything is thrown
          thrown = e.what();
          return Status(StatusCode::kInternal, thrown);
        }
      },
      reps, &ms);
  if (!thrown.empty()) throw std::runtime_error(thrown);
  if (!st.is_ok()) throw std::runtime_error("graph timing: " + st.to_string());
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  if (n == 0) throw std::runtime_error("graph timing: no replays");
  return 1e3 * (n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]));
}

}  // namespace tunable::bench
