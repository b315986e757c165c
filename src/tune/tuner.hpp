// The tuning loop: numerics check, warmup, timing with early pruning, choice by median.
//
// Every phase respects the duration and iteration caps of Options; the pruning probes are part
// of the timed phase, not extra runs. Each candidate ends with a disposition the verbose tree
// reports. The phases live in tuner.cpp on type-erased candidates (CandidateSet); the template
// tune_candidates only adapts a TunableOp's Solution<Args> list to them.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/logger.hpp"
#include "tune/solution.hpp"
#include "tune/workload.hpp"
#include "tunable/context.hpp"
#include "tunable/options.hpp"

namespace tunable {

enum class Disposition { kPassed, kUnsupported, kIncorrect, kFailed, kSkippedSlow };
const char* to_string(Disposition d) noexcept;

struct CandidateOutcome {
  std::string name;
  Disposition disposition = Disposition::kFailed;
  double median_ms = 0;  ///< passed / skipped-slow: median of the timed calls
  int warmup_iters = 0;
  int timed_iters = 0;
  std::string detail;
};

template <class Args>
struct TuneOutcome {
  SolutionPtr<Args> best;
  double best_ms = 0;
  std::vector<CandidateOutcome> candidates;
  double wall_ms = 0;  ///< whole tuning loop
};

/// Pruning thresholds: after the first probe a candidate slower than kSlowEarly x best is dropped,
/// after the second probe one slower than kSlowLate x best.
inline constexpr double kSlowEarly = 1.5;
inline constexpr double kSlowLate = 1.15;
inline constexpr int kFirstProbe = 3;
/// Where the workload's first calls are representative (the CPU): a candidate whose first call takes
/// more than kSlowFirstCall x the best median so far and more than kSlowFirstCallMinMs is dropped on
/// that call, before its numerics check and warmup. A 2048^3 CPU reference call takes 4.3 s against
/// 46 ms for Default, and three such calls per hopeless candidate made most of a 35 s tuning. Below
/// the floor a call costs too little to skip the probes for, and a cold first call (page faults,
/// threads waking) is not taken for a slow kernel.
inline constexpr double kSlowFirstCall = 10.0;
inline constexpr double kSlowFirstCallMinMs = 10.0;
/// The final phase re-times this many of the fastest (plus Default) in kFinalRounds rounds.
inline constexpr std::size_t kFinalists = 3;
inline constexpr int kFinalRounds = 3;
/// Candidate 0 (Default) is kept unless the fastest is more than 1% faster.
inline constexpr double kPreferDefaultWithin = 1.01;
/// Graph tie-break (Options::graph_tiebreak): the finalists are timed again as kGraphReplays replays
/// of a graph of calls over the input copies (kGraphMinCalls to kGraphMaxCalls calls: all of them up
/// to 4096, which is 2.6x the L2 of 32 KB decode-norm copies, so a replay reads from DRAM as the
/// back-to-back timing does; 64 calls would stay in the L2 and rank L2-hot times); those within
/// kGraphTieWithin of the fastest back-to-back are then ranked by their graph time, and all of them
/// when one runs in graphs in at most kLaunchBound of its back-to-back time (the back-to-back timing
/// is then mostly launch overhead and cannot rank kernels).
inline constexpr double kGraphTieWithin = 1.01;
inline constexpr double kLaunchBound = 0.8;
inline constexpr int kGraphReplays = 5;
inline constexpr int kGraphMinCalls = 8;
inline constexpr int kGraphMaxCalls = 4096;

/// Iterations allowed by a (duration, iteration) cap pair for calls of `est_ms` each. A cap of 0
/// is no cap; with both 0 the result is `when_uncapped`.
int iterations_for_caps(double max_ms, int max_iters, double est_ms, int when_uncapped);

double median_of(std::vector<double> v);

/// The candidates of one tuning as the phases in tuner.cpp see them: by index, without their
/// argument type. SolutionCandidates<Args> adapts a TunableOp's Solution<Args> list.
class CandidateSet {
 public:
  virtual ~CandidateSet() = default;
  virtual std::size_t size() const = 0;
  virtual const std::string& name(std::size_t id) const = 0;
  /// can_implement and workspace_bytes on the arguments of input copy 0.
  virtual Status can_implement(std::size_t id) const = 0;
  virtual std::size_t workspace_bytes(std::size_t id) const = 0;
  /// Runs candidate `id` on input copy `copy` with `ws_bytes` of workspace at `ws`.
  virtual Status run(std::size_t id, std::size_t copy, void* ws, std::size_t ws_bytes) const = 0;
};

/// TuneOutcome with the winner as an index into the CandidateSet.
struct TunedIndex {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t best = kNone;
  double best_ms = 0;
  std::vector<CandidateOutcome> candidates;  ///< one per candidate, in candidate order
  double wall_ms = 0;                        ///< whole tuning loop
};

/// The tuning loop over type-erased candidates: per candidate the numerics check, then timing with
/// pruning; then the finalists re-timed in interleaved rounds, the graph tie-break, and Default kept
/// within kPreferDefaultWithin. Candidate 0 is Default. kNotSupported when no candidate passed.
Status tune_candidate_set(const Options& opt, Logger& log, const std::string& label, const CandidateSet& cands,
                          WorkloadBase& wl, TunedIndex* out,
                          const std::function<void(const TuneProgress&)>& progress = {});

/// A TunableOp's candidates on a workload's inputs, as a CandidateSet.
template <class Args>
class SolutionCandidates final : public CandidateSet {
 public:
  SolutionCandidates(const std::vector<SolutionPtr<Args>>& candidates, Workload<Args>& wl)
      : c_(candidates), wl_(wl) {}
  std::size_t size() const override { return c_.size(); }
  const std::string& name(std::size_t id) const override { return c_[id]->name(); }
  Status can_implement(std::size_t id) const override { return c_[id]->can_implement(wl_.args(0)); }
  std::size_t workspace_bytes(std::size_t id) const override { return c_[id]->workspace_bytes(wl_.args(0)); }
  Status run(std::size_t id, std::size_t copy, void* ws, std::size_t ws_bytes) const override {
    return c_[id]->run(wl_.args(copy), ws, ws_bytes, wl_.stream());
  }

 private:
  const std::vector<SolutionPtr<Args>>& c_;
  Workload<Args>& wl_;
};

/// tune_candidate_set on a TunableOp's candidates; `out->best` is the winning solution.
template <class Args>
Status tune_candidates(const Options& opt, Logger& log, const std::string& label,
                       const std::vector<SolutionPtr<Args>>& candidates, Workload<Args>& wl,
                       TuneOutcome<Args>* out,
                       const std::function<void(const TuneProgress&)>& progress = {}) {
  TunedIndex r;
  const Status st = tune_candidate_set(opt, log, label, SolutionCandidates<Args>(candidates, wl), wl, &r, progress);
  out->best = r.best == TunedIndex::kNone ? nullptr : candidates[r.best];
  out->best_ms = r.best_ms;
  out->wall_ms = r.wall_ms;
  out->candidates.insert(out->candidates.end(), r.candidates.begin(), r.candidates.end());
  return st;
}

}  // namespace tunable
