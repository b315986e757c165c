// Tuning within the host's limits: a problem whose tuning buffers do not fit runs Default and is
// recorded as untuned (estimated before allocating, and an allocation failure caught in the tuning
// step); sizes derived from user dimensions are overflow-checked; on the CPU a candidate whose first
// call is hopelessly slow is dropped before its numerics check and warmup.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <new>

#include "gemm/cpu/cpu_gemm.hpp"
#include "test_util.hpp"
#include "tunable/context.hpp"
#include "tunable/gemm.hpp"
#include "tune/tunable_op.hpp"
#include "tune/tuner.hpp"

namespace tunable {
namespace {

// ---- A process with a limited address space, as `ulimit -v` makes one ----------------------------

std::size_t vm_size_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmSize:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) << 10;
  return 0;
}

// The body of the child LimitedAddressSpace starts: a rank-1 update of an 8192 x 8192 fp32 C (256 MiB,
// allocated before the limit), whose tuning would need about 1.5 GiB more, under an address-space
// limit 512 MiB above what the process already maps. Exit code 0: the call ran Default and the
// problem was recorded as untuned.
int limited_child() {
  const std::string dir = getenv("TUNABLE_TEST_DIR");
  std::vector<float> a(8192, 0.5f), b(8192, 0.25f), c(std::size_t{8192} * 8192, 0.f);
  Options o;
  o.enabled = true;
  o.filename = dir + "/r.csv";
  o.record_untuned = true;
  o.untuned_filename = dir + "/u.csv";
  Context ctx(Device::cpu(), o);
  const GemmDesc d = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kN, 8192, 8192, 1);
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = vm_size_bytes() + (std::size_t{512} << 20);
  if (::setrlimit(RLIMIT_AS, &rl) != 0) return 10;
  const Status st = gemm(ctx, d, GemmOperands{a.data(), b.data(), c.data()});
  if (!st.is_ok()) {
    std::fprintf(stderr, "gemm failed: %s\n", st.to_string().c_str());
    return 1;
  }
  if (c[12345] != 0.125f) return 2;
  if (ctx.stats().tuned != 0) return 3;
  if (test::slurp(dir + "/u_cpu.csv") != op_signature(d) + "," + params_signature(d) + "\n") return 4;
  return 0;
}

// The test binary started with TUNABLE_TEST_ROLE=limited_child runs that body and exits before any test.
[[maybe_unused]] const int kRole = [] {
  if (const char* r = getenv("TUNABLE_TEST_ROLE"); r != nullptr && std::string(r) == "limited_child")
    _exit(limited_child());
  return 0;
}();

TEST(TuningMemory, ALimitedAddressSpaceRunsDefaultAndRecordsUntuned) {
  // `ulimit -v 3000000; tunable tune --m 4096 ...` failed the call with "out of host memory".
  test::TempDir dir;
  char self[PATH_MAX] = {};
  ASSERT_GT(::readlink("/proc/self/exe", self, sizeof self - 1), 0);
  const std::string cmd = "TUNABLE_TEST_ROLE=limited_child TUNABLE_TEST_DIR='" + dir.path() + "' '" + self + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("not enough host memory to tune"), std::string::npos) << out;
  EXPECT_NE(out.find("recorded as untuned"), std::string::npos) << out;
}

// ---- The estimate, and the checked sizes, on the real CPU workload ---------------------------------

struct FakeHostMemory {
  explicit FakeHostMemory(std::size_t bytes) { set_host_memory_available_for_testing(bytes); }
  ~FakeHostMemory() { set_host_memory_available_for_testing(0); }
};

TEST(TuningMemory, TooLittleMemoryIsFoundBeforeAllocating) {
  test::TempDir dir;
  Options o;
  o.enabled = true;
  o.filename = dir.file("r.csv");
  o.record_untuned = true;
  o.untuned_filename = dir.file("u.csv");
  Context ctx(Device::cpu(), o);
  const GemmDesc d = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kN, 128, 128, 128);
  std::vector<float> a(128 * 128, 1.f), b(128 * 128, 1.f), c(128 * 128, 0.f);
  FakeHostMemory mem(512 << 10);  // tuning may take 256 KiB: one input copy is 192 KiB, the reference 128 KiB twice
  testing::internal::CaptureStderr();
  ASSERT_TRUE(gemm(ctx, d, GemmOperands{a.data(), b.data(), c.data()}).is_ok());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("not enough host memory to tune"), std::string::npos) << err;
  EXPECT_EQ(c[0], 128.f);  // Default computed it
  EXPECT_EQ(ctx.stats().tuned, 0u);
  EXPECT_EQ(test::slurp(dir.file("u_cpu.csv")), op_signature(d) + "," + params_signature(d) + "\n");
  std::string chosen;
  const Status st = tune_gemm(ctx, d, &chosen);  // the tune API says why
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("not enough host memory to tune"), std::string::npos) << st.message();
}

TEST(TuningMemory, FewerInputCopiesWhenMemoryIsShort) {
  const GemmDesc d = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kN, 64, 64, 64);
  Options o;
  o.rotating_buffer_size_mib = 64;  // asks for 64 MiB of 48 KiB copies: capped at 64 copies
  std::unique_ptr<Workload<GemmArgs>> wl;
  ASSERT_TRUE(make_cpu_gemm_workload(GemmArgs{d, {}}, o, &wl).is_ok());
  EXPECT_EQ(wl->copies(), 64u);
  FakeHostMemory mem(1 << 20);  // half of it, less the reference, fits 9 copies
  ASSERT_TRUE(make_cpu_gemm_workload(GemmArgs{d, {}}, o, &wl).is_ok());
  EXPECT_EQ(wl->copies(), 9u);
}

TEST(TuningMemory, SizesFromUserDimensionsAreOverflowChecked) {
  // Three strided-batched fp64 operands of 2^60 elements each pass validate() (each one is
  // addressable), but together they are 3 * 2^63 bytes: that wrapped to 2^63 before.
  GemmDesc d = GemmDesc::make(DataType::kF64, Transpose::kN, Transpose::kN, 2, 2, 2);
  d.op = GemmOp::kGemmStridedBatched;
  d.batch = 2;
  d.stride_a = d.stride_b = d.stride_c = std::int64_t{1} << 59;
  ASSERT_TRUE(validate(d).is_ok()) << validate(d).to_string();
  std::unique_ptr<Workload<GemmArgs>> wl;
  Status st;
  EXPECT_NO_THROW(st = make_cpu_gemm_workload(GemmArgs{d, {}}, Options{}, &wl));
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.to_string();
  EXPECT_NE(st.message().find("more bytes than memory can address"), std::string::npos) << st.message();
  EXPECT_EQ(wl, nullptr);
  // One operand's worth of 2^59 elements fits size_t but not this host: refused by the estimate.
  d.stride_a = d.stride_b = d.stride_c = std::int64_t{1} << 57;
  EXPECT_NO_THROW(st = make_cpu_gemm_workload(GemmArgs{d, {}}, Options{}, &wl));
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.to_string();
  EXPECT_NE(st.message().find("not enough host memory to tune"), std::string::npos) << st.message();
}

TEST(TuningMemory, CheckedSizeHelpers) {
  std::size_t out = 0;
  EXPECT_TRUE(checked_mul(std::size_t{1} << 31, std::size_t{1} << 31, &out));
  EXPECT_EQ(out, std::size_t{1} << 62);
  EXPECT_FALSE(checked_mul(std::size_t{1} << 61, 8, &out));
  EXPECT_FALSE(checked_add(SIZE_MAX, 1, &out));
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(std::size_t{3} << 29), "1.5 GiB");
  EXPECT_GT(host_memory_available(), 0u);
}

// ---- Fakes: candidates with scripted times, a workload that counts what the tuner asks of it -------

struct Args {
  double* out = nullptr;
  int size = 1;
};

struct Script {
  std::map<std::string, int> calls;
  std::map<std::string, std::vector<double>> times;  // per call, the last one repeated
  double last_ms = 0;
  int checks = 0;
};

class Scripted final : public Solution<Args> {
 public:
  Scripted(Script& s, std::string name) : s_(s), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const Args&) const override { return Status::ok(); }
  Status run(const Args& a, void*, std::size_t, Stream) const override {
    *a.out = 1.0;
    const int n = s_.calls[name_]++;
    const auto& t = s_.times.at(name_);
    s_.last_ms = t[std::min<std::size_t>(n, t.size() - 1)];
    return Status::ok();
  }

 private:
  Script& s_;
  std::string name_;
};

class ScriptTimer final : public Timer {
 public:
  explicit ScriptTimer(Script& s) : s_(s) {}
  Status time_calls(int n, const std::function<Status(int)>& fn, std::vector<double>* t) override {
    for (int i = 0; i < n; ++i) {
      TUNABLE_RETURN_IF_ERROR(fn(i));
      t->push_back(s_.last_ms);
    }
    return Status::ok();
  }

 private:
  Script& s_;
};

class ScriptWorkload final : public Workload<Args> {
 public:
  ScriptWorkload(Script& s, bool first_call_representative)
      : s_(s), timer_(s), representative_(first_call_representative) {
    for (int i = 0; i < 2; ++i) args_[i].out = &out_[i];
  }
  std::size_t copies() const override { return 2; }
  std::size_t bytes_per_copy() const override { return 8; }
  const Args& args(std::size_t i) const override { return args_[i]; }
  Status prepare_check() override {
    out_[0] = std::nan("");
    return Status::ok();
  }
  Status check(const Tolerance& tol, NumericsReport* rep) override {
    ++s_.checks;
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
  bool first_call_is_representative() const override { return representative_; }

 private:
  Script& s_;
  double out_[2] = {};
  Args args_[2];
  ScriptTimer timer_;
  bool representative_;
};

struct FirstCall : ::testing::Test {
  Script s;
  Logger log;
  Options opt;
  std::vector<SolutionPtr<Args>> cands;
  void add(const std::string& name, std::vector<double> times) {
    s.times[name] = std::move(times);
    cands.push_back(std::make_shared<Scripted>(s, name));
  }
  TuneOutcome<Args> tune(bool representative) {
    ScriptWorkload wl(s, representative);
    TuneOutcome<Args> out;
    EXPECT_TRUE(tune_candidates(opt, log, "Fake(p)", cands, wl, &out).is_ok());
    return out;
  }
  const CandidateOutcome& outcome(const TuneOutcome<Args>& o, const std::string& name) {
    for (const auto& c : o.candidates)
      if (c.name == name) return c;
    throw std::runtime_error("no outcome for " + name);
  }
};

TEST_F(FirstCall, AHopelessCandidateIsDroppedOnItsFirstCall) {
  add("Default", {46});
  add("cpu_reference", {4300});  // 2048^3: 4.3 s a call against 46 ms
  add("close", {50});
  auto o = tune(/*representative=*/true);
  EXPECT_EQ(o.best->name(), "Default");
  EXPECT_EQ(outcome(o, "cpu_reference").disposition, Disposition::kSkippedSlow);
  EXPECT_EQ(s.calls["cpu_reference"], 1);  // no numerics check, warmup or probes after that call
  EXPECT_EQ(s.checks, 2);                  // Default's and close's
  EXPECT_EQ(outcome(o, "close").disposition, Disposition::kPassed);
}

TEST_F(FirstCall, NumericsOffTheEstimateCallDecides) {
  opt.numerical_check = false;
  add("Default", {46});
  add("cpu_reference", {4300});
  auto o = tune(true);
  EXPECT_EQ(outcome(o, "cpu_reference").disposition, Disposition::kSkippedSlow);
  EXPECT_EQ(s.calls["cpu_reference"], 1);
}

TEST_F(FirstCall, CheapOrMerelySlowFirstCallsGoThroughTheProbes) {
  add("Default", {0.1});
  add("cold_but_cheap", {5, 0.09});  // 50x the best on its first call, but 5 ms: below the floor
  add("slow", {0.5});                // 5x: not hopeless, pruned by the first probe as before
  auto o = tune(true);
  EXPECT_EQ(outcome(o, "cold_but_cheap").disposition, Disposition::kPassed);
  EXPECT_EQ(o.best->name(), "cold_but_cheap");
  EXPECT_EQ(outcome(o, "slow").disposition, Disposition::kSkippedSlow);
  EXPECT_EQ(outcome(o, "slow").timed_iters, kFirstProbe);
}

TEST_F(FirstCall, WorkloadsWithColdFirstCallsKeepTheFullTreatment) {
  // A GPU's first launch may load a module or JIT: its first call says nothing about the kernel.
  add("Default", {46});
  add("first_launch_loads_a_module", {4300, 40});
  auto o = tune(/*representative=*/false);
  EXPECT_EQ(o.best->name(), "first_launch_loads_a_module");
  EXPECT_GT(s.calls["first_launch_loads_a_module"], 1);
}

// ---- An allocation failure inside the tuning step ----------------------------------------------------

TEST(TuningMemory, AnAllocationFailureWhileTuningRunsDefault) {
  test::TempDir dir;
  Options o;
  o.enabled = true;
  o.filename = dir.file("r.csv");
  o.record_untuned = true;
  o.untuned_filename = dir.file("u.csv");
  ContextImpl ctx(Device::cpu(), o, {{"V", "1"}});
  Script s;
  s.times["Default"] = {1.0};
  s.times["fast"] = {0.5};
  OpHooks<Args> h;
  h.op_signature = "FakeTunableOp_float";
  h.default_solution = std::make_shared<Scripted>(s, "Default");
  h.key = [](const Args& a) { return ProblemKey{a.size}; };
  h.params_signature = [](const Args& a) { return "size_" + std::to_string(a.size); };
  h.make_workload = [](const Args&, const Options&, std::unique_ptr<Workload<Args>>*) -> Status {
    throw std::bad_alloc();  // what std::vector::resize does when the buffers do not fit
  };
  TunableOp<Args> op(ctx, h);
  double out = 0;
  Status st;
  testing::internal::CaptureStderr();
  EXPECT_NO_THROW(st = op.run(Args{&out, 3}, nullptr));
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(out, 1.0);
  EXPECT_EQ(s.calls["Default"], 1);
  EXPECT_NE(err.find("out of host memory while tuning"), std::string::npos) << err;
  EXPECT_EQ(test::slurp(dir.file("u_cpu.csv")), "FakeTunableOp_float,size_3\n");
  std::string chosen;
  EXPECT_NO_THROW(st = op.tune(Args{&out, 3}, &chosen));
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.to_string();
}

}  // namespace
}  // namespace tunable
