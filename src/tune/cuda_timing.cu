#include "tune/cuda_timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "kernels/reference/gemm_reference.cuh"

namespace tunable {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
  return static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535u * 8));
}

// Holds the GPU for `ns` nanoseconds so the host can queue the calls that follow.
__global__ void kernel_sleep(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(500);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

Status EventTimer::time_calls(int n, const std::function<Status(int)>& fn,
                              std::vector<double>* times) {
  if (n <= 0) return Status::ok();
  // Group k of `group` calls is bracketed by events_[2k] and events_[2k + 1]; the end event is
  // recorded before the next priming sleep, so no bracket ever holds a sleep.
  const int group = event_group(n, group_), groups = (n + group - 1) / group;
  TUNABLE_RETURN_IF_ERROR(ensure_events(2 * groups));
  for (int i = 0; i < n; ++i) {
    if (i % group == 0 && i > 0) TUNABLE_CUDA_CHECK(cudaEventRecord(events_[2 * (i / group) - 1].get(), stream_));
    if (i % kCallsPerPrime == 0) {
      // Prime the queue: while this sleeps the host enqueues the next calls, so what the events
      // bracket is the GPU running them back to back, not the host's launch rate.
      kernel_sleep<<<1, 1, 0, stream_>>>(static_cast<unsigned long long>(prime_ns_per_call_) *
                                         std::min(kCallsPerPrime, n - i));
      TUNABLE_CUDA_CHECK_LAUNCH();
    }
    if (i % group == 0) TUNABLE_CUDA_CHECK(cudaEventRecord(events_[2 * (i / group)].get(), stream_));
    TUNABLE_RETURN_IF_ERROR(fn(i));
  }
  TUNABLE_CUDA_CHECK(cudaEventRecord(events_[2 * groups - 1].get(), stream_));
  TUNABLE_CUDA_CHECK(cudaEventSynchronize(events_[2 * groups - 1].get()));
  // Each call of a group is credited with the group's mean.
  for (int k = 0; k < groups; ++k) {
    const int g = std::min(group, n - k * group);
    float ms = 0;
    TUNABLE_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[2 * k].get(), events_[2 * k + 1].get()));
    for (int j = 0; j < g; ++j) times->push_back(ms / g);
  }
  return Status::ok();
}

Status EventTimer::ensure_events(int count) {
  while (static_cast<int>(events_.size()) < count) {
    events_.emplace_back();
    TUNABLE_RETURN_IF_ERROR(events_.back().create());
  }
  return Status::ok();
}

Status EventTimer::time_graph(int n, const std::function<Status(int)>& fn, int replays,
                              std::vector<double>* times) {
  if (n <= 0 || replays <= 0) return Status::ok();
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  TUNABLE_CUDA_CHECK(cudaStreamIsCapturing(stream_, &capturing));
  if (capturing != cudaStreamCaptureStatusNone)
    return Status(StatusCode::kNotSupported, "the stream is being captured already");
  // Thread-local mode: another thread's unrelated CUDA calls cannot invalidate this capture, nor
  // this capture theirs.
  cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // e.g. the legacy default stream, which cannot be captured
    return Status(StatusCode::kNotSupported, fmt::format("stream capture refused: {}", cudaGetErrorString(e)));
  }
  const Status st = [&] {  // the first failing call's status
    for (int i = 0; i < n; ++i) TUNABLE_RETURN_IF_ERROR(fn(i));
    return Status::ok();
  }();
  cudaGraph_t graph = nullptr;
  e = cudaStreamEndCapture(stream_, &graph);  // always, so the stream leaves capture mode
  if (!st.is_ok() || e != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // an invalidated capture is not a sticky error
    return st.is_ok() ? Status(StatusCode::kNotSupported,
                               fmt::format("the calls could not be captured: {}", cudaGetErrorString(e)))
                      : st;
  }
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(StatusCode::kNotSupported, fmt::format("graph instantiation failed: {}", cudaGetErrorString(e)));
  }
  struct ExecGuard {
    cudaGraphExec_t x;
    ~ExecGuard() { (void)cudaGraphExecDestroy(x); }
  } guard{exec};
  TUNABLE_RETURN_IF_ERROR(ensure_events(2 * replays));
  TUNABLE_CUDA_CHECK(cudaGraphLaunch(exec, stream_));  // untimed: first-launch upload
  for (int r = 0; r < replays; ++r) {
    TUNABLE_CUDA_CHECK(cudaEventRecord(events_[2 * r].get(), stream_));
    TUNABLE_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
    TUNABLE_CUDA_CHECK(cudaEventRecord(events_[2 * r + 1].get(), stream_));
  }
  TUNABLE_CUDA_CHECK(cudaEventSynchronize(events_[2 * replays - 1].get()));
  for (int r = 0; r < replays; ++r) {
    float ms = 0;
    TUNABLE_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[2 * r].get(), events_[2 * r + 1].get()));
    times->push_back(ms / n);
  }
  return Status::ok();
}

Status measure_copy_bandwidth(Stream stream, double* bytes_per_s, int calls) {
  constexpr std::size_t kBytes = std::size_t{1} << 30;
  if (bytes_per_s == nullptr || calls < 1)
    return Status(StatusCode::kInvalidArgument, "measure_copy_bandwidth: null result or calls < 1");
  DeviceBuffer a, b;
  TUNABLE_RETURN_IF_ERROR(a.allocate(kBytes));
  TUNABLE_RETURN_IF_ERROR(b.allocate(kBytes));
  TUNABLE_RETURN_IF_ERROR(fill_random(a.get(), DataType::kF32, kBytes / 4, 5, 1.0f, stream));
  auto copy = [&](int) -> Status {
    TUNABLE_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), kBytes, cudaMemcpyDeviceToDevice, stream));
    return Status::ok();
  };
  TUNABLE_RETURN_IF_ERROR(copy(0));  // warm-up
  // An event pair per copy (0.7 ms each): grouped by eight, the median of 16 would be the slower
  // group's mean, and a low bandwidth would raise every floor.
  EventTimer timer(stream, 20000, 1);
  std::vector<double> ms;
  TUNABLE_RETURN_IF_ERROR(timer.time_calls(calls, copy, &ms));
  std::sort(ms.begin(), ms.end());
  *bytes_per_s = 2.0 * static_cast<double>(kBytes) / (ms[ms.size() / 2] * 1e-3);
  return Status::ok();
}

Status compare_on_device(const double* got, const double* ref, std::size_t n, const Tolerance& tol,
                         NumericsReport* report, cudaStream_t stream) {
  // The GEMM workload's compare kernels, on a dense n x 1 matrix.
  using kernels::CompareTotals;
  const auto len = static_cast<std::int64_t>(n);
  DeviceBuffer out;
  TUNABLE_RETURN_IF_ERROR(out.allocate(sizeof(CompareTotals)));
  TUNABLE_CUDA_CHECK(cudaMemsetAsync(out.get(), 0, sizeof(CompareTotals), stream));
  kernels::kernel_sumsq_ref<double, double><<<blocks_for(n), kThreads, 0, stream>>>(ref, len, out.as<CompareTotals>());
  TUNABLE_CUDA_CHECK_LAUNCH();
  CompareTotals h{};
  TUNABLE_CUDA_CHECK(cudaMemcpyAsync(&h, out.get(), sizeof h, cudaMemcpyDeviceToHost, stream));
  TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream));
  const double rms = n ? std::sqrt(h.sumsq / static_cast<double>(n)) : 0.0;
  kernels::kernel_compare_matrix<double, double><<<blocks_for(n), kThreads, 0, stream>>>(
      got, len, 1, len, 0, 1, ref, tol.atol * std::max(rms, 1e-30), tol.rtol, out.as<CompareTotals>());
  TUNABLE_CUDA_CHECK_LAUNCH();
  TUNABLE_CUDA_CHECK(cudaMemcpyAsync(&h, out.get(), sizeof h, cudaMemcpyDeviceToHost, stream));
  TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream));
  *report = numerics_report(h, rms);
  return Status::ok();
}

NumericsReport numerics_report(const kernels::CompareTotals& h, double ref_rms) {
  NumericsReport r;
  r.ref_rms = ref_rms;
  r.bad_elements = h.bad;
  r.nonfinite = h.nonfinite;
  std::memcpy(&r.max_abs_err, &h.max_abs_bits, sizeof(double));
  std::memcpy(&r.max_rel_err, &h.max_rel_bits, sizeof(double));
  r.passed = h.bad == 0;
  return r;
}

std::atomic<std::size_t> g_device_free_for_testing{0};

void set_device_memory_free_for_testing(std::size_t bytes) { g_device_free_for_testing.store(bytes); }

Status device_tuning_copies(int ordinal, std::size_t per_copy, std::size_t fixed, std::size_t target_bytes,
                            std::size_t max_copies, std::size_t* copies) {
  std::size_t need = 0;
  if (per_copy == SIZE_MAX || fixed == SIZE_MAX || __builtin_add_overflow(per_copy, fixed, &need))
    return Status(StatusCode::kNotSupported, "tuning this problem would need more bytes than memory can address");
  std::size_t free_b = g_device_free_for_testing.load();
  if (free_b == 0) {
    TUNABLE_RETURN_IF_ERROR(require_current_device(ordinal));
    std::size_t total_b = 0;
    TUNABLE_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  }
  const std::size_t budget = free_b / 2;
  if (need > budget)
    return Status(StatusCode::kNotSupported,
                  fmt::format("not enough GPU memory to tune: needs {} (an input copy of {} and {} for the reference "
                              "and the check), and tuning may take half of the {} free on device {}",
                              format_bytes(need), format_bytes(per_copy), format_bytes(fixed), format_bytes(free_b),
                              ordinal));
  std::size_t n = rotating_copies(per_copy, target_bytes, max_copies);
  if (per_copy > 0) n = std::min(n, (budget - fixed) / per_copy);
  *copies = std::max<std::size_t>(n, 1);
  return Status::ok();
}

}  // namespace tunable
