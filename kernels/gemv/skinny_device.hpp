// What the skinny GEMM launchers are told besides the problem: the device's facts and the caller's
// cache of per-kernel facts. The kernels keep no host state; the caller (the library's per-context
// resources, src/gemm/cuda/skinny_state.hpp) reads these once and passes them to every launch.
// Plain C++: included by the kernels and by host-only sources alike.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace tunable::kernels {

/// Facts of the launch's device, its loaded kernel image and its driver, which the launchers size
/// grids and gate kernels with.
struct SkinnyDevice {
  int ordinal = -1;  ///< CUDA device ordinal
  int sms = 0;       ///< multiprocessor count
  int cc = 0;        ///< compute capability, major * 10 + minor
  /// Virtual architecture the loaded kernels were compiled for (90 for sm_90a).
  int ptx_version = 0;
  int smem_per_sm = 0;    ///< shared memory of one SM, bytes
  int smem_optin = 0;     ///< largest dynamic shared memory one block may opt in to, bytes
  int smem_reserved = 0;  ///< shared memory the system reserves per resident block, bytes
  /// cuTensorMapEncodeTiled of the driver the runtime loaded; null when the driver lacks it (the
  /// TMA-fed kernels then refuse with cudaErrorNotSupported).
  PFN_cuTensorMapEncodeTiled_v12000 encode_tensor_map = nullptr;
};

/// Facts of one kernel on the launch's device that cost driver calls to read and never change, so
/// the caller reads each once and keeps it (kernels are named by their host stub,
/// reinterpret_cast<const void*>(kernel)). Implementations are thread-safe.
class SkinnyKernelCache {
 public:
  /// Resident blocks per SM of `kernel` at `threads` threads and `smem` bytes of dynamic shared
  /// memory (every caller passes the same threads and smem for one kernel). Raises the kernel's
  /// dynamic shared-memory limit to `smem` first when that exceeds the default 48 KiB.
  virtual cudaError_t blocks_per_sm(const void* kernel, int threads, std::size_t smem,
                                    int* out) = 0;
  /// The most dynamic shared memory `kernel` may be launched with: the device's opt-in maximum less
  /// the kernel's static shared memory. The kernel's limit is raised to it the first time.
  virtual cudaError_t max_dynamic_smem(const void* kernel, long long* out) = 0;
  /// The value of the int `__device__` variable `symbol` of the loaded code (its host shadow's
  /// address): a fact of how the code was built (skinny_wg::g_wgmma_built).
  virtual cudaError_t code_flag(const void* symbol, int* out) = 0;

 protected:
  ~SkinnyKernelCache() = default;
};

}  // namespace tunable::kernels
