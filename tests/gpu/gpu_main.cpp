// main() of the GPU test binaries: without a visible CUDA device they skip as a whole, with a
// message that says why, and exit 77 so ctest reports "Skipped" rather than "Passed".
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("SKIPPED: GPU tests need a CUDA device; cudaGetDeviceCount says %s\n",
                e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
