// Timeline of back-to-back skinny GEMM calls (bench/NOTES-skinny.md round 10): every block of every
// call records when it started, when its griddepcontrol.wait returned and when it finished, so the
// per-call time splits into the release after the predecessor, the streaming and the tail. The
// kernels are the library's own headers built with TUNABLE_SKINNY_TRACE (the hooks are empty in the
// library), launched exactly as the provider launches them, on weights rotated through > L2.
//
//   tunable_skinny_trace --n 4096 --k 4096 --m 8 --kernel mmap --rows 16 --warps 8 [--graph]
#define TUNABLE_SKINNY_TRACE 1

#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cuda/cuda_util.hpp"
#include "tune/cuda_timing.hpp"
#include "gemm/cuda/skinny_state.hpp"
#include "kernels/gemv/skinny_gemv.cuh"
#include "kernels/gemv/skinny_mma.cuh"
#include "kernels/gemv/skinny_tma.cuh"

namespace {

/// One block spinning for `ns` (launched without PDL after every call with --gap-us): the next call then
/// starts on an idle device, as after a kernel that does not trigger its dependents early.
__global__ void gap_kernel(unsigned long long ns) {
  const unsigned long long t0 = tunable::kernels::skinny_detail::skinny_globaltimer();
  while (tunable::kernels::skinny_detail::skinny_globaltimer() - t0 < ns) {
  }
}

using tunable::kernels::SkinnyIn;
using tunable::kernels::SkinnyLaunch;
using tunable::kernels::skinny_detail::SkinnyTraceRec;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "skinny_trace: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

void check(const tunable::Status& st, const char* what) {
  if (!st.is_ok()) {
    std::fprintf(stderr, "skinny_trace: %s: %s\n", what, st.to_string().c_str());
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Per-block timeline of back-to-back skinny GEMM calls"};
  int n = 4096, k = 4096, m = 8, rows = 16, warps = 8, calls = 48, carveout = -1, boxes = 8, stages = 2;
  int repeat_check = 0, prefetch_kb = 0, per_sm = 0, splits = 1;
  double gap_us = 0;
  double rotate_mb = 400;
  std::string kernel = "mmap", out;
  bool graph = false, spread = false, x_alias = false, pair = false, bal = false, fp8 = false;
  app.add_option("--n", n, "weight rows (N of F.linear)");
  app.add_option("--k", k, "reduction length");
  app.add_option("--m", m, "tokens");
  app.add_option("--kernel", kernel, "gemv, mma, mmap, mmawc, mmapwc (warp-contiguous K) or mmt (TMA-fed, 16 rows)")
      ->check(CLI::IsMember({"gemv", "mma", "mmap", "mmawc", "mmapwc", "mmt"}));
  app.add_option("--rows", rows, "gemv: rows per warp; mma/mmap: block rows; mmt: always 16");
  app.add_option("--warps", warps, "gemv: warps per block; mma/mmap/mmt: K warps");
  app.add_option("--boxes", boxes, "mmt: 128-byte boxes of each row per stage (8 or 16)");
  app.add_option("--stages", stages, "mmt: stages in the ring (8 boxes: 2 or 3; 16 boxes: 2; --pair: 8 boxes, 3 or 4; --bal: 8 boxes, 3, 4 or 6)");
  app.add_option("--calls", calls, "back-to-back calls traced");
  app.add_option("--rotate-mb", rotate_mb, "weight copies rotated through (MB)");
  app.add_option("--carveout", carveout,
                 "shared-memory carve-out hint (percent, cudaFuncAttributePreferredSharedMemoryCarveout) for the "
                 "mma, mmawc and mmapwc kernels at 16 rows, 8 warps and <= 16 tokens; -1: the driver's choice")
      ->check(CLI::Range(-1, 100));
  app.add_flag("--graph", graph, "replay the calls from a CUDA graph instead of stream launches");
  app.add_flag("--spread", spread, "cap blocks per SM at ceil(blocks / SMs) (SkinnyLaunch::spread)");
  app.add_flag("--pair", pair, "mmt: the paired grid (one block per SM, the first tiles - SMs on two tiles; 8 warps)");
  app.add_flag("--bal", bal,
               "mmt: the balanced grid (one block per SM, left-over tiles cut in K over groups of blocks, tokens by "
               "TMA; 8 warps, the --pair shapes)")
      ->excludes("--pair");
  app.add_flag("--x-alias", x_alias,
               "every token reads x's first row (ldb = 0): the same weight stream with ~1/8 of the activation "
               "traffic from L2, to measure what that traffic costs (not a real GEMM; checked against mmap on the "
               "same aliased x)");
  app.add_flag("--fp8", fp8, "weights and tokens in fp8 e4m3 (output bf16, no scales) instead of bf16");
  app.add_option("--prefetch-kb", prefetch_kb,
                 "weight KB each block hints into L2 before its PDL wait (SkinnyParams::prefetch); 0: the kernel's "
                 "default")
      ->check(CLI::Range(0, 4096));
  app.add_option("--per-sm", per_sm,
                 "with --spread (always on for --bal): blocks per SM the cap allows, every kernel "
                 "(SkinnyLaunch::spread_cap); 0: ceil(blocks / SMs)")
      ->check(CLI::Range(0, 32));
  app.add_option("--splits", splits,
                 "K splits (gemv / mma / mmap / mmt unpaired): the split-K reduction kernel follows each call and "
                 "is part of its time")
      ->check(CLI::Range(1, 64));
  app.add_option("--gap-us", gap_us,
                 "after every call a one-block kernel spinning this long, launched without PDL: each call starts on an "
                 "idle device (block placement as after a kernel that does not trigger its dependents)")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--out", out, "JSON file for the per-call numbers");
  app.add_option("--repeat-check", repeat_check,
                 "then repeat the poisoned launch of the kernel and of the reference this many times, each time "
                 "comparing both with their first bits (a flaky kernel and a flaky reference told apart)")
      ->check(CLI::Range(0, 100000));
  CLI11_PARSE(app, argc, argv);
  if (splits > 1 && (bal || pair)) {
    std::fprintf(stderr, "skinny_trace: --splits needs the one-block-per-tile grid (not --bal or --pair)\n");
    return 2;
  }

  if (carveout >= 0) {
    // Whether the L1 / shared-memory split changes how fast the blocks stream (round 13).
    using namespace tunable::kernels;
    using Tr = skinny_detail::Bf16Traits;
    auto set = [&](const void* f) {
      check(cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout, carveout), "carveout");
    };
    set(reinterpret_cast<const void*>(skinny_mmap_kernel<Tr, 1, 1, 8, 1, true>));
    set(reinterpret_cast<const void*>(skinny_mmap_kernel<Tr, 1, 2, 8, 1, true>));
    set(reinterpret_cast<const void*>(skinny_mma_kernel<Tr, 1, 1, 8, true>));
    set(reinterpret_cast<const void*>(skinny_mma_kernel<Tr, 1, 2, 8, true>));
    set(reinterpret_cast<const void*>(skinny_mma_kernel<Tr, 1, 1, 8, false>));
    set(reinterpret_cast<const void*>(skinny_mma_kernel<Tr, 1, 2, 8, false>));
    std::printf("carve-out hint %d %% shared memory\n", carveout);
  }
  using tunable::kernels::SkinnyIn;
  const SkinnyIn in = fp8 ? SkinnyIn::kE4M3 : SkinnyIn::kBF16;
  const tunable::DataType in_type = fp8 ? tunable::DataType::kF8E4M3 : tunable::DataType::kBF16;
  const size_t eb = fp8 ? 1 : 2;  // bytes per input element; y is bf16 either way
  const size_t wbytes = size_t(n) * k * eb;
  const int copies = std::max(2, static_cast<int>(rotate_mb * 1e6 / wbytes + 1));
  std::vector<void*> w(copies);
  for (auto& p : w) {
    check(cudaMalloc(&p, wbytes), "weight");
    check(tunable::fill_random(p, in_type, wbytes / eb, 7 + (&p - w.data()), 1.f, nullptr), "fill");
  }
  void *x, *y;
  check(cudaMalloc(&x, size_t(m) * k * eb), "x");
  check(cudaMalloc(&y, size_t(m) * n * 2), "y");
  check(tunable::fill_random(x, in_type, size_t(m) * k, 99, 1.f, nullptr), "fill");
  const unsigned cap = 1u << 20;
  SkinnyTraceRec* rec;
  check(cudaMalloc(&rec, cap * sizeof(SkinnyTraceRec)), "trace");
  check(cudaMemcpyToSymbol(tunable::kernels::skinny_detail::g_skinny_trace, &rec, sizeof rec), "symbol");
  check(cudaMemcpyToSymbol(tunable::kernels::skinny_detail::g_skinny_trace_cap, &cap, sizeof cap), "symbol");
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  // The launchers' device facts and per-kernel caches, and the balanced grid's arrival counters for
  // this stream, kept as a library context keeps them.
  int device = 0;
  check(cudaGetDevice(&device), "device");
  tunable::SkinnyState state(device);
  tunable::kernels::SkinnyDevice dev;
  check(state.device(&dev), "device facts");
  unsigned* bal_count = nullptr;
  if (bal && tunable::kernels::skinny_mmt_bal_shares(n, dev.sms))
    check(state.bal_counters(s, tunable::kernels::kSkinnyBalMaxShared, &bal_count), "arrival counters");
  // The balanced grid's partial sums (bound: one 16 x m slice per tile) or the K splits' ones.
  const size_t partial_bytes = bal ? size_t((n + 15) / 16) * 16 * m * sizeof(float)
                               : splits > 1 ? size_t(splits) * n * m * sizeof(float)
                                            : 0;
  float* partial = nullptr;
  if (partial_bytes > 0) check(cudaMalloc(&partial, partial_bytes), "partial");

  auto problem = [&](int c, void* out) {
    SkinnyLaunch l;
    l.p.w = w[c % copies];
    l.p.x = x;
    l.p.y = out;
    l.p.lda = k;
    l.p.ldb = x_alias ? 0 : k;
    l.p.ldc = n;
    l.p.m = n;
    l.p.n = m;
    l.p.k = k;
    l.splits = splits;
    l.max_splits = splits;
    l.spread = spread;
    l.p.partial = partial;
    l.p.bal_count = bal_count;
    l.p.prefetch = prefetch_kb * 1024;
    l.spread_cap = per_sm;
    l.partial_bytes = partial_bytes;
    return l;
  };
  auto launch_kind = [&](const std::string& kind, int c, void* out) {
    using namespace tunable::kernels;
    const SkinnyLaunch l = problem(c, out);
    const cudaError_t e = kind == "gemv"   ? skinny_gemv(in, rows, warps * 32, l, dev, &state, s)
                          : kind == "mma" || kind == "mmawc"
                              ? skinny_mma(in, rows, warps, kind == "mmawc", l, dev, &state, s)
                          : kind == "ref"  ? skinny_mmap(in, 16, 8, false, l, dev, &state, s)
                          : kind == "mmt"  ? skinny_mmt(in, warps, boxes, stages, l, dev, &state, s,
                                                       bal    ? SkinnyMmtGrid::kBal
                                                       : pair ? SkinnyMmtGrid::kPair
                                                              : SkinnyMmtGrid::kTiles)
                                           : skinny_mmap(in, rows, warps, kind == "mmapwc", l, dev, &state, s);
    check(e, "launch");
  };
  auto launch = [&](int c) {
    launch_kind(kernel, c, y);
    if (gap_us > 0) {
      gap_kernel<<<1, 32, 0, s>>>(static_cast<unsigned long long>(gap_us * 1000));
      check(cudaGetLastError(), "gap kernel");
    }
  };
  {
    // The kernel under study against the pipelined MMA kernel on the same inputs: the same sums in
    // another order, so they may differ by the bf16 rounding of the result only.
    void* y2;
    check(cudaMalloc(&y2, size_t(m) * n * 2), "y2");
    check(tunable::fill_nan(y, tunable::DataType::kBF16, size_t(m) * n, s), "poison");
    launch_kind(kernel, 0, y);
    launch_kind("ref", 0, y2);
    std::vector<unsigned short> a(size_t(m) * n), b(a.size());
    check(cudaMemcpyAsync(a.data(), y, a.size() * 2, cudaMemcpyDeviceToHost, s), "copy");
    check(cudaMemcpyAsync(b.data(), y2, b.size() * 2, cudaMemcpyDeviceToHost, s), "copy");
    check(cudaStreamSynchronize(s), "check");
    auto f = [](unsigned short h) {
      const unsigned u = static_cast<unsigned>(h) << 16;
      float v;
      std::memcpy(&v, &u, sizeof v);
      return v;
    };
    auto worst_of = [&](const std::vector<unsigned short>& u, const std::vector<unsigned short>& v) {
      double worst = 0;
      for (size_t i = 0; i < u.size(); ++i) {
        const double d = std::fabs(double(f(u[i])) - f(v[i])) / (std::fabs(double(f(v[i]))) + 1.0);
        worst = std::isnan(d) ? 1e9 : std::max(worst, d);
      }
      return worst;
    };
    const double worst = worst_of(a, b);
    std::printf("check against mmap bm16 wk8: worst |diff| / (|y| + 1) = %.3g\n", worst);
    if (worst > 2e-2 && repeat_check == 0) {
      std::fprintf(stderr, "skinny_trace: %s disagrees with mmap bm16 wk8 beyond bf16 rounding\n", kernel.c_str());
      return 1;
    }
    if (repeat_check > 0) {
      // Intermittent faults (races, phase mix-ups) show as bits that change between identical launches.
      std::vector<unsigned short> a2(a.size()), b2(b.size());
      int kernel_bad = 0, ref_bad = 0, disagree = 0;
      for (int r = 0; r < repeat_check; ++r) {
        check(tunable::fill_nan(y, tunable::DataType::kBF16, size_t(m) * n, s), "poison");
        check(tunable::fill_nan(y2, tunable::DataType::kBF16, size_t(m) * n, s), "poison");
        launch_kind(kernel, r % copies, y);   // a launch just before (mostly on another weight copy) it can overlap
        launch_kind(kernel, 0, y);
        launch_kind("ref", 0, y2);
        check(cudaMemcpyAsync(a2.data(), y, a2.size() * 2, cudaMemcpyDeviceToHost, s), "copy");
        check(cudaMemcpyAsync(b2.data(), y2, b2.size() * 2, cudaMemcpyDeviceToHost, s), "copy");
        check(cudaStreamSynchronize(s), "repeat");
        kernel_bad += a2 != a;
        ref_bad += b2 != b;
        disagree += worst_of(a2, b2) > 2e-2;
      }
      std::printf("repeat check: %d launches each, %d of the kernel's and %d of the reference's differ from their "
                  "first bits, %d pairs disagree beyond rounding\n",
                  repeat_check, kernel_bad, ref_bad, disagree);
      if (worst > 2e-2 || kernel_bad + ref_bad + disagree > 0) {
        std::fprintf(stderr, "skinny_trace: results change between identical launches\n");
        return 1;
      }
    }
    if (spread) {
      // The cap moves blocks between SMs and nothing else: the same bits as an uncapped launch.
      spread = false;
      check(tunable::fill_nan(y2, tunable::DataType::kBF16, size_t(m) * n, s), "poison");
      launch_kind(kernel, 0, y2);
      spread = true;
      check(cudaMemcpyAsync(b.data(), y2, b.size() * 2, cudaMemcpyDeviceToHost, s), "copy");
      check(cudaStreamSynchronize(s), "check");
      if (a != b) {
        std::fprintf(stderr, "skinny_trace: %s gives different bits with --spread\n", kernel.c_str());
        return 1;
      }
      std::printf("check --spread against the uncapped launch: same bits\n");
    }
    check(cudaFree(y2), "free");
  }
  const unsigned zero = 0;
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t g;
    check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
    for (int c = 0; c < calls; ++c) launch(c);
    check(cudaStreamEndCapture(s, &g), "capture");
    check(cudaGraphInstantiate(&exec, g, 0), "instantiate");
  }
  auto run = [&] {
    if (graph) check(cudaGraphLaunch(exec, s), "graph launch");
    else for (int c = 0; c < calls; ++c) launch(c);
  };
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  run();  // warm-up (modules, TLB, clocks)
  check(cudaStreamSynchronize(s), "warm-up");
  check(cudaMemcpyToSymbol(tunable::kernels::skinny_detail::g_skinny_trace_n, &zero, sizeof zero), "reset");
  check(cudaEventRecord(e0, s), "event");
  run();
  check(cudaEventRecord(e1, s), "event");
  check(cudaStreamSynchronize(s), "run");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
  unsigned got = 0;
  check(cudaMemcpyFromSymbol(&got, tunable::kernels::skinny_detail::g_skinny_trace_n, sizeof got), "count");
  got = std::min(got, cap);
  std::vector<SkinnyTraceRec> r(got);
  check(cudaMemcpy(r.data(), rec, got * sizeof(SkinnyTraceRec), cudaMemcpyDeviceToHost), "copy");

  // Calls are ordered by their wait release (no block of call c + 1 passes its wait before call c
  // has finished); consecutive calls read different weight copies.
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.t_wait < b.t_wait; });
  std::vector<std::vector<SkinnyTraceRec>> call;
  for (const auto& q : r) {
    if (call.empty() || call.back().front().w != q.w) call.emplace_back();
    call.back().push_back(q);
  }
  unsigned long long tick = ~0ull;  // the timer's granularity: smallest positive step seen
  {
    std::vector<unsigned long long> t;
    for (const auto& q : r) t.insert(t.end(), {q.t_entry, q.t_wait, q.t_exit});
    std::sort(t.begin(), t.end());
    for (size_t i = 1; i < t.size(); ++i)
      if (t[i] > t[i - 1]) tick = std::min(tick, t[i] - t[i - 1]);
  }
  nlohmann::json js = nlohmann::json::array();
  std::vector<double> period, release, wait_spread, stream_med, tail, early, busy;
  // Per steady call: when each SM finished its last block (from the call's first wait release), as
  // the 10th / 50th / 90th percentile and the last SM, and how many SMs the call used.
  std::vector<double> sm_p10, sm_p50, sm_p90, sm_last, sms_used, sm_two;
  double prev_last = 0;  // the previous call's last block exit
  for (size_t c = 0; c < call.size(); ++c) {
    auto& b = call[c];
    std::vector<double> exits, waits, busy_c;
    unsigned long long first_entry = ~0ull;
    for (const auto& q : b) {
      exits.push_back(static_cast<double>(q.t_exit));
      waits.push_back(static_cast<double>(q.t_wait));
      first_entry = std::min(first_entry, q.t_entry);
      busy_c.push_back(static_cast<double>(q.t_exit - q.t_wait));
    }
    std::sort(exits.begin(), exits.end());
    std::sort(waits.begin(), waits.end());
    nlohmann::json cj = {{"blocks", b.size()},
                         {"first_entry", first_entry},
                         {"first_wait", waits.front()},
                         {"last_wait", waits.back()},
                         {"first_exit", exits.front()},
                         {"median_exit", exits[exits.size() / 2]},
                         {"last_exit", exits.back()}};
    if (c > 0) {
      int n_early = 0;
      for (const auto& q : b) n_early += static_cast<double>(q.t_entry) < prev_last;
      cj["period"] = exits.back() - prev_last;
      cj["release"] = waits.front() - prev_last;
      cj["early_blocks"] = n_early;
      // Steady state: skip the first calls (ramp) and the last (nothing follows).
      if (c >= 4 && c + 2 < call.size()) {
        period.push_back(exits.back() - prev_last);
        release.push_back(waits.front() - prev_last);
        wait_spread.push_back(waits.back() - waits.front());
        stream_med.push_back(exits[exits.size() / 2] - waits.front());
        tail.push_back(exits.back() - exits[exits.size() / 2]);
        early.push_back(n_early);
        busy.push_back(median(busy_c));
        std::vector<double> fin(1024, -1.0);
        std::vector<int> per(1024, 0);
        for (const auto& q : b) {
          const unsigned id = q.sm < 1024 ? q.sm : 1023;
          fin[id] = std::max(fin[id], static_cast<double>(q.t_exit) - waits.front());
          ++per[id];
        }
        std::vector<double> f;
        int two = 0;
        for (size_t i = 0; i < fin.size(); ++i) {
          if (fin[i] >= 0) f.push_back(fin[i]);
          two += per[i] > 1;
        }
        std::sort(f.begin(), f.end());
        sm_p10.push_back(f[f.size() / 10]);
        sm_p50.push_back(f[f.size() / 2]);
        sm_p90.push_back(f[f.size() * 9 / 10]);
        sm_last.push_back(f.back());
        sms_used.push_back(static_cast<double>(f.size()));
        sm_two.push_back(two);
      }
    }
    js.push_back(cj);
    prev_last = exits.back();
  }
  double bw = 0;
  check(tunable::measure_copy_bandwidth(s, &bw), "copy bandwidth");
  const double floor_us = (wbytes + size_t(m) * k * eb + size_t(m) * n * 2) / bw * 1e6;
  std::printf(
      "%s%s bm/rpw %d warps %d  n %d k %d m %d  %s%s: %.2f us/call by events (%d calls, %zu traced, %zu blocks/call)\n"
      "  timer step %llu ns; medians over steady calls (ns): period %.0f | release after predecessor %.0f | "
      "wait spread %.0f | release->median exit %.0f | median->last exit (tail) %.0f | block busy %.0f | "
      "blocks resident before predecessor ended %.0f | floor at %.2f TB/s %.0f\n",
      kernel.c_str(), fp8 ? (pair ? " pair fp8" : bal ? " bal fp8" : " fp8") : pair ? " pair" : bal ? " bal" : "", rows, warps, n, k, m, graph ? "graph" : "stream", x_alias ? " x-alias" : "", ms * 1e3 / calls, calls, call.size(),
      call.empty() ? size_t(0) : call[call.size() / 2].size(), tick, median(period), median(release),
      median(wait_spread), median(stream_med), median(tail), median(busy), median(early), bw / 1e12,
      floor_us * 1e3);
  std::printf(
      "  per-SM finish after the first wait release (ns, medians over steady calls): p10 %.0f | p50 %.0f | "
      "p90 %.0f | last %.0f | SMs used %.0f, with two or more blocks %.0f\n",
      median(sm_p10), median(sm_p50), median(sm_p90), median(sm_last), median(sms_used), median(sm_two));
  if (!out.empty()) {
    std::ofstream(out) << nlohmann::json{{"kernel", kernel}, {"rows", rows}, {"warps", warps}, {"n", n},
                                         {"k", k}, {"m", m}, {"graph", graph}, {"x_alias", x_alias}, {"pair", pair}, {"bal", bal}, {"fp8", fp8}, {"us_per_call", ms * 1e3 / calls},
                                         {"timer_step_ns", tick}, {"copy_bytes_per_s", bw},
                                         {"calls", js}}
                              .dump(1);
  }
  return 0;
}
