// The tuner's CUDA instruments: the event timer every GPU workload times its candidates with, the
// numerics check on the device, and the copy bandwidth the benchmarks state their floors against.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "cuda/cuda_util.hpp"
#include "tunable/measure.hpp"
#include "tune/workload.hpp"

namespace tunable {
namespace kernels {
struct CompareTotals;
}

/// Times back-to-back calls on one stream: an event pair around every group of event_group(n)
/// calls (the end event before the next priming sleep), and no synchronization between them. Every kCallsPerPrime calls a sleep
/// kernel first holds the GPU while the host queues them, so small kernels are timed as the GPU
/// runs them (as in a CUDA graph), not at the host's launch rate.
class EventTimer final : public Timer {
 public:
  static constexpr int kCallsPerPrime = 32;  // a multiple of kGroup
  static constexpr int kGroup = 8;
  /// Calls one event pair brackets when n calls are timed: up to `group` (the timer's; the tuner's
  /// is kGroup). An event between two calls costs the GPU about a tiny kernel's time and stops a
  /// PDL kernel from overlapping its predecessor, so every chunk the tuner compares (the 3-call
  /// first probe included) must be grouped alike; per-call events made a 3 us kernel's probe read
  /// 5.5 us and pruned it.
  static constexpr int event_group(int n, int group = kGroup) { return n < 1 ? 1 : n < group ? n : group; }
  /// prime_ns_per_call: how long the GPU is held per queued call; it must exceed the host's cost
  /// of one launch (20 us covers a direct library call; callers timing through more layers pass more).
  /// group: calls per event pair, a divisor of kCallsPerPrime (kGroup for the tuner; kCallsPerPrime
  /// times whole primed runs with no event between calls, as a stream of launches runs); any other
  /// value means kGroup.
  explicit EventTimer(cudaStream_t stream, int prime_ns_per_call = 20000, int group = kGroup)
      : stream_(stream), prime_ns_per_call_(prime_ns_per_call),
        group_(group >= 1 && kCallsPerPrime % group == 0 ? group : kGroup) {}
  Status time_calls(int n, const std::function<Status(int)>& fn,
                    std::vector<double>* times) override;
  /// Captures the n calls on the timer's stream (thread-local capture mode), replays the graph once
  /// untimed and then `replays` times between events.
  Status time_graph(int n, const std::function<Status(int)>& fn, int replays,
                    std::vector<double>* times) override;

 private:
  Status ensure_events(int count);

  cudaStream_t stream_;
  int prime_ns_per_call_;
  int group_;
  std::vector<CudaEvent> events_;
};


// measure_copy_bandwidth (tunable/measure.hpp) is defined with the timer, in cuda_timing.cu.

/// How many input copies a GPU tuning workload may allocate, decided before it allocates any:
/// `per_copy` bytes per rotated copy, `fixed` bytes allocated once (references, the check's
/// buffers), `target_bytes` the rotation wanted. Copies and fixed bytes together take at most half
/// of the device's free memory (the host program keeps the rest; everything is freed when tuning
/// ends); fewer copies when the target does not fit, and kNotSupported naming the sizes when one
/// copy and the fixed bytes do not (the call then runs Default and the miss is recorded).
/// `per_copy == SIZE_MAX` or `fixed == SIZE_MAX` stands for a size that overflowed while derived.
Status device_tuning_copies(int ordinal, std::size_t per_copy, std::size_t fixed, std::size_t target_bytes,
                            std::size_t max_copies, std::size_t* copies);

/// Test seam: the free device memory device_tuning_copies() sees (0: ask the driver again).
void set_device_memory_free_for_testing(std::size_t bytes);

/// The elementwise check of compare_outputs() on the device: got/ref are dense doubles.
Status compare_on_device(const double* got, const double* ref, std::size_t n, const Tolerance& tol,
                         NumericsReport* report, cudaStream_t stream);

/// The tuner's report from the device comparison's totals (kernels/reference/gemm_reference.cuh),
/// ref_rms the reference's root mean square the absolute tolerance was scaled by.
NumericsReport numerics_report(const kernels::CompareTotals& totals, double ref_rms);

}  // namespace tunable
