// RAII for CUDA objects, the event timer of the tuner, and device-side helpers for tuning
// workloads (random fill, NaN poison, comparison against a double reference).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/cuda_check.hpp"
#include "tune/workload.hpp"
#include "tunable/types.hpp"

namespace tunable {
namespace kernels {
struct CompareTotals;
}

/// Device memory; move-only, freed in the destructor.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Allocates `bytes` (>= 1); kCudaError names the size on failure.
  Status allocate(std::size_t bytes);
  void reset() noexcept;
  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  std::size_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  std::size_t n_ = 0;
};

class CudaEvent {
 public:
  CudaEvent() = default;
  ~CudaEvent() {
    if (e_) cudaEventDestroy(e_);
  }
  CudaEvent(CudaEvent&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& o) noexcept {
    if (this != &o) {
      if (e_) cudaEventDestroy(e_);
      e_ = std::exchange(o.e_, nullptr);
    }
    return *this;
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  Status create() {
    TUNABLE_CUDA_CHECK(cudaEventCreate(&e_));
    return Status::ok();
  }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

class CudaStream {
 public:
  CudaStream() = default;
  ~CudaStream() {
    if (s_) cudaStreamDestroy(s_);
  }
  CudaStream(CudaStream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  CudaStream& operator=(CudaStream&&) = delete;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  Status create() {
    TUNABLE_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
    return Status::ok();
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

/// Makes `ordinal` the current device for a scope and gives the caller's back at its end: creating
/// a context's handles and buffers must not move the program to another GPU.
class DeviceGuard {
 public:
  DeviceGuard() = default;
  ~DeviceGuard() {
    if (saved_ >= 0 && saved_ != set_) (void)cudaSetDevice(saved_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  Status set(int ordinal) {
    TUNABLE_CUDA_CHECK(cudaGetDevice(&saved_));
    set_ = saved_;
    if (saved_ != ordinal) {
      TUNABLE_CUDA_CHECK(cudaSetDevice(ordinal));
      set_ = ordinal;
    }
    return Status::ok();
  }
  /// set(d.ordinal) for a CUDA device, nothing for the CPU: a context's calls run on its device
  /// whatever device is current (as TunableOp's run on the tensors' device), the caller's given back.
  Status use(const Device& d) { return d.kind == DeviceKind::kCuda ? set(d.ordinal) : Status::ok(); }

 private:
  int saved_ = -1, set_ = -1;
};

/// The calling thread's stream-capture mode set to relaxed for a scope: tuning allocates and
/// synchronizes its own stream, which global mode forbids while any other stream of the process is
/// being captured (a PyTorch graph capture on another stream would fail the tuning, or be broken by
/// it). Held by the tuning workloads for their lifetime.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() {
    ok_ = cudaThreadExchangeStreamCaptureMode(&mode_) == cudaSuccess;
    if (!ok_) (void)cudaGetLastError();
  }
  ~RelaxedCaptureMode() {
    if (ok_) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  bool ok_ = false;
};

/// kInvalidArgument unless `ordinal` is the current device: a context's kernels launch on the
/// current device, so a call made while another GPU is current would run (or fail) there.
Status require_current_device(int ordinal);

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

/// Uniform random values in [-scale, scale) of type `t` (hash of seed and index; no state).
Status fill_random(void* p, DataType t, std::size_t n, std::uint64_t seed, float scale,
                   cudaStream_t stream);
/// Quiet NaN in every element (fp8 e4m3: its NaN encoding 0x7f).
Status fill_nan(void* p, DataType t, std::size_t n, cudaStream_t stream);
/// Device-to-device copy bandwidth in bytes/s (bytes read + written): the memory roofline the
/// benchmarks state their floors against. Median over `calls` back-to-back 1 GiB copies of random
/// data (EventTimer), after one warm-up copy; needs 2 GiB of free device memory.
Status measure_copy_bandwidth(cudaStream_t stream, double* bytes_per_s, int calls = 16);
/// Copies a (rows x cols, leading dimension ld) matrix of type `t` into a dense double array.
Status to_double(const void* src, DataType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                 double* dst, cudaStream_t stream);
/// The elementwise check of compare_outputs() on the device: got/ref are dense doubles.
Status compare_on_device(const double* got, const double* ref, std::size_t n, const Tolerance& tol,
                         NumericsReport* report, cudaStream_t stream);

/// The tuner's report from the device comparison's totals (kernels/reference/gemm_reference.cuh),
/// ref_rms the reference's root mean square the absolute tolerance was scaled by.
NumericsReport numerics_report(const kernels::CompareTotals& totals, double ref_rms);

/// Properties of device `ordinal`, read once and kept; all zero (multiProcessorCount 0) when they
/// cannot be read, which is not kept, so a later call reads again.
const cudaDeviceProp& device_properties(int ordinal);

}  // namespace tunable
