// The library's half of the cuBLAS interposer: a GEMM a program sent to cuBLAS is mapped to our
// problem and served by a stored (or freshly tuned) solution on the handle's stream, or handed back
// to the shim, which calls the real cuBLAS with the call unchanged.
//
// This runs inside someone else's program, so it never throws, never aborts and never blocks on
// anything but tuning (which the user asked for): any internal failure is reported once and turns
// into forwarding. Inside a stream capture nothing is created, tuned, allocated or synchronized:
// a problem without a result there is forwarded (and recorded as untuned for the next run).
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
                                                          "cublasHgemmStridedBatched"};

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
    o.enabled = mode != TUNABLE_GEMM_OFF;
    o.tuning = mode == TUNABLE_GEMM_TUNE;
    o.record_untuned = mode == TUNABLE_GEMM_RECORD;
    if (results) o.filename = results;
    if (untuned) o.untuned_filename = untuned;
    options_ = o;
    mode_ = mode;
    for (int d = 0; d < kMaxDevices; ++d) {
      if (Context* c = contexts_[d].exchange(nullptr)) retired_.push_back(c);
      broken_[d] = false;
    }
    active_ = o.enabled;
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

  int serve(const TunablePreloadGemm& call) {
    if (!active_.load(std::memory_order_relaxed)) return 0;
    const int entry = call.entry >= 0 && call.entry < TUNABLE_ENTRY_COUNT ? call.entry : 0;
    const Outcome o = serve_one(call);
    counts_[entry][o].fetch_add(1, std::memory_order_relaxed);
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
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
      (void)cudaGetLastError();
      return fail("cannot tell the current device");
    }
    Context* ctx = context(dev, stream);
    if (ctx == nullptr) return broken_[dev].load() ? kFailed : kCaptureBeforeContext;
    GemmOperands ops{call.a, call.b, call.c};
    bool served = false;
    const Status st = gemm_if_tuned(*ctx, d, ops, stream, call.workspace, call.workspace_bytes, &served);
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
