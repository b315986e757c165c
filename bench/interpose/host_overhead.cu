// Host cost of a cuBLAS GEMM call under the interposer against the real cuBLAS call, on the same
// problem: the calls are queued behind a kernel that holds the GPU, so what is timed is the host's
// work per call (mapping, lookup, launch), not the GPU's. Run under `tunable run --tune -- ...`:
//   served:    a decode problem the interposer serves with its tuned solution
//   forwarded: a call it does not serve (fp16 inputs into an fp32 C), handed to cuBLAS
//   real:      the same calls on cuBLAS directly, past the shim
// Prints one line per path: median microseconds per call over 15 batches of 100 calls each.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

namespace {

__global__ void hold(long long ns) {
  const long long start = clock64();
  while (clock64() - start < ns) {
  }
}

using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                    const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

// Median host microseconds per call of `a` and of `b`, batches of the two interleaved so that any
// drift (clocks, queue state) falls on both alike.
std::pair<double, double> per_call_us(cudaStream_t s, const std::function<cublasStatus_t()>& a,
                                      const std::function<cublasStatus_t()>& b) {
  constexpr int kCalls = 100;
  std::vector<double> ta, tb;
  for (int batch = 0; batch < 30; ++batch) {
    const auto& call = batch % 2 ? b : a;
    hold<<<1, 1, 0, s>>>(200000000);  // ~0.1 s at 2 GHz: the queue, not the GPU, is what is timed
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i)
      if (call() != CUBLAS_STATUS_SUCCESS) return {-1, -1};
    const auto t1 = std::chrono::steady_clock::now();
    cudaStreamSynchronize(s);
    (batch % 2 ? tb : ta).push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls);
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

}  // namespace

int main() {
  void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcublas.so.12", RTLD_NOW | RTLD_NOLOAD);
  GemmExFn real = lib ? reinterpret_cast<GemmExFn>(dlsym(lib, "cublasGemmEx")) : nullptr;
  if (!real) {
    std::fprintf(stderr, "the real cublasGemmEx was not found\n");
    return 1;
  }
  cublasHandle_t h;
  cudaStream_t s;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cudaStreamCreate(&s) != cudaSuccess) return 1;
  cublasSetStream(h, s);
  const int m = 4096, n = 1, k = 4096;
  void *a, *b, *c;
  cudaMalloc(&a, size_t(m) * k * 2);
  cudaMalloc(&b, size_t(k) * 8 * 2);
  cudaMalloc(&c, size_t(m) * 8 * 4);
  cudaMemset(a, 0, size_t(m) * k * 2);
  cudaMemset(b, 0, size_t(k) * 8 * 2);
  const float alpha = 1, beta = 0;
  auto bf16 = [&](GemmExFn fn) {
    return [=] {
      return fn(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a, CUDA_R_16BF, k, b, CUDA_R_16BF, k, &beta, c,
                CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
  };
  auto mixed = [&](GemmExFn fn) {
    return [=] {
      return fn(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a, CUDA_R_16F, k, b, CUDA_R_16F, k, &beta, c,
                CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
  };
  // The shim's definitions come first in the lookup order.
  GemmExFn shim = reinterpret_cast<GemmExFn>(dlsym(RTLD_DEFAULT, "cublasGemmEx"));
  bf16(shim)();  // tunes it (tune mode) before anything is timed
  mixed(shim)();
  cudaDeviceSynchronize();
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(shim), &info);
  std::printf("cublasGemmEx resolves into %s\n", info.dli_fname ? info.dli_fname : "?");
  const auto [served, real_bf16] = per_call_us(s, bf16(shim), bf16(real));
  const auto [fwd, real_mixed] = per_call_us(s, mixed(shim), mixed(real));
  std::printf("served    bf16 tn 4096x1x4096: %.2f us per call (real cuBLAS %.2f us): %+.2f us\n", served, real_bf16,
              served - real_bf16);
  std::printf("forwarded fp16->fp32 4096x1x4096: %.2f us per call (real cuBLAS %.2f us): %+.2f us\n", fwd, real_mixed,
              fwd - real_mixed);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
