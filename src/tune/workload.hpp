// What the tuner needs from an op to tune one problem: private input copies holding fresh random
// data (rotated so their total exceeds the last-level cache), a reference result, a numerics
// check and a timer that measures back-to-back calls the same way for every candidate.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tunable/measure.hpp"
#include "tunable/status.hpp"
#include "tunable/types.hpp"

namespace tunable {

struct Tolerance {
  double atol = 0;  ///< in units of rms(reference)
  double rtol = 0;
};

struct NumericsReport {
  bool passed = false;
  double max_abs_err = 0;   ///< max |x - ref|
  double max_rel_err = 0;   ///< max |x - ref| / (atol*rms + rtol*|ref|): <= 1 passes
  double ref_rms = 0;
  std::size_t bad_elements = 0;  ///< elements over the bound (NaN/Inf included)
  std::size_t nonfinite = 0;
};

/// Elementwise check shared by every workload: |x - ref| <= atol*rms(ref) + rtol*|ref|.
/// `got` and `ref` are already converted to double.
NumericsReport compare_outputs(const double* got, const double* ref, std::size_t n,
                               const Tolerance& tol);

class Timer {
 public:
  virtual ~Timer() = default;
  /// Calls fn(i) for i in [0, n) back to back and appends each call's time in ms to `times`.
  virtual Status time_calls(int n, const std::function<Status(int)>& fn,
                            std::vector<double>* times) = 0;
  /// Records fn(i) for i in [0, n) once into a CUDA graph, replays it `replays` times and appends
  /// each replay's time per call in ms. kNotSupported where there are no graphs (the host timer) or
  /// the calls cannot be captured; the tuner then keeps its back-to-back choice.
  virtual Status time_graph(int n, const std::function<Status(int)>& fn, int replays,
                            std::vector<double>* times) {
    (void)n, (void)fn, (void)replays, (void)times;
    return Status(StatusCode::kNotSupported, "this timer does not replay graphs");
  }
};

/// Host wall-clock timer for synchronous (CPU) solutions.
class HostTimer final : public Timer {
 public:
  Status time_calls(int n, const std::function<Status(int)>& fn,
                    std::vector<double>* times) override;
};

/// The part of a workload that does not depend on the op's argument type: what the tuning phases
/// (tuner.cpp) use besides running candidates.
class WorkloadBase {
 public:
  virtual ~WorkloadBase() = default;
  /// Number of input copies; copy 0 is the one the numerics check uses.
  virtual std::size_t copies() const = 0;
  virtual std::size_t bytes_per_copy() const = 0;
  /// Puts copy 0's output in its pre-run state: poisoned (NaN) when the op does not read it,
  /// otherwise restored to the initial random values.
  virtual Status prepare_check() = 0;
  /// Compares copy 0's output with the reference computed at construction.
  virtual Status check(const Tolerance& tol, NumericsReport* report) = 0;
  virtual Tolerance default_tolerance() const = 0;
  /// A workspace of at least `bytes` (grown on demand); kNotSupported if it cannot be had.
  virtual Status workspace(std::size_t bytes, void** ptr) = 0;
  virtual Timer& timer() = 0;
  /// The stream candidates run on while tuning (nullptr on the CPU).
  virtual Stream stream() const { return nullptr; }
  /// Waits for all work the workload's stream holds (no-op on the CPU).
  virtual Status synchronize() { return Status::ok(); }
  /// Whether a candidate's first call takes about as long as its later ones (no module load or JIT
  /// on a first launch, as on a GPU), so that one far slower than the best so far may be dropped on
  /// that call, before its numerics check and warmup (kSlowFirstCall). The CPU's is.
  virtual bool first_call_is_representative() const { return false; }
};

template <class Args>
class Workload : public WorkloadBase {
 public:
  virtual const Args& args(std::size_t copy) const = 0;
};

/// Number of input copies so that their total is at least `target_bytes` (>= 1, <= max_copies).
std::size_t rotating_copies(std::size_t bytes_per_copy, std::size_t target_bytes,
                            std::size_t max_copies);

// host_memory_available() and format_bytes() are public (tunable/measure.hpp): workloads estimate
// their buffers against the former before allocating any.
/// Test seam: host_memory_available() returns `bytes` (0: measure again).
void set_host_memory_available_for_testing(std::size_t bytes);

/// Size arithmetic on values derived from user dimensions: false when the result does not fit.
inline bool checked_mul(std::size_t a, std::size_t b, std::size_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool checked_add(std::size_t a, std::size_t b, std::size_t* out) { return !__builtin_add_overflow(a, b, out); }

}  // namespace tunable
