/* The C interface between the cuBLAS preload shim (tools/preload) and libtunable.so.
 *
 * The shim is loaded with LD_PRELOAD before the program and its cuBLAS; it must not pull in cuBLAS
 * or the CUDA runtime itself (the program's own copies must be the only ones), so it opens
 * libtunable.so at the first GEMM, by which time the program has loaded its cuBLAS, and calls it
 * through these functions. Plain C types only: the shim and the library may come from different
 * compilers. Bump TUNABLE_PRELOAD_ABI on any change; the shim refuses a library of another version.
 */
#ifndef TUNABLE_INTERPOSE_PRELOAD_ABI_H
#define TUNABLE_INTERPOSE_PRELOAD_ABI_H

#include <stddef.h>
#include <stdint.h>

#define TUNABLE_PRELOAD_ABI 2

#ifdef __cplusplus
extern "C" {
#endif

/* Which entry point a call came through (the handle's state is read by the library). */
enum TunablePreloadEntry {
  TUNABLE_ENTRY_GEMM_EX = 0,
  TUNABLE_ENTRY_SGEMM = 1,
  TUNABLE_ENTRY_HGEMM = 2,
  TUNABLE_ENTRY_GEMM_STRIDED_BATCHED_EX = 3,
  TUNABLE_ENTRY_SGEMM_STRIDED_BATCHED = 4,
  TUNABLE_ENTRY_HGEMM_STRIDED_BATCHED = 5,
  TUNABLE_ENTRY_LT_MATMUL = 6,
  TUNABLE_ENTRY_COUNT = 7
};

/* One cuBLAS GEMM call, its enums as ints (cublasOperation_t, cudaDataType_t, cublasComputeType_t). */
struct TunablePreloadGemm {
  int entry;
  void* handle; /* cublasHandle_t */
  int transa, transb;
  int64_t m, n, k;
  const void* alpha;
  const void* a;
  int a_type;
  int64_t lda;
  const void* b;
  int b_type;
  int64_t ldb;
  const void* beta;
  void* c;
  int c_type;
  int64_t ldc;
  int compute_type; /* -1: the entry point's own (Sgemm: 32F and the math mode; Hgemm: 16F) */
  int64_t batch;    /* strided entries only */
  int64_t stride_a, stride_b, stride_c;
  void* workspace; /* what the program last set on the handle (cublasSetWorkspace), or NULL */
  size_t workspace_bytes;
};

/* One cublasLtMatmul call as it came (the descriptors are read by the library, which links
 * cuBLASLt; the shim does not). */
struct TunablePreloadLt {
  void* handle;       /* cublasLtHandle_t */
  void* desc;         /* cublasLtMatmulDesc_t */
  const void* alpha;
  const void* a;
  void* a_layout;     /* cublasLtMatrixLayout_t */
  const void* b;
  void* b_layout;
  const void* beta;
  const void* c;
  void* c_layout;
  void* d;
  void* d_layout;
  const void* algo;   /* const cublasLtMatmulAlgo_t*, may be NULL */
  void* workspace;
  size_t workspace_bytes;
  void* stream;       /* cudaStream_t */
};

/* The library's side, looked up by name with dlsym. */
typedef int (*tunable_preload_abi_fn)(void);
/* 1: the library ran the GEMM on the handle's stream; 0: the shim must call the real cuBLAS.
 * Never fails otherwise: an internal error is reported once and the call is forwarded. */
typedef int (*tunable_preload_gemm_fn)(const struct TunablePreloadGemm* call);
/* The same for cublasLtMatmul. */
typedef int (*tunable_preload_lt_fn)(const struct TunablePreloadLt* call);

/* Totals so far (tests and tools): served, forwarded as not ours, forwarded for want of a result,
 * forwarded inside a capture before any context existed, forwarded after an internal failure. */
typedef int (*tunable_preload_counts_fn)(uint64_t* out, int n);
#define TUNABLE_PRELOAD_OUTCOMES 5

/* GEMM modes, as `tunable run --use/--record/--tune` start them and tunable.enable() changes them. */
enum TunableGemmMode {
  TUNABLE_GEMM_OFF = 0,    /* every call goes to cuBLAS */
  TUNABLE_GEMM_USE = 1,    /* stored results only */
  TUNABLE_GEMM_RECORD = 2, /* stored results, and misses written to the untuned file */
  TUNABLE_GEMM_TUNE = 3    /* a miss is tuned at its first call outside a capture */
};
/* Sets the mode and, when non-null, the results and untuned files; later calls get fresh contexts.
 * 0 on success, else a StatusCode with the message in `error` (n bytes). */
typedef int (*tunable_preload_configure_fn)(int mode, const char* results, const char* untuned, char* error,
                                            size_t n);
/* The current mode; the results file into `results` (n bytes) when non-null. */
typedef int (*tunable_preload_mode_fn)(char* results, size_t n);
/* In the shim (the process's global scope): the libtunable.so path it serves with, and a load
 * of it now regardless of TUNABLE_ENABLED (1 on success). */
typedef const char* (*tunable_preload_library_fn)(void);
typedef int (*tunable_preload_attach_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
