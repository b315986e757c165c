// The library's half of the cuBLAS interposer: a GEMM a program sent to cuBLAS is mapped to our
// problem and served by a stored (or freshly tuned) solution on the handle's stream, or handed back
// to the shim, which calls the real cuBLAS with the call unchanged.
//
// This runs inside someone else's program, so it never throws, never aborts and never blocks on
// anything but tuning (which the user asked for): any internal failure is reported once and turns
// into forwarding. Inside a stream capture nothing is created, tuned, allocated or synchronized:
// a problem without a result there is forwarded (and recorded as untuned for the next run).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "interpose/cublas_map.hpp"
#include "interpose/preload_abi.h"
#include "tunable/context.hpp"
#include "tunable/gemm.hpp"

namespace tunable {
namespace {

constexpr int kMaxDevices = 64;

enum Outcome { kServed, kUnmapped, kNoResult, kCaptureBeforeContext, kFailed, kOutcomes };
static_assert(kOutcomes == TUNABLE_PRELOAD_OUTCOMES, "the ABI's outcome count");
constexpr const char* kOutcomeNames[kOutcomes] = {"served", "forwarded: not a problem we serve",
                                                  "forwarded: no tuned result (or Default is best)",
                                                  "forwarded: captured before the first uncaptured call",
                                                  "forwarded: internal failure"};
constexpr const char* kEntryNames[TUNABLE_ENTRY_COUNT] = {"cublasGemmEx", "cublasSgemm", "cublasHgemm",
                                                          "cublasGemmStridedBatchedEx", "cublasSgemmStridedBatched",
                                                          "cublasHgemmStridedBatched", "cublasLtMatmul"};

class Interposer {
 public:
  static Interposer& get() {
    // Never destroyed: the program's exit may run after the CUDA runtime has shut down, and a
    // context's destructor would call into it.
    static Interposer* self = new Interposer();
    return *self;
  }

  /// Calls per outcome (served, unmapped, no result, captured before a context, failed).
  void totals(std::uint64_t* out, int n) const {
    for (int o = 0; o < n && o < kOutcomes; ++o) {
      out[o] = 0;
      for (int e = 0; e < TUNABLE_ENTRY_COUNT; ++e) out[o] += counts_[e][o].load(std::memory_order_relaxed);
    }
  }

  /// The GEMM mode (TUNABLE_GEMM_OFF/USE/RECORD/TUNE) and, when non-null, the results and untuned
  /// files. Later calls get fresh contexts with these options: a context's choices for misses (Default
  /// while tuning was off) must not outlive the mode that made them. The old contexts stay alive (a
  /// call on another thread may be using one); a program switches a handful of times.
  Status configure(int mode, const char* results, const char* untuned) {
    if (mode < TUNABLE_GEMM_OFF || mode > TUNABLE_GEMM_TUNE)
      return Status(StatusCode::kInvalidArgument, fmt::format("unknown GEMM mode {}", mode));
    std::lock_guard<std::mutex> lock(create_mu_);
    Options o = options_;
    if (results) o.filename = results;
    if (untuned) o.untuned_filename = untuned;
    if (mode == TUNABLE_GEMM_OFF) {
      // Off only stops serving: the contexts stay for the configuration that comes back, so a
      // `with gemm_mode("off")` in a loop creates nothing.
      options_.filename = o.filename, options_.untuned_filename = o.untuned_filename;
      mode_ = mode;
      active_ = false;
      return Status::ok();
    }
    o.enabled = true;
    o.tuning = mode == TUNABLE_GEMM_TUNE;
    o.record_untuned = mode == TUNABLE_GEMM_RECORD;
    // The configuration the live contexts were made with (contexts_ may still be empty).
    const bool same = o.tuning == made_.tuning && o.record_untuned == made_.record_untuned &&
                      o.filename == made_.filename && o.untuned_filename == made_.untuned_filename && made_.enabled;
    options_ = o;
    made_ = o;
    mode_ = mode;
    if (!same) {
      // Fresh contexts: a context's choices for misses (Default while tuning was off) must not outlive
      // the configuration that made them. The old ones stay alive (a call on another thread may be
      // using one); each distinct change costs one set per device.
      for (int d = 0; d < kMaxDevices; ++d) {
        if (Context* c = contexts_[d].exchange(nullptr)) retired_.push_back(c);
        broken_[d] = false;
      }
    }
    active_ = true;
    return Status::ok();
  }

  int mode() {
    std::lock_guard<std::mutex> lock(create_mu_);
    return mode_;
  }

  std::string results_file() {
    std::lock_guard<std::mutex> lock(create_mu_);
    return options_.filename;
  }

  std::string untuned_file() {
    std::lock_guard<std::mutex> lock(create_mu_);
    return options_.untuned_filename;
  }

  int serve(const TunablePreloadGemm& call) {
    if (!active_.load(std::memory_order_relaxed)) return 0;
    const int entry = call.entry >= 0 && call.entry < TUNABLE_ENTRY_LT_MATMUL ? call.entry : 0;
    const Outcome o = serve_one(call);
    counts_[entry][o].fetch_add(1, std::memory_order_relaxed);
    return o == kServed ? 1 : 0;
  }

  int serve_lt(const TunablePreloadLt& call) {
    if (!active_.load(std::memory_order_relaxed)) return 0;
    const Outcome o = serve_lt_one(call);
    counts_[TUNABLE_ENTRY_LT_MATMUL][o].fetch_add(1, std::memory_order_relaxed);
    return o == kServed ? 1 : 0;
  }

 private:
  Interposer() {
    try {
      options_ = Options::from_environment();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tunable: interposer: %s; every GEMM goes to cuBLAS unchanged\n", e.what());
      active_ = false;
      return;
    }
    active_ = options_.enabled;
    verbose_ = options_.verbose;
    made_ = options_;
    mode_ = !options_.enabled ? TUNABLE_GEMM_OFF
            : options_.tuning ? TUNABLE_GEMM_TUNE
            : options_.record_untuned ? TUNABLE_GEMM_RECORD
                                      : TUNABLE_GEMM_USE;
    if (const char* r = std::getenv("TUNABLE_PRELOAD_REPORT")) report_path_ = r;
    std::atexit([] { Interposer::get().report(); });
  }

  Outcome serve_one(const TunablePreloadGemm& call) {
    auto handle = static_cast<cublasHandle_t>(call.handle);
    cublasPointerMode_t pm = CUBLAS_POINTER_MODE_HOST;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    cudaStream_t stream = nullptr;
    if (cublasGetPointerMode_v2(handle, &pm) != CUBLAS_STATUS_SUCCESS ||
        cublasGetMathMode(handle, &math) != CUBLAS_STATUS_SUCCESS ||
        cublasGetStream_v2(handle, &stream) != CUBLAS_STATUS_SUCCESS)
      return fail("cuBLAS refused to report the handle's pointer mode, math mode or stream");
    const auto ta = static_cast<cublasOperation_t>(call.transa), tb = static_cast<cublasOperation_t>(call.transb);
    CublasGemmCall c;
    switch (call.entry) {
      case TUNABLE_ENTRY_SGEMM:
      case TUNABLE_ENTRY_SGEMM_STRIDED_BATCHED:
        c = sgemm_call(ta, tb, 0, 0, 0, static_cast<const float*>(call.alpha), 0, 0,
                       static_cast<const float*>(call.beta), 0, math, pm);
        break;
      case TUNABLE_ENTRY_HGEMM:
      case TUNABLE_ENTRY_HGEMM_STRIDED_BATCHED:
        c = hgemm_call(ta, tb, 0, 0, 0, call.alpha, 0, 0, call.beta, 0, pm);
        break;
      default:
        c.transa = ta, c.transb = tb;
        c.a_type = static_cast<cudaDataType_t>(call.a_type);
        c.b_type = static_cast<cudaDataType_t>(call.b_type);
        c.c_type = static_cast<cudaDataType_t>(call.c_type);
        c.compute = static_cast<cublasComputeType_t>(call.compute_type);
        c.math_mode = math;
        c.pointer_mode = pm;
        c.alpha = call.alpha, c.beta = call.beta;
        break;
    }
    c.m = call.m, c.n = call.n, c.k = call.k;
    c.lda = call.lda, c.ldb = call.ldb, c.ldc = call.ldc;
    if (call.entry >= TUNABLE_ENTRY_GEMM_STRIDED_BATCHED_EX) {
      c.strided = true;
      c.batch = call.batch;
      c.stride_a = call.stride_a, c.stride_b = call.stride_b, c.stride_c = call.stride_c;
    }
    GemmDesc d;
    std::string why;
    if (!map_cublas_gemm(c, &d, &why)) {
      note_unmapped(why);
      return kUnmapped;
    }
    return run_mapped(d, GemmOperands{call.a, call.b, call.c}, stream, call.workspace, call.workspace_bytes);
  }

  Outcome serve_lt_one(const TunablePreloadLt& call) {
    CublasLtCall c;
    std::string why;
    if (!read_lt_call(call, &c, &why)) return fail(why);
    GemmDesc d;
    if (!map_cublaslt_matmul(c, &d, &why)) {
      note_unmapped(why);
      return kUnmapped;
    }
    GemmOperands ops{call.a, call.b, call.d};
    ops.bias = c.bias;
    ops.scale_a = static_cast<const float*>(c.scale_a);
    ops.scale_b = static_cast<const float*>(c.scale_b);
    return run_mapped(d, ops, static_cast<cudaStream_t>(call.stream), call.workspace, call.workspace_bytes);
  }

  // cublasLtMatmul's descriptors as a CublasLtCall; false (an internal failure) only when cuBLASLt
  // refuses to report an attribute. What we do not serve is marked in `unsupported`.
  static bool read_lt_call(const TunablePreloadLt& call, CublasLtCall* out, std::string* why) {
    auto desc = static_cast<cublasLtMatmulDesc_t>(call.desc);
    bool ok = true;
    auto get = [&](cublasLtMatmulDescAttributes_t a, auto* v) {
      std::size_t written = 0;
      if (cublasLtMatmulDescGetAttribute(desc, a, v, sizeof *v, &written) != CUBLAS_STATUS_SUCCESS) ok = false;
      return written;
    };
    std::int32_t compute = 0, scale = 0, pmode = 0, ta = 0, tb = 0, tc = 0, bias_type = -1;
    std::uint32_t epilogue = 0;
    std::int8_t fast = 0;
    const void *bias = nullptr, *sa = nullptr, *sb = nullptr, *sd = nullptr, *amax = nullptr, *aux = nullptr;
    get(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute);
    get(CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale);
    get(CUBLASLT_MATMUL_DESC_POINTER_MODE, &pmode);
    get(CUBLASLT_MATMUL_DESC_TRANSA, &ta);
    get(CUBLASLT_MATMUL_DESC_TRANSB, &tb);
    get(CUBLASLT_MATMUL_DESC_TRANSC, &tc);
    get(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue);
    get(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias);
    get(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type);
    get(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa);
    get(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb);
    get(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &sd);
    get(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &amax);
    get(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux);
    get(CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast);
    const void *sc = nullptr, *sdo = nullptr;
    get(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, &sc);
    get(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, &sdo);
    if (!ok) {
      *why = "cuBLASLt refused to report a matmul descriptor attribute";
      return false;
    }
    // Block-scaled FP8 (cuBLAS 12.8+): a cuBLASLt too old to know the attribute cannot be using it.
    std::int32_t a_mode = 0, b_mode = 0;
    std::size_t w = 0;
    if (cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode, sizeof a_mode, &w) !=
        CUBLAS_STATUS_SUCCESS)
      a_mode = 0;
    if (cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode, sizeof b_mode, &w) !=
        CUBLAS_STATUS_SUCCESS)
      b_mode = 0;
    struct Layout {
      std::uint32_t type = 0;
      std::int32_t order = 0, batch = 1;
      std::uint64_t rows = 0, cols = 0;
      std::int64_t ld = 0, stride = 0;
    };
    auto layout = [&](void* l, Layout* v) {
      auto h = static_cast<cublasLtMatrixLayout_t>(l);
      auto attr = [&](cublasLtMatrixLayoutAttribute_t a, auto* x) {
        std::size_t w = 0;
        ok &= cublasLtMatrixLayoutGetAttribute(h, a, x, sizeof *x, &w) == CUBLAS_STATUS_SUCCESS;
      };
      attr(CUBLASLT_MATRIX_LAYOUT_TYPE, &v->type);
      attr(CUBLASLT_MATRIX_LAYOUT_ORDER, &v->order);
      attr(CUBLASLT_MATRIX_LAYOUT_ROWS, &v->rows);
      attr(CUBLASLT_MATRIX_LAYOUT_COLS, &v->cols);
      attr(CUBLASLT_MATRIX_LAYOUT_LD, &v->ld);
      attr(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &v->batch);
      attr(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &v->stride);
    };
    if (call.desc == nullptr || call.a_layout == nullptr || call.b_layout == nullptr || call.c_layout == nullptr ||
        call.d_layout == nullptr) {
      out->unsupported = "a null descriptor";
      return true;
    }
    Layout la, lb, lc, ld;
    layout(call.a_layout, &la);
    layout(call.b_layout, &lb);
    layout(call.c_layout, &lc);
    layout(call.d_layout, &ld);
    if (!ok) {
      *why = "cuBLASLt refused to report a matrix layout attribute";
      return false;
    }
    CublasGemmCall& g = out->base;
    g.transa = static_cast<cublasOperation_t>(ta);
    g.transb = static_cast<cublasOperation_t>(tb);
    g.m = static_cast<std::int64_t>(ld.rows);
    g.n = static_cast<std::int64_t>(ld.cols);
    g.k = static_cast<std::int64_t>(ta == CUBLAS_OP_N ? la.cols : la.rows);
    g.a_type = static_cast<cudaDataType_t>(la.type);
    g.b_type = static_cast<cudaDataType_t>(lb.type);
    g.c_type = static_cast<cudaDataType_t>(ld.type);
    g.lda = la.ld, g.ldb = lb.ld, g.ldc = ld.ld;
    g.batch = ld.batch;
    g.strided = ld.batch > 1;
    g.stride_a = la.stride, g.stride_b = lb.stride, g.stride_c = ld.stride;
    g.compute = static_cast<cublasComputeType_t>(compute);
    g.pointer_mode = pmode == CUBLASLT_POINTER_MODE_HOST ? CUBLAS_POINTER_MODE_HOST : CUBLAS_POINTER_MODE_DEVICE;
    g.alpha = call.alpha, g.beta = call.beta;
    out->scale_type = static_cast<cudaDataType_t>(scale);
    out->c_is_d = call.c == call.d && lc.type == ld.type && lc.ld == ld.ld && lc.rows == ld.rows &&
                  lc.cols == ld.cols && lc.batch == ld.batch && lc.stride == ld.stride && lc.order == ld.order;
    out->epilogue = epilogue;
    out->bias = bias;
    out->bias_type_set = bias_type != -1;  // -1: the default, the output's type
    out->bias_type = static_cast<cudaDataType_t>(bias_type);
    out->scale_a = sa, out->scale_b = sb, out->scale_d = sd, out->amax_d = amax;
    out->scale_c = sc, out->scale_d_out = sdo;
    out->c_at_d = call.c == call.d;
    out->fast_accum = fast != 0;
    const std::uint64_t k_b = tb == CUBLAS_OP_N ? lb.rows : lb.cols, n_b = tb == CUBLAS_OP_N ? lb.cols : lb.rows;
    const std::uint64_t m_a = ta == CUBLAS_OP_N ? la.rows : la.cols;
    if (la.order != CUBLASLT_ORDER_COL || lb.order != CUBLASLT_ORDER_COL || lc.order != CUBLASLT_ORDER_COL ||
        ld.order != CUBLASLT_ORDER_COL)
      out->unsupported = "a matrix layout other than column-major";
    else if (tc != CUBLAS_OP_N)
      out->unsupported = "a transposed C";
    else if (aux != nullptr)
      out->unsupported = "an epilogue auxiliary output";
    else if (a_mode != 0 || b_mode != 0)
      out->unsupported = "block-scaled FP8 (scale modes)";
    else if (m_a != ld.rows || k_b != static_cast<std::uint64_t>(g.k) || n_b != ld.cols)
      out->unsupported = "operand layouts that do not chain (A, B and D shapes disagree)";
    else if (la.batch != ld.batch || lb.batch != ld.batch)
      out->unsupported = "batch counts that differ between operands";
    return true;
  }

  Outcome run_mapped(const GemmDesc& d, const GemmOperands& ops, cudaStream_t stream, void* ws, std::size_t ws_bytes) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
      (void)cudaGetLastError();
      return fail("cannot tell the current device");
    }
    Context* ctx = context(dev, stream);
    if (ctx == nullptr) return broken_[dev].load() ? kFailed : kCaptureBeforeContext;
    bool served = false;
    const Status st = gemm_if_tuned(*ctx, d, ops, stream, ws, ws_bytes, &served);
    if (!st.is_ok()) {
      // A problem our validation refuses with these pointers (alignment) is cuBLAS's to run;
      // anything else is an internal failure, reported once.
      if (st.code() == StatusCode::kMisaligned || st.code() == StatusCode::kInvalidArgument) return kUnmapped;
      return fail(fmt::format("{} {}: {}", op_signature(d), params_signature(d), st.to_string()));
    }
    return served ? kServed : kNoResult;
  }

  // The context of device `dev`, created at the first call outside a capture (creation loads the
  // results file and may allocate).
  Context* context(int dev, cudaStream_t stream) {
    if (Context* c = contexts_[dev].load(std::memory_order_acquire)) return c;
    if (broken_[dev].load()) return nullptr;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) {
      (void)cudaGetLastError();
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(create_mu_);
    if (Context* c = contexts_[dev].load()) return c;
    try {
      // Never destroyed, as the interposer itself.
      auto* c = new Context(Device::cuda(dev), options_);
      contexts_[dev].store(c, std::memory_order_release);
      return c;
    } catch (const std::exception& e) {
      broken_[dev] = true;
      (void)fail(fmt::format("no context on device {}: {}", dev, e.what()));
      return nullptr;
    }
  }

  Outcome fail(const std::string& what) {
    bool expected = false;
    if (warned_.compare_exchange_strong(expected, true))
      std::fprintf(stderr, "tunable: interposer: %s; that call and any like it go to cuBLAS unchanged\n",
                   what.c_str());
    return kFailed;
  }

  void note_unmapped(const std::string& why) {
    if (verbose_ < 1 && report_path_.empty()) return;
    std::lock_guard<std::mutex> lock(reasons_mu_);
    if (reasons_.size() < 64 || reasons_.count(why)) ++reasons_[why];
  }

  void report() {
    std::string text;
    std::uint64_t total = 0, served = 0;
    for (int e = 0; e < TUNABLE_ENTRY_COUNT; ++e)
      for (int o = 0; o < kOutcomes; ++o) {
        const std::uint64_t n = counts_[e][o].load();
        if (n == 0) continue;
        total += n;
        if (o == kServed) served += n;
        text += fmt::format("  {:<28} {:<56} {}\n", kEntryNames[e], kOutcomeNames[o], n);
      }
    {
      std::lock_guard<std::mutex> lock(reasons_mu_);
      for (const auto& [why, n] : reasons_) text += fmt::format("  not served ({} calls): {}\n", n, why);
    }
    const std::string head = fmt::format("tunable interposer: served {} of {} GEMM calls\n", served, total);
    if (verbose_ >= 1) std::fprintf(stderr, "%s%s", head.c_str(), text.c_str());
    if (!report_path_.empty()) {
      if (std::FILE* f = std::fopen(report_path_.c_str(), "a")) {
        std::fprintf(f, "%s%s", head.c_str(), text.c_str());
        std::fclose(f);
      } else {
        std::fprintf(stderr, "tunable: interposer: cannot write the report to %s\n", report_path_.c_str());
      }
    }
  }

  Options options_;  // guarded by create_mu_ once constructed
  Options made_;     // what contexts_ were (or will be) created with
  int mode_ = TUNABLE_GEMM_OFF;
  int verbose_ = 0;
  std::vector<Context*> retired_;  // contexts of earlier modes, never destroyed
  std::atomic<bool> active_{false};
  std::string report_path_;
  std::array<std::atomic<Context*>, kMaxDevices> contexts_{};
  std::array<std::atomic<bool>, kMaxDevices> broken_{};
  std::mutex create_mu_;
  std::atomic<bool> warned_{false};
  std::atomic<std::uint64_t> counts_[TUNABLE_ENTRY_COUNT][kOutcomes] = {};
  std::mutex reasons_mu_;
  std::map<std::string, std::uint64_t> reasons_;
};

}  // namespace
}  // namespace tunable

extern "C" {

__attribute__((visibility("default"))) int tunable_preload_abi(void) { return TUNABLE_PRELOAD_ABI; }

__attribute__((visibility("default"))) int tunable_preload_gemm(const TunablePreloadGemm* call) {
  if (call == nullptr) return 0;
  try {
    return tunable::Interposer::get().serve(*call);
  } catch (...) {
    return 0;  // anything unforeseen: cuBLAS serves the call
  }
}

// What the interposer did so far, for tests and tools: up to n totals in the order served,
// forwarded (not a problem we serve), forwarded (no result), forwarded (captured before the
// device's first uncaptured call), forwarded (internal failure). Returns how many it wrote.
__attribute__((visibility("default"))) int tunable_preload_counts(uint64_t* out, int n) {
  if (out == nullptr || n <= 0) return 0;
  const int k = n < tunable::kOutcomes ? n : tunable::kOutcomes;
  tunable::Interposer::get().totals(out, k);
  return k;
}

__attribute__((visibility("default"))) int tunable_preload_lt(const TunablePreloadLt* call) {
  if (call == nullptr) return 0;
  try {
    return tunable::Interposer::get().serve_lt(*call);
  } catch (...) {
    return 0;
  }
}

// The Python package's GEMM modes (tunable.enable()): see preload_abi.h. 0 on success, else the
// StatusCode; `error` (n bytes) gets the message.
__attribute__((visibility("default"))) int tunable_preload_configure(int mode, const char* results,
                                                                     const char* untuned, char* error, size_t n) {
  try {
    const tunable::Status st = tunable::Interposer::get().configure(mode, results, untuned);
    if (!st.is_ok() && error && n) std::snprintf(error, n, "%s", st.message().c_str());
    return static_cast<int>(st.code());
  } catch (const std::exception& e) {
    if (error && n) std::snprintf(error, n, "%s", e.what());
    return static_cast<int>(tunable::StatusCode::kInternal);
  }
}

// The current untuned file (n bytes of `untuned`).
__attribute__((visibility("default"))) int tunable_preload_untuned_file(char* untuned, size_t n) {
  try {
    if (untuned && n) std::snprintf(untuned, n, "%s", tunable::Interposer::get().untuned_file().c_str());
    return 0;
  } catch (...) {
    return -1;
  }
}

// The current mode and results file (n bytes of `results`, may be null).
__attribute__((visibility("default"))) int tunable_preload_mode(char* results, size_t n) {
  try {
    if (results && n) std::snprintf(results, n, "%s", tunable::Interposer::get().results_file().c_str());
    return tunable::Interposer::get().mode();
  } catch (...) {
    return -1;
  }
}

}  // extern "C"
