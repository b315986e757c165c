// The host state of the skinny GEMM kernels (kernels/gemv) for one context's device, owned by
// CudaGemmResources and freed with it: the device facts the launchers size their grids with, the
// per-kernel occupancy and shared-memory limits (driver queries, read once), and the balanced TMA
// grid's arrival counters of each stream. The kernels take all of it as values and raw pointers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>

#include "cuda/cuda_util.hpp"
#include "kernels/gemv/skinny_device.hpp"

namespace tunable {

class SkinnyState final : public kernels::SkinnyKernelCache {
 public:
  /// State for device `ordinal`; makes no CUDA call (everything is read at first use).
  explicit SkinnyState(int ordinal) : ordinal_(ordinal) {}
  ~SkinnyState() = default;
  SkinnyState(const SkinnyState&) = delete;
  SkinnyState& operator=(const SkinnyState&) = delete;

  int ordinal() const { return ordinal_; }

  /// The device's facts (device_properties(ordinal), the loaded kernels' PTX version, the driver's
  /// tensor-map encoder), read at the first call and kept. Makes no stream operation, so it may run
  /// inside graph capture.
  Status device(kernels::SkinnyDevice* out);

  /// `count` arrival counters of the balanced TMA grid for launches on `stream`, zero between
  /// launches (every launch leaves them at zero). Allocated and zeroed on `stream` at the stream's
  /// first call, which must be outside CUDA graph capture: inside one nothing may allocate, and the
  /// call is refused with kNotSupported. Launches on one stream run in order, so they never share a
  /// set while running; a captured launch keeps its capture stream's set, as the GEMM workspace
  /// keeps its capture stream's buffer. Kept until the context goes.
  Status bal_counters(cudaStream_t stream, std::size_t count, unsigned** out);

  // kernels::SkinnyKernelCache: each fact read once per kernel (or symbol) and kept.
  cudaError_t blocks_per_sm(const void* kernel, int threads, std::size_t smem, int* out) override;
  cudaError_t max_dynamic_smem(const void* kernel, long long* out) override;
  cudaError_t code_flag(const void* symbol, int* out) override;

 private:
  const int ordinal_;
  std::mutex mu_;  ///< guards everything below
  bool device_read_ = false;
  kernels::SkinnyDevice device_;
  std::map<const void*, int> blocks_per_sm_;           ///< per kernel
  std::map<const void*, long long> max_dynamic_;       ///< per kernel
  std::map<const void*, int> code_flags_;              ///< per device symbol
  std::map<cudaStream_t, DeviceBuffer> bal_counters_;  ///< per stream
};

}  // namespace tunable
