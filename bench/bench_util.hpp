// What the benchmarks share beyond the public API: device memory that frees itself, and the
// median that every table reports.
#pragma once

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tunable::bench {

/// cudaMalloc'd bytes, freed in the destructor; allocation failure throws naming the size.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes) { allocate(bytes); }
  ~DeviceMemory() { reset(); }
  DeviceMemory(DeviceMemory&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceMemory& operator=(DeviceMemory&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void allocate(std::size_t bytes) {
    reset();
    const cudaError_t e = cudaMalloc(&p_, std::max<std::size_t>(bytes, 1));
    if (e != cudaSuccess) {
      p_ = nullptr;
      throw std::runtime_error(fmt::format("cudaMalloc of {} bytes: {}", bytes, cudaGetErrorString(e)));
    }
    n_ = bytes;
  }
  void reset() noexcept {
    if (p_) (void)cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  std::size_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  std::size_t n_ = 0;
};

/// A non-blocking stream, destroyed with the object; creation failure throws.
class OwnedStream {
 public:
  OwnedStream() {
    const cudaError_t e = cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking);
    if (e != cudaSuccess) throw std::runtime_error(fmt::format("cudaStreamCreate: {}", cudaGetErrorString(e)));
  }
  ~OwnedStream() { (void)cudaStreamDestroy(s_); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

/// Median (the mean of the middle two for an even count, as the tuner takes it); 0 for no samples.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return 0.5 * (*std::max_element(v.begin(), v.begin() + mid) + hi);
}

}  // namespace tunable::bench
