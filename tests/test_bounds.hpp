// Numerics bounds the tests own, and the tests' own elementwise comparison.
//
// The library has its own tolerances (gemm_tolerance, fused_tolerance) for the tuner's check of
// each candidate; tests that judged results with those would be loosened by loosening them. The
// bounds here are the tests' statement of "correct", written down independently:
//
//   |got - ref| <= atol * rms(ref) + rtol * |ref|   for every element (NaN and Inf always fail)
//
// GEMM (fp32 accumulation unless fp64; the output is rounded once; cuBLASLt split-K may reduce in the
// output type, a few more roundings): rtol a few output ulps, atol the same in units of rms(ref)
// for the elements near zero that cancellation leaves.
//   fp64 1e-10, fp32 1e-5, tf32 5e-3 (10-bit inputs), fp16 5e-3, bf16 2e-2, fp8 3e-2 (3-bit inputs).
// Fused ops (one rounding of a row computed in fp32): bf16 rtol 1e-2 (1.3-2.6 ulps), fp16 2e-3
// (2-4 ulps), fp32 1e-5; atol a fifth of rtol (a tenth for fp16). FP8 outputs: one e4m3 step of the reference's quantization
// (the ops test's own fp8_step).
//
// The library's tolerance must be no looser than these: the tuner may accept only what the tests
// accept. ToleranceOwnership tests (tests/gemm/cpu_gemm_test.cpp, tests/ops/ops_cpu_test.cpp)
// check it and plant near-misses at 1.5x these bounds that the library's check must reject, so a
// library tolerance loosened 2x fails them; the GPU planted-candidate tests do the same through
// the tuner.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tunable/types.hpp"

namespace tunable::test {

struct Bound {
  double atol = 0;  ///< in units of rms(reference)
  double rtol = 0;
};

/// The GEMM tests' bound for inputs of type `in` (A's type; kTF32 for TF32 math).
inline Bound gemm_bound(DataType in) {
  switch (in) {
    case DataType::kF64: return {1e-10, 1e-10};
    case DataType::kF32: return {1e-5, 1e-5};
    case DataType::kTF32: return {5e-3, 5e-3};
    case DataType::kF16: return {5e-3, 5e-3};
    case DataType::kBF16: return {2e-2, 2e-2};
    case DataType::kF8E4M3:
    case DataType::kF8E5M2: return {3e-2, 3e-2};
  }
  return {0, 0};  // an unknown type passes nothing
}

/// The fused-op tests' bound for outputs in the input dtype `t` (fp8 outputs: see fp8_step).
inline Bound fused_bound(DataType t) {
  switch (t) {
    case DataType::kBF16: return {2e-3, 1e-2};
    case DataType::kF16: return {2e-4, 2e-3};
    case DataType::kF32: return {1e-5, 1e-5};
    default: return {0, 0};
  }
}

struct CloseReport {
  std::size_t n = 0, bad = 0, nonfinite = 0;
  double rms = 0;    ///< rms(ref), the unit of atol
  double worst = 0;  ///< max |got - ref| / bound (> 1 fails; Inf for a non-finite element)
  std::size_t first_bad = std::numeric_limits<std::size_t>::max();
  bool passed() const { return n > 0 && bad == 0; }
  std::string describe() const {
    return fmt::format("{} bad of {} ({} non-finite), worst error / bound {:.3g}, rms(ref) {:.3g}{}", bad, n,
                       nonfinite, worst, rms,
                       bad ? fmt::format(", first bad element {}", first_bad) : std::string());
  }
};

/// The tests' own elementwise check of `got` against `ref` (both dense, n elements).
inline CloseReport check_close(const double* got, const double* ref, std::size_t n, Bound b) {
  CloseReport r;
  r.n = n;
  long double ss = 0;
  for (std::size_t i = 0; i < n; ++i) ss += static_cast<long double>(ref[i]) * ref[i];
  r.rms = n ? static_cast<double>(std::sqrt(ss / n)) : 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double err = std::fabs(got[i] - ref[i]);
    const double bound = b.atol * r.rms + b.rtol * std::fabs(ref[i]);
    const bool finite = std::isfinite(got[i]);
    r.worst = std::max(r.worst, !finite ? INFINITY : bound > 0 ? err / bound : err > 0 ? INFINITY : 0.0);
    if (finite && err <= bound) continue;
    ++r.bad;
    r.nonfinite += !finite;
    r.first_bad = std::min(r.first_bad, i);
  }
  return r;
}

/// rms of `v` (long double sums), the unit of Bound::atol.
inline double rms_of(const std::vector<double>& v) {
  long double ss = 0;
  for (double x : v) ss += static_cast<long double>(x) * x;
  return v.empty() ? 0.0 : static_cast<double>(std::sqrt(ss / v.size()));
}

/// A near-miss of `ref` under bound `b`: element `at` moved away from its value by `factor` times
/// its bound (factor > 1: that one element fails, by that factor).
inline std::vector<double> plant_one(const std::vector<double>& ref, std::size_t at, Bound b, double factor) {
  std::vector<double> got = ref;
  got[at] += std::copysign(factor * (b.atol * rms_of(ref) + b.rtol * std::fabs(ref[at])), ref[at]);
  return got;
}

/// A near-miss of `ref` under bound `b`: every element scaled by (1 + factor * b.rtol). With
/// factor 1.5 the elements beyond 2 rms fail b (error 1.5 rtol |ref| > atol rms + rtol |ref| when
/// atol <= rtol); every element passes a bound twice as loose.
inline std::vector<double> plant_all(const std::vector<double>& ref, Bound b, double factor) {
  std::vector<double> got = ref;
  for (double& x : got) x *= 1 + factor * b.rtol;
  return got;
}

}  // namespace tunable::test
