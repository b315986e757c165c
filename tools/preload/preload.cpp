// libtunable_preload.so: put before a program with LD_PRELOAD (`tunable run -- ...` does), it
// defines cuBLAS's GEMM entry points, so the program's calls come here first. Each call goes to
// libtunable.so, which serves it with a tuned solution on the handle's stream or hands it back;
// handed back, it goes to the real cuBLAS function unchanged.
//
// The shim links neither cuBLAS nor the CUDA runtime: the program's own copies must be the only
// ones in the process. It opens libtunable.so (next to itself, or TUNABLE_LIBRARY) at the first
// GEMM, when the program has loaded its cuBLAS, whose soname libtunable.so's dependency then
// matches. libtunable.so's own cuBLAS calls land here too (symbol interposition applies to every
// library): a per-thread depth sends them straight to cuBLAS.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "interpose/preload_abi.h"

namespace {

// Calls into libtunable.so in progress on this thread (initial-exec: no lazy TLS allocation, which
// could itself call malloc inside a cuBLAS call).
__attribute__((tls_model("initial-exec"))) thread_local int t_depth = 0;

void warn(const char* what, const char* detail) {
  std::fprintf(stderr, "tunable: preload: %s%s%s; GEMMs go to cuBLAS unchanged\n", what, detail ? ": " : "",
               detail ? detail : "");
}

// The real cuBLAS function: the next definition after this library, or, where cuBLAS was opened
// privately, the loaded libcublas itself.
void* real_symbol(const char* name) {
  if (void* p = dlsym(RTLD_NEXT, name)) return p;
  for (const char* lib : {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "libcublasLt.so.13",
                          "libcublasLt.so.12", "libcublasLt.so"}) {
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD)) {
      void* p = dlsym(h, name);
      dlclose(h);  // RTLD_NOLOAD took a reference on a library that stays loaded
      if (p) return p;
    }
  }
  std::fprintf(stderr, "tunable: preload: the real %s was not found\n", name);
  return nullptr;
}

template <class Fn>
Fn real(const char* name) {
  return reinterpret_cast<Fn>(real_symbol(name));
}

bool enabled_by_environment() {
  const char* v = std::getenv("TUNABLE_ENABLED");
  return v != nullptr && std::strcmp(v, "0") != 0 && std::strcmp(v, "") != 0 && strcasecmp(v, "false") != 0 &&
         strcasecmp(v, "off") != 0;
}

std::string library_path() {
  if (const char* p = std::getenv("TUNABLE_LIBRARY")) return p;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_path), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    const std::size_t slash = self.find_last_of('/');
    if (slash != std::string::npos) return self.substr(0, slash + 1) + "libtunable.so";
  }
  return "libtunable.so";
}

// libtunable.so's entries once loaded (the Lt entry is stored before the GEMM one, which publishes both). Loading is tried once at the first GEMM when TUNABLE_ENABLED is
// set (a failure is said once); a program that starts disabled may attach later through
// tunable_preload_attach (the Python package's tunable.enable()).
std::atomic<tunable_preload_gemm_fn> g_fn{nullptr};
std::atomic<tunable_preload_lt_fn> g_lt_fn{nullptr};
std::atomic<bool> g_tried{false};
std::mutex g_load_mu;

tunable_preload_gemm_fn load_library(bool force) {
  std::lock_guard<std::mutex> lock(g_load_mu);
  if (auto f = g_fn.load(std::memory_order_acquire)) return f;
  if (!force && (g_tried.load() || !enabled_by_environment())) {
    g_tried = true;
    return nullptr;
  }
  g_tried = true;
  ++t_depth;
  const std::string path = library_path();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    warn("cannot load libtunable", dlerror());
  } else {
    auto abi = reinterpret_cast<tunable_preload_abi_fn>(dlsym(h, "tunable_preload_abi"));
    auto gemm = reinterpret_cast<tunable_preload_gemm_fn>(dlsym(h, "tunable_preload_gemm"));
    auto lt = reinterpret_cast<tunable_preload_lt_fn>(dlsym(h, "tunable_preload_lt"));
    if (abi == nullptr || gemm == nullptr || lt == nullptr || abi() != TUNABLE_PRELOAD_ABI) {
      warn("libtunable does not match this preload library", path.c_str());
    } else {
      g_lt_fn.store(lt, std::memory_order_release);
      g_fn.store(gemm, std::memory_order_release);
    }
  }
  --t_depth;
  return g_fn.load(std::memory_order_acquire);
}

tunable_preload_gemm_fn library() {
  if (auto f = g_fn.load(std::memory_order_acquire)) return f;
  if (g_tried.load(std::memory_order_relaxed)) return nullptr;
  return load_library(false);
}

// The workspace the program set on each handle (PyTorch sets one before every GEMM). cuBLAS drops a
// handle's workspace when its stream changes, and a destroyed handle's address may come back for
// another: both drop the record here too, so a served call never writes into a workspace that is
// gone or belongs to another stream (without a record, libtunable uses its own). The last record per
// thread answers without a lock while no handle was destroyed, re-streamed or given another workspace
// since (a global serial).
struct Workspace {
  void* handle = nullptr;
  void* ptr = nullptr;
  size_t bytes = 0;
  unsigned long serial = 0;
};
__attribute__((tls_model("initial-exec"))) thread_local Workspace t_last_ws;
std::atomic<unsigned long> g_ws_serial{1};
std::mutex g_ws_mu;
std::unordered_map<void*, Workspace>* g_ws = new std::unordered_map<void*, Workspace>();  // never freed: used at exit

Workspace workspace_of(void* handle) {
  if (t_last_ws.handle == handle && t_last_ws.serial == g_ws_serial.load(std::memory_order_acquire)) return t_last_ws;
  std::lock_guard<std::mutex> lock(g_ws_mu);
  auto it = g_ws->find(handle);
  return it == g_ws->end() ? Workspace{} : it->second;
}

void forget_workspace(void* handle) {
  std::lock_guard<std::mutex> lock(g_ws_mu);
  g_ws->erase(handle);
  g_ws_serial.fetch_add(1, std::memory_order_acq_rel);  // every thread's last record is checked again
}

// 1 when libtunable ran the call.
int serve(TunablePreloadGemm* g) {
  if (t_depth != 0) return 0;
  tunable_preload_gemm_fn f = library();
  if (f == nullptr) return 0;
  const Workspace ws = workspace_of(g->handle);
  g->workspace = ws.ptr;
  g->workspace_bytes = ws.bytes;
  ++t_depth;
  const int r = f(g);
  --t_depth;
  return r;
}

// The real function, with this thread marked as inside cuBLAS: cuBLAS calls cuBLASLt through its
// exported entry points, so without the mark a forwarded GEMM's inner cublasLtMatmul would come back
// here and be mapped, counted and perhaps served a second time.
template <class Fn, class... Args>
cublasStatus_t forward(Fn fn, Args... args) {
  ++t_depth;
  const cublasStatus_t s = fn(args...);
  --t_depth;
  return s;
}

TunablePreloadGemm call_of(int entry, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                           int64_t n, int64_t k, const void* alpha, const void* a, int64_t lda, const void* b,
                           int64_t ldb, const void* beta, void* c, int64_t ldc) {
  TunablePreloadGemm g{};
  g.entry = entry;
  g.handle = h;
  g.transa = ta, g.transb = tb;
  g.m = m, g.n = n, g.k = k;
  g.alpha = alpha, g.beta = beta;
  g.a = a, g.b = b, g.c = c;
  g.lda = lda, g.ldb = ldb, g.ldc = ldc;
  g.compute_type = -1;
  g.batch = 1;
  return g;
}

/// The batch of a strided-batched entry point.
TunablePreloadGemm batched(TunablePreloadGemm g, int batch, long long stride_a, long long stride_b,
                           long long stride_c) {
  g.batch = batch;
  g.stride_a = stride_a, g.stride_b = stride_b, g.stride_c = stride_c;
  return g;
}

}  // namespace

extern "C" {

// For the Python package: which libtunable.so this shim serves GEMMs with (it loads the same file,
// so that one library instance, one interposer and one results-file writer serve the process).
__attribute__((visibility("default"))) const char* tunable_preload_library(void) {
  static const std::string path = library_path();
  return path.c_str();
}

// Loads libtunable.so now, whatever TUNABLE_ENABLED says: 1 when GEMMs can be served from now on.
__attribute__((visibility("default"))) int tunable_preload_attach(void) {
  return load_library(true) != nullptr ? 1 : 0;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  static const auto fn = real<decltype(&cublasSetWorkspace_v2)>("cublasSetWorkspace_v2");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t s = fn(handle, workspace, bytes);
  if (s == CUBLAS_STATUS_SUCCESS && t_depth == 0) {
    std::lock_guard<std::mutex> lock(g_ws_mu);
    // A new serial: another thread's last record of this handle names the workspace it had before,
    // which its owner may free or hand to another stream once this call returns.
    const Workspace w{handle, workspace, bytes, g_ws_serial.fetch_add(1, std::memory_order_acq_rel) + 1};
    (*g_ws)[handle] = w;
    t_last_ws = w;
  }
  return s;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  static const auto fn = real<decltype(&cublasSetStream_v2)>("cublasSetStream_v2");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (t_depth == 0) forget_workspace(handle);  // cuBLAS resets the handle's workspace on a new stream
  return forward(fn, handle, stream);
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  static const auto fn = real<decltype(&cublasDestroy_v2)>("cublasDestroy_v2");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (t_depth == 0) forget_workspace(handle);
  return forward(fn, handle);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t light, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  static const auto fn = real<decltype(&cublasLtMatmul)>("cublasLtMatmul");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  // libtunable's own cuBLASLt calls (t_depth) go straight through.
  if (t_depth == 0 && library() != nullptr) {
    TunablePreloadLt l{light, desc,  alpha, A,    Adesc, B,         Bdesc,           beta,
                       C,     Cdesc, D,     Ddesc, algo,  workspace, workspace_bytes, stream};
    ++t_depth;
    const int served = g_lt_fn.load(std::memory_order_acquire)(&l);
    --t_depth;
    if (served) return CUBLAS_STATUS_SUCCESS;
  }
  return forward(fn, light, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspace_bytes,
            stream);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  static const auto fn = real<Fn>("cublasGemmEx");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (t_depth == 0) {
    TunablePreloadGemm g =
        call_of(TUNABLE_ENTRY_GEMM_EX, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    g.a_type = Atype, g.b_type = Btype, g.c_type = Ctype;
    g.compute_type = computeType;
    if (serve(&g)) return CUBLAS_STATUS_SUCCESS;
  }
  return forward(fn, handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
            algo);
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  static const auto fn = real<decltype(&cublasSgemm_v2)>("cublasSgemm_v2");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (t_depth == 0) {
    TunablePreloadGemm g =
        call_of(TUNABLE_ENTRY_SGEMM, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    if (serve(&g)) return CUBLAS_STATUS_SUCCESS;
  }
  return forward(fn, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const __half* alpha, const __half* A, int lda, const __half* B, int ldb,
                           const __half* beta, __half* C, int ldc) {
  static const auto fn = real<decltype(&cublasHgemm)>("cublasHgemm");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (t_depth == 0) {
    TunablePreloadGemm g =
        call_of(TUNABLE_ENTRY_HGEMM, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    if (serve(&g)) return CUBLAS_STATUS_SUCCESS;
  }
  return forward(fn, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                const void*, cudaDataType, int, long long int, const void*, cudaDataType, int,
                                long long int, const void*, void*, cudaDataType, int, long long int, int,
                                cublasComputeType_t, cublasGemmAlgo_t);
  static const auto fn = real<Fn>("cublasGemmStridedBatchedEx");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (t_depth == 0) {
    TunablePreloadGemm g = batched(call_of(TUNABLE_ENTRY_GEMM_STRIDED_BATCHED_EX, handle, transa, transb, m, n, k,
                                           alpha, A, lda, B, ldb, beta, C, ldc),
                                   batchCount, strideA, strideB, strideC);
    g.a_type = Atype, g.b_type = Btype, g.c_type = Ctype;
    g.compute_type = computeType;
    if (serve(&g)) return CUBLAS_STATUS_SUCCESS;
  }
  return forward(fn, handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype,
            ldc, strideC, batchCount, computeType, algo);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb, long long int strideB,
                                         const float* beta, float* C, int ldc, long long int strideC,
                                         int batchCount) {
  static const auto fn = real<decltype(&cublasSgemmStridedBatched)>("cublasSgemmStridedBatched");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (t_depth == 0) {
    TunablePreloadGemm g = batched(call_of(TUNABLE_ENTRY_SGEMM_STRIDED_BATCHED, handle, transa, transb, m, n, k, alpha,
                                           A, lda, B, ldb, beta, C, ldc),
                                   batchCount, strideA, strideB, strideC);
    if (serve(&g)) return CUBLAS_STATUS_SUCCESS;
  }
  return forward(fn, handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
            batchCount);
}

cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const __half* alpha, const __half* A, int lda,
                                         long long int strideA, const __half* B, int ldb, long long int strideB,
                                         const __half* beta, __half* C, int ldc, long long int strideC,
                                         int batchCount) {
  static const auto fn = real<decltype(&cublasHgemmStridedBatched)>("cublasHgemmStridedBatched");
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (t_depth == 0) {
    TunablePreloadGemm g = batched(call_of(TUNABLE_ENTRY_HGEMM_STRIDED_BATCHED, handle, transa, transb, m, n, k, alpha,
                                           A, lda, B, ldb, beta, C, ldc),
                                   batchCount, strideA, strideB, strideC);
    if (serve(&g)) return CUBLAS_STATUS_SUCCESS;
  }
  return forward(fn, handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
            batchCount);
}

}  // extern "C"
