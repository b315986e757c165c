// main() of the GPU test binaries. Without a usable CUDA device they skip as a whole with a message
// that says why, and exit 77 so ctest reports "Skipped" rather than "Passed" (CI has no GPU). With
// TUNABLE_REQUIRE_GPU=1 (the GPU machine: lab/device/device_check.sh) the same condition is a failure,
// exit 1: a driver too old for the runtime or a hidden device must not pass as "all skipped".
// A visible device that cannot be used is a failure either way. Tests that skip themselves are
// counted and listed at the end (gpu_main.hpp).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu/gpu_main.hpp"

// A binary's own step before the device check (the interposer's tests re-execute themselves under
// LD_PRELOAD there); most binaries define none.
extern "C" void tunable_gpu_main_prepare(int argc, char** argv) __attribute__((weak));

int main(int argc, char** argv) {
  if (tunable_gpu_main_prepare) tunable_gpu_main_prepare(argc, argv);
  const bool required = tunable::test::gpu_required();
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    const char* why = e == cudaSuccess ? "0 devices" : cudaGetErrorString(e);
    if (required) {
      std::fprintf(stderr,
                   "FAILED: TUNABLE_REQUIRE_GPU=1 and no usable CUDA device: cudaGetDeviceCount says %s "
                   "(error %d)\n",
                   why, static_cast<int>(e));
      return 1;
    }
    std::printf("SKIPPED: GPU tests need a CUDA device; cudaGetDeviceCount says %s "
                "(TUNABLE_REQUIRE_GPU=1 makes this a failure)\n",
                why);
    return 77;
  }
  // A device is listed: it must also take a context (a broken driver install fails here, not in
  // every test with a less clear message).
  cudaError_t ready = cudaSetDevice(0);
  if (ready == cudaSuccess) ready = cudaFree(nullptr);
  if (ready != cudaSuccess) {
    std::fprintf(stderr, "FAILED: %d CUDA device(s) listed, but device 0 cannot be used: %s (error %d)\n", count,
                 cudaGetErrorString(ready), static_cast<int>(ready));
    return 1;
  }
  return tunable::test::run_tests_reporting_skips(argc, argv, required);
}
