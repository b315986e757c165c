// The instruments the tuner measures with, for programs that must time and fill inputs the same
// way (the benchmarks, a user's own comparison): the device's facts, its copy bandwidth (the
// memory roofline), seeded random fills, and the tuner's back-to-back and graph timer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tunable/status.hpp"
#include "tunable/types.hpp"

namespace tunable {

struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  int driver_version = 0;   ///< cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;  ///< cudaRuntimeGetVersion
};

/// Facts of cuda:`ordinal`; kNoDevice / kInvalidArgument when there is no such device.
Status device_info(int ordinal, DeviceInfo* out);

/// Device-to-device copy bandwidth of the current device in bytes/s (bytes read + written): the
/// memory roofline floors are stated against. Median over `calls` back-to-back 1 GiB copies of
/// random data after one warm-up copy; needs 2 GiB of free device memory.
Status measure_copy_bandwidth(Stream stream, double* bytes_per_s, int calls = 16);

/// n uniform random values in [-scale, scale) of type `t` at device pointer `p` (a hash of seed and
/// index: the same seed gives the same data on every run).
Status fill_random(void* p, DataType t, std::size_t n, std::uint64_t seed, float scale, Stream stream);

/// Bytes of host memory this process may still allocate, as far as it can tell: the least of the
/// system's MemAvailable, its cgroup's memory.max headroom and its address-space and data limits'
/// headroom. The tuner estimates its buffers against it before allocating any.
std::size_t host_memory_available();
/// "1.5 GiB", "12.0 MiB", "512 B": sizes as the library's messages print them.
std::string format_bytes(std::size_t bytes);

/// The tuner's timer on one stream. Back-to-back: a sleep kernel before every kCallsPerPrime calls
/// holds the GPU while the host queues them, and an event pair brackets every `group` calls, so small
/// kernels are timed as the GPU runs them rather than at the host's launch rate.
class CallTimer {
 public:
  static constexpr int kCallsPerPrime = 32;
  static constexpr int kGroup = 8;
  /// prime_ns_per_call: how long the GPU is held per queued call (more than one call's host cost);
  /// group: calls per event pair, a divisor of kCallsPerPrime (kGroup otherwise).
  explicit CallTimer(Stream stream, int prime_ns_per_call = 20000, int group = kGroup);
  ~CallTimer();
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

  /// Calls fn(i) for i in [0, n) back to back; appends each call's time in ms (its group's mean).
  Status time_calls(int n, const std::function<Status(int)>& fn, std::vector<double>* ms);
  /// Captures fn(0..n-1) into a CUDA graph, replays it once untimed and then `replays` times
  /// between events; appends each replay's time per call in ms.
  Status time_graph(int n, const std::function<Status(int)>& fn, int replays, std::vector<double>* ms);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunable
