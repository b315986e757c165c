#include "tune/tuner.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

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

namespace {

std::atomic<std::size_t> g_host_memory_for_testing{0};

// The value of a "Key:   123 kB" line of a /proc file, in bytes; 0 when absent.
std::size_t proc_kib_field(const char* file, const char* key) {
  std::ifstream f(file);
  std::string line;
  const std::size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
      return static_cast<std::size_t>(std::strtoull(line.c_str() + n + 1, nullptr, 10)) << 10;
  return 0;
}

// A number in a one-line file ("max" or unreadable: none).
bool file_number(const char* file, std::size_t* out) {
  std::ifstream f(file);
  std::string v;
  if (!(f >> v) || v.empty() || v[0] < '0' || v[0] > '9') return false;
  *out = static_cast<std::size_t>(std::strtoull(v.c_str(), nullptr, 10));
  return true;
}

// What `limit` leaves above `used` (0 when used is over it); SIZE_MAX for no limit.
std::size_t headroom(int resource, std::size_t used) {
  struct rlimit rl;
  if (::getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  const std::size_t limit = static_cast<std::size_t>(rl.rlim_cur);
  return limit > used ? limit - used : 0;
}

}  // namespace

std::size_t host_memory_available() {
  if (const std::size_t fake = g_host_memory_for_testing.load()) return fake;
  std::size_t avail = proc_kib_field("/proc/meminfo", "MemAvailable");
  if (avail == 0) {
    const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    avail = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : SIZE_MAX;
  }
  std::size_t cg_max = 0, cg_now = 0;
  if (file_number("/sys/fs/cgroup/memory.max", &cg_max) && file_number("/sys/fs/cgroup/memory.current", &cg_now))
    avail = std::min(avail, cg_max > cg_now ? cg_max - cg_now : 0);
  avail = std::min(avail, headroom(RLIMIT_AS, proc_kib_field("/proc/self/status", "VmSize")));
  avail = std::min(avail, headroom(RLIMIT_DATA, proc_kib_field("/proc/self/status", "VmData")));
  return avail;
}

void set_host_memory_available_for_testing(std::size_t bytes) { g_host_memory_for_testing.store(bytes); }

std::string format_bytes(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 30)) return fmt::format("{:.1f} GiB", bytes / 1073741824.0);
  if (bytes >= (std::size_t{1} << 20)) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  if (bytes >= (std::size_t{1} << 10)) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

namespace {

using SteadyClock = std::chrono::steady_clock;

double ms_since(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t).count();
}

// What the phases of one tuning share.
struct Tuning {
  const Options& opt;
  Logger& log;
  const std::string& label;
  const CandidateSet& cands;
  WorkloadBase& wl;
  const std::function<void(const TuneProgress&)>& progress;
  TunedIndex* out;
  SteadyClock::time_point t_begin;
  Tolerance tol;
  std::size_t rot = 0;     // rotates through copies 1.. so consecutive calls read different inputs
  double best = INFINITY;  // the fastest median so far

  std::size_t next_copy() {
    rot = (rot + 1) % wl.copies();
    return rot;
  }
  // Candidate `id`'s call on the next input copy, as the timer takes it.
  std::function<Status(int)> on_next_copy(std::size_t id, void* ws, std::size_t ws_bytes) {
    return [this, id, ws, ws_bytes](int) { return cands.run(id, next_copy(), ws, ws_bytes); };
  }
  // A finalist's call on the next input copy, with the workspace it needs (the final phases re-time
  // candidates whose workspace request already succeeded once).
  Status finalist_call(std::size_t id, std::function<Status(int)>* call) {
    void* ws = nullptr;
    const std::size_t ws_bytes = cands.workspace_bytes(id);
    TUNABLE_RETURN_IF_ERROR(wl.workspace(ws_bytes, &ws));
    *call = on_next_copy(id, ws, ws_bytes);
    return Status::ok();
  }
  // Records candidate `id`'s disposition and reports the progress.
  void finish(std::size_t id, CandidateOutcome& oc, Disposition d, std::string detail) {
    oc.disposition = d;
    oc.detail = std::move(detail);
    out->candidates.push_back(oc);
    if (progress) progress(TuneProgress{label, id + 1, cands.size(), ms_since(t_begin)});
  }
};

// Where first calls are representative, a candidate whose first call took `first_ms`, far longer than
// the best so far (kSlowFirstCall), is skipped there. True when it was.
bool skip_hopeless_first_call(Tuning& t, std::size_t id, const std::string& who, CandidateOutcome& oc,
                              double first_ms) {
  if (!t.wl.first_call_is_representative() || !std::isfinite(t.best) || !(first_ms > kSlowFirstCallMinMs) ||
      !(first_ms > kSlowFirstCall * t.best))
    return false;
  oc.median_ms = first_ms;
  t.log.log(2, "{}skip slow instance {} (first call {:.6g} ms > {}x best {:.6g} ms)", Logger::kBranch, who, first_ms,
            kSlowFirstCall, t.best);
  t.finish(id, oc, Disposition::kSkippedSlow, "first call far slower than the best");
  return true;
}

// Numerics phase: the candidate runs once on copy 0 (its output poisoned or restored first) and is
// compared with the reference. False, with the disposition recorded, when it failed, is wrong, or
// its first call was hopelessly slow.
bool check_numerics(Tuning& t, std::size_t id, const std::string& who, CandidateOutcome& oc, void* ws,
                    std::size_t ws_bytes) {
  const std::string& B = Logger::kBranch;
  Status st = t.wl.prepare_check();
  double first_ms = -1;
  if (st.is_ok() && t.wl.first_call_is_representative()) {
    std::vector<double> ms;
    st = t.wl.timer().time_calls(1, [&](int) { return t.cands.run(id, 0, ws, ws_bytes); }, &ms);
    if (st.is_ok()) first_ms = ms[0];
  } else if (st.is_ok()) {
    st = t.cands.run(id, 0, ws, ws_bytes);
  }
  if (st.is_ok()) st = t.wl.synchronize();
  if (st.is_ok() && skip_hopeless_first_call(t, id, who, oc, first_ms)) return false;
  NumericsReport rep;
  if (st.is_ok()) st = t.wl.check(t.tol, &rep);
  if (!st.is_ok()) {
    t.log.log(2, "{}failed {}: {}", B, who, st.to_string());
    t.finish(id, oc, Disposition::kFailed, st.to_string());
    return false;
  }
  t.log.log(2, "{}verify numerics: {} atol={:g}, rtol={:g} (max abs err {:.3g}, worst/bound {:.3g}, "
            "{} bad elements) {}", B, rep.passed ? "PASSED" : "FAILED", t.tol.atol, t.tol.rtol,
            rep.max_abs_err, rep.max_rel_err, rep.bad_elements, oc.name);
  if (!rep.passed) {
    t.finish(id, oc, Disposition::kIncorrect,
             fmt::format("max abs err {:.3g}, {} bad elements ({} non-finite)", rep.max_abs_err,
                         rep.bad_elements, rep.nonfinite));
    return false;
  }
  return true;
}

// Timing phase with pruning: one call estimates the time (it counts as the first warmup iteration),
// the rest of the warmup, then the timed calls in up to three chunks of which the first two are
// probes that drop a candidate slower than the best so far. Ends the candidate's outcome.
void time_with_pruning(Tuning& t, std::size_t id, const std::string& who, CandidateOutcome& oc, void* ws,
                       std::size_t ws_bytes) {
  const std::string& B = Logger::kBranch;
  const Options& opt = t.opt;
  const std::function<Status(int)> call = t.on_next_copy(id, ws, ws_bytes);
  std::vector<double> est_times;
  Status st = t.wl.timer().time_calls(1, call, &est_times);
  if (!st.is_ok()) {
    t.log.log(2, "{}failed {}: {}", B, who, st.to_string());
    t.finish(id, oc, Disposition::kFailed, st.to_string());
    return;
  }
  if (!t.opt.numerical_check && skip_hopeless_first_call(t, id, who, oc, est_times[0])) return;
  const double est = std::max(est_times[0], 1e-6);
  const bool any_warmup = opt.max_warmup_duration_ms > 0 || opt.max_warmup_iterations > 0;
  oc.warmup_iters = any_warmup ? iterations_for_caps(opt.max_warmup_duration_ms, opt.max_warmup_iterations, est, 1)
                               : 0;
  std::vector<double> scratch;
  if (oc.warmup_iters > 1) st = t.wl.timer().time_calls(oc.warmup_iters - 1, call, &scratch);
  const int n_total =
      std::max(1, iterations_for_caps(opt.max_tuning_duration_ms, opt.max_tuning_iterations, est, 100));

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
    if (opt.max_tuning_duration_ms > 0 && !times.empty() && spent_ms >= opt.max_tuning_duration_ms) break;
    const std::size_t before = times.size();
    st = t.wl.timer().time_calls(want, call, &times);
    for (std::size_t i = before; i < times.size(); ++i) spent_ms += times[i];
    if (!st.is_ok()) break;
    const double med = median_of(times);
    t.log.log(3, "{}probe {}: {} iters, median {:.6g} ms (best {:.6g} ms) {}", B, c + 1, times.size(), med,
              t.best, oc.name);
    if (std::isfinite(t.best) && med > thresholds[c] * t.best && times.size() < static_cast<std::size_t>(n_total)) {
      oc.median_ms = med;
      oc.timed_iters = static_cast<int>(times.size());
      slow = true;
      break;
    }
  }
  if (!st.is_ok()) {
    t.log.log(2, "{}failed {}: {}", B, who, st.to_string());
    t.finish(id, oc, Disposition::kFailed, st.to_string());
    return;
  }
  if (slow) {
    t.log.log(2, "{}skip slow instance {} ({:.6g} ms after {} iters > {}x best {:.6g} ms)", B, who, oc.median_ms,
              oc.timed_iters, oc.timed_iters <= probe1 ? kSlowEarly : kSlowLate, t.best);
    t.finish(id, oc, Disposition::kSkippedSlow, "slower than the best");
    return;
  }
  oc.median_ms = median_of(times);
  oc.timed_iters = static_cast<int>(times.size());
  t.log.log(2, "{}tuning using warmup iters {} and tuning iters {} [{:.4g} ms], median {:.6g} ms instance {}", B,
            oc.warmup_iters, oc.timed_iters, spent_ms, oc.median_ms, who);
  if (oc.median_ms < t.best) {
    t.best = oc.median_ms;
    t.out->best = id;
    t.log.log(2, "{}found better instance id={}. {:.6g} ms. {}", B, id, t.best, oc.name);
  }
  t.finish(id, oc, Disposition::kPassed, "");
}

// Every candidate in turn: can it run, its workspace, its numerics, its timing.
void tune_each(Tuning& t) {
  const std::string& B = Logger::kBranch;
  for (std::size_t id = 0; id < t.cands.size(); ++id) {
    CandidateOutcome oc;
    oc.name = t.cands.name(id);
    const std::string who = fmt::format("id={}, {} {}", id, t.label, oc.name);
    Status st = t.cands.can_implement(id);
    if (!st.is_ok()) {
      t.log.log(2, "{}unsupported {}: {}", B, who, st.message());
      t.finish(id, oc, Disposition::kUnsupported, st.message());
      continue;
    }
    void* ws = nullptr;
    const std::size_t ws_bytes = t.cands.workspace_bytes(id);
    st = t.wl.workspace(ws_bytes, &ws);
    if (!st.is_ok()) {
      t.log.log(2, "{}unsupported {}: workspace of {} bytes: {}", B, who, ws_bytes, st.message());
      t.finish(id, oc, Disposition::kUnsupported, st.message());
      continue;
    }
    if (t.opt.numerical_check && !check_numerics(t, id, who, oc, ws, ws_bytes)) continue;
    time_with_pruning(t, id, who, oc, ws, ws_bytes);
  }
}

// The fastest few that passed, and Default when it passed.
std::vector<std::size_t> pick_finalists(const TunedIndex& out) {
  std::vector<std::size_t> fin;
  for (std::size_t id = 0; id < out.candidates.size(); ++id)
    if (out.candidates[id].disposition == Disposition::kPassed) fin.push_back(id);
  std::sort(fin.begin(), fin.end(), [&](std::size_t a, std::size_t b) {
    return out.candidates[a].median_ms < out.candidates[b].median_ms;
  });
  if (fin.size() > kFinalists) fin.resize(kFinalists);
  if (out.candidates[0].disposition == Disposition::kPassed &&
      std::find(fin.begin(), fin.end(), std::size_t{0}) == fin.end())
    fin.push_back(0);
  return fin;
}

// Re-timing phase: the finalists are timed again in interleaved rounds, so clock or thermal drift
// over the tuning run cannot favour whichever candidate was timed first. Each finalist gets at most
// its own timed-phase iteration count again, split over the rounds; the fastest median wins.
Status retime_finalists(Tuning& t, const std::vector<std::size_t>& fin) {
  std::vector<std::vector<double>> samples(fin.size());
  for (int round = 0; round < kFinalRounds; ++round) {
    for (std::size_t f = 0; f < fin.size(); ++f) {
      std::function<Status(int)> call;
      Status st = t.finalist_call(fin[f], &call);
      const int n = std::max(1, t.out->candidates[fin[f]].timed_iters / kFinalRounds);
      if (st.is_ok()) st = t.wl.timer().time_calls(n, call, &samples[f]);
      if (!st.is_ok()) return st;
    }
  }
  t.best = INFINITY;
  for (std::size_t f = 0; f < fin.size(); ++f) {
    CandidateOutcome& c = t.out->candidates[fin[f]];
    c.median_ms = median_of(samples[f]);
    t.log.log(2, "{}final {:.6g} ms {}", Logger::kBranch, c.median_ms, c.name);
    if (c.median_ms < t.best) {
      t.best = c.median_ms;
      t.out->best = fin[f];
    }
  }
  return Status::ok();
}

// Graph tie-break: finalists the back-to-back timing cannot tell apart are told apart by how fast
// they run replayed from a CUDA graph, where decode runs. GEMM candidates within 0.3 % of each other
// back-to-back were measured 2-3 % apart in graphs, and a 1-2 us fused op whose back-to-back time is
// mostly launches picked a block shape 2 % faster back-to-back and 40 % slower in graphs. Default
// keeps its place if it is within kPreferDefaultWithin of the fastest there too. True when the
// graph times decided the winner.
bool graph_tiebreak(Tuning& t, const std::vector<std::size_t>& fin) {
  const std::string& B = Logger::kBranch;
  const int calls = static_cast<int>(
      std::clamp<std::size_t>(t.wl.copies(), std::size_t{kGraphMinCalls}, std::size_t{kGraphMaxCalls}));
  std::vector<double> graph_ms(fin.size(), INFINITY);
  Status gst = Status::ok();
  for (std::size_t f = 0; f < fin.size() && gst.is_ok(); ++f) {
    std::function<Status(int)> call;
    gst = t.finalist_call(fin[f], &call);
    std::vector<double> samples;
    if (gst.is_ok()) gst = t.wl.timer().time_graph(calls, call, kGraphReplays, &samples);
    if (gst.is_ok()) {
      graph_ms[f] = median_of(samples);
      t.log.log(2, "{}graph {:.6g} ms {}", B, graph_ms[f], t.out->candidates[fin[f]].name);
    }
  }
  if (!gst.is_ok()) {
    // Calls that cannot be captured are expected (kNotSupported, verbose 2); any other error is a
    // warning at every verbosity. The back-to-back choice stands either way.
    if (gst.code() == StatusCode::kNotSupported)
      t.log.log(2, "{}graph tie-break skipped: {}", B, gst.message());
    else
      t.log.warn(fmt::format("graph tie-break for {} failed, keeping the back-to-back choice: {}", t.label,
                             gst.to_string()));
    return false;
  }
  bool launch_bound = false;
  for (std::size_t f = 0; f < fin.size(); ++f)
    launch_bound |= graph_ms[f] <= kLaunchBound * t.out->candidates[fin[f]].median_ms;
  std::vector<std::size_t> pool;  // indices into fin
  for (std::size_t f = 0; f < fin.size(); ++f)
    if (launch_bound || t.out->candidates[fin[f]].median_ms <= t.best * kGraphTieWithin) pool.push_back(f);
  std::size_t pick = pool[0];
  for (std::size_t f : pool)
    if (graph_ms[f] < graph_ms[pick]) pick = f;
  for (std::size_t f : pool)
    if (fin[f] == 0 && graph_ms[f] <= graph_ms[pick] * kPreferDefaultWithin) pick = f;
  if (pool.size() <= 1) return false;
  const CandidateOutcome& w = t.out->candidates[fin[pick]];
  t.log.log(2, "{}graph tie-break: {} of {} {} ({:.6g} ms in graphs, {:.6g} ms back-to-back)", B, w.name,
            pool.size(), launch_bound ? "finalists (back-to-back time mostly launches)" : "within 1% back-to-back",
            graph_ms[pick], w.median_ms);
  t.out->best = fin[pick];
  t.best = w.median_ms;
  return true;
}

// Default stays unless a candidate beats it by more than kPreferDefaultWithin: a tie within timing
// noise must not swap the library's own choice for an equal one.
void prefer_default(Tuning& t) {
  const CandidateOutcome& def = t.out->candidates[0];
  if (def.disposition != Disposition::kPassed || t.out->best == TunedIndex::kNone || t.out->best == 0 ||
      !(def.median_ms <= t.best * kPreferDefaultWithin))
    return;
  t.log.log(2, "{}keeping {} ({:.6g} ms): within {:.0f}% of {} ({:.6g} ms)", Logger::kBranch, def.name,
            def.median_ms, (kPreferDefaultWithin - 1) * 100, t.cands.name(t.out->best), t.best);
  t.out->best = 0;
  t.best = def.median_ms;
}

// The verbose summary: the five fastest that passed and the choice.
void log_summary(Tuning& t) {
  if (!t.log.enabled(1)) return;
  std::vector<const CandidateOutcome*> passed;
  for (const auto& c : t.out->candidates)
    if (c.disposition == Disposition::kPassed) passed.push_back(&c);
  std::sort(passed.begin(), passed.end(), [](auto* a, auto* b) { return a->median_ms < b->median_ms; });
  for (std::size_t i = 0; i < passed.size() && i < 5; ++i)
    t.log.log(1, "{}top{} {:.6g} ms {}", Logger::kBranch, i + 1, passed[i]->median_ms, passed[i]->name);
  t.log.log(1, "{}found fastest for {} {} ({:.6g} ms, tuning took {:.0f} ms)", Logger::kLast, t.label,
            t.cands.name(t.out->best), t.best, t.out->wall_ms);
}

}  // namespace

Status tune_candidate_set(const Options& opt, Logger& log, const std::string& label, const CandidateSet& cands,
                          WorkloadBase& wl, TunedIndex* out,
                          const std::function<void(const TuneProgress&)>& progress) {
  Tuning t{opt, log, label, cands, wl, progress, out, SteadyClock::now(), wl.default_tolerance()};
  if (opt.atol >= 0) t.tol.atol = opt.atol;
  if (opt.rtol >= 0) t.tol.rtol = opt.rtol;
  log.log(1, "finding fastest for {} out of {} candidates ({} input copies of {:.1f} MiB)", label, cands.size(),
          wl.copies(), wl.bytes_per_copy() / 1048576.0);
  out->best = TunedIndex::kNone;

  tune_each(t);
  const std::vector<std::size_t> fin = pick_finalists(*out);
  if (fin.size() > 1) TUNABLE_RETURN_IF_ERROR(retime_finalists(t, fin));
  const bool graph_decided = opt.graph_tiebreak && out->best != TunedIndex::kNone && fin.size() > 1 &&
                             graph_tiebreak(t, fin);
  if (!graph_decided) prefer_default(t);
  out->best_ms = t.best;
  out->wall_ms = ms_since(t.t_begin);
  if (out->best == TunedIndex::kNone)
    return Status(StatusCode::kNotSupported, fmt::format("no candidate passed for {} ({} tried)", label, cands.size()));
  log_summary(t);
  return Status::ok();
}

}  // namespace tunable
