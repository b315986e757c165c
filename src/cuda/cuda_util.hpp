// The CUDA layer: RAII for CUDA objects, the device facts every layer above reads (properties,
// validators, capture state), and device-side fills and conversions for tuning workloads.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include <string>
#include <utility>
#include <vector>

#include "core/cuda_check.hpp"
#include "tunable/measure.hpp"
#include "tunable/types.hpp"

namespace tunable {

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

// fill_random (tunable/measure.hpp) is defined in cuda_util.cu.
/// Quiet NaN in every element (fp8 e4m3: its NaN encoding 0x7f).
Status fill_nan(void* p, DataType t, std::size_t n, cudaStream_t stream);
/// Copies a (rows x cols, leading dimension ld) matrix of type `t` into a dense double array.
Status to_double(const void* src, DataType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                 double* dst, cudaStream_t stream);
/// Properties of device `ordinal`, read once and kept; all zero (multiProcessorCount 0) when they
/// cannot be read, which is not kept, so a later call reads again.
const cudaDeviceProp& device_properties(int ordinal);

/// Whether `stream` is being captured into a CUDA graph. A failed query counts as capturing: the
/// callers use this to decide whether they may tune, allocate or synchronize, and doing any of
/// those inside a capture would break the caller's graph.
bool stream_capturing(Stream stream);

/// OK when cuda:`ordinal` exists: kNoDevice naming the runtime's reason when no device is usable (a
/// missing driver, a driver older than the runtime), kInvalidArgument for an ordinal out of range.
/// Asked before the first other CUDA call, whose error would say less.
Status usable_device(int ordinal);

/// What invalidates a result tuned on cuda:`ordinal`: CUDA runtime and driver, cuBLAS and cuBLASLt
/// versions, GPU name (as the driver reports it), compute capability and SM count, as (key, value).
/// kNoDevice when no device is visible, kInvalidArgument for an ordinal out of range.
Status cuda_validators(int ordinal, std::vector<std::pair<std::string, std::string>>* out);

}  // namespace tunable
