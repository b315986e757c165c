// A second process that keeps the GPU busy while a GPU suite runs beside it (tests/load/under_load.sh):
//   tunable_gpu_load compute --ready FILE [--device N]
//   tunable_gpu_load memory  --ready FILE [--leave-mib M] [--device N]
// compute: 512 x 512 fp32 products through cuBLAS in a loop, the load under which the engine once
// returned wrong tokens: the GPU time-slices between this process and the suite's, clocks stay up.
// memory: holds all of the device's free memory but M MiB (default 12288) and sits idle, so the
// suite sees a nearly full device.
// FILE is written once the load runs; the process runs until SIGTERM or SIGINT. Exit 77: no usable
// GPU (the caller skips), 1: the load could not be set up.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

int fail(const char* what, const char* why) {
  std::fprintf(stderr, "tunable_gpu_load: %s: %s\n", what, why);
  return 1;
}

bool write_ready(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs(text.c_str(), f) >= 0;
  return std::fclose(f) == 0 && ok;
}

int compute(const std::string& ready) {
  constexpr int n = 512;
  float *a = nullptr, *c = nullptr;
  if (cudaMalloc(&a, n * n * sizeof(float)) != cudaSuccess || cudaMalloc(&c, n * n * sizeof(float)) != cudaSuccess)
    return fail("compute", "cudaMalloc failed");
  // Values in [-1, 1) so that the products stay finite however long the loop runs (c = a a).
  std::vector<float> h(n * n);
  unsigned s = 12345;
  for (float& x : h) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.f;
  }
  if (cudaMemcpy(a, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
    return fail("compute", "upload failed");
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return fail("compute", "cublasCreate failed");
  const float one = 1.f, zero = 0.f;
  auto batch = [&](int k) {
    for (int i = 0; i < k; ++i)
      if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, a, n, &zero, c, n) != CUBLAS_STATUS_SUCCESS)
        return false;
    // A bounded queue: a steady stream of work, never a backlog that outlives the process.
    return cudaDeviceSynchronize() == cudaSuccess;
  };
  if (!batch(4)) return fail("compute", "the first products failed");
  if (!write_ready(ready, "compute: 512x512 fp32 products in a loop\n")) return fail("compute", "cannot write the ready file");
  long long products = 0;
  while (!g_stop) {
    if (!batch(64)) return fail("compute", "a product failed");
    products += 64;
  }
  std::fprintf(stderr, "tunable_gpu_load: %lld products\n", products);
  cublasDestroy(handle);
  return 0;
}

int memory(const std::string& ready, std::size_t leave) {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return fail("memory", "cudaMemGetInfo failed");
  std::vector<void*> blocks;
  std::size_t held = 0;
  // 256 MiB pieces, each touched: the suite under test must meet memory that is really taken.
  const std::size_t piece = 256u << 20;
  while (free > leave + piece) {
    void* p = nullptr;
    if (cudaMalloc(&p, piece) != cudaSuccess) {
      (void)cudaGetLastError();
      break;
    }
    if (cudaMemset(p, 0x5a, piece) != cudaSuccess) return fail("memory", "cudaMemset failed");
    blocks.push_back(p);
    held += piece;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return fail("memory", "cudaMemGetInfo failed");
  }
  char text[200];
  std::snprintf(text, sizeof text, "memory: holding %.1f GiB, %.1f GiB of %.1f free\n", held / 1073741824.0,
                free / 1073741824.0, total / 1073741824.0);
  if (!write_ready(ready, text)) return fail("memory", "cannot write the ready file");
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (void* p : blocks) cudaFree(p);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fail("usage", "tunable_gpu_load compute|memory --ready FILE [--leave-mib M] [--device N]");
  const std::string kind = argv[1];
  std::string ready;
  long long leave_mib = 12288;
  int device = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--ready") ready = argv[i + 1];
    else if (k == "--leave-mib") leave_mib = std::atoll(argv[i + 1]);
    else if (k == "--device") device = std::atoi(argv[i + 1]);
    else return fail("usage", ("unknown option " + k).c_str());
  }
  if (ready.empty() || (kind != "compute" && kind != "memory") || leave_mib < 0)
    return fail("usage", "tunable_gpu_load compute|memory --ready FILE [--leave-mib M] [--device N]");
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= device || cudaSetDevice(device) != cudaSuccess ||
      cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "tunable_gpu_load: no usable GPU %d\n", device);
    return 77;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  return kind == "compute" ? compute(ready) : memory(ready, static_cast<std::size_t>(leave_mib) << 20);
}
