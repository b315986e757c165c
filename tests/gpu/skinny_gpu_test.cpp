// GPU tests of the skinny GEMM kernels (kernels/gemv through skinny_gemm_provider): every variant
// of the case's dtype against an fp64 host reference on fresh random inputs (skinny_problem.hpp
// says how the inputs, C and the workspace are poisoned), the balanced grid's counters across
// graph capture, and the TMA rings under repeated launches. Each variant either refuses the problem
// with kNotSupported / kMisaligned and a message, or runs, matches the reference and gives the
// same bits on a second run.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/cuda_util.hpp"
#include "gemm/cuda/skinny_provider.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "skinny_problem.hpp"

namespace tunable {
namespace {

using skinny_test::Case;
using skinny_test::case_seed;
using skinny_test::current_cc;
using skinny_test::SkinnyProblem;
using skinny_test::test_provider;

// ---- cases -----------------------------------------------------------------------------------------

std::vector<Case> all_cases() {
  std::vector<Case> v;
  const std::int64_t tokens[] = {1, 2, 3, 7, 8, 9, 16, 31, 33, 64};
  for (DataType t : {DataType::kBF16, DataType::kF16}) {
    for (std::int64_t m : tokens) {
      Case plain;
      plain.in = plain.out = t;
      plain.tokens = m;
      v.push_back(plain);
      Case strided = plain;  // k = 1000: 125 vectors, not a multiple of any chunk
      strided.rows = 300;
      strided.k = 1000;
      strided.lda_pad = 8;
      strided.ldb_pad = 16;
      strided.ldc_pad = 5;
      strided.alpha = 1.25;
      strided.beta = 0.5;
      v.push_back(strided);
      Case bias = plain;  // rows not a multiple of 16
      bias.op = GemmOp::kGemmAndBias;
      bias.ep = Epilogue::kBias;
      bias.rows = 77;
      bias.k = 264;
      bias.lda_pad = 24;
      v.push_back(bias);
    }
    for (std::int64_t m : {1, 8, 64}) {
      Case tiny;  // one and three 16-byte vectors of K
      tiny.in = tiny.out = t;
      tiny.tokens = m;
      tiny.rows = 40;
      tiny.k = 8;
      v.push_back(tiny);
      tiny.rows = 33;
      tiny.k = 24;
      v.push_back(tiny);
    }
    {
      Case few;  // fewer weight rows than one 16-row tile (the TMA box hangs past m) and K off a stage
      few.in = few.out = t;
      few.tokens = 9;
      few.rows = 7;
      few.k = 1032;
      v.push_back(few);
    }
    for (Epilogue e : {Epilogue::kBiasRelu, Epilogue::kBiasGelu}) {
      for (std::int64_t m : {4, 40}) {
        Case act;
        act.in = act.out = t;
        act.op = GemmOp::kGemmAndBias;
        act.ep = e;
        act.rows = 200;
        act.tokens = m;
        v.push_back(act);
      }
    }
    // k, lda or ldb off the 8-element vector width: every variant refuses.
    for (std::int64_t m : {1, 16}) {
      Case off;
      off.in = off.out = t;
      off.tokens = m;
      off.k = 1002;
      off.rejected = true;
      v.push_back(off);
    }
    Case lda;
    lda.in = lda.out = t;
    lda.lda_pad = 4;
    lda.rejected = true;
    v.push_back(lda);
    Case ldb = lda;
    ldb.lda_pad = 0;
    ldb.ldb_pad = 2;
    ldb.tokens = 5;
    v.push_back(ldb);
  }
  // Weights of realistic size: several waves, real split-K plans.
  for (std::int64_t m : {1, 8, 64}) {
    Case big;
    big.rows = 2048;
    big.k = 4096;
    big.tokens = m;
    v.push_back(big);
  }
  {
    Case big;
    big.in = big.out = DataType::kF16;
    big.rows = 4096;
    big.k = 2048;
    big.tokens = 16;
    v.push_back(big);
    big.in = big.out = DataType::kBF16;
    big.rows = 4100;
    big.tokens = 3;
    big.beta = -1.0;
    v.push_back(big);
  }
  // FP8 e4m3 ScaledGemm: per-tensor scales, bf16 out unless stated.
  for (std::int64_t m : tokens) {
    Case f;
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.tokens = m;
    f.scale_a = 0.5f;
    f.scale_b = 1.5f;
    v.push_back(f);
    Case g = f;  // k = 1008: 63 vectors of 16
    g.rows = 300;
    g.k = 1008;
    g.lda_pad = 32;
    g.ldb_pad = 16;
    g.ldc_pad = 3;
    g.ep = Epilogue::kBias;
    v.push_back(g);
  }
  for (DataType out : {DataType::kF16, DataType::kF32}) {
    for (std::int64_t m : {5, 40}) {
      Case f;
      f.in = DataType::kF8E4M3;
      f.out = out;
      f.op = GemmOp::kScaledGemm;
      f.tokens = m;
      f.rows = 129;
      f.k = 2048;
      f.alpha = 0.75;
      f.beta = out == DataType::kF32 ? 0.25 : 0.0;
      f.scale_a = 2.f;
      f.scale_b = 0.125f;
      v.push_back(f);
    }
  }
  for (std::int64_t m : {1, 64}) {
    Case f;
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.rows = 2048;
    f.k = 4096;
    f.tokens = m;
    f.scale_a = 0.25f;
    v.push_back(f);
  }
  // The paired TMA grid (skinny_mmt_*_pair) on a 132-SM H100: 144 tiles (12 blocks of two, the last
  // tile 12 rows) and 287 tiles (143 blocks of two and one alone, the last tile 4 rows).
  {
    Case pair;
    pair.rows = 2300;
    pair.k = 1024;
    pair.tokens = 16;
    pair.beta = 0.5;
    v.push_back(pair);
    Case f;
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.rows = 4580;
    f.k = 512;
    f.tokens = 8;
    f.ep = Epilogue::kBias;
    v.push_back(f);
  }
  // The balanced TMA grid (skinny_mmt_*_bal) on 132 SMs: 144 tiles (groups of 11 blocks share the last
  // 12, 1-2 stages of K each) and 287 tiles (two whole tiles per block, groups of 5-6 share the last
  // 23). The cases above give the groups more blocks than stages (empty slices).
  {
    Case bal;
    bal.rows = 2300;
    bal.k = 8192;
    bal.tokens = 9;
    bal.beta = 0.5;
    bal.ldc_pad = 8;
    v.push_back(bal);
    Case f;
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.rows = 4580;
    f.k = 8192;
    f.tokens = 16;
    f.ep = Epilogue::kBias;
    v.push_back(f);
  }
  {
    Case f;  // k = 1000 is not a multiple of 16 fp8 elements
    f.in = DataType::kF8E4M3;
    f.op = GemmOp::kScaledGemm;
    f.k = 1000;
    f.tokens = 4;
    f.rejected = true;
    v.push_back(f);
  }
  return v;
}

// ---- every variant on every case ------------------------------------------------------------------

// Runs `sol` on `problem` (workspace grown as needed). When the run succeeds, its result must be
// within the reference's tolerance and a second run must give the same bits. Returns the first
// run's status, for the caller to judge a refusal.
Status run_twice_and_check(const SkinnyProblem& problem, const Solution<GemmArgs>& sol, DeviceBuffer* ws) {
  const GemmArgs& args = problem.args();
  const std::size_t wsb = sol.workspace_bytes(args);
  EXPECT_LE(wsb, std::size_t{32} << 20);
  if (wsb > std::size_t{32} << 20) return Status(StatusCode::kInternal, "workspace beyond 32 MiB");
  if (wsb > ws->size()) {
    const Status a = ws->allocate(wsb);
    EXPECT_TRUE(a.is_ok()) << a.to_string();
    if (!a.is_ok()) return a;
  }
  void* wsp = wsb > 0 ? ws->get() : nullptr;
  std::vector<std::uint8_t> got, again;
  const Status st = problem.run(sol, wsp, wsb, &got);
  if (!st.is_ok()) return st;
  EXPECT_EQ(problem.mismatch(got), "");
  const Status st2 = problem.run(sol, wsp, wsb, &again);
  EXPECT_TRUE(st2.is_ok()) << st2.to_string();
  EXPECT_TRUE(again == got) << "second run gave different bits";
  return Status::ok();
}

class SkinnyGpu : public ::testing::TestWithParam<Case> {};

TEST_P(SkinnyGpu, EveryVariantRefusesOrMatchesTheReference) {
  const Case& c = GetParam();
  const int cc = current_cc();
  ASSERT_GT(cc, 0) << "cannot read the device's compute capability";
  const SkinnyProblem problem(c, case_seed(c.name()));
  SCOPED_TRACE(problem.label());
  ASSERT_EQ(problem.setup_error(), "");
  const GemmArgs& args = problem.args();

  // The provider's view: out-of-width shapes enumerate nothing, with a reason.
  const auto provider = test_provider();
  {
    std::vector<SolutionPtr<GemmArgs>> cands;
    const Status st = provider->enumerate(args, &cands);
    if (c.rejected) {
      EXPECT_FALSE(st.is_ok());
      EXPECT_TRUE(cands.empty());
    } else {
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_FALSE(cands.empty());
    }
  }

  const std::string prefix_gemv = fmt::format("skinny_gemv_{}_", short_name(c.in));
  const std::string prefix_mma = fmt::format("skinny_mma_{}_", short_name(c.in));
  // The pipelined and TMA-fed MMA families (skinny_mmap_*, skinny_mmt_*) are checked as MMA; the
  // TMA-fed one is also counted on its own (sm_90, n <= 16).
  const std::string prefix_mmap = fmt::format("skinny_mmap_{}_", short_name(c.in));
  const std::string prefix_mmt = fmt::format("skinny_mmt_{}_", short_name(c.in));
  // The wgmma kernel (skinny_wgt_*, sm_90a, n <= 64) likewise, counted on its own.
  const std::string prefix_wgt = fmt::format("skinny_wgt_{}_", short_name(c.in));
  int ran_gemv = 0, ran_mma = 0, ran_mmt = 0, ran_wgt = 0, ran_pair = 0, ran_bal = 0;
  // TUNABLE_SKINNY_ONLY=<substring>: only the variants whose names hold it (the sanitizer runs, which
  // would take hours over every name); the per-family counts below are then not checked.
  const char* only = std::getenv("TUNABLE_SKINNY_ONLY");
  DeviceBuffer ws;
  for (const std::string& name : skinny_gemm_variant_names()) {
    const bool is_gemv = name.rfind(prefix_gemv, 0) == 0;
    const bool is_mmt = name.rfind(prefix_mmt, 0) == 0;
    const bool is_wgt = name.rfind(prefix_wgt, 0) == 0;
    const bool is_mma = name.rfind(prefix_mma, 0) == 0 || name.rfind(prefix_mmap, 0) == 0 || is_mmt || is_wgt;
    if (!is_gemv && !is_mma) continue;
    if (only != nullptr && name.find(only) == std::string::npos) continue;
    SCOPED_TRACE(name);
    const auto sol = provider->from_name(name, args);
    ASSERT_NE(sol, nullptr);
    const Status can = sol->can_implement(args);
    // Wave-balanced splits (ksw<W>) fall back to fewer splits, so they take every problem too.
    // The warp-contiguous suffix (_wc) changes the K order within a block, not what it accepts;
    // neither does the TMA ring's shape (_b<boxes>s<stages>, the last 5 or 6 characters).
    const bool wc = name.size() > 3 && name.compare(name.size() - 3, 3, "_wc") == 0;
    const std::size_t end = is_mmt || is_wgt ? name.find("_b", name.find("_ks")) : name.size() - (wc ? 3 : 0);
    const bool basic = name.find("_ksauto") != std::string::npos ||
                       name.find("_ksw") != std::string::npos || name.find("_ks1") + 4 == end;
    if (!can.is_ok()) {
      EXPECT_TRUE(can.code() == StatusCode::kNotSupported || can.code() == StatusCode::kMisaligned)
          << can.to_string();
      EXPECT_FALSE(can.message().empty());
      // Unsplit and auto variants take every aligned problem within their token limit.
      // The wgmma kernel's 1 KB-per-row ring (b8s2) does not fit in shared memory above 32 tokens.
      // fp8 into fp32 output is refused (its tensor-core sums are below fp32 precision).
      const bool wgt_fits = !(is_wgt && c.tokens > 32 && name.compare(name.size() - 5, 5, "_b8s2") == 0) &&
                            !(c.in == DataType::kF8E4M3 && c.out == DataType::kF32);
      if (!c.rejected && basic &&
          (is_mmt ? c.tokens <= 16 && cc >= 90 : is_wgt ? cc == 90 && wgt_fits : is_mma || c.tokens <= 8))
        ADD_FAILURE() << "refused an aligned problem it should run: " << can.to_string();
      continue;
    }
    ASSERT_FALSE(c.rejected) << "accepted a problem off the vector width";

    const Status st = run_twice_and_check(problem, *sol, &ws);
    if (st.code() == StatusCode::kNotSupported) {
      // Only a device or build without the needed tensor-core code may say so after
      // can_implement passed; this suite targets sm_90a builds.
      const int need = is_mmt || is_wgt ? 90 : c.in == DataType::kF8E4M3 ? 89 : 80;
      if (is_mma && cc < need) continue;
      if (is_wgt && cc != 90) continue;  // sm_90a code runs on compute capability 9.0 only
      ADD_FAILURE() << "run refused after can_implement passed: " << st.to_string();
      continue;
    }
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    (is_gemv ? ran_gemv : ran_mma)++;
    ran_mmt += is_mmt;
    ran_wgt += is_wgt;
    ran_pair += is_mmt && name.size() > 5 && name.compare(name.size() - 5, 5, "_pair") == 0;
    ran_bal += is_mmt && name.size() > 4 && name.compare(name.size() - 4, 4, "_bal") == 0;
  }
  if (!c.rejected && only == nullptr) {
    if (c.tokens <= 8) {
      EXPECT_GT(ran_gemv, 0) << "no GEMV variant ran";
    }
    const int need = c.in == DataType::kF8E4M3 ? 89 : 80;
    if (cc >= need) {
      EXPECT_GT(ran_mma, 0) << "no MMA variant ran";
    }
    if (cc >= 90 && c.tokens <= 16) {
      EXPECT_GT(ran_mmt, 0) << "no TMA-fed MMA variant ran";
      EXPECT_GT(ran_pair, 0) << "no paired TMA-fed MMA variant ran";
      EXPECT_GT(ran_bal, 0) << "no balanced TMA-fed MMA variant ran";
    }
    if (cc == 90 && !(c.in == DataType::kF8E4M3 && c.out == DataType::kF32)) {
      EXPECT_GT(ran_wgt, 0) << "no wgmma variant ran";
    }
  }
}

/// The current device's compute capability major and SM count.
void device_shape(int* major, int* sms) {
  int dev = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev), cudaSuccess);
}

/// Weight rows of a grid with 12 16-row tiles beyond one per SM, as llama3_405b_tp8 qkv on an H100.
std::int64_t rows_twelve_tiles_over(int sms) { return 16 * (static_cast<std::int64_t>(sms) + 12); }

// The balanced grid's arrival counters (one set per stream in the context's SkinnyState, allocated
// at the stream's first balanced launch outside graph capture): a first call inside capture is
// refused with a clear message and launches nothing; after one call outside capture, captured calls
// replayed from a graph give the same bits as the direct call (the counters return to zero at the
// end of every launch).
TEST(SkinnyBal, CountersAcrossCaptureAndGraphReplays) {
  int major = 0, sms = 0;
  device_shape(&major, &sms);
  if (major < 9) GTEST_SKIP() << "the balanced TMA kernel needs sm_90";
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  SkinnyState state(device);  // a context of its own: no stream has counters yet
  const auto provider = skinny_gemm_provider(&state);
  const std::int64_t m = rows_twelve_tiles_over(sms), n = 8, k = 2048;
  GemmDesc d = GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, m, n, k);
  DeviceBuffer da, db, dc;
  ASSERT_TRUE(da.allocate(static_cast<std::size_t>(m * k * 2)).is_ok());
  ASSERT_TRUE(db.allocate(static_cast<std::size_t>(n * k * 2)).is_ok());
  ASSERT_TRUE(dc.allocate(static_cast<std::size_t>(m * n * 2)).is_ok());
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_TRUE(fill_random(da.get(), DataType::kBF16, static_cast<std::size_t>(m * k), 11, 1.f, s).is_ok());
  ASSERT_TRUE(fill_random(db.get(), DataType::kBF16, static_cast<std::size_t>(n * k), 12, 1.f, s).is_ok());
  GemmArgs args;
  args.desc = d;
  args.ops.a = da.get();
  args.ops.b = db.get();
  args.ops.c = dc.get();
  const auto sol = provider->from_name("skinny_mmt_bf16_bm16_wk8_ks1_b8s4_bal", args);
  ASSERT_NE(sol, nullptr);
  ASSERT_TRUE(sol->can_implement(args).is_ok());
  DeviceBuffer ws;
  const std::size_t wsb = sol->workspace_bytes(args);
  ASSERT_GT(wsb, 0u);
  ASSERT_TRUE(ws.allocate(wsb).is_ok());
  auto capture = [&](cudaGraph_t* g) -> Status {
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess)
      return Status(StatusCode::kCudaError, "begin capture");
    const Status st = sol->run(args, ws.get(), wsb, s);
    if (cudaStreamEndCapture(s, g) != cudaSuccess) return Status(StatusCode::kCudaError, "end capture");
    return st;
  };
  cudaGraph_t g = nullptr;
  const Status first = capture(&g);
  EXPECT_EQ(first.code(), StatusCode::kNotSupported) << first.to_string();
  EXPECT_NE(first.message().find("before capturing"), std::string::npos) << first.message();
  if (g != nullptr) {
    std::size_t nodes = 1;
    ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &nodes), cudaSuccess);
    EXPECT_EQ(nodes, 0u) << "the refused call captured work";
    ASSERT_EQ(cudaGraphDestroy(g), cudaSuccess);
  }
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);

  const std::size_t bytes = static_cast<std::size_t>(m * n * 2);
  std::vector<std::uint8_t> direct(bytes), replay(bytes);
  ASSERT_TRUE(fill_nan(dc.get(), DataType::kBF16, static_cast<std::size_t>(m * n), s).is_ok());
  ASSERT_TRUE(sol->run(args, ws.get(), wsb, s).is_ok());
  ASSERT_EQ(cudaMemcpyAsync(direct.data(), dc.get(), bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::size_t nans = 0;
  for (std::size_t i = 0; i < bytes; i += 2) nans += (direct[i + 1] & 0x7f) == 0x7f && (direct[i] & 0x80) != 0;
  EXPECT_EQ(nans, 0u) << "the direct call left outputs unwritten";

  ASSERT_TRUE(capture(&g).is_ok());
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_TRUE(fill_nan(dc.get(), DataType::kBF16, static_cast<std::size_t>(m * n), s).is_ok());
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(replay.data(), dc.get(), bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_TRUE(replay == direct) << "graph replay " << rep << " gave other bits than the direct call";
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// The TMA rings under load: every one-block-per-SM variant (and an unpaired one) on a 405b-qkv-like
// weight (tiles beyond one per SM, 16 tokens, K = 16384) launched many times back to back, each time
// right after a launch on another weight copy, must give the same bits every time. A ring whose
// slots are refilled by TMA without a proxy fence after the consumers' ordinary loads fails exactly
// so: sanitizer-clean, right on most launches, other bits on 2-100 % of them.
TEST(SkinnyRing, SameBitsOverManyLaunches) {
  int major = 0, sms = 0;
  device_shape(&major, &sms);
  if (major < 9) GTEST_SKIP() << "the TMA-fed kernels need sm_90";
  const std::int64_t m = rows_twelve_tiles_over(sms), n = 16, k = 16384;
  constexpr int kLaunches = 48;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  for (DataType t : {DataType::kBF16, DataType::kF16}) {
    const std::string dt = t == DataType::kBF16 ? "bf16" : "fp16";
    DeviceBuffer wa, wb, x, y;
    ASSERT_TRUE(wa.allocate(static_cast<std::size_t>(m * k * 2)).is_ok());
    ASSERT_TRUE(wb.allocate(static_cast<std::size_t>(m * k * 2)).is_ok());
    ASSERT_TRUE(x.allocate(static_cast<std::size_t>(n * k * 2)).is_ok());
    ASSERT_TRUE(y.allocate(static_cast<std::size_t>(m * n * 2)).is_ok());
    ASSERT_TRUE(fill_random(wa.get(), t, static_cast<std::size_t>(m * k), 21, 1.f, s).is_ok());
    ASSERT_TRUE(fill_random(wb.get(), t, static_cast<std::size_t>(m * k), 22, 1.f, s).is_ok());
    ASSERT_TRUE(fill_random(x.get(), t, static_cast<std::size_t>(n * k), 23, 1.f, s).is_ok());
    for (const std::string shape :
         {"b8s2", "b8s3", "b16s2", "b8s3_pair", "b8s4_pair", "b8s3_bal", "b8s4_bal", "b8s6_bal"}) {
      const std::string name = fmt::format("skinny_mmt_{}_bm16_wk8_ks1_{}", dt, shape);
      GemmArgs args;
      args.desc = GemmDesc::make(t, Transpose::kT, Transpose::kN, m, n, k);
      args.ops.b = x.get();
      args.ops.c = y.get();
      args.ops.a = wa.get();
      const auto sol = test_provider()->from_name(name, args);
      ASSERT_NE(sol, nullptr) << name;
      ASSERT_TRUE(sol->can_implement(args).is_ok()) << name;
      GemmArgs other = args;
      other.ops.a = wb.get();
      DeviceBuffer ws;
      const std::size_t wsb = sol->workspace_bytes(args);
      if (wsb > 0) ASSERT_TRUE(ws.allocate(wsb).is_ok());
      const std::size_t bytes = static_cast<std::size_t>(m * n * 2);
      std::vector<std::uint8_t> first(bytes), again(bytes);
      int changed = 0;
      for (int r = 0; r < kLaunches; ++r) {
        ASSERT_TRUE(sol->run(other, ws.get(), wsb, s).is_ok()) << name;
        ASSERT_TRUE(fill_nan(y.get(), t, static_cast<std::size_t>(m * n), s).is_ok());
        ASSERT_TRUE(sol->run(args, ws.get(), wsb, s).is_ok()) << name;
        ASSERT_EQ(cudaMemcpyAsync((r == 0 ? first : again).data(), y.get(), bytes, cudaMemcpyDeviceToHost, s),
                  cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
        if (r > 0) changed += again != first;
      }
      EXPECT_EQ(changed, 0) << name << ": other bits on " << changed << " of " << kLaunches - 1 << " repeats";
    }
  }
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(Cases, SkinnyGpu, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name(); });

// ---- the weight-only family (skinny_wo_*: e4m3 weights with row scales x 16-bit tokens) ----

class SkinnyWeightOnlyGpu : public ::testing::TestWithParam<Case> {};

TEST_P(SkinnyWeightOnlyGpu, EveryVariantMatchesTheReferenceAndNoOtherFamilyRunsIt) {
  const Case& c = GetParam();
  const int cc = current_cc();
  ASSERT_GT(cc, 0) << "cannot read the device's compute capability";
  if (cc < 89) GTEST_SKIP() << "the weight-only kernels need sm_89+ (e4m3 conversions)";
  const SkinnyProblem problem(c, case_seed(c.name()));
  SCOPED_TRACE(problem.label());
  if (c.rejected)  // validate() names the limit of the only kernels there are; they refuse it too
    EXPECT_NE(problem.setup_error().find("multiple of 16"), std::string::npos) << problem.setup_error();
  else
    ASSERT_EQ(problem.setup_error(), "");
  const GemmArgs& args = problem.args();
  const auto provider = test_provider();
  {
    std::vector<SolutionPtr<GemmArgs>> cands;
    const Status st = provider->enumerate(args, &cands);
    if (c.rejected) {
      EXPECT_FALSE(st.is_ok());
      EXPECT_TRUE(cands.empty());
    } else {
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_FALSE(cands.empty());
      for (const auto& s : cands) EXPECT_EQ(s->name().rfind("skinny_wo", 0), 0u) << s->name();  // wo, wov
    }
  }
  int ran = 0;
  DeviceBuffer ws;
  for (const std::string& name : skinny_gemm_variant_names()) {
    SCOPED_TRACE(name);
    const auto sol = provider->from_name(name, args);
    ASSERT_NE(sol, nullptr);
    const Status can = sol->can_implement(args);
    const bool wo = name.rfind("skinny_wo", 0) == 0;  // the wo and wov families
    if (!wo) {
      EXPECT_EQ(can.code(), StatusCode::kNotSupported) << "another family takes the weight-only problem";
      continue;
    }
    const bool one_split = name.find("_ksauto") != std::string::npos || name.find("_ks1_") != std::string::npos ||
                           name.compare(name.size() - 4, 4, "_ks1") == 0;
    const bool basic = one_split || (!c.rms && name.find("_ksw") != std::string::npos);
    if (c.rms && !c.rejected && !one_split) {  // a split sees part of each token's row
      EXPECT_EQ(can.code(), StatusCode::kNotSupported) << "a K split took the RMS-normalized problem";
      EXPECT_NE(can.message().find("_rms"), std::string::npos) << can.to_string();
      continue;
    }
    if (!can.is_ok()) {
      EXPECT_TRUE(can.code() == StatusCode::kNotSupported || can.code() == StatusCode::kMisaligned) << can.to_string();
      if (!c.rejected && basic) ADD_FAILURE() << "refused an aligned problem it should run: " << can.to_string();
      continue;
    }
    ASSERT_FALSE(c.rejected) << "accepted a problem off the vector width";
    const Status st = run_twice_and_check(problem, *sol, &ws);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ++ran;
  }
  if (!c.rejected) EXPECT_GT(ran, 0) << "no weight-only variant ran";
}

std::vector<Case> weight_only_cases() {
  std::vector<Case> v;
  auto add = [&](DataType out, std::int64_t rows, std::int64_t tokens, std::int64_t k) -> Case& {
    Case c;
    c.in = DataType::kF8E4M3;
    c.out = out;
    c.op = GemmOp::kScaledGemm;
    c.weight_only = true;
    c.rows = rows;
    c.tokens = tokens;
    c.k = k;
    v.push_back(c);
    return v.back();
  };
  for (DataType out : {DataType::kBF16, DataType::kF16}) {
    add(out, 256, 1, 512);
    add(out, 272, 5, 2048).alpha = 0.75;  // 17 row tiles: a partial 32-row block
    add(out, 2048, 3, 8192);              // long rows: split K
    Case& b = add(out, 4112, 8, 1040);    // K not a multiple of the 64-element chunk
    b.ep = Epilogue::kBias;
    b.lda_pad = 16;
    b.ldb_pad = 8;
    b.ldc_pad = 3;
    Case& beta = add(out, 512, 2, 1024);
    beta.beta = 0.5;
    Case& add_bias = add(out, 4112, 3, 1040);  // bias with beta = 1 (a residual add), split variants too
    add_bias.ep = Epilogue::kBias;
    add_bias.beta = 1.0;
    Case& bad = add(out, 256, 1, 520);  // K not a multiple of 16 e4m3 (one 16-byte load)
    bad.rejected = true;
    // RMS-normalized tokens (ScaleMode::kRowwiseRms): every token tile, a partial block, long rows
    // (one split only), padding with bias and beta (the FP8 decode's residual add).
    add(out, 256, 1, 512).rms = true;
    add(out, 320, 2, 1024).rms = true;
    add(out, 272, 5, 2048).rms = true;
    add(out, 2048, 8, 8192).rms = true;
    Case& rb = add(out, 4112, 3, 1040);
    rb.rms = true;
    rb.rms_eps = 0.1;  // moves the result by ~7 % (tokens' mean square ~0.6): a kernel ignoring eps fails
    rb.ep = Epilogue::kBias;
    rb.beta = 1.0;
    rb.lda_pad = 16;
    rb.ldb_pad = 8;
    rb.ldc_pad = 3;
  }
  return v;
}

// Every e4m3 code through the in-register conversion, which the random cases above (weights of
// magnitude 2^-4..2) do not reach above 2: weight row i holds code i at column i % 64 and zeros
// elsewhere (the NaN codes 0x7f and 0xff hold zero), one token of ones, a power-of-two scale per row,
// so y[i] = value(code i) * scale[i] exactly in bf16 and fp16 (at most 4 significant bits, within
// both ranges), and any conversion error shows as a mismatch.
TEST(SkinnyWeightOnlyCodes, EveryE4m3ValueConvertsExactly) {
  if (current_cc() < 89) GTEST_SKIP() << "the weight-only kernels need sm_89+ (e4m3 conversions)";
  constexpr int m = 256, k = 64;
  std::vector<std::uint8_t> w(static_cast<std::size_t>(m) * k, 0);
  std::vector<float> scale(m);
  for (int i = 0; i < m; ++i) {
    w[static_cast<std::size_t>(i) * k + i % k] = (i & 0x7f) == 0x7f ? 0 : static_cast<std::uint8_t>(i);
    scale[i] = std::ldexp(1.f, i % 5 - 2);
  }
  const skinny_test::Format f8 = skinny_test::format_of(DataType::kF8E4M3);
  for (DataType t : {DataType::kBF16, DataType::kF16}) {
    const skinny_test::Format fo = skinny_test::format_of(t);
    const std::uint16_t one = t == DataType::kBF16 ? 0x3f80 : 0x3c00;
    const std::vector<std::uint16_t> x(k, one);
    DeviceBuffer dw, dx, dy, ds, ws;
    ASSERT_TRUE(dw.allocate(w.size()).is_ok() && dx.allocate(k * 2).is_ok() && dy.allocate(m * 2).is_ok() &&
                ds.allocate(m * sizeof(float)).is_ok());
    ASSERT_EQ(cudaMemcpy(dw.get(), w.data(), w.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dx.get(), x.data(), k * 2, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(ds.get(), scale.data(), m * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    GemmArgs a;
    a.desc = GemmDesc::make(DataType::kF8E4M3, Transpose::kT, Transpose::kN, m, 1, k);
    a.desc.op = GemmOp::kScaledGemm;
    a.desc.dtype_b = t;
    a.desc.out_dtype = t;
    a.desc.scale_mode = ScaleMode::kRowwise;
    a.ops.a = dw.get();
    a.ops.b = dx.get();
    a.ops.c = dy.get();
    a.ops.scale_a = ds.as<float>();
    ASSERT_TRUE(validate(a.desc, a.ops).is_ok()) << validate(a.desc, a.ops).to_string();
    for (const char* name : {"skinny_wo_fp8e4m3_bm16_wk4_ks1", "skinny_wo_fp8e4m3_bm32_wk8_ksauto",
                             "skinny_wo_fp8e4m3_bm16_wk16_ks1_wc", "skinny_wov_fp8e4m3_r1_t256_ks1",
                             "skinny_wov_fp8e4m3_r4_t256_ksauto", "skinny_wov_fp8e4m3_r1_t256_ks1_cvt",
                             "skinny_wov_fp8e4m3_r2_t256_ksauto_cvt"}) {
      SCOPED_TRACE(fmt::format("{} into {}", name, short_name(t)));
      const auto sol = test_provider()->from_name(name, a);
      ASSERT_NE(sol, nullptr);
      ASSERT_TRUE(sol->can_implement(a).is_ok()) << sol->can_implement(a).to_string();
      const std::size_t wsb = sol->workspace_bytes(a);
      if (wsb > ws.size()) ASSERT_TRUE(ws.allocate(wsb).is_ok());
      ASSERT_EQ(cudaMemset(dy.get(), 0xff, m * 2), cudaSuccess);  // NaN: every row must be written
      ASSERT_TRUE(sol->run(a, wsb ? ws.get() : nullptr, wsb, nullptr).is_ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<std::uint16_t> y(m);
      ASSERT_EQ(cudaMemcpy(y.data(), dy.get(), m * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      int wrong = 0;
      for (int i = 0; i < m; ++i) {
        const double want = ((i & 0x7f) == 0x7f ? 0.0 : skinny_test::decode(f8, static_cast<std::uint32_t>(i))) * scale[i];
        const double got = skinny_test::decode(fo, y[i]);
        if (got != want && wrong++ < 4) ADD_FAILURE() << "code " << i << ": " << got << ", want " << want;
      }
      EXPECT_EQ(wrong, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SkinnyWeightOnlyGpu, ::testing::ValuesIn(weight_only_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name(); });

}  // namespace
}  // namespace tunable
