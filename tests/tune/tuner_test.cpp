// The tuning loop on fake candidates whose run time is simulated, so pruning, caps and the
// median choice are checked exactly rather than against a noisy clock.
#include "tune/tuner.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "cuda/cuda_util.hpp"
#include "tune/cuda_timing.hpp"
#include "test_util.hpp"
#include "tune/tunable_op.hpp"

namespace tunable {
namespace {

struct FakeArgs {
  double* out = nullptr;
  int size = 1;  // problem "size"; part of the key
};

struct Clock {
  double last_ms = 0;
  std::string last_name;
  std::map<std::string, int> calls;
  bool graphs = true;                       ///< whether the timer can replay graphs
  bool graph_fails = false;                 ///< graph replays fail with a CUDA error
  std::map<std::string, double> graph_ms;   ///< per-call time in graphs (default: last_ms)
  std::map<std::string, int> graph_timed;   ///< graph timings per solution
};

class FakeSolution final : public Solution<FakeArgs> {
 public:
  FakeSolution(Clock& clock, std::string name, double value, std::vector<double> times,
               bool supported = true, bool refuses_run = false)
      : clock_(clock), name_(std::move(name)), value_(value), times_(std::move(times)),
        supported_(supported), refuses_run_(refuses_run) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const FakeArgs& a) const override {
    if (!supported_) return Status(StatusCode::kNotSupported, "fake says no");
    // "picky" takes only 16-byte aligned outputs, as a vector kernel would.
    if (name_ == "picky" && reinterpret_cast<std::uintptr_t>(a.out) % 16 != 0)
      return Status(StatusCode::kMisaligned, "fake picky: out (not 16-byte aligned)");
    return Status::ok();
  }
  Status run(const FakeArgs& a, void*, std::size_t, Stream) const override {
    if (refuses_run_) return Status(StatusCode::kNotSupported, "fake refuses this stream");
    *a.out = value_;
    clock_.last_name = name_;
    int n = clock_.calls[name_]++;
    clock_.last_ms = times_[n % times_.size()];
    return Status::ok();
  }

 private:
  Clock& clock_;
  std::string name_;
  double value_;
  std::vector<double> times_;
  bool supported_;
  bool refuses_run_;
};

class FakeTimer final : public Timer {
 public:
  explicit FakeTimer(Clock& c) : clock_(c) {}
  Status time_calls(int n, const std::function<Status(int)>& fn, std::vector<double>* t) override {
    for (int i = 0; i < n; ++i) {
      TUNABLE_RETURN_IF_ERROR(fn(i));
      t->push_back(clock_.last_ms);
    }
    return Status::ok();
  }
  Status time_graph(int n, const std::function<Status(int)>& fn, int replays, std::vector<double>* t) override {
    if (!clock_.graphs) return Status(StatusCode::kNotSupported, "fake timer: no graphs");
    if (clock_.graph_fails) return Status(StatusCode::kCudaError, "fake timer: graph launch failed");
    for (int i = 0; i < n; ++i) TUNABLE_RETURN_IF_ERROR(fn(i));
    const auto it = clock_.graph_ms.find(clock_.last_name);
    ++clock_.graph_timed[clock_.last_name];
    for (int r = 0; r < replays; ++r) t->push_back(it != clock_.graph_ms.end() ? it->second : clock_.last_ms);
    return Status::ok();
  }

 private:
  Clock& clock_;
};

class FakeWorkload final : public Workload<FakeArgs> {
 public:
  explicit FakeWorkload(Clock& c) : timer_(c) {
    for (int i = 0; i < 3; ++i) args_[i].out = &out_[i];
  }
  std::size_t copies() const override { return 3; }
  std::size_t bytes_per_copy() const override { return 8; }
  const FakeArgs& args(std::size_t i) const override { return args_[i]; }
  Status prepare_check() override {
    out_[0] = std::nan("");
    return Status::ok();
  }
  Status check(const Tolerance& tol, NumericsReport* rep) override {
    const double ref = 1.0;
    *rep = compare_outputs(&out_[0], &ref, 1, tol);
    return Status::ok();
  }
  Tolerance default_tolerance() const override { return {1e-6, 1e-6}; }
  Status workspace(std::size_t, void** p) override {
    *p = nullptr;
    return Status::ok();
  }
  Timer& timer() override { return timer_; }

 private:
  double out_[3] = {};
  FakeArgs args_[3];
  FakeTimer timer_;
};

struct Fixture : ::testing::Test {
  Clock clock;
  Logger log;
  Options opt;
  std::vector<SolutionPtr<FakeArgs>> cands;
  void add(const std::string& name, double value, std::vector<double> times, bool ok = true) {
    cands.push_back(std::make_shared<FakeSolution>(clock, name, value, std::move(times), ok));
  }
  TuneOutcome<FakeArgs> tune(Status* st = nullptr) {
    FakeWorkload wl(clock);
    TuneOutcome<FakeArgs> out;
    Status s = tune_candidates(opt, log, "Fake(p)", cands, wl, &out);
    if (st) *st = s;
    else EXPECT_TRUE(s.is_ok()) << s.to_string();
    return out;
  }
  const CandidateOutcome& outcome(const TuneOutcome<FakeArgs>& o, const std::string& name) {
    for (const auto& c : o.candidates)
      if (c.name == name) return c;
    throw std::runtime_error("no outcome for " + name);
  }
};

TEST_F(Fixture, NumericsCheckRejectsWrongCandidate) {
  add("Default", 1.0, {1.0});
  add("fast_but_wrong", 1.01, {0.1});
  add("fast_nan", std::nan(""), {0.05});
  add("fast_inf", INFINITY, {0.05});
  add("right", 1.0, {0.5});
  auto o = tune();
  EXPECT_EQ(o.best->name(), "right");
  EXPECT_EQ(outcome(o, "fast_but_wrong").disposition, Disposition::kIncorrect);
  EXPECT_EQ(outcome(o, "fast_nan").disposition, Disposition::kIncorrect);
  EXPECT_EQ(outcome(o, "fast_inf").disposition, Disposition::kIncorrect);
}

TEST_F(Fixture, NumericsCheckOffTrustsCandidates) {
  opt.numerical_check = false;
  add("Default", 1.0, {1.0});
  add("fast_but_wrong", 1.01, {0.1});
  EXPECT_EQ(tune().best->name(), "fast_but_wrong");
}

TEST_F(Fixture, ToleranceOverrideApplies) {
  opt.atol = 0;
  opt.rtol = 0.05;  // 1.01 is within 5%
  add("Default", 1.0, {1.0});
  add("close", 1.01, {0.1});
  EXPECT_EQ(tune().best->name(), "close");
}

TEST_F(Fixture, UnsupportedCandidatesAreSkipped) {
  add("Default", 1.0, {1.0});
  add("nope", 1.0, {0.01}, /*ok=*/false);
  auto o = tune();
  EXPECT_EQ(o.best->name(), "Default");
  EXPECT_EQ(outcome(o, "nope").disposition, Disposition::kUnsupported);
  EXPECT_EQ(clock.calls["nope"], 0);
}

TEST_F(Fixture, PruningEarlyAndLate) {
  opt.max_tuning_duration_ms = 0;
  opt.max_tuning_iterations = 40;
  add("Default", 1.0, {1.0});
  add("twice_as_slow", 1.0, {2.0});   // > 1.5x: dropped after the first probe (3 iterations)
  add("a_bit_slow", 1.0, {1.3});      // < 1.5x but > 1.15x: dropped after the second probe
  add("close", 1.0, {1.1});           // within 1.15x: timed in full
  auto o = tune();
  EXPECT_EQ(o.best->name(), "Default");
  EXPECT_EQ(outcome(o, "twice_as_slow").disposition, Disposition::kSkippedSlow);
  EXPECT_EQ(outcome(o, "twice_as_slow").timed_iters, kFirstProbe);
  EXPECT_EQ(outcome(o, "a_bit_slow").disposition, Disposition::kSkippedSlow);
  EXPECT_EQ(outcome(o, "a_bit_slow").timed_iters, 10);  // 40 / 4
  EXPECT_EQ(outcome(o, "close").disposition, Disposition::kPassed);
  EXPECT_EQ(outcome(o, "close").timed_iters, 40);
}

TEST_F(Fixture, IterationCapRespectedIncludingProbes) {
  opt.max_tuning_duration_ms = 0;
  opt.max_tuning_iterations = 7;
  opt.max_warmup_duration_ms = 0;
  opt.max_warmup_iterations = 4;
  add("Default", 1.0, {1.0});
  add("other", 1.0, {0.9});
  auto o = tune();
  for (const char* n : {"Default", "other"}) {
    EXPECT_EQ(outcome(o, n).timed_iters, 7) << n;
    EXPECT_EQ(outcome(o, n).warmup_iters, 4) << n;
    // check run + warmup (the estimate call is the first warmup iteration) + timed, then the
    // final phase: 3 rounds of 7/3 calls, then the graph tie-break's capture of kGraphMinCalls
    // calls (3 input copies; the replays run on the GPU, not through fn).
    EXPECT_EQ(clock.calls[n], 1 + 4 + 7 + 3 * 2 + kGraphMinCalls) << n;
  }
}

TEST_F(Fixture, DurationCapBindsAndAtLeastOneIteration) {
  opt.max_tuning_iterations = 0;
  opt.max_tuning_duration_ms = 10;
  opt.max_warmup_duration_ms = 0;
  opt.max_warmup_iterations = 0;
  add("Default", 1.0, {1.0});   // 10 ms / 1 ms = 10 iterations
  add("huge", 1.0, {50.0});     // 50 ms > cap: still timed once... then pruned? no best is faster
  auto o = tune();
  EXPECT_EQ(outcome(o, "Default").timed_iters, 10);
  EXPECT_EQ(outcome(o, "Default").warmup_iters, 0);
  EXPECT_EQ(outcome(o, "huge").timed_iters, 1);
  // check + estimate + timed + final + the graph tie-break's capture
  EXPECT_EQ(clock.calls["Default"], 1 + 1 + 10 + 3 * 3 + kGraphMinCalls);
}

TEST_F(Fixture, DurationCapStopsWhenEstimateWasOptimistic) {
  opt.max_tuning_iterations = 100;
  opt.max_tuning_duration_ms = 10;
  opt.max_warmup_iterations = 0;
  opt.max_warmup_duration_ms = 0;
  // The estimate call (2nd run) says 0.1 ms, then every call takes 5 ms.
  std::vector<double> times(200, 5.0);
  times[0] = 1.0;
  times[1] = 0.1;
  add("Default", 1.0, times);
  auto o = tune();
  // 100 planned; probes of 3 then 25 - the cap is hit after the first probe (15 ms).
  EXPECT_EQ(outcome(o, "Default").timed_iters, 3);
}

TEST_F(Fixture, ChoosesByMedianNotMean) {
  opt.max_tuning_iterations = 9;
  opt.max_tuning_duration_ms = 0;
  add("Default", 1.0, {1.0});
  // Median 0.5 but mean > 1 because of rare huge outliers.
  add("spiky", 1.0, {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 20.0});
  auto o = tune();
  EXPECT_EQ(o.best->name(), "spiky");
  EXPECT_DOUBLE_EQ(outcome(o, "spiky").median_ms, 0.5);
}

TEST_F(Fixture, FinalRoundsUndoAnEarlyLuckyTiming) {
  opt.max_tuning_iterations = 9;
  opt.max_tuning_duration_ms = 0;
  opt.max_warmup_iterations = 0;
  opt.max_warmup_duration_ms = 0;
  add("Default", 1.0, {1.0});
  // Timed fast while it was first measured (check, estimate, 9 timed), slow ever after.
  std::vector<double> t(11, 0.5);
  t.resize(60, 2.0);
  add("lucky", 1.0, t);
  auto o = tune();
  EXPECT_EQ(o.best->name(), "Default");
  EXPECT_DOUBLE_EQ(outcome(o, "lucky").median_ms, 2.0);
}

TEST_F(Fixture, DefaultKeptWithinOnePercent) {
  opt.max_tuning_iterations = 9;
  opt.max_tuning_duration_ms = 0;
  add("Default", 1.0, {1.0});
  add("barely", 1.0, {0.995});
  add("clearly", 1.0, {0.97});
  EXPECT_EQ(tune().best->name(), "clearly");
  cands.pop_back();
  EXPECT_EQ(tune().best->name(), "Default");
}

// Finalists within 1 % of each other back-to-back are told apart in graphs; Default keeps its place
// only if it is within 1 % of the fastest there too.
/// Default and two candidates 0.5 % apart back-to-back, 10 % faster than Default.
void add_tied_pair(Fixture& f) {
  f.opt.max_tuning_iterations = 9;
  f.opt.max_tuning_duration_ms = 0;
  f.add("Default", 1.0, {1.0});
  f.add("fast_b2b", 1.0, {0.900});
  f.add("fast_graph", 1.0, {0.905});
}

TEST_F(Fixture, GraphTieBreakAmongBackToBackTies) {
  add_tied_pair(*this);
  clock.graph_ms = {{"Default", 1.0}, {"fast_b2b", 0.95}, {"fast_graph", 0.90}};
  auto o = tune();
  EXPECT_EQ(o.best->name(), "fast_graph");
  EXPECT_DOUBLE_EQ(o.best_ms, 0.905);  // the stored time stays the back-to-back one
  // Every finalist is timed in graphs once; Default (10 % slower back-to-back) is not in the tie.
  EXPECT_EQ(clock.graph_timed["fast_b2b"], 1);
  EXPECT_EQ(clock.graph_timed["Default"], 1);
  // Default faster in graphs does not make it part of a tie it is 10 % outside back-to-back (and
  // 0.85 of its back-to-back time is not launch-bound).
  clock.graph_ms = {{"Default", 0.85}, {"fast_b2b", 0.95}, {"fast_graph", 0.90}};
  EXPECT_EQ(tune().best->name(), "fast_graph");
}

// A finalist that runs in graphs in <= 80 % of its back-to-back time says the back-to-back times
// are mostly launches: every finalist is ranked by its graph time (as few-row fused ops are on an H100).
TEST_F(Fixture, LaunchBoundProblemsRankAllFinalistsInGraphs) {
  opt.max_tuning_iterations = 9;
  opt.max_tuning_duration_ms = 0;
  add("Default", 1.0, {2.60});
  add("t512", 1.0, {2.148});
  add("t128", 1.0, {2.196});
  add("t256", 1.0, {2.232});
  clock.graph_ms = {{"Default", 1.40}, {"t512", 1.80}, {"t128", 1.29}, {"t256", 1.32}};
  auto o = tune();
  EXPECT_EQ(o.best->name(), "t128");
  EXPECT_DOUBLE_EQ(o.best_ms, 2.196);
  // Not launch-bound (every graph time > 80 % of the back-to-back one): the 2 % back-to-back winner stays.
  clock.graph_ms = {{"Default", 2.5}, {"t512", 2.0}, {"t128", 1.9}, {"t256", 1.95}};
  EXPECT_EQ(tune().best->name(), "t512");
}

TEST_F(Fixture, GraphTieBreakLeavesClearWinnersAndDefaultWithinOnePercent) {
  opt.max_tuning_iterations = 9;
  opt.max_tuning_duration_ms = 0;
  add("Default", 1.0, {1.0});
  add("clearly", 1.0, {0.97});  // 3 % faster back-to-back: no tie, graphs do not decide
  clock.graph_ms = {{"Default", 0.85}, {"clearly", 0.9}};
  EXPECT_EQ(tune().best->name(), "clearly");
  cands.pop_back();
  add("barely", 1.0, {0.995});  // tied; 0.5 % faster in graphs: Default stays
  clock.graph_ms = {{"Default", 1.0}, {"barely", 0.995}};
  EXPECT_EQ(tune().best->name(), "Default");
  clock.graph_ms = {{"Default", 1.0}, {"barely", 0.95}};  // 5 % faster in graphs: it wins
  EXPECT_EQ(tune().best->name(), "barely");
}

TEST_F(Fixture, GraphTieBreakOffOrUnavailableKeepsBackToBackChoice) {
  add_tied_pair(*this);
  clock.graph_ms = {{"fast_b2b", 0.95}, {"fast_graph", 0.90}};
  opt.graph_tiebreak = false;
  EXPECT_EQ(tune().best->name(), "fast_b2b");
  EXPECT_TRUE(clock.graph_timed.empty());
  opt.graph_tiebreak = true;
  clock.graphs = false;  // e.g. the legacy default stream, or calls that cannot be captured
  EXPECT_EQ(tune().best->name(), "fast_b2b");
  clock.graphs = true;
  clock.graph_fails = true;  // any other error: warned about, and the back-to-back choice stands
  EXPECT_EQ(tune().best->name(), "fast_b2b");
}

TEST_F(Fixture, NoCandidatePassing) {
  add("Default", 3.0, {1.0});
  Status st;
  auto o = tune(&st);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_EQ(o.best, nullptr);
}

TEST(Caps, IterationsForCaps) {
  EXPECT_EQ(iterations_for_caps(30, 100, 1.0, 5), 30);
  EXPECT_EQ(iterations_for_caps(30, 10, 1.0, 5), 10);
  EXPECT_EQ(iterations_for_caps(0, 10, 1.0, 5), 10);
  EXPECT_EQ(iterations_for_caps(30, 0, 1.0, 5), 30);
  EXPECT_EQ(iterations_for_caps(0, 0, 1.0, 5), 5);
  EXPECT_EQ(iterations_for_caps(0.5, 100, 1.0, 5), 1);  // at least one
}

TEST(Numerics, CompareOutputs) {
  const double ref[4] = {1, -2, 3, 0};
  const double ok[4] = {1.0000001, -2, 3, 0};
  EXPECT_TRUE(compare_outputs(ok, ref, 4, {1e-5, 1e-5}).passed);
  const double bad[4] = {1, -2, 3.1, 0};
  auto r = compare_outputs(bad, ref, 4, {1e-5, 1e-5});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.bad_elements, 1u);
  const double nan[4] = {1, -2, std::nan(""), 0};
  EXPECT_EQ(compare_outputs(nan, ref, 4, {1, 1}).nonfinite, 1u);
  EXPECT_FALSE(compare_outputs(nan, ref, 4, {1e9, 1e9}).passed);
}

// TunableOp end to end on fakes: lookup, tune on a miss, persisted result reused by a second
// context, unknown stored names fall back to Default.
struct OpFixture : ::testing::Test {
  Clock clock;
  test::TempDir dir;
  bool workload_fails = false;
  OpHooks<FakeArgs> hooks() { return hooks_on(clock); }
  OpHooks<FakeArgs> hooks_on(Clock& ck) {
    OpHooks<FakeArgs> h;
    h.op_signature = "FakeTunableOp_float";
    auto def = std::make_shared<FakeSolution>(ck, "Default", 1.0, std::vector<double>{1.0});
    h.default_solution = def;
    struct P final : Provider<FakeArgs> {
      Clock* c;
      std::string name() const override { return "fakes"; }
      Status enumerate(const FakeArgs&, std::vector<SolutionPtr<FakeArgs>>* out) const override {
        out->push_back(make("fast"));
        out->push_back(make("wrong"));
        return Status::ok();
      }
      SolutionPtr<FakeArgs> from_name(const std::string& n, const FakeArgs&) const override {
        return n == "fast" || n == "wrong" || n == "refuser" || n == "picky" ? make(n) : nullptr;
      }
      SolutionPtr<FakeArgs> make(const std::string& n) const {
        return std::make_shared<FakeSolution>(*c, n, n == "wrong" ? 7.0 : 1.0,
                                              std::vector<double>{n == "wrong" ? 0.01 : 0.5}, true,
                                              n == "refuser");
      }
    };
    auto p = std::make_shared<P>();
    p->c = &ck;
    h.providers = {p};
    h.key = [](const FakeArgs& a) { return ProblemKey{a.size}; };
    h.params_signature = [](const FakeArgs& a) { return "size_" + std::to_string(a.size); };
    h.make_workload = [this, &ck](const FakeArgs&, const Options&,
                                  std::unique_ptr<Workload<FakeArgs>>* w) {
      if (workload_fails) return Status(StatusCode::kCudaError, "fake: out of memory for the tuning buffers");
      *w = std::make_unique<FakeWorkload>(ck);
      return Status::ok();
    };
    return h;
  }
  Options opts() {
    Options o;
    o.enabled = true;
    o.filename = dir.file("fake.csv");
    return o;
  }
};

TEST_F(OpFixture, TunesOnceThenReusesAcrossContexts) {
  double out = 0;
  {
    ContextImpl ctx(Device::cpu(), opts(), {{"V", "1"}});
    TunableOp<FakeArgs> op(ctx, hooks());
    ASSERT_TRUE(op.run(FakeArgs{&out, 4}, nullptr).is_ok());
    ASSERT_TRUE(op.run(FakeArgs{&out, 4}, nullptr).is_ok());
    EXPECT_EQ(ctx.stats().tuned, 1u);
    EXPECT_EQ(ctx.stats().hits, 2u);
    auto r = ctx.find("FakeTunableOp_float", "size_4");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->solution, "fast");  // "wrong" was faster but failed the check
  }
  Options o = opts();
  o.tuning = false;
  ContextImpl ctx2(Device::cpu(), o, {{"V", "1"}});
  TunableOp<FakeArgs> op2(ctx2, hooks());
  clock.calls.clear();
  ASSERT_TRUE(op2.run(FakeArgs{&out, 4}, nullptr).is_ok());
  EXPECT_EQ(ctx2.stats().tuned, 0u);
  EXPECT_EQ(clock.calls["fast"], 1);
  // A miss with tuning off runs Default and is not tuned.
  ASSERT_TRUE(op2.run(FakeArgs{&out, 5}, nullptr).is_ok());
  EXPECT_EQ(clock.calls["Default"], 1);
  EXPECT_EQ(ctx2.stats().tuned, 0u);
}

TEST_F(OpFixture, UnknownStoredSolutionFallsBackToDefault) {
  test::write_text(dir.file("fake_cpu.csv"), "Validator,V,1\nFakeTunableOp_float,size_4,gone_kernel,0.1\n");
  ContextImpl ctx(Device::cpu(), opts(), {{"V", "1"}});
  TunableOp<FakeArgs> op(ctx, hooks());
  double out = 0;
  ASSERT_TRUE(op.run(FakeArgs{&out, 4}, nullptr).is_ok());
  EXPECT_EQ(ctx.stats().fallbacks, 1u);
  EXPECT_EQ(clock.calls["Default"], 1);
  EXPECT_EQ(ctx.stats().tuned, 0u);
}

TEST_F(OpFixture, RunTimeRefusalOfAStoredSolutionRunsDefault) {
  // can_implement accepts, run refuses before launching (e.g. a first call inside graph capture that
  // would have to allocate): the call still succeeds, on Default, and counts as a fallback.
  test::write_text(dir.file("fake_cpu.csv"), "Validator,V,1\nFakeTunableOp_float,size_4,refuser,0.1\n");
  ContextImpl ctx(Device::cpu(), opts(), {{"V", "1"}});
  TunableOp<FakeArgs> op(ctx, hooks());
  double out = 0;
  ASSERT_TRUE(op.run(FakeArgs{&out, 4}, nullptr).is_ok());
  EXPECT_EQ(out, 1.0);
  EXPECT_EQ(clock.calls["Default"], 1);
  EXPECT_EQ(ctx.stats().fallbacks, 1u);
  EXPECT_EQ(ctx.stats().hits, 0u);
  // The stored result stays: a later call may be able to use it.
  EXPECT_EQ(ctx.find("FakeTunableOp_float", "size_4")->solution, "refuser");
}

TEST_F(OpFixture, DisabledRunsDefaultWithoutLookup) {
  // A stored result the call would use if it looked: it must not even be read.
  test::write_text(dir.file("fake_cpu.csv"), "Validator,V,1\nFakeTunableOp_float,size_4,fast,0.1\n");
  Options o = opts();
  o.enabled = false;
  ContextImpl ctx(Device::cpu(), o, {{"V", "1"}});
  TunableOp<FakeArgs> op(ctx, hooks());
  double out = 0;
  ASSERT_TRUE(op.run(FakeArgs{&out, 4}, nullptr).is_ok());
  EXPECT_EQ(clock.calls["Default"], 1);
  EXPECT_EQ(clock.calls["fast"], 0);
  EXPECT_EQ(ctx.stats().defaults, 1u);
  EXPECT_EQ(ctx.results().size(), 0u);  // the file was not loaded
}

TEST_F(OpFixture, OpsOfOneContextTuneOneAtATime) {
  // The context's tuning stream, timer and memory serve one tuning at a time: two ops tuning from
  // two threads must take turns (each op's own lock alone let them overlap).
  ContextImpl ctx(Device::cpu(), opts(), {{"V", "1"}});
  Clock other;  // each op its own clock: the fakes' bookkeeping is not thread-safe, the runtime is
  std::atomic<int> live{0}, peak{0};
  auto watched = [&](OpHooks<FakeArgs> h) {
    h.make_workload = [&, inner = h.make_workload](const FakeArgs& a, const Options& o,
                                                   std::unique_ptr<Workload<FakeArgs>>* w) {
      const int now = ++live;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a window the other could enter
      const Status st = inner(a, o, w);
      --live;
      return st;
    };
    return h;
  };
  OpHooks<FakeArgs> h2 = hooks_on(other);
  h2.op_signature = "FakeTunableOp_double";
  TunableOp<FakeArgs> op1(ctx, watched(hooks())), op2(ctx, watched(h2));
  double out1 = 0, out2 = 0;
  Status s1, s2;
  std::thread t1([&] { s1 = op1.run(FakeArgs{&out1, 4}, nullptr); });
  std::thread t2([&] { s2 = op2.run(FakeArgs{&out2, 4}, nullptr); });
  t1.join();
  t2.join();
  ASSERT_TRUE(s1.is_ok()) << s1.to_string();
  ASSERT_TRUE(s2.is_ok()) << s2.to_string();
  EXPECT_EQ(ctx.stats().tuned, 2u);
  EXPECT_EQ(peak.load(), 1);
}

TEST_F(OpFixture, MisalignedFirstCallKeepsTheStoredSolutionForLaterCalls) {
  test::write_text(dir.file("fake_cpu.csv"), "Validator,V,1\nFakeTunableOp_float,size_4,picky,0.1\n");
  ContextImpl ctx(Device::cpu(), opts(), {{"V", "1"}});
  TunableOp<FakeArgs> op(ctx, hooks());
  alignas(16) double buf[4] = {};
  double* odd = reinterpret_cast<double*>(reinterpret_cast<char*>(buf) + 8);
  ASSERT_TRUE(op.run(FakeArgs{odd, 4}, nullptr).is_ok());  // picky cannot take it: Default
  EXPECT_EQ(clock.calls["Default"], 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(op.run(FakeArgs{buf, 4}, nullptr).is_ok());
  EXPECT_EQ(clock.calls["picky"], 3);  // the aligned calls after it use the stored solution
  EXPECT_EQ(ctx.stats().hits, 3u);
  EXPECT_EQ(ctx.stats().fallbacks, 0u);
}

TEST_F(OpFixture, TuningFailureRunsDefaultAndIsReportedOnlyByTheTuneApi) {
  workload_fails = true;
  Options o = opts();
  o.record_untuned = true;
  o.untuned_filename = dir.file("untuned.csv");
  ContextImpl ctx(Device::cpu(), o, {{"V", "1"}});
  TunableOp<FakeArgs> op(ctx, hooks());
  double out = 0;
  // A dispatching call computes its output on Default; the problem is recorded as untuned and not
  // retried on every call.
  ASSERT_TRUE(op.run(FakeArgs{&out, 6}, nullptr).is_ok());
  ASSERT_TRUE(op.run(FakeArgs{&out, 6}, nullptr).is_ok());
  EXPECT_EQ(out, 1.0);
  EXPECT_EQ(clock.calls["Default"], 2);
  EXPECT_EQ(ctx.stats().tuned, 0u);
  EXPECT_EQ(test::slurp(dir.file("untuned_cpu.csv")), "FakeTunableOp_float,size_6\n");
  // The explicit tune API says why.
  std::string chosen;
  const Status st = op.tune(FakeArgs{&out, 7}, &chosen);
  EXPECT_EQ(st.code(), StatusCode::kCudaError) << st.to_string();
  EXPECT_NE(st.message().find("tuning buffers"), std::string::npos) << st.message();
  // Once tuning can run, the tune API tunes the problem the failed call left on Default.
  workload_fails = false;
  ASSERT_TRUE(op.tune(FakeArgs{&out, 6}, &chosen).is_ok());
  EXPECT_EQ(chosen, "fast");
  EXPECT_EQ(ctx.stats().tuned, 1u);
}

TEST_F(OpFixture, AResultThatCannotBeWrittenIsReportedByTheTuneApi) {
  // The results path is a directory: the load fails once (warned), every later lookup goes on in
  // memory, and a tuned result says it was kept in memory only.
  ASSERT_EQ(::mkdir(dir.file("fake_cpu.csv").c_str(), 0755), 0);
  ContextImpl ctx(Device::cpu(), opts(), {{"V", "1"}});
  const Status first = ctx.ensure_loaded();
  EXPECT_EQ(first.code(), StatusCode::kIoError);
  EXPECT_EQ(ctx.ensure_loaded().code(), StatusCode::kIoError);  // every caller gets the reason
  TunableOp<FakeArgs> op(ctx, hooks());
  double out = 0;
  ASSERT_TRUE(op.run(FakeArgs{&out, 4}, nullptr).is_ok());  // a dispatching call computes and warns
  EXPECT_EQ(ctx.stats().tuned, 1u);
  std::string chosen;
  const Status st = op.tune(FakeArgs{&out, 5}, &chosen);
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.to_string();
  EXPECT_NE(st.message().find("kept in memory only"), std::string::npos) << st.message();
  EXPECT_EQ(chosen, "fast");
  EXPECT_EQ(ctx.find("FakeTunableOp_float", "size_5")->solution, "fast");  // in memory all the same
}

TEST_F(OpFixture, CaptureMissRunsDefaultAndRecordsUntuned) {
  Options o = opts();
  o.record_untuned = true;
  o.untuned_filename = dir.file("untuned.csv");
  ContextImpl ctx(Device::cpu(), o, {{"V", "1"}});
  auto h = hooks();
  h.capturing = [](Stream) { return true; };
  TunableOp<FakeArgs> op(ctx, h);
  double out = 0;
  ASSERT_TRUE(op.run(FakeArgs{&out, 9}, nullptr).is_ok());
  EXPECT_EQ(ctx.stats().tuned, 0u);
  EXPECT_EQ(clock.calls["Default"], 1);
  EXPECT_EQ(test::slurp(dir.file("untuned_cpu.csv")), "FakeTunableOp_float,size_9\n");
}

// The GPU timer brackets groups of calls with events; the chunks the tuner compares against each
// other (the 3-call first probe against a 100-call median) must be grouped alike, or an event per
// call inflates the short chunk (a 3 us kernel read 5.5 us) and every candidate is pruned.
TEST(EventTimerGroups, FirstProbeIsOneGroupAndNoChunkIsPerCallBelowTheGroupSize) {
  EXPECT_EQ(EventTimer::event_group(kFirstProbe), kFirstProbe);
  for (int n = 1; n <= 200; ++n) {
    const int g = EventTimer::event_group(n);
    EXPECT_EQ(g, std::min(n, EventTimer::kGroup)) << "n = " << n;
  }
  EXPECT_EQ(EventTimer::kCallsPerPrime % EventTimer::kGroup, 0);
}

}  // namespace
}  // namespace tunable
