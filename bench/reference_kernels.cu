// The launch-overhead references of the fused-op benchmark: a kernel that does nothing, launched
// plainly and as the fused ops launch theirs (programmatic dependent launch where supported).
#include <cuda_runtime.h>

#include "kernels/common/device_utils.cuh"

namespace tunable::bench {

__global__ void kernel_empty() {}

__global__ void kernel_empty_pdl() {
  kernels::pdl_prologue([] {});
}

cudaError_t launch_empty_kernel(cudaStream_t stream, bool pdl) {
  if (pdl) return kernels::launch_kernel(kernel_empty_pdl, dim3(1), dim3(32), 0, stream);
  kernel_empty<<<1, 32, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace tunable::bench
