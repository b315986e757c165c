// The tuning loop: numerics check, warmup, timing with early pruning, choice by median.
//
// Every phase respects the duration and iteration caps of Options; the pruning probes are part
// of the timed phase, not extra runs. Each candidate ends with a disposition the verbose tree
// reports.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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
/// The final phase re-times this many of the fastest (plus Default) in kFinalRounds rounds.
inline constexpr std::size_t kFinalists = 3;
inline constexpr int kFinalRounds = 3;
/// Candidate 0 (Default) is kept unless the fastest is more than 1% faster.
inline constexpr double kPreferDefaultWithin = 1.01;
/// Graph tie-break (Options::graph_tiebreak): the finalists are timed again as kGraphReplays replays
/// of a graph of calls over the input copies (kGraphMinCalls to kGraphMaxCalls calls: all of them up
/// to 4096, which is 2.6x the L2 of 32 KB decode-norm copies, so a replay reads from DRAM as the
/// back-to-back timing does; the earlier 64 calls stayed in the L2 and ranked L2-hot times); those within
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

template <class Args>
Status tune_candidates(const Options& opt, Logger& log, const std::string& label,
                       const std::vector<SolutionPtr<Args>>& candidates, Workload<Args>& wl,
                       TuneOutcome<Args>* out,
                       const std::function<void(const TuneProgress&)>& progress = {}) {
  using clock = std::chrono::steady_clock;
  const auto t_begin = clock::now();
  const std::string& B = Logger::kBranch;
  Tolerance tol = wl.default_tolerance();
  if (opt.atol >= 0) tol.atol = opt.atol;
  if (opt.rtol >= 0) tol.rtol = opt.rtol;

  log.log(1, "finding fastest for {} out of {} candidates ({} input copies of {:.1f} MiB)", label,
          candidates.size(), wl.copies(), wl.bytes_per_copy() / 1048576.0);
  std::size_t rot = 0;  // rotates through copies 1.. so consecutive calls read different inputs
  auto next_copy = [&]() -> const Args& {
    rot = (rot + 1) % wl.copies();
    return wl.args(rot);
  };
  double best = INFINITY;
  out->best = nullptr;
  // A finalist's call on the next input copy, with the workspace it needs (the final phases re-time
  // candidates whose workspace request already succeeded once).
  auto finalist_call = [&](const SolutionPtr<Args>& sol, std::function<Status(int)>* call) -> Status {
    void* ws = nullptr;
    const std::size_t ws_bytes = sol->workspace_bytes(wl.args(0));
    TUNABLE_RETURN_IF_ERROR(wl.workspace(ws_bytes, &ws));
    *call = [&, sol, ws, ws_bytes](int) { return sol->run(next_copy(), ws, ws_bytes, wl.stream()); };
    return Status::ok();
  };

  for (std::size_t id = 0; id < candidates.size(); ++id) {
    const auto& sol = candidates[id];
    CandidateOutcome oc;
    oc.name = sol->name();
    const std::string who = fmt::format("id={}, {} {}", id, label, oc.name);
    auto finish = [&](Disposition d, std::string detail) {
      oc.disposition = d;
      oc.detail = std::move(detail);
      out->candidates.push_back(oc);
      if (progress) {
        progress(TuneProgress{label, id + 1, candidates.size(),
                              std::chrono::duration<double, std::milli>(clock::now() - t_begin).count()});
      }
    };

    Status st = sol->can_implement(wl.args(0));
    if (!st.is_ok()) {
      log.log(2, "{}unsupported {}: {}", B, who, st.message());
      finish(Disposition::kUnsupported, st.message());
      continue;
    }
    void* ws = nullptr;
    const std::size_t ws_bytes = sol->workspace_bytes(wl.args(0));
    st = wl.workspace(ws_bytes, &ws);
    if (!st.is_ok()) {
      log.log(2, "{}unsupported {}: workspace of {} bytes: {}", B, who, ws_bytes, st.message());
      finish(Disposition::kUnsupported, st.message());
      continue;
    }
    auto call = [&](const Args& a) { return sol->run(a, ws, ws_bytes, wl.stream()); };

    // Numerics on copy 0 (poisoned or restored output) against the reference.
    if (opt.numerical_check) {
      st = wl.prepare_check();
      if (st.is_ok()) st = call(wl.args(0));
      if (st.is_ok()) st = wl.synchronize();
      NumericsReport rep;
      if (st.is_ok()) st = wl.check(tol, &rep);
      if (!st.is_ok()) {
        log.log(2, "{}failed {}: {}", B, who, st.to_string());
        finish(Disposition::kFailed, st.to_string());
        continue;
      }
      log.log(2, "{}verify numerics: {} atol={:g}, rtol={:g} (max abs err {:.3g}, worst/bound {:.3g}, "
              "{} bad elements) {}", B, rep.passed ? "PASSED" : "FAILED", tol.atol, tol.rtol,
              rep.max_abs_err, rep.max_rel_err, rep.bad_elements, oc.name);
      if (!rep.passed) {
        finish(Disposition::kIncorrect,
               fmt::format("max abs err {:.3g}, {} bad elements ({} non-finite)", rep.max_abs_err,
                           rep.bad_elements, rep.nonfinite));
        continue;
      }
    }

    // One call to estimate the time; it counts as the first warmup iteration.
    std::vector<double> est_times;
    st = wl.timer().time_calls(1, [&](int) { return call(next_copy()); }, &est_times);
    if (!st.is_ok()) {
      log.log(2, "{}failed {}: {}", B, who, st.to_string());
      finish(Disposition::kFailed, st.to_string());
      continue;
    }
    const double est = std::max(est_times[0], 1e-6);
    const bool any_warmup = opt.max_warmup_duration_ms > 0 || opt.max_warmup_iterations > 0;
    oc.warmup_iters = any_warmup ? iterations_for_caps(opt.max_warmup_duration_ms,
                                                       opt.max_warmup_iterations, est, 1)
                                 : 0;
    std::vector<double> scratch;
    if (oc.warmup_iters > 1) {
      st = wl.timer().time_calls(oc.warmup_iters - 1, [&](int) { return call(next_copy()); },
                                 &scratch);
    }
    const int n_total = std::max(1, iterations_for_caps(opt.max_tuning_duration_ms,
                                                        opt.max_tuning_iterations, est, 100));

    // Timed phase in up to three chunks; the first two are the pruning probes.
    std::vector<double> times;
    const int probe1 = std::min(kFirstProbe, n_total);
    const int probe2 = std::min(n_total, std::max(probe1 + 1, n_total / 4));
    const int bounds[3] = {probe1, probe2, n_total};
    const double thresholds[3] = {kSlowEarly, kSlowLate, INFINITY};
    double spent_ms = 0;
    bool slow = false;
    for (int c = 0; c < 3 && st.is_ok(); ++c) {
      const int want = bounds[c] - static_cast<int>(times.size());
      if (want <= 0) continue;
      // The duration cap binds every chunk, also when the estimate was optimistic.
      if (opt.max_tuning_duration_ms > 0 && !times.empty() && spent_ms >= opt.max_tuning_duration_ms)
        break;
      const std::size_t before = times.size();
      st = wl.timer().time_calls(want, [&](int) { return call(next_copy()); }, &times);
      for (std::size_t i = before; i < times.size(); ++i) spent_ms += times[i];
      if (!st.is_ok()) break;
      const double med = median_of(times);
      log.log(3, "{}probe {}: {} iters, median {:.6g} ms (best {:.6g} ms) {}", B, c + 1,
              times.size(), med, best, oc.name);
      if (std::isfinite(best) && med > thresholds[c] * best && times.size() < (std::size_t)n_total) {
        oc.median_ms = med;
        oc.timed_iters = static_cast<int>(times.size());
        slow = true;
        break;
      }
    }
    if (!st.is_ok()) {
      log.log(2, "{}failed {}: {}", B, who, st.to_string());
      finish(Disposition::kFailed, st.to_string());
      continue;
    }
    if (slow) {
      log.log(2, "{}skip slow instance {} ({:.6g} ms after {} iters > {}x best {:.6g} ms)", B, who,
              oc.median_ms, oc.timed_iters, oc.timed_iters <= probe1 ? kSlowEarly : kSlowLate, best);
      finish(Disposition::kSkippedSlow, "slower than the best");
      continue;
    }
    oc.median_ms = median_of(times);
    oc.timed_iters = static_cast<int>(times.size());
    log.log(2, "{}tuning using warmup iters {} and tuning iters {} [{:.4g} ms], median {:.6g} ms "
            "instance {}", B, oc.warmup_iters, oc.timed_iters, spent_ms, oc.median_ms, who);
    if (oc.median_ms < best) {
      best = oc.median_ms;
      out->best = sol;
      log.log(2, "{}found better instance id={}. {:.6g} ms. {}", B, id, best, oc.name);
    }
    finish(Disposition::kPassed, "");
  }

  // Final phase: the fastest few and Default are timed again in interleaved rounds, so clock or
  // thermal drift over the tuning run cannot favour whichever candidate was timed first. Each
  // finalist gets at most its own timed-phase iteration count again, split over the rounds.
  std::vector<std::size_t> fin;
  for (std::size_t id = 0; id < out->candidates.size(); ++id)
    if (out->candidates[id].disposition == Disposition::kPassed) fin.push_back(id);
  std::sort(fin.begin(), fin.end(), [&](std::size_t a, std::size_t b) {
    return out->candidates[a].median_ms < out->candidates[b].median_ms;
  });
  if (fin.size() > kFinalists) fin.resize(kFinalists);
  if (out->candidates[0].disposition == Disposition::kPassed &&
      std::find(fin.begin(), fin.end(), std::size_t{0}) == fin.end())
    fin.push_back(0);
  if (fin.size() > 1) {
    std::vector<std::vector<double>> samples(fin.size());
    for (int round = 0; round < kFinalRounds; ++round) {
      for (std::size_t f = 0; f < fin.size(); ++f) {
        std::function<Status(int)> call;
        Status st = finalist_call(candidates[fin[f]], &call);
        const int n = std::max(1, out->candidates[fin[f]].timed_iters / kFinalRounds);
        if (st.is_ok()) st = wl.timer().time_calls(n, call, &samples[f]);
        if (!st.is_ok()) return st;
      }
    }
    best = INFINITY;
    for (std::size_t f = 0; f < fin.size(); ++f) {
      CandidateOutcome& c = out->candidates[fin[f]];
      c.median_ms = median_of(samples[f]);
      log.log(2, "{}final {:.6g} ms {}", B, c.median_ms, c.name);
      if (c.median_ms < best) {
        best = c.median_ms;
        out->best = candidates[fin[f]];
      }
    }
  }
  // Graph tie-break: finalists the back-to-back timing cannot tell apart are told apart by how
  // fast they run replayed from a CUDA graph, where decode runs. Round 21: three GEMM candidates
  // within 0.3 % back-to-back were 2-3 % apart in graphs; a 1-2 us fused op whose back-to-back time
  // is mostly launches picked a block shape 2 % faster back-to-back and 40 % slower in graphs.
  // Default keeps its place if it is within kPreferDefaultWithin of the fastest there too.
  bool graph_decided = false;
  if (opt.graph_tiebreak && out->best && fin.size() > 1) {
    const int calls = static_cast<int>(
        std::clamp<std::size_t>(wl.copies(), std::size_t{kGraphMinCalls}, std::size_t{kGraphMaxCalls}));
    std::vector<double> graph_ms(fin.size(), INFINITY);
    Status gst = Status::ok();
    for (std::size_t f = 0; f < fin.size() && gst.is_ok(); ++f) {
      std::function<Status(int)> call;
      gst = finalist_call(candidates[fin[f]], &call);
      std::vector<double> samples;
      if (gst.is_ok()) gst = wl.timer().time_graph(calls, call, kGraphReplays, &samples);
      if (gst.is_ok()) {
        graph_ms[f] = median_of(samples);
        log.log(2, "{}graph {:.6g} ms {}", B, graph_ms[f], out->candidates[fin[f]].name);
      }
    }
    if (gst.is_ok()) {
      bool launch_bound = false;
      for (std::size_t f = 0; f < fin.size(); ++f)
        launch_bound |= graph_ms[f] <= kLaunchBound * out->candidates[fin[f]].median_ms;
      std::vector<std::size_t> pool;  // indices into fin
      for (std::size_t f = 0; f < fin.size(); ++f)
        if (launch_bound || out->candidates[fin[f]].median_ms <= best * kGraphTieWithin) pool.push_back(f);
      std::size_t pick = pool[0];
      for (std::size_t f : pool)
        if (graph_ms[f] < graph_ms[pick]) pick = f;
      for (std::size_t f : pool)
        if (fin[f] == 0 && graph_ms[f] <= graph_ms[pick] * kPreferDefaultWithin) pick = f;
      if (pool.size() > 1) {
        const CandidateOutcome& w = out->candidates[fin[pick]];
        log.log(2, "{}graph tie-break: {} of {} {} ({:.6g} ms in graphs, {:.6g} ms back-to-back)", B, w.name,
                pool.size(), launch_bound ? "finalists (back-to-back time mostly launches)" : "within 1% back-to-back",
                graph_ms[pick], w.median_ms);
        out->best = candidates[fin[pick]];
        best = w.median_ms;
        graph_decided = true;
      }
    } else {
      // Calls that cannot be captured are expected (kNotSupported, verbose 2); any other error is a
      // warning at every verbosity. The back-to-back choice stands either way.
      if (gst.code() == StatusCode::kNotSupported)
        log.log(2, "{}graph tie-break skipped: {}", B, gst.message());
      else
        log.warn(fmt::format("graph tie-break for {} failed, keeping the back-to-back choice: {}", label,
                             gst.to_string()));
    }
  }
  // Otherwise Default stays unless a candidate beats it by more than kPreferDefaultWithin: a tie
  // within timing noise must not swap the library's own choice for an equal one.
  const CandidateOutcome& def = out->candidates[0];
  if (!graph_decided && def.disposition == Disposition::kPassed && out->best && out->best != candidates[0] &&
      def.median_ms <= best * kPreferDefaultWithin) {
    log.log(2, "{}keeping {} ({:.6g} ms): within {:.0f}% of {} ({:.6g} ms)", B, def.name,
            def.median_ms, (kPreferDefaultWithin - 1) * 100, out->best->name(), best);
    out->best = candidates[0];
    best = def.median_ms;
  }
  out->best_ms = best;
  out->wall_ms = std::chrono::duration<double, std::milli>(clock::now() - t_begin).count();
  if (!out->best) {
    return Status(StatusCode::kNotSupported,
                  fmt::format("no candidate passed for {} ({} tried)", label, candidates.size()));
  }
  if (log.enabled(1)) {
    std::vector<const CandidateOutcome*> passed;
    for (const auto& c : out->candidates)
      if (c.disposition == Disposition::kPassed) passed.push_back(&c);
    std::sort(passed.begin(), passed.end(),
              [](auto* a, auto* b) { return a->median_ms < b->median_ms; });
    for (std::size_t i = 0; i < passed.size() && i < 5; ++i) {
      log.log(1, "{}top{} {:.6g} ms {}", B, i + 1, passed[i]->median_ms, passed[i]->name);
    }
    log.log(1, "{}found fastest for {} {} ({:.6g} ms, tuning took {:.0f} ms)", Logger::kLast, label,
            out->best->name(), best, out->wall_ms);
  }
  return Status::ok();
}

}  // namespace tunable
