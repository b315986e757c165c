#include "tune/tuner.hpp"

#include <chrono>

#include "tune/workload.hpp"

namespace tunable {

const char* to_string(Disposition d) noexcept {
  switch (d) {
    case Disposition::kPassed: return "passed";
    case Disposition::kUnsupported: return "unsupported";
    case Disposition::kIncorrect: return "incorrect";
    case Disposition::kFailed: return "failed";
    case Disposition::kSkippedSlow: return "skipped_slow";
  }
  return "?";
}

int iterations_for_caps(double max_ms, int max_iters, double est_ms, int when_uncapped) {
  long long n = -1;
  if (max_ms > 0) n = static_cast<long long>(max_ms / std::max(est_ms, 1e-6));
  if (max_iters > 0) n = n < 0 ? max_iters : std::min<long long>(n, max_iters);
  if (n < 0) n = when_uncapped;
  return static_cast<int>(std::max<long long>(1, std::min<long long>(n, 1 << 30)));
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + mid);
  return 0.5 * (lo + hi);
}

NumericsReport compare_outputs(const double* got, const double* ref, std::size_t n,
                               const Tolerance& tol) {
  NumericsReport r;
  double ss = 0;
  for (std::size_t i = 0; i < n; ++i) ss += ref[i] * ref[i];
  r.ref_rms = n ? std::sqrt(ss / static_cast<double>(n)) : 0.0;
  // A reference of all zeros would make atol vanish; floor the scale at the smallest normal.
  const double abs_bound = tol.atol * std::max(r.ref_rms, 1e-30);
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(got[i] - ref[i]);
    if (!std::isfinite(got[i])) {
      ++r.nonfinite;
      ++r.bad_elements;
      r.max_rel_err = INFINITY;
      r.max_abs_err = INFINITY;
      continue;
    }
    const double bound = abs_bound + tol.rtol * std::fabs(ref[i]);
    r.max_abs_err = std::max(r.max_abs_err, d);
    const double rel = bound > 0 ? d / bound : (d > 0 ? INFINITY : 0.0);
    r.max_rel_err = std::max(r.max_rel_err, rel);
    if (d > bound) ++r.bad_elements;
  }
  r.passed = r.bad_elements == 0;
  return r;
}

Status HostTimer::time_calls(int n, const std::function<Status(int)>& fn,
                             std::vector<double>* times) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < n; ++i) {
    auto t0 = clock::now();
    Status st = fn(i);
    auto t1 = clock::now();
    if (!st.is_ok()) return st;
    times->push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return Status::ok();
}

std::size_t rotating_copies(std::size_t bytes_per_copy, std::size_t target_bytes,
                            std::size_t max_copies) {
  if (bytes_per_copy == 0 || target_bytes == 0) return 1;
  std::size_t n = target_bytes / bytes_per_copy + 1;  // strictly more than the target
  return std::max<std::size_t>(1, std::min(n, max_copies));
}

}  // namespace tunable
